"""oar.distributed.spawn: func on N ranks with the launcher's environment; a rank's error in the parent."""
import json
import os
import time

import pytest

from oar.distributed import spawn
from oar.distributed.spawn import ProcessExitedError, ProcessRaisedError

TIMEOUT = 60  # a bound on every join, never reached by a passing test


# Rank functions: at module level, so the spawned interpreters can import them.
def record_env(directory, scale):
    rank = int(os.environ["RANK"])
    keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "OAR_LAUNCHER", "PADDLE_TRAINER_ID",
            "PADDLE_TRAINERS_NUM", "FLAGS_selected_gpus", "OAR_JOB_ID")
    with open(os.path.join(directory, f"env.{rank}.json"), "w") as f:
        json.dump({k: os.environ.get(k) for k in keys}, f)
    return rank * scale


def fail_on_rank_1(directory):
    if os.environ["RANK"] == "1":
        deadline = time.monotonic() + 30  # fail once rank 0 is asleep, so stopping it is tested
        while not os.path.exists(os.path.join(directory, "pid0")) and time.monotonic() < deadline:
            time.sleep(0.01)
        raise ValueError("boom on the second rank")
    with open(os.path.join(directory, "pid0.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.path.join(directory, "pid0.tmp"), os.path.join(directory, "pid0"))
    time.sleep(60)


def exit_without_returning(code):
    os._exit(code)


def all_reduce_ranks():
    import oar
    import oar.distributed as dist
    oar.set_device("cpu")
    dist.init_parallel_env()
    x = oar.to_tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(x)
    result = (dist.get_rank(), dist.get_world_size(), x.numpy().tolist())
    dist.destroy_process_group()
    return result


def wait_for_file(path):
    deadline = time.monotonic() + 30
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    return os.path.exists(path)


def test_spawn_runs_func_on_every_rank_with_the_launcher_variables(tmp_path):
    context = spawn(record_env, args=(str(tmp_path), 10), nprocs=2, gpus="4,6", job_id="sp")
    assert context.join(timeout=TIMEOUT)
    assert context.return_values == [0, 10]
    envs = [json.loads((tmp_path / f"env.{r}.json").read_text()) for r in (0, 1)]
    for rank, env in enumerate(envs):
        assert env == {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank), "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": envs[0]["MASTER_PORT"], "OAR_LAUNCHER": "1", "PADDLE_TRAINER_ID": str(rank),
                       "PADDLE_TRAINERS_NUM": "2", "FLAGS_selected_gpus": "46"[rank], "OAR_JOB_ID": "sp"}
    # The parent's environment is left as it was.
    assert os.environ.get("OAR_LAUNCHER") is None and os.environ.get("OAR_JOB_ID") is None


def test_a_rank_error_is_raised_in_the_parent_with_its_rank_and_traceback(tmp_path):
    start = time.monotonic()
    with pytest.raises(ProcessRaisedError) as info:
        spawn(fail_on_rank_1, args=(str(tmp_path),), nprocs=2, grace_period=1)
    assert time.monotonic() - start < 30
    e = info.value
    assert e.rank == 1
    assert "rank 1 (pid " in str(e) and "raised ValueError: boom on the second rank" in str(e)
    assert 'in fail_on_rank_1\n    raise ValueError("boom on the second rank")' in e.traceback
    with pytest.raises(ProcessLookupError):
        os.kill(int((tmp_path / "pid0").read_text()), 0)  # the sleeping rank 0 was stopped


def test_a_rank_that_exits_early_is_reported_with_its_code():
    with pytest.raises(ProcessExitedError) as info:
        spawn(exit_without_returning, args=(5,), nprocs=1)
    assert (info.value.rank, info.value.exitcode) == (0, 5)
    assert "exited with code 5 before its function returned" in str(info.value)


def test_join_false_returns_a_context_to_join_later(tmp_path):
    flag = tmp_path / "go"
    context = spawn(wait_for_file, args=(str(flag),), nprocs=2, join=False)
    try:
        assert context.join(timeout=0.2) is False  # both ranks wait for the flag
        flag.touch()
        assert context.join(timeout=TIMEOUT) is True
        assert context.return_values == [True, True]
    finally:
        for p in context.processes:
            p.kill()
            p.join()


def test_unknown_options_and_other_machines_are_refused():
    with pytest.raises(ValueError, match="unknown option"):
        spawn(record_env, nprocs=1, color="red")
    with pytest.raises(ValueError, match="this machine only"):
        spawn(record_env, nprocs=2, ips="10.0.0.1,10.0.0.2")


def test_spawned_ranks_meet_in_a_collective():
    # 3 ranks: 1 + 2 + 3 = 6 on every rank.
    context = spawn(all_reduce_ranks, nprocs=3, join=False)
    try:
        assert context.join(timeout=TIMEOUT)
    finally:
        for p in context.processes:
            p.kill()
            p.join()
    assert context.return_values == [(0, 3, [6.0]), (1, 3, [6.0]), (2, 3, [6.0])]
