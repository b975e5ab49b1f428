"""The environment a launched rank gets (shared by the launcher and spawn).

The variable families are those of the spec's "Launcher environment": oar's
own (OAR_LAUNCHER=1 tells oar.distributed to trust them first), torchrun's and
PaddlePaddle's, so a script written for either runs unchanged. Nothing here
imports oar's extension: the launcher stays a plain Python program.
"""
import os
import socket

DEFAULT_MASTER_PORT = 6170


def free_port(host="127.0.0.1"):
    """A TCP port that was free on host a moment ago (bind port 0, ask, close)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def parse_endpoint(text, what="--master"):
    """'ip:port', '[v6]:port' or 'ip' (port 6170) -> (host, port), with a sentence on error."""
    text = text.strip()
    if "://" in text:
        raise ValueError(f"{what} {text!r}: expected ip:port (e.g. 10.0.0.1:6170); "
                         f"oar's launcher has no etcd/http rendezvous, rank 0 serves the store itself")
    host, port = text, str(DEFAULT_MASTER_PORT)
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"{what} {text!r}: an IPv6 address needs a closing ']'")
        host, rest = text[1:end], text[end + 1:]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"{what} {text!r}: expected [address]:port")
            port = rest[1:]
    elif text.count(":") == 1:
        host, port = text.split(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{what} {text!r}: expected ip:port with a port in 1..65535 (e.g. 10.0.0.1:6170)")
    return host, int(port)


def format_endpoint(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def local_address(master_host):
    """This machine's address on the route to the master (what its peers dial).

    A UDP connect sends nothing; it only asks the kernel which source address
    the route uses. Falls back to the master's own address (single machine)."""
    if master_host in ("127.0.0.1", "localhost", "::1"):
        return master_host
    family = socket.AF_INET6 if ":" in master_host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((master_host, DEFAULT_MASTER_PORT))
            return s.getsockname()[0]
    except OSError:
        return master_host


def usable_cpus():
    """How many CPUs this process may run on (its affinity mask)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def threads_per_rank(local_world_size):
    """The usable CPUs split evenly between the local ranks (at least 1 each)."""
    return max(1, usable_cpus() // max(1, local_world_size))


def rank_environment(base, *, rank, local_rank, world_size, local_world_size, node_rank, master_host,
                     master_port, job_id, node_host=None, device=None):
    """A copy of base (a mapping, e.g. os.environ) with every launcher variable set for one rank.

    PADDLE_TRAINER_ENDPOINTS lists one ip:port per global rank; its first
    entry is the master, where rank 0 serves the store (the only entry oar
    reads). Node 0's ranks run on the master's machine and this node's on
    node_host; without a rendezvous of its own the launcher does not know the
    other machines' addresses and writes the master's. Ports: master_port + rank."""
    node_host = node_host or master_host
    nproc = local_world_size
    first_local = node_rank * nproc

    def endpoint(r):
        mine = node_rank != 0 and first_local <= r < first_local + nproc
        return format_endpoint(node_host if mine else master_host, master_port + r)

    env = dict(base)
    threads = env.get("OAR_NUM_THREADS") or str(threads_per_rank(nproc))
    env.update({
        "OAR_LAUNCHER": "1",
        "OAR_JOB_ID": job_id,
        "OAR_NUM_THREADS": threads,
        "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS") or threads,
        # torchrun's family
        "RANK": str(rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_RANK": str(local_rank),
        "LOCAL_WORLD_SIZE": str(nproc),
        "GROUP_RANK": str(node_rank),
        "MASTER_ADDR": master_host,
        "MASTER_PORT": str(master_port),
        # PaddlePaddle's family
        "PADDLE_TRAINER_ID": str(rank),
        "PADDLE_TRAINERS_NUM": str(world_size),
        "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoint(r) for r in range(world_size)),
        "PADDLE_CURRENT_ENDPOINT": endpoint(rank),
        "PADDLE_LOCAL_RANK": str(local_rank),
        "PADDLE_RANK_IN_NODE": str(local_rank),
        "PADDLE_LOCAL_SIZE": str(nproc),
        "PADDLE_GLOBAL_SIZE": str(world_size),
        "PADDLE_NNODES": str(world_size // nproc),
        # Logs appear in workerlog.N as they are written, not at exit.
        "PYTHONUNBUFFERED": env.get("PYTHONUNBUFFERED") or "1",
    })
    if device is not None:
        env["FLAGS_selected_gpus"] = str(device)
        env["OAR_LOCAL_DEVICE"] = str(device)
    return env
