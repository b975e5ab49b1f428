"""kill -9 in the middle of a save never destroys the previous file
(issue 19, items 13 and 14). strace injects SIGKILL at chosen system calls
of a child process that saves over an earlier save: at every write to the
new file, at its fsync and at each rename. After each kill, oar.load and
oar.jit.load give the previous values (or, once the save's commit rename
happened, the new ones), and the files on disk are bit-identical to one
complete save; no mix of the two ever loads."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oar

STRACE = shutil.which("strace")


def _strace_usable():
    if STRACE is None:
        return "strace is not installed (Debian package strace, in OAR_TEST_PACKAGES)"
    r = subprocess.run([STRACE, "-f", "-qq", "-o", os.devnull, "true"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"strace cannot trace here (ptrace not permitted?): {r.stderr.strip()[:200]}"
    return None


pytestmark = pytest.mark.skipif(_strace_usable() is not None, reason=str(_strace_usable()))

# The child saves `value` over the earlier save at `path`. Imports come
# first, so the save's system calls are the last ones of the process.
CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import oar
    import oar.nn as nn
    from oar.static import InputSpec
    kind, path, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
    weights = np.full([64, 64], value, np.float32)
    if kind == "save":
        # Several tensors, so the save makes several writes to kill at.
        oar.save({"w": oar.to_tensor(weights), "big": oar.full([256, 256], value, "float64"),
                  "ids": oar.to_tensor(np.arange(1000, dtype=np.int64)), "step": int(value)}, path)
    else:
        net = nn.Linear(64, 64)
        net.weight.set_value(oar.to_tensor(weights))
        net.bias.set_value(oar.to_tensor(np.full([64], value, np.float32)))
        oar.jit.save(net, path, input_spec=[InputSpec([None, 64], name="x")])
    print("saved")
""")


def _run_child(tmp_path, kind, path, value, strace_args=()):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, OAR_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [*strace_args, sys.executable, str(script), kind, path, str(value)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def _save_syscalls(tmp_path, kind, path, value):
    """The child's system calls of the save, per kind, numbered as strace's
    `when=` counts them (per thread, per system call): {name: [numbers]}."""
    log = tmp_path / "strace.log"
    r = _run_child(tmp_path, kind, path, value,
                   [STRACE, "-f", "-qq", "-o", str(log), "-e",
                    "trace=openat,write,writev,pwrite64,fsync,fdatasync,rename,renameat,renameat2"])
    assert r.returncode == 0, r.stderr
    counts, fds, calls = {}, set(), {}
    started = False
    base = os.path.basename(path)
    for line in log.read_text().splitlines():
        m = re.match(r"(\d+)\s+(\w+)\((.*)", line)
        if not m:
            continue
        pid, name, rest = m.groups()
        key = (pid, name)
        counts[key] = counts.get(key, 0) + 1
        if name == "openat" and base in rest and ("O_WRONLY" in rest or "O_RDWR" in rest):
            started = True
            fd = re.search(r"= (\d+)$", line)
            if fd:
                fds.add((pid, fd.group(1)))
            continue
        if not started:
            continue
        if name in ("write", "writev", "pwrite64"):
            fd = rest.split(",")[0]
            if (pid, fd) not in fds:
                continue
        elif name in ("fsync", "fdatasync"):
            pass  # of the file, and of the directory after a rename
        elif name.startswith("rename"):
            if base not in rest:
                continue
        else:
            continue
        calls.setdefault(name, []).append(counts[key])
    return calls


def _kill_points(calls):
    """Every rename and fsync, and the first, a middle and the last write."""
    points = []
    for name, numbers in sorted(calls.items()):
        chosen = numbers if not name.startswith("write") and name != "pwrite64" else sorted(
            {numbers[0], numbers[len(numbers) // 2], numbers[-1]})
        points += [(name, n) for n in chosen]
    return points


def _kill_at(tmp_path, kind, path, value, syscall, number):
    r = _run_child(tmp_path, kind, path, value,
                   [STRACE, "-f", "-qq", "-o", os.devnull, "-e", f"trace={syscall}",
                    "-e", f"inject={syscall}:signal=SIGKILL:when={number}"])
    assert "saved" not in r.stdout, f"the child was not killed at {syscall} #{number}"
    return r


def _files(path, suffixes):
    out = {}
    for s in suffixes:
        try:
            with open(path + s, "rb") as f:
                out[s] = f.read()
        except FileNotFoundError:
            out[s] = None
    return out


def test_oar_save_killed_at_every_stage_keeps_a_whole_file(tmp_path):
    path = str(tmp_path / "ckpt.safetensors")
    assert _run_child(tmp_path, "save", path, 1.0).returncode == 0
    old = _files(path, [""])[""]
    probe = str(tmp_path / "probe.safetensors")
    calls = _save_syscalls(tmp_path, "save", probe, 2.0)
    new = _files(probe, [""])[""]
    points = _kill_points(calls)
    assert sum(len(v) for k, v in calls.items() if "write" in k) >= 3, calls
    outcomes = []
    for syscall, number in points:
        _kill_at(tmp_path, "save", path, 2.0, syscall, number)
        now = _files(path, [""])[""]
        back = oar.load(path)
        assert now in (old, new), f"a kill at {syscall} #{number} left a file that is neither save"
        step = 1 if now == old else 2
        assert back["step"] == step and np.all(back["w"].numpy() == float(step)), (syscall, number)
        assert np.all(back["big"].numpy() == float(step)) and back["ids"].numpy().tolist() == list(range(1000))
        outcomes.append((syscall, step))
        with open(path, "wb") as f:  # the previous checkpoint again, for the next kill point
            f.write(old)
    # The file and then the directory are flushed, around one rename.
    assert any(n.startswith("rename") for n in calls) and len(calls.get("fsync", [])) >= 2, calls
    # Before the rename the previous file is there; after it, the new one.
    assert all(step == 1 for name, step in outcomes if name != "fsync")
    assert ("fsync", 1) in outcomes and ("fsync", 2) in outcomes, outcomes  # the file's, the directory's
    # Temporary files of the killed saves are removed by the next save.
    assert any(n.startswith("ckpt.safetensors.tmp-") for n in os.listdir(tmp_path))
    assert _run_child(tmp_path, "save", path, 3.0).returncode == 0
    assert not [n for n in os.listdir(tmp_path) if n.startswith("ckpt.safetensors.tmp-")]
    assert oar.load(path)["step"] == 3


def test_jit_save_killed_at_every_stage_keeps_a_matching_pair(tmp_path):
    path = str(tmp_path / "model")
    suffixes = [".json", ".safetensors", ".json.pending"]
    assert _run_child(tmp_path, "jit", path, 1.0).returncode == 0
    old = _files(path, suffixes)
    new_path = str(tmp_path / "reference")
    assert _run_child(tmp_path, "jit", new_path, 2.0).returncode == 0
    new = _files(new_path, suffixes)
    calls = _save_syscalls(tmp_path, "jit", str(tmp_path / "probe"), 2.0)
    points = _kill_points(calls)
    renames = [p for p in points if p[0].startswith("rename")]
    assert len(renames) >= 3, calls  # the program to .pending, the parameters, the program into place
    x = oar.ones([1, 64])
    outcomes = set()
    for syscall, number in points:
        _kill_at(tmp_path, "jit", path, 2.0, syscall, number)
        now = _files(path, suffixes)
        out = oar.jit.load(path)(x).numpy()
        if now[".safetensors"] == old[".safetensors"]:
            assert now[".json"] == old[".json"], (syscall, number)
            assert np.allclose(out, 65.0), (syscall, number)
            outcomes.add("old")
        else:
            assert now[".safetensors"] == new[".safetensors"], (syscall, number)
            assert new[".json"] in (now[".json"], now[".json.pending"]), (syscall, number)
            assert np.allclose(out, 130.0), (syscall, number)
            outcomes.add("new")
        for s in suffixes:  # the previous pair again, for the next kill point
            if old[s] is None:
                if os.path.exists(path + s):
                    os.remove(path + s)
            else:
                with open(path + s, "wb") as f:
                    f.write(old[s])
    assert outcomes == {"old", "new"}, outcomes
    # Killed after the parameters' rename: a complete new pair loads (the
    # state strace's kill at the last rename leaves is checked above).
    os.replace(new_path + ".safetensors", path + ".safetensors")
    with open(path + ".json.pending", "wb") as f:
        f.write(new[".json"])
    assert np.allclose(oar.jit.load(path)(x).numpy(), 130.0)
    # The next save finishes it and cleans the killed saves' temporary files.
    assert _run_child(tmp_path, "jit", path, 3.0).returncode == 0
    left = sorted(n for n in os.listdir(tmp_path) if n.startswith("model."))
    assert left == ["model.json", "model.safetensors"], left
    assert np.allclose(oar.jit.load(path)(x).numpy(), 195.0)
