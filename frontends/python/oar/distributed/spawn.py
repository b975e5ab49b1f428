"""oar.distributed.spawn (paddle.distributed.spawn): run a function on N local ranks.

    def train(lr):
        dist.init_parallel_env()
        ...
    if __name__ == "__main__":
        dist.spawn(train, args=(0.1,), nprocs=2)

Each rank is a fresh interpreter (multiprocessing's 'spawn' start method)
whose environment has the launcher's variables (launch/rank_env.py) from its
first instruction on, so init_parallel_env() finds its rank as under the
launcher. func must be importable (defined at a module's top level).
"""
import multiprocessing
import multiprocessing.connection
import os
import threading
import time
import traceback

from .launch import rank_env

__all__ = ["spawn", "MultiprocessContext", "ProcessRaisedError", "ProcessExitedError"]

_KNOWN_OPTIONS = {"start_method", "gpus", "devices", "xpus", "selected_devices", "ips", "backend", "print_config",
                  "master", "job_id", "grace_period"}
_ENV_LOCK = threading.Lock()


class ProcessRaisedError(RuntimeError):
    """A rank's func raised; .rank, .pid, .error (the exception's repr) and .traceback (its text)."""

    def __init__(self, rank, pid, error, tb):
        self.rank, self.pid, self.error, self.traceback = rank, pid, error, tb
        super().__init__(f"oar.distributed.spawn: rank {rank} (pid {pid}) raised {error}; the other ranks were "
                         f"stopped\n\nTraceback of rank {rank}:\n{tb}")


class ProcessExitedError(RuntimeError):
    """A rank's process ended without finishing func (os._exit, a signal, a crash); .rank, .pid, .exitcode."""

    def __init__(self, rank, pid, exitcode):
        self.rank, self.pid, self.exitcode = rank, pid, exitcode
        how = f"was killed by signal {-exitcode}" if exitcode < 0 else f"exited with code {exitcode}"
        super().__init__(f"oar.distributed.spawn: rank {rank} (pid {pid}) {how} before its function returned; "
                         f"the other ranks were stopped")


def _run_rank(func, args, env, conn):
    """The child's entry: sets the rank's environment, runs func, sends back its result or error."""
    os.environ.update(env)  # already inherited with 'spawn'; needed for 'forkserver'
    try:
        result = func(*args)
    except BaseException as e:  # noqa: B036 - SystemExit/KeyboardInterrupt are reported too
        conn.send(("error", f"{type(e).__name__}: {e}", traceback.format_exc()))
        conn.close()
        os._exit(1)
    try:
        conn.send(("ok", result))
    except Exception as e:  # an unpicklable result
        conn.send(("error", f"{type(e).__name__} sending the return value: {e}", traceback.format_exc()))
        conn.close()
        os._exit(1)
    conn.close()


class MultiprocessContext:
    """The spawned ranks: .processes, .pids(), join(); after a successful join, .return_values[rank]."""

    def __init__(self, processes, conns, grace_period=3.0):
        self.processes = processes
        self._conns = dict(enumerate(conns))  # rank -> reader, until its message arrives
        self._messages = {}
        self._grace = grace_period
        self.return_values = [None] * len(processes)

    def pids(self):
        return [p.pid for p in self.processes]

    def _receive(self, rank):
        conn = self._conns.pop(rank)
        try:
            self._messages[rank] = conn.recv()
        except (EOFError, OSError):
            pass  # the rank died before sending
        conn.close()

    def _stop_all(self):
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + self._grace
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.processes:
            if p.is_alive():
                p.kill()
                p.join()

    def _check(self, rank):
        """Raises if rank ended badly (after stopping the others)."""
        p = self.processes[rank]
        message = self._messages.get(rank)
        if p.exitcode == 0 and message and message[0] == "ok":
            self.return_values[rank] = message[1]
            return
        self._stop_all()
        if message and message[0] == "error":
            raise ProcessRaisedError(rank, p.pid, message[1], message[2])
        raise ProcessExitedError(rank, p.pid, p.exitcode)

    def join(self, timeout=None):
        """Waits for the ranks; True when all finished, False when timeout (seconds) passed first.

        The first rank that fails stops the others, and its error is raised
        here: ProcessRaisedError with its traceback, or ProcessExitedError."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pending = {p.sentinel: r for r, p in enumerate(self.processes) if p.exitcode is None or r in self._conns}
        while pending or self._conns:
            waits = list(pending) + list(self._conns.values())
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = multiprocessing.connection.wait(waits, left)
            if not ready:
                return False
            for obj in ready:
                rank = pending.pop(obj, None)
                if rank is None:  # a message
                    self._receive(next(r for r, c in self._conns.items() if c is obj))
                    continue
                self.processes[rank].join()
                if rank in self._conns and self._conns[rank].poll():
                    self._receive(rank)
                self._conns.pop(rank, None)
                self._check(rank)
        return True


def _devices(options):
    for key in ("gpus", "devices", "xpus", "selected_devices"):
        if options.get(key) is not None:
            return [d.strip() for d in str(options[key]).split(",") if d.strip()]
    return None


def spawn(func, args=(), nprocs=-1, join=True, daemon=False, **options):
    """Starts nprocs processes running func(*args), one per rank; returns a MultiprocessContext.

    nprocs=-1: one per device of options["gpus"] (or "devices"), else one
    per CPU this process may use. Options (Paddle's): start_method ("spawn"),
    gpus/devices ("0,1"), ips (only this machine), backend (accepted);
    oar's: master ("ip:port", default 127.0.0.1:<free port>), job_id,
    grace_period (seconds between SIGTERM and SIGKILL when stopping ranks).
    join=True waits for all ranks and raises the first failing rank's error."""
    unknown = sorted(set(options) - _KNOWN_OPTIONS)
    if unknown:
        raise ValueError(f"oar.distributed.spawn: unknown option(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(_KNOWN_OPTIONS))}")
    ips = str(options.get("ips") or "127.0.0.1")
    if ips not in ("127.0.0.1", "localhost"):
        raise ValueError(f"oar.distributed.spawn: ips={ips!r}: spawn starts ranks on this machine only; "
                         f"use python -m oar.distributed.launch on each machine for several")
    devices = _devices(options)
    if nprocs == -1:
        nprocs = len(devices) if devices else rank_env.usable_cpus()
    if nprocs < 1:
        raise ValueError(f"oar.distributed.spawn: nprocs={nprocs}: expected at least 1 (or -1 for one per device)")
    if devices and len(devices) < nprocs:
        raise ValueError(f"oar.distributed.spawn: nprocs={nprocs} but only {len(devices)} devices were given "
                         f"({','.join(devices)})")
    if options.get("master"):
        host, port = rank_env.parse_endpoint(str(options["master"]), "master")
    else:
        host = "127.0.0.1"
        port = rank_env.free_port(host)
    ctx = multiprocessing.get_context(options.get("start_method") or "spawn")
    processes, conns = [], []
    try:
        for rank in range(nprocs):
            env = rank_env.rank_environment(
                {}, rank=rank, local_rank=rank, world_size=nprocs, local_world_size=nprocs, node_rank=0,
                master_host=host, master_port=port, job_id=str(options.get("job_id") or "default"),
                device=devices[rank] if devices else None)
            for key in ("OAR_NUM_THREADS", "OMP_NUM_THREADS", "PYTHONUNBUFFERED"):
                if os.environ.get(key):
                    env[key] = os.environ[key]  # the caller's setting wins, as in the launcher
            reader, writer = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_run_rank, args=(func, tuple(args), env, writer), daemon=daemon,
                            name=f"oar-rank-{rank}")
            with _ENV_LOCK:  # the child inherits the environment as it is at start()
                saved = {k: os.environ.get(k) for k in env}
                os.environ.update(env)
                try:
                    p.start()
                finally:
                    for k, v in saved.items():
                        if v is None:
                            os.environ.pop(k, None)
                        else:
                            os.environ[k] = v
            writer.close()
            processes.append(p)
            conns.append(reader)
    except BaseException:
        for p in processes:
            p.kill()
            p.join()
        raise
    context = MultiprocessContext(processes, conns, float(options.get("grace_period", 3.0)))
    if join:
        context.join()
    return context
