"""python -m oar.distributed.launch / oar-launch: start this node's ranks and watch them.

    python -m oar.distributed.launch --nproc_per_node 2 train.py --lr 0.1
    python -m oar.distributed.launch --nnodes 2 --node_rank 0 --master 10.0.0.1:6170 train.py

Options follow paddle.distributed.launch (torchrun's spellings are accepted
too). Each rank's output goes to <log_dir>/workerlog.<global rank>; this
node's first rank is also echoed to the console, prefixed "[rank N] ". See
Note [Launcher lifecycle] and docs/distributed.md.
"""
import argparse
import os
import signal
import subprocess
import sys
import time
from collections import deque

from . import rank_env

PROG = "oar.distributed.launch"

# Note [Launcher lifecycle]
# Each rank runs in its own session (its own process group), so a Ctrl-C on
# the terminal reaches only the launcher, which forwards SIGINT/SIGTERM to
# every rank's group (a rank's own subprocesses included) and exits 128+sig.
# The ranks also get PR_SET_PDEATHSIG=SIGKILL: a launcher killed with SIGKILL
# does not leave ranks behind. The launcher then polls its ranks: the first
# one that exits non-zero stops the job (the others get SIGTERM, then SIGKILL
# after --grace_period seconds), its exit code and the tail of its log are
# printed, and the launcher exits with that code (128+sig for a signal). It
# never serves the rendezvous store: rank 0 does (init_parallel_env).

POLL_SECONDS = 0.05
LOG_TAIL_LINES = 20


def build_parser():
    p = argparse.ArgumentParser(prog=PROG, description="Start the ranks of a distributed oar job on this node.")
    p.add_argument("--nproc_per_node", "--nproc-per-node", type=int, default=None,
                   help="ranks on this node (default: the number of --devices, else 1)")
    p.add_argument("--nnodes", type=str, default="1", help="number of nodes (machines)")
    p.add_argument("--rank", "--node_rank", "--node-rank", dest="node_rank", type=int, default=None,
                   help="this node's rank, 0..nnodes-1 (required when nnodes > 1)")
    p.add_argument("--master", type=str, default=None,
                   help="ip:port where rank 0 serves the store (required when nnodes > 1; "
                        "default 127.0.0.1:<a free port>)")
    p.add_argument("--master_addr", "--master-addr", type=str, default=None, help=argparse.SUPPRESS)
    p.add_argument("--master_port", "--master-port", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--devices", "--gpus", "--xpus", dest="devices", type=str, default=None,
                   help='device ids for the local ranks, e.g. "0,1" (FLAGS_selected_gpus, OAR_LOCAL_DEVICE)')
    p.add_argument("--log_dir", "--log-dir", type=str, default="log", help="directory of the workerlog.N files")
    p.add_argument("--job_id", "--job-id", type=str, default="default",
                   help="job id; a rank connecting to another job's store is refused")
    p.add_argument("--run_mode", type=str, default="collective", help="only 'collective' is supported")
    p.add_argument("--grace_period", type=float, default=5.0,
                   help="seconds the ranks get between SIGTERM and SIGKILL when the job is stopped")
    p.add_argument("-m", "--module", action="store_true", help="run training_script as a module (python -m)")
    p.add_argument("training_script", help="the script (or, with -m, the module) every rank runs")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER, help="its arguments")
    return p


class Config:
    """The launcher's options, checked; raises ValueError with a sentence."""

    def __init__(self, args):
        if args.run_mode != "collective":
            raise ValueError(f"--run_mode {args.run_mode!r}: only 'collective' is supported "
                             f"(oar has no parameter-server mode)")
        if not args.nnodes.isdigit() or int(args.nnodes) < 1:
            raise ValueError(f"--nnodes {args.nnodes!r}: expected a whole number of nodes >= 1 "
                             f"(elastic ranges like 1:4 are not supported)")
        self.nnodes = int(args.nnodes)
        self.devices = None
        if args.devices is not None:
            self.devices = [d.strip() for d in args.devices.split(",") if d.strip()]
            if not self.devices:
                raise ValueError(f"--devices {args.devices!r}: expected a comma-separated list like \"0,1\"")
        nproc = args.nproc_per_node
        if nproc is None:
            nproc = len(self.devices) if self.devices else 1
        if nproc < 1:
            raise ValueError(f"--nproc_per_node {nproc}: expected at least 1 rank per node")
        if self.devices and len(self.devices) != nproc:
            raise ValueError(f"--nproc_per_node {nproc} but --devices {args.devices!r} names "
                             f"{len(self.devices)} devices; give one device per local rank")
        self.nproc = nproc
        if args.node_rank is None and self.nnodes > 1:
            raise ValueError(f"--nnodes {self.nnodes} needs --node_rank (0..{self.nnodes - 1}) on each node")
        self.node_rank = args.node_rank or 0
        if not 0 <= self.node_rank < self.nnodes:
            raise ValueError(f"--node_rank {self.node_rank} is outside 0..{self.nnodes - 1} for --nnodes {self.nnodes}")
        if args.master is not None:
            self.master_host, self.master_port = rank_env.parse_endpoint(args.master)
        elif args.master_addr is not None or self.nnodes > 1:
            if args.master_addr is None:
                raise ValueError(f"--nnodes {self.nnodes} needs --master ip:port (the address of node 0, "
                                 f"where rank 0 serves the store), the same on every node")
            self.master_host = args.master_addr
            self.master_port = args.master_port or rank_env.DEFAULT_MASTER_PORT
        else:
            self.master_host = "127.0.0.1"
            self.master_port = args.master_port or rank_env.free_port(self.master_host)
        self.log_dir = args.log_dir
        self.job_id = args.job_id
        self.grace = max(0.0, args.grace_period)
        self.world_size = self.nnodes * self.nproc
        self.command = [sys.executable, "-u"] + (["-m"] if args.module else []) + [args.training_script]
        self.command += args.training_script_args


def _die_with_parent_hook():
    """A preexec_fn giving the rank PR_SET_PDEATHSIG=SIGKILL (Linux; None elsewhere).

    libc is loaded here, in the launcher: the hook itself runs between fork
    and exec, where importing is unsafe."""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


class Worker:
    """One rank: its process, its log file and (for the echoed rank) a reader of that log."""

    def __init__(self, cfg, local_rank, node_host, echo, preexec):
        self.local_rank = local_rank
        self.rank = cfg.node_rank * cfg.nproc + local_rank
        self.log_path = os.path.join(cfg.log_dir, f"workerlog.{self.rank}")
        env = rank_env.rank_environment(
            os.environ, rank=self.rank, local_rank=local_rank, world_size=cfg.world_size,
            local_world_size=cfg.nproc, node_rank=cfg.node_rank, master_host=cfg.master_host,
            master_port=cfg.master_port, job_id=cfg.job_id, node_host=node_host,
            device=cfg.devices[local_rank] if cfg.devices else None)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cfg.command, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=preexec)
        self.pid = self.proc.pid
        self._echo = open(self.log_path, "rb") if echo else None
        self._partial = b""

    def poll(self):
        return self.proc.poll()

    def signal_group(self, sig):
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def echo(self, final=False):
        """Copies the log's new complete lines (all of it when final) to stdout with a prefix."""
        if self._echo is None:
            return
        lines = (self._partial + self._echo.read()).split(b"\n")
        self._partial = lines.pop()  # b"" when the data ends with a newline
        if final and self._partial:
            lines.append(self._partial)
        prefix = f"[rank {self.rank}] ".encode()
        try:
            sys.stdout.buffer.write(b"".join(prefix + line + b"\n" for line in lines))
            sys.stdout.buffer.flush()
        except (BrokenPipeError, ValueError):  # the console went away; the log file has it all
            pass
        if final:
            self._echo.close()
            self._echo = None

    def log_tail(self, n=LOG_TAIL_LINES):
        try:
            with open(self.log_path, "rb") as f:
                lines = deque(f, maxlen=n)
        except OSError as e:
            return [f"(could not read {self.log_path}: {e})"]
        return [line.decode(errors="replace").rstrip("\n") for line in lines]


def exit_code(returncode):
    """A child's return code as a shell exit status: 128+sig for a signal."""
    return 128 - returncode if returncode < 0 else returncode


def describe_exit(returncode):
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} (exit code {128 - returncode})"
    return f"exited with code {returncode}"


class Launcher:
    def __init__(self, cfg):
        self.cfg = cfg
        self.workers = []
        self.received = []  # signals caught, in order

    def _on_signal(self, sig, frame):
        self.received.append(sig)

    def _echo_all(self, final=False):
        for w in self.workers:
            w.echo(final)

    def _stop(self, sig=signal.SIGTERM):
        """Sends sig to every running rank, waits up to the grace period, then SIGKILLs the rest."""
        live = [w for w in self.workers if w.poll() is None]
        for w in live:
            w.signal_group(sig)
        deadline = time.monotonic() + self.cfg.grace
        seen = len(self.received)
        while any(w.poll() is None for w in live) and time.monotonic() < deadline:
            if len(self.received) > seen:  # a second signal: stop waiting
                break
            self._echo_all()
            time.sleep(POLL_SECONDS)
        for w in live:
            if w.poll() is None:
                sys.stderr.write(f"{PROG}: rank {w.rank} did not stop within {self.cfg.grace} s of "
                                 f"{signal.Signals(sig).name}; killed it\n")
                w.signal_group(signal.SIGKILL)
        for w in live:
            w.proc.wait()
        self._echo_all(final=True)

    def _report_failure(self, w, returncode):
        err = sys.stderr
        self._echo_all()
        err.write(f"{PROG}: rank {w.rank} (local rank {w.local_rank}, pid {w.pid}) {describe_exit(returncode)}; "
                  f"stopping the other ranks\n")
        err.write(f"{PROG}: last lines of {w.log_path}:\n")
        for line in w.log_tail():
            err.write(f"  {line}\n")
        err.flush()

    def _banner(self):
        cfg = self.cfg
        first = cfg.node_rank * cfg.nproc
        ranks = f"rank {first}" if cfg.nproc == 1 else f"ranks {first}..{first + cfg.nproc - 1}"
        master = rank_env.format_endpoint(cfg.master_host, cfg.master_port)
        sys.stderr.write(f"{PROG}: node {cfg.node_rank} of {cfg.nnodes}: {ranks} of {cfg.world_size}, "
                         f"master {master}, job {cfg.job_id!r}, logs in {cfg.log_dir}/workerlog.N\n")
        sys.stderr.flush()

    def run(self):
        cfg = self.cfg
        os.makedirs(cfg.log_dir, exist_ok=True)
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            node_host = rank_env.local_address(cfg.master_host) if cfg.node_rank else cfg.master_host
            self._banner()
            preexec = _die_with_parent_hook()
            for local_rank in range(cfg.nproc):
                if self.received:
                    break
                self.workers.append(Worker(cfg, local_rank, node_host, local_rank == 0, preexec))
            return self._watch()
        finally:
            for w in self.workers:  # only reached with live ranks on an unexpected exception
                if w.poll() is None:
                    w.signal_group(signal.SIGKILL)
                    w.proc.wait()
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _watch(self):
        while True:
            if self.received:
                sig = self.received[0]
                live = [w.rank for w in self.workers if w.poll() is None]
                sys.stderr.write(f"{PROG}: received {signal.Signals(sig).name}; forwarding it to ranks "
                                 f"{', '.join(map(str, live)) or '(none running)'}\n")
                sys.stderr.flush()
                self._stop(sig)
                return 128 + sig
            self._echo_all()
            running = False
            for w in self.workers:
                code = w.poll()
                if code is None:
                    running = True
                elif code != 0:
                    self._report_failure(w, code)
                    self._stop()
                    return exit_code(code)
            if not running:
                self._echo_all(final=True)
                return 0
            time.sleep(POLL_SECONDS)


def launch(argv=None):
    """Runs the launcher with argv (default sys.argv[1:]); returns its exit status."""
    args = build_parser().parse_args(argv)
    try:
        cfg = Config(args)
    except ValueError as e:
        sys.stderr.write(f"{PROG}: {e}\n")
        return 2
    return Launcher(cfg).run()


def main():
    sys.exit(launch())
