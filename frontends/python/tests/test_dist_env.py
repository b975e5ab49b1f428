"""Which launcher's variables init_parallel_env reads (Note [Launcher
variables] in core/src/runtime/dist_env.cpp): each family resolved in
this process, each logged by init_parallel_env, and each joined for real
by two processes."""
import logging
import os

import numpy as np
import pytest

import oar
import oar.distributed as dist
from dist_helpers import _LAUNCHER_VARS, free_port, run_ranks

DEFAULTS = dict(rank=0, world_size=1, local_rank=0, local_world_size=1, master_addr="127.0.0.1", master_port=6170,
                job_id="default", source="none")

# family -> (variables, what detect_env must say besides DEFAULTS)
FAMILIES = {
    "oar.distributed.launch": (
        {"OAR_LAUNCHER": "1", "RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
         "MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "6300", "OAR_JOB_ID": "j1", "PADDLE_TRAINER_ID": "3",
         "PADDLE_TRAINERS_NUM": "4"},
        dict(rank=3, world_size=4, local_rank=1, local_world_size=2, master_addr="10.0.0.5", master_port=6300,
             job_id="j1")),
    "torchrun": (
        {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "node7",
         "MASTER_PORT": "29500", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"},
        dict(rank=1, world_size=2, local_rank=1, local_world_size=2, master_addr="node7", master_port=29500)),
    "paddle": (
        {"PADDLE_TRAINER_ID": "2", "PADDLE_TRAINERS_NUM": "3", "PADDLE_JOB_ID": "pj",
         "PADDLE_TRAINER_ENDPOINTS": "10.0.0.1:6170,10.0.0.2:6170,10.0.0.2:6171",
         "PADDLE_CURRENT_ENDPOINT": "10.0.0.2:6171"},
        dict(rank=2, world_size=3, local_rank=1, local_world_size=2, master_addr="10.0.0.1", job_id="pj")),
    "openmpi": (
        {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
         "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "MASTER_PORT": "7000"},
        dict(rank=1, world_size=2, local_rank=1, local_world_size=2, master_port=7000)),
    "slurm": (
        {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_NODEID": "1",
         "SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_JOB_NODELIST": "node[03-05,9],gpu1", "SLURM_JOB_ID": "77"},
        dict(rank=3, world_size=4, local_rank=1, local_world_size=2, master_addr="node03", job_id="77")),
    "none": ({}, {}),
}


@pytest.fixture
def clean(monkeypatch):
    """No launcher variable of this test process leaks in; the ones
    init_parallel_env exports are restored afterwards."""
    for name in _LAUNCHER_VARS:
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch
    if dist.is_initialized():
        dist.destroy_process_group()


@pytest.mark.parametrize("family", list(FAMILIES))
def test_detect_env_per_family(clean, family):
    variables, expected = FAMILIES[family]
    for k, v in variables.items():
        clean.setenv(k, v)
    assert dist.detect_env() == {**DEFAULTS, **expected, "source": family}


def test_malformed_variables_are_sentences_naming_them(clean):
    clean.setenv("RANK", "abc")
    clean.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match=r"distributed: RANK='abc' is not an integer"):
        dist.detect_env()
    clean.delenv("RANK")
    clean.delenv("WORLD_SIZE")
    clean.setenv("SLURM_PROCID", "0")
    clean.setenv("SLURM_NTASKS", "2")
    clean.setenv("SLURM_JOB_NODELIST", "node[1-")
    with pytest.raises(ValueError, match=r"SLURM_JOB_NODELIST='node\[1-' is not a Slurm node list"):
        dist.init_parallel_env()
    assert not dist.is_initialized()
    clean.delenv("SLURM_JOB_NODELIST")
    clean.setenv("OAR_COLLECTIVE_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="OAR_COLLECTIVE_TIMEOUT='soon' is not a number of seconds"):
        dist.init_parallel_env()


# One-process jobs of each family: init_parallel_env needs no store for them.
SINGLE = {
    "oar.distributed.launch": {"OAR_LAUNCHER": "1", "RANK": "0", "WORLD_SIZE": "1", "MASTER_PORT": "6401"},
    "torchrun": {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.2", "MASTER_PORT": "6402"},
    "paddle": {"PADDLE_TRAINER_ID": "0", "PADDLE_TRAINERS_NUM": "1", "PADDLE_TRAINER_ENDPOINTS": "127.0.0.3:6403"},
    "openmpi": {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1"},
    "slurm": {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_JOB_NODELIST": "gpu[07-08]"},
    "none": {},
}
SINGLE_ADDR = {"oar.distributed.launch": ("127.0.0.1", "6401"), "torchrun": ("127.0.0.2", "6402"),
               "paddle": ("127.0.0.3", "6403"), "openmpi": ("127.0.0.1", "6170"), "slurm": ("gpu07", "6170"),
               "none": ("127.0.0.1", "6170")}


@pytest.mark.parametrize("family", list(SINGLE))
def test_init_logs_the_family_and_exports_the_store_address(clean, caplog, family):
    for k, v in SINGLE[family].items():
        clean.setenv(k, v)
    with caplog.at_level(logging.INFO, logger="oar.distributed"):
        group = dist.init_parallel_env()
    lines = [r.getMessage() for r in caplog.records if r.name == "oar.distributed"]
    said = "from no launcher variables (none)" if family == "none" else f"from the {family} variables"
    assert any(said in line for line in lines), lines
    assert (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]) == SINGLE_ADDR[family]
    assert dist.init_parallel_env() is group
    assert (group.rank, group.nranks, dist.get_rank(), dist.get_world_size()) == (0, 1, 0, 1)
    x = oar.to_tensor([1.0, 2.0])
    dist.all_reduce(x)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    dist.destroy_process_group()
    assert not dist.is_initialized()


def test_before_init(clean):
    clean.setenv("PADDLE_TRAINER_ID", "1")
    clean.setenv("PADDLE_TRAINERS_NUM", "2")
    clean.setenv("FLAGS_selected_gpus", "3")
    assert (dist.get_rank(), dist.get_world_size()) == (1, 2)
    env = dist.ParallelEnv()
    assert (env.rank, env.world_size, env.nranks, env.local_rank, env.device_id, env.dev_id) == (1, 2, 2, 1, 3, 3)
    with pytest.raises(RuntimeError, match=r"all_reduce: .*call oar.distributed.init_parallel_env\(\) first"):
        dist.all_reduce(oar.ones([1]))
    with pytest.raises(RuntimeError, match="new_group: .*init_parallel_env"):
        dist.new_group([0])


@pytest.mark.skipif(oar.device_count("mock") < 2 if "mock" in oar.get_all_device_type() else True,
                    reason="needs two mock devices")
def test_the_launcher_device_index_picks_the_rank_device(clean):
    previous = oar._C.get_device()
    try:
        oar.set_device("mock")
        clean.setenv("OAR_LOCAL_DEVICE", "1")
        group = dist.init_parallel_env()
        assert oar.get_device() == "mock:1"
        assert oar.distributed.ParallelEnv().device_id == 1
        assert group.process_group.device == "mock:1"
        dist.destroy_process_group()
        clean.setenv("OAR_DIST_DEVICE", "cpu")  # overrides both
        dist.init_parallel_env()
        assert oar.get_device() == "cpu"
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        oar._C.set_device(previous)


JOIN = """
dist.init_parallel_env()
env = dist.ParallelEnv()
results["env"] = dist.detect_env()
results["parallel_env"] = [env.rank, env.world_size, env.local_rank]
results["master"] = [os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]]
x = oar.to_tensor([float(dist.get_rank() + 1)])
dist.all_reduce(x)
results["sum"] = float(x.numpy()[0])
"""


def _two_rank_envs(family, port):
    envs = []
    for r in range(2):
        if family == "oar.distributed.launch":
            e = {"OAR_LAUNCHER": "1", "RANK": str(r), "WORLD_SIZE": "2", "LOCAL_RANK": str(r),
                 "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OAR_JOB_ID": "t"}
        elif family == "torchrun":
            e = {"RANK": str(r), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        elif family == "paddle":
            e = {"PADDLE_TRAINER_ID": str(r), "PADDLE_TRAINERS_NUM": "2",
                 "PADDLE_TRAINER_ENDPOINTS": f"127.0.0.1:{port},127.0.0.1:{port + 1}",
                 "PADDLE_CURRENT_ENDPOINT": f"127.0.0.1:{port + r}"}
        elif family == "openmpi":
            e = {"OMPI_COMM_WORLD_RANK": str(r), "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": str(r),
                 "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "MASTER_PORT": str(port)}
        else:
            e = {"SLURM_PROCID": str(r), "SLURM_NTASKS": "2", "SLURM_LOCALID": str(r),
                 "SLURM_JOB_NODELIST": f"{_LOCAL_NAME},n[2-3]", "MASTER_PORT": str(port), "SLURM_JOB_ID": "9"}
        envs.append(e)
    return envs


def _local_name():
    """'localhost' where it resolves; a bare chroot may have no /etc/hosts."""
    import socket
    try:
        socket.getaddrinfo("localhost", None, socket.AF_INET)
        return "localhost"
    except OSError:
        return "127.0.0.1"


_LOCAL_NAME = _local_name()


@pytest.mark.parametrize("family", ["oar.distributed.launch", "torchrun", "paddle", "openmpi", "slurm"])
def test_two_processes_join_through_each_family(tmp_path, family):
    port = free_port()
    ranks = run_ranks(JOIN, 2, tmp_path, envs=_two_rank_envs(family, port), timeout=60,
                      extra_env={"OAR_COLLECTIVE_TIMEOUT": "20"})
    addr = _LOCAL_NAME if family == "slurm" else "127.0.0.1"
    for r in ranks:
        assert r.results["env"]["source"] == family
        assert r.results["parallel_env"] == [r.rank, 2, r.rank]
        assert r.results["master"] == [addr, str(port)]
        assert r.results["sum"] == 3.0
