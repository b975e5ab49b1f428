"""_C.distributed stores: bytes round trips, counters, waits across threads
and processes, timeouts that raise oar's timeout error and name the key."""
import os
import subprocess
import sys
import tempfile
import threading
import time

import pytest

import oar

dist = oar._C.distributed


def test_tcp_store_round_trips_bytes_and_str():
    master = dist.TCPStore("127.0.0.1", 0, True, job_id="py-job", timeout=5.0)
    assert master.port > 0 and master.is_master
    client = dist.TCPStore("127.0.0.1", master.port, False, job_id="py-job", timeout=5.0)
    assert client.host == "127.0.0.1" and client.port == master.port
    payload = bytes(range(256))  # every byte value, NUL included
    client.set("raw", payload)
    assert master.get("raw", timeout=5.0) == payload
    client.set("text", "héllo")
    assert master.get("text") == "héllo".encode()
    assert not client.check("absent")
    assert client.check("raw")
    assert client.add("n", 3) == 3
    assert master.add("n", -1) == 2
    assert master.get("n") == (2).to_bytes(8, "little")
    with pytest.raises(TypeError, match="bytes or str"):
        client.set("bad", 12)


def test_tcp_store_timeout_raises_the_timeout_error_and_names_key_and_address():
    master = dist.TCPStore("127.0.0.1", 0, True, timeout=5.0)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        master.get("never/set", timeout=0.3)
    took = time.monotonic() - start
    assert 0.3 <= took < 1.5
    assert str(info.value) == f"TCP store at 127.0.0.1:{master.port}: key 'never/set' did not appear within 300 ms"
    with pytest.raises(RuntimeError, match="'never/set'"):
        master.wait("never/set", timeout=0.2)


def test_tcp_store_job_id_mismatch_is_a_value_error_naming_both_ids():
    master = dist.TCPStore("127.0.0.1", 0, True, job_id="first", timeout=5.0)
    with pytest.raises(ValueError) as info:
        dist.TCPStore("127.0.0.1", master.port, False, job_id="second", timeout=5.0)
    message = str(info.value)
    assert "'first'" in message and "'second'" in message and f"127.0.0.1:{master.port}" in message


def test_blocking_get_releases_the_gil():
    master = dist.TCPStore("127.0.0.1", 0, True, timeout=5.0)
    got = []
    waiter = threading.Thread(target=lambda: got.append(master.get("late", timeout=5.0)))
    waiter.start()
    # This thread runs Python while the other blocks in get; it sets the key.
    master.set("late", b"v")
    waiter.join(timeout=10)
    assert got == [b"v"]


CHILD = r"""
import sys
import oar
store = oar._C.distributed.TCPStore("127.0.0.1", int(sys.argv[1]), False, job_id="procs", timeout=10.0)
rank = int(sys.argv[2])
store.set(f"rank/{rank}", f"hello from {rank}")
store.add("arrived", 1)
print(store.get("go", timeout=10.0).decode())
"""


def test_tcp_store_across_processes():
    master = dist.TCPStore("127.0.0.1", 0, True, job_id="procs", timeout=10.0)
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(master.port), str(r)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
    try:
        for r in range(2):
            assert master.get(f"rank/{r}", timeout=10.0) == f"hello from {r}".encode()
        assert master.add("arrived", 0) == 2
        master.set("go", "go!")
        outs = [c.communicate(timeout=20) for c in children]
        assert [c.returncode for c in children] == [0, 0], outs
        assert [o[0].strip() for o in outs] == ["go!", "go!"]
    finally:
        for c in children:
            c.kill()
            c.wait()


def test_file_and_in_process_stores():
    with tempfile.TemporaryDirectory() as d:
        for store in (dist.FileStore(os.path.join(d, "s")), dist.InProcessStore()):
            assert isinstance(store, dist.Store)
            assert not store.check("k")
            store.set("k", b"\x00\x01")
            assert store.get("k", timeout=1.0) == b"\x00\x01"
            assert store.check("k")
            assert store.add("c", 4) == 4 and store.add("c", 1) == 5
            with pytest.raises(RuntimeError, match="'missing'"):
                store.get("missing", timeout=0.05)
