"""Runs a snippet in N Python processes, one per rank, as a launcher would.

Each child gets RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (a free port
found by binding port 0) unless the caller passes its own variables, runs
PRELUDE + the snippet, and writes `results` (a dict) as JSON and any arrays
given to save() as .npz. The parent waits a bounded time for all of them
and kills every child in a finally."""
import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np

PRELUDE = """
import json, os, sys, time
import numpy as np
import oar
import oar.distributed as dist
rank = int(os.environ.get("OAR_TEST_RANK", "0"))
OUT = os.environ["OAR_TEST_OUT"]
results = {}
arrays = {}
def save(name, value):
    arrays[name] = np.asarray(value)
def _finish():
    with open(os.path.join(OUT, f"{rank}.json"), "w") as f:
        json.dump(results, f)
    np.savez(os.path.join(OUT, f"{rank}.npz"), **arrays)
"""


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_env(rank, world, port):
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


# Variables of every family, removed from a child's environment before its own are set.
_LAUNCHER_VARS = ("OAR_LAUNCHER", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                  "MASTER_PORT", "GROUP_RANK", "OAR_JOB_ID", "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM",
                  "PADDLE_TRAINER_ENDPOINTS", "PADDLE_CURRENT_ENDPOINT", "PADDLE_JOB_ID", "PADDLE_LOCAL_RANK",
                  "PADDLE_RANK_IN_NODE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                  "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID",
                  "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID", "SLURM_TASKS_PER_NODE", "OAR_DIST_DEVICE",
                  "OAR_COLLECTIVE_TIMEOUT", "OAR_COLLECTIVE_CHECK", "OAR_LOCAL_DEVICE", "FLAGS_selected_gpus")


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS}
    env.setdefault("OAR_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


class RankResult:
    def __init__(self, rank, returncode, output, results, arrays):
        self.rank = rank
        self.returncode = returncode
        self.output = output
        self.results = results
        self.arrays = arrays


def run_ranks(snippet, world, tmp_path, envs=None, timeout=60.0, extra_env=None, check=True):
    """Runs `snippet` on `world` ranks; envs[r] replaces the default
    torchrun variables of rank r. Returns one RankResult per rank; with
    check, a rank that exits non-zero fails with every rank's output."""
    out = os.path.join(str(tmp_path), f"ranks_{time.monotonic_ns()}")
    os.makedirs(out)
    port = free_port()
    code = PRELUDE + textwrap.dedent(snippet) + "\n_finish()\n"
    script = os.path.join(out, "child.py")
    with open(script, "w") as f:
        f.write(code)
    procs = []
    try:
        for r in range(world):
            variables = envs[r] if envs is not None else torchrun_env(r, world, port)
            env = clean_env(extra_env)
            env.update(variables)
            env["OAR_TEST_RANK"] = str(r)
            env["OAR_TEST_OUT"] = out
            procs.append(subprocess.Popen([sys.executable, script], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        deadline = time.monotonic() + timeout
        outputs = []
        for p in procs:
            try:
                text, _ = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                rest = [q.communicate()[0] for q in procs]
                raise AssertionError(f"ranks did not finish within {timeout} s:\n" +
                                     "\n".join(f"--- rank {i} ---\n{t}" for i, t in enumerate(rest)))
            outputs.append(text)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    ranks = []
    for r, (p, text) in enumerate(zip(procs, outputs)):
        results, arrays = {}, {}
        if p.returncode == 0 and os.path.exists(os.path.join(out, f"{r}.json")):
            with open(os.path.join(out, f"{r}.json")) as f:
                results = json.load(f)
            with np.load(os.path.join(out, f"{r}.npz")) as z:
                arrays = {k: z[k] for k in z.files}
        ranks.append(RankResult(r, p.returncode, text, results, arrays))
    if check and any(x.returncode != 0 for x in ranks):
        raise AssertionError("a rank failed:\n" + "\n".join(f"--- rank {x.rank} (exit {x.returncode}) ---\n{x.output}"
                                                              for x in ranks))
    return ranks


# ---- data both the ranks and the checks compute ----

DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8", "bool")
_NUMPY = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.float32,
          "int32": np.int32, "int64": np.int64, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}
_UNSIGNED = ("uint8", "bool")


def data(seed, dtype, shape=(2, 3)):
    """Small exact values (1..4, negated at odd positions for signed
    dtypes; a pattern for bool) that every dtype, bf16 included, holds
    exactly, and whose sums and products over 3 ranks too."""
    n = int(np.prod(shape))
    i = np.arange(n)
    if dtype == "bool":
        v = (i + seed) % 3 == 0
    else:
        v = (i + seed) % 4 + 1
        if dtype not in _UNSIGNED:
            v = np.where(i % 2 == 1, -v, v)
    return v.reshape(shape).astype(_NUMPY[dtype])
