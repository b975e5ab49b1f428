"""python -m oar.distributed.launch: the variables it sets, its logs, and how it stops a job.

Every launcher runs as a subprocess with a bounded timeout; its ranks die
with it (PR_SET_PDEATHSIG) when the timeout kills it. The rank scripts are
small files written into tmp_path; they do not import oar.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

LAUNCH = [sys.executable, "-m", "oar.distributed.launch"]
TIMEOUT = 60  # a bound, never reached by a passing test


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**overrides):
    env = dict(os.environ)
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_launcher(args, cwd, env=None, preexec_fn=None):
    return subprocess.run(LAUNCH + [str(a) for a in args], cwd=cwd, env=env or _env(), capture_output=True,
                          text=True, timeout=TIMEOUT, preexec_fn=preexec_fn)


def write_script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def wait_for(predicate, timeout=30.0, what="a condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


DUMP_ENV = """
    import json, os, sys
    rank = os.environ["RANK"]
    with open(f"env.{rank}.json", "w") as f:
        json.dump({"env": dict(os.environ), "argv": sys.argv[1:]}, f)
    print(f"hello from rank {rank}")
"""


def read_envs(directory, ranks):
    return {r: json.loads((directory / f"env.{r}.json").read_text()) for r in ranks}


def test_launcher_sets_every_variable_and_passes_the_arguments(tmp_path):
    script = write_script(tmp_path, "dump.py", DUMP_ENV)
    port = free_port()
    r = run_launcher(["--nproc_per_node", 2, "--devices", "3,5", "--master", f"127.0.0.1:{port}", "--job_id", "job7",
                      script, "--lr", "0.5", "x"], tmp_path)
    assert r.returncode == 0, r.stderr
    got = read_envs(tmp_path, [0, 1])
    for rank, device in ((0, "3"), (1, "5")):
        env = got[rank]["env"]
        assert got[rank]["argv"] == ["--lr", "0.5", "x"]
        expected = {
            "OAR_LAUNCHER": "1", "OAR_JOB_ID": "job7", "RANK": str(rank), "WORLD_SIZE": "2",
            "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0", "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), "PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": "2",
            "PADDLE_TRAINER_ENDPOINTS": f"127.0.0.1:{port},127.0.0.1:{port + 1}",
            "PADDLE_CURRENT_ENDPOINT": f"127.0.0.1:{port + rank}", "PADDLE_LOCAL_RANK": str(rank),
            "PADDLE_RANK_IN_NODE": str(rank), "FLAGS_selected_gpus": device, "OAR_LOCAL_DEVICE": device,
        }
        assert {k: env.get(k) for k in expected} == expected


def test_the_core_detects_the_launcher_family(tmp_path):
    # What a launched rank's init_parallel_env() will see (oar/dist_env.h).
    script = write_script(tmp_path, "detect.py", """
        import json, os
        import oar
        with open(f"detect.{os.environ['RANK']}.json", "w") as f:
            json.dump(oar._C.distributed.detect_env(), f)
    """)
    port = free_port()
    r = run_launcher(["--nproc_per_node", 2, "--master", f"127.0.0.1:{port}", "--job_id", "j2", script], tmp_path,
                     env=_env(RANK="5", PADDLE_TRAINER_ID="7", SLURM_PROCID="9"))  # stale variables lose
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        got = json.loads((tmp_path / f"detect.{rank}.json").read_text())
        assert got == {"rank": rank, "world_size": 2, "local_rank": rank, "local_world_size": 2,
                       "master_addr": "127.0.0.1", "master_port": port, "job_id": "j2",
                       "source": "oar.distributed.launch"}


def test_gpus_alias_sets_the_number_of_ranks(tmp_path):
    script = write_script(tmp_path, "dump.py", DUMP_ENV)
    r = run_launcher(["--gpus", "0,1", script], tmp_path)
    assert r.returncode == 0, r.stderr
    got = read_envs(tmp_path, [0, 1])
    assert [got[i]["env"]["FLAGS_selected_gpus"] for i in (0, 1)] == ["0", "1"]
    assert got[0]["env"]["WORLD_SIZE"] == "2"
    assert not (tmp_path / "env.2.json").exists()
    # The default master is a free port on 127.0.0.1, the same for both ranks.
    assert got[0]["env"]["MASTER_ADDR"] == "127.0.0.1"
    assert got[0]["env"]["MASTER_PORT"] == got[1]["env"]["MASTER_PORT"]


def test_module_form(tmp_path):
    write_script(tmp_path, "dumpmod.py", DUMP_ENV)
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    r = run_launcher(["--nproc_per_node", 1, "-m", "dumpmod", "a"], tmp_path, env=_env(PYTHONPATH=path))
    assert r.returncode == 0, r.stderr
    assert read_envs(tmp_path, [0])[0]["argv"] == ["a"]


@pytest.mark.parametrize("args, message", [
    (["--nproc_per_node", 3, "--devices", "0,1"], "--nproc_per_node 3 but --devices '0,1' names 2 devices"),
    (["--nnodes", 2, "--node_rank", 0], "--nnodes 2 needs --master ip:port"),
    (["--nnodes", 2, "--master", "127.0.0.1:6170"], "--nnodes 2 needs --node_rank (0..1)"),
    (["--nnodes", 2, "--node_rank", 2, "--master", "127.0.0.1:6170"], "--node_rank 2 is outside 0..1"),
    (["--master", "127.0.0.1:http"], "expected ip:port"),
    (["--run_mode", "ps"], "only 'collective' is supported"),
])
def test_bad_options_are_refused_with_a_sentence(tmp_path, args, message):
    script = write_script(tmp_path, "dump.py", DUMP_ENV)
    r = run_launcher(args + [script], tmp_path)
    assert r.returncode == 2
    assert message in r.stderr
    assert not list(tmp_path.glob("env.*.json"))


def test_one_log_per_rank_and_rank_0_echoed(tmp_path):
    script = write_script(tmp_path, "hello.py", """
        import os, sys
        rank = os.environ["RANK"]
        print(f"hello from rank {rank}")
        print(f"second line of rank {rank}", file=sys.stderr)
    """)
    r = run_launcher(["--nproc_per_node", 2, "--log_dir", "mylogs", script], tmp_path)
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        lines = (tmp_path / "mylogs" / f"workerlog.{rank}").read_text().splitlines()
        assert sorted(lines) == sorted([f"hello from rank {rank}", f"second line of rank {rank}"])
    echoed = [line for line in r.stdout.splitlines() if line.startswith("[rank")]
    assert sorted(echoed) == ["[rank 0] hello from rank 0", "[rank 0] second line of rank 0"]


@pytest.mark.parametrize("ignores_sigterm", [False, True])
def test_a_failing_rank_stops_the_job(tmp_path, ignores_sigterm):
    # Rank 0 would sleep for a minute (ignoring SIGTERM in the second case, so
    # the launcher must SIGKILL it after the grace period); rank 1 waits until
    # rank 0 has written its pid, prints 30 lines and exits with code 3.
    script = write_script(tmp_path, "fail.py", f"""
        import os, signal, sys, time
        if os.environ["RANK"] == "0":
            if {ignores_sigterm}:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            with open("pid0.tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename("pid0.tmp", "pid0")
            time.sleep(60)
            sys.exit(0)
        deadline = time.monotonic() + 30
        while not os.path.exists("pid0") and time.monotonic() < deadline:
            time.sleep(0.01)
        for i in range(30):
            print("line", i)
        sys.exit(3)
    """)
    start = time.monotonic()
    r = run_launcher(["--nproc_per_node", 2, "--grace_period", 1, script], tmp_path)
    elapsed = time.monotonic() - start
    assert r.returncode == 3, r.stderr
    assert elapsed < 30
    pid0 = int((tmp_path / "pid0").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid0, 0)  # rank 0 was stopped (and reaped), not left sleeping
    head = "oar.distributed.launch: rank 1 (local rank 1, pid "
    line = next(x for x in r.stderr.splitlines() if x.startswith(head))
    assert line.endswith(") exited with code 3; stopping the other ranks")
    tail = r.stderr.split("last lines of log/workerlog.1:\n", 1)[1].splitlines()
    assert [x.strip() for x in tail[:20]] == [f"line {i}" for i in range(10, 30)]
    if ignores_sigterm:
        assert "rank 0 did not stop within 1.0 s of SIGTERM; killed it" in r.stderr


def test_a_rank_killed_by_a_signal_is_reported_as_such(tmp_path):
    script = write_script(tmp_path, "die.py", """
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    r = run_launcher(["--nproc_per_node", 1, script], tmp_path)
    assert r.returncode == 128 + signal.SIGKILL
    assert ") was killed by SIGKILL (exit code 137); stopping the other ranks" in r.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_are_forwarded_to_every_rank(tmp_path, sig):
    script = write_script(tmp_path, "wait.py", """
        import os, signal, sys, time
        rank = os.environ["RANK"]
        def handler(signum, frame):
            print(f"rank {rank} got {signal.Signals(signum).name}", flush=True)
            sys.exit(7)
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
        open(f"ready.{rank}", "w").close()
        time.sleep(60)
    """)
    proc = subprocess.Popen(LAUNCH + ["--nproc_per_node", "2", str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: all((tmp_path / f"ready.{r}").exists() for r in (0, 1)), what="both ranks to start")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + sig, err
    name = signal.Signals(sig).name
    assert f"received {name}; forwarding it to ranks 0, 1" in err
    for rank in (0, 1):
        assert f"rank {rank} got {name}" in (tmp_path / "log" / f"workerlog.{rank}").read_text()


def _pin_to(cpus):
    return lambda: os.sched_setaffinity(0, cpus)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to split")
@pytest.mark.parametrize("nproc, preset, expected", [
    (1, {}, ("2", "2")),  # both CPUs to the one rank
    (2, {}, ("1", "1")),  # one each
    (3, {}, ("1", "1")),  # never below one
    (2, {"OAR_NUM_THREADS": "5"}, ("5", "5")),  # a set value wins; OpenMP follows it
    (2, {"OMP_NUM_THREADS": "4"}, ("1", "4")),
])
def test_cpu_threads_are_split_between_local_ranks(tmp_path, nproc, preset, expected):
    script = write_script(tmp_path, "dump.py", DUMP_ENV)
    env = _env(**{"OAR_NUM_THREADS": None, "OMP_NUM_THREADS": None, **preset})
    two_cpus = set(sorted(os.sched_getaffinity(0))[:2])
    r = run_launcher(["--nproc_per_node", nproc, script], tmp_path, env=env, preexec_fn=_pin_to(two_cpus))
    assert r.returncode == 0, r.stderr
    for rank, got in read_envs(tmp_path, range(nproc)).items():
        assert (got["env"]["OAR_NUM_THREADS"], got["env"]["OMP_NUM_THREADS"]) == expected


def test_two_launchers_as_two_nodes(tmp_path):
    # Two "machines" on 127.0.0.1: node 1's rank is global rank 1 (= 1 * nproc + 0).
    script = write_script(tmp_path, "dump.py", DUMP_ENV)
    port = free_port()
    procs = []
    try:
        for node in (0, 1):
            procs.append(subprocess.Popen(
                LAUNCH + ["--nnodes", "2", "--node_rank", str(node), "--nproc_per_node", "1", "--master",
                          f"127.0.0.1:{port}", "--log_dir", f"log{node}", str(script)],
                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        results = [p.communicate(timeout=TIMEOUT) for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert [p.returncode for p in procs] == [0, 0], results
    got = read_envs(tmp_path, [0, 1])
    for rank in (0, 1):
        env = got[rank]["env"]
        got_ranks = (env["RANK"], env["LOCAL_RANK"], env["GROUP_RANK"], env["WORLD_SIZE"])
        assert got_ranks == (str(rank), "0", str(rank), "2")
        assert env["PADDLE_TRAINER_ENDPOINTS"].split(",")[0] == f"127.0.0.1:{port}"
        assert (tmp_path / f"log{rank}" / f"workerlog.{rank}").read_text() == f"hello from rank {rank}\n"
    assert "[rank 0] hello from rank 0" in results[0][0]
    assert "[rank 1] hello from rank 1" in results[1][0]  # each node echoes its first rank


def test_oar_launch_console_script_is_installed():
    exe = os.path.join(os.path.dirname(sys.executable), "oar-launch")
    r = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0
    assert "--nproc_per_node" in r.stdout and "--master" in r.stdout


ALL_REDUCE = """
    import oar
    import oar.distributed as dist
    dist.init_parallel_env()
    x = oar.to_tensor([float(dist.get_rank() + 1), 10.0])
    dist.all_reduce(x)
    print("sum", x.numpy().tolist(), "world", dist.get_world_size())
    dist.destroy_process_group()
"""


def test_two_launchers_as_two_nodes_all_reduce(tmp_path):
    # Ranks 0 and 1 started by two launchers (nodes 0 and 1) find each other
    # through the store rank 0 serves at --master: 1 + 2 = 3, 10 + 10 = 20.
    script = write_script(tmp_path, "allreduce.py", ALL_REDUCE)
    port = free_port()
    env = _env(OAR_COLLECTIVE_TIMEOUT="20", OAR_DIST_DEVICE="cpu")
    procs = []
    try:
        for node in (0, 1):
            procs.append(subprocess.Popen(
                LAUNCH + ["--nnodes", "2", "--node_rank", str(node), "--master", f"127.0.0.1:{port}",
                          "--log_dir", f"log{node}", str(script)],
                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        results = [p.communicate(timeout=TIMEOUT) for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert [p.returncode for p in procs] == [0, 0], results
    for rank in (0, 1):
        log = (tmp_path / f"log{rank}" / f"workerlog.{rank}").read_text()
        assert "sum [3.0, 20.0] world 2" in log, log


@pytest.mark.parametrize("text, expected", [
    ("10.0.0.1:29500", ("10.0.0.1", 29500)),
    ("node03", ("node03", 6170)),  # the default port
    ("[fe80::1]:7000", ("fe80::1", 7000)),
])
def test_master_endpoints(text, expected):
    from oar.distributed.launch.rank_env import parse_endpoint
    assert parse_endpoint(text) == expected


@pytest.mark.parametrize("text", ["10.0.0.1:0", "10.0.0.1:70000", ":6170", "etcd://10.0.0.1:2379", "[fe80::1"])
def test_bad_master_endpoints(text):
    from oar.distributed.launch.rank_env import parse_endpoint
    with pytest.raises(ValueError, match="--master"):
        parse_endpoint(text)
