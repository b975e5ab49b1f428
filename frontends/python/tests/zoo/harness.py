"""Checks one zoo model in every export mode against eager mode.

`check(model)` runs, each on a fresh build of the layer (same seed, so the
weights agree and no state leaks from one mode to the next):

1. eager: forward, and for a trainable model the backward of the scalar
   loss sum(mean(float(o)) for o in outputs), keeping the parameter grads;
2. full_graph: `oar.jit.to_static(layer, full_graph=True)`, the same
   forward and backward, compared with eager;
3. graph_break: the same with `full_graph=False`, and how many graph breaks
   it found (`forward.graph_breaks`, when the attribute exists);
4. save_load (only when the full_graph forward traced): `oar.jit.save` + `oar.jit.load`,
   outputs compared with eager; then the C++ runner `oar-run` on the saved
   program when it is built (build/bin/oar-run or $OAR_RUN_BIN).

Every failure is kept as a one-line reason; nothing raises out of check()."""
import dataclasses
import os
import shutil
import subprocess
import tempfile

import numpy as np

import oar
from oar.static import InputSpec

RTOL, ATOL = 1e-4, 1e-5
MODES = ("full_graph", "graph_break")
_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


@dataclasses.dataclass
class Result:
    name: str
    eager_ok: bool = False
    eager_reason: str = ""
    full_graph_ok: bool = False
    full_graph_reason: str = ""
    full_graph_traced: bool = False  # the full_graph forward ran, even where its values or grads are wrong
    graph_break_ok: bool = False
    graph_break_reason: str = ""
    n_breaks: object = None  # int, or None where graph_breaks is absent or the run failed
    breaks: list = dataclasses.field(default_factory=list)  # "file:line: statement <- reason"
    save_load_ok: bool = False
    save_load_reason: str = ""
    oar_run_ok: bool = False
    oar_run_reason: str = ""
    oar_run_skipped: bool = True


class BackwardError(Exception):
    """The backward of the zoo loss failed (its message: the original error's line)."""

    def __str__(self):
        return f"backward: {self.args[0]}"


@dataclasses.dataclass
class Run:
    """One mode's run: its outputs and grads as numpy, or why it failed."""
    ok: bool
    reason: str = ""
    forward_ran: bool = False  # the forward ran (its outputs or the backward may still be wrong)
    outputs: list = None
    grads: dict = None
    n_breaks: object = None
    breaks: list = None


def one_line(error):
    """`Type: first line of the message`, at most 300 characters."""
    if isinstance(error, BackwardError):
        return str(error)
    text = str(error).strip().splitlines()
    line = f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
    return line if len(line) <= 300 else line[:297] + "..."


def flatten(out):
    """The tensors of a model's output (a tensor, nested lists/tuples, dicts by sorted key)."""
    if isinstance(out, oar.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in flatten(out[k])]
    if isinstance(out, (list, tuple)):
        return [t for item in out for t in flatten(item)]
    return []  # None and Python numbers are not compared


def scalar_loss(tensors):
    """sum of the float outputs' means (the zoo's training loss)."""
    terms = [oar.mean(oar.cast(t, "float32")) for t in tensors if t.is_floating_point() and not t.stop_gradient]
    if not terms:
        return None
    loss = terms[0]
    for term in terms[1:]:
        loss = loss + term
    return loss


def _numpy(tensors):
    return [np.asarray(t.numpy()) for t in tensors]


def _forward_backward(layer, inputs, trainable):
    """Runs layer(*inputs) (and the backward when trainable): (outputs, grads) as numpy."""
    if trainable:
        outs = flatten(layer(*inputs))
        loss = scalar_loss(outs)
        grads = {}
        if loss is not None:
            try:
                loss.backward()
            except Exception as e:  # noqa: BLE001 - tell a failed backward from a failed forward
                raise BackwardError(one_line(e)) from e
            grads = {n: np.asarray(p.grad.numpy()) for n, p in layer.named_parameters() if p.grad is not None}
        return _numpy(outs), grads
    with oar.no_grad():
        return _numpy(flatten(layer(*inputs))), {}


def differences(want, got, what="output"):
    """Why two lists of arrays differ (a one-line reason), or "" when they agree."""
    if len(want) != len(got):
        return f"{what}s: {len(got)} tensors but eager gives {len(want)}"
    for i, (w, g) in enumerate(zip(want, got)):
        if w.shape != g.shape:
            return f"{what} {i}: shape {list(g.shape)} but eager gives {list(w.shape)}"
        if w.dtype != g.dtype:
            return f"{what} {i}: dtype {g.dtype} but eager gives {w.dtype}"
        if not np.allclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True):
            err = np.max(np.abs(g.astype("float64") - w.astype("float64")))
            return f"{what} {i} differs from eager (max abs error {err:.3g})"
    return ""


def grad_differences(want, got):
    for name in sorted(set(want) | set(got)):
        if name not in got:
            if np.any(want[name] != 0):
                return f"no gradient for parameter {name} (eager has one)"
            continue
        if name not in want:
            if np.any(got[name] != 0):
                return f"a gradient for parameter {name}, which eager does not give"
            continue
        why = differences([want[name]], [got[name]], what=f"grad of {name}")
        if why:
            return why.replace(" 0", "", 1)
    return ""


def run_eager(model):
    try:
        layer = model.build()
        outputs, grads = _forward_backward(layer, model.inputs(), model.trainable)
    except Exception as e:  # noqa: BLE001 - a zoo model may fail anywhere; the failure is the measurement
        return Run(False, "eager: " + one_line(e))
    return Run(True, outputs=outputs, grads=grads)


def run_static(model, mode, eager):
    """Runs `model` through to_static in `mode` ("full_graph" or "graph_break"),
    compared with the eager Run."""
    if not eager.ok:
        return Run(False, eager.reason)
    layer = model.build()
    static = oar.jit.to_static(layer, full_graph=(mode == "full_graph"))
    try:
        outputs, grads = _forward_backward(static, model.inputs(), model.trainable)
    except Exception as e:  # noqa: BLE001
        run = Run(False, one_line(e), forward_ran=isinstance(e, BackwardError))
    else:
        why = differences(eager.outputs, outputs) or grad_differences(eager.grads, grads)
        run = Run(not why, why, True, outputs, grads)
    breaks = getattr(static.forward, "graph_breaks", None)
    if breaks is not None and mode == "graph_break":
        run.n_breaks = len(breaks)
        run.breaks = [str(b) for b in breaks]
    return run


def find_oar_run():
    """$OAR_RUN_BIN, build/bin/oar-run of this checkout, or oar-run on PATH; None if none."""
    if os.environ.get("OAR_RUN_BIN"):
        return os.environ["OAR_RUN_BIN"]
    here = os.path.join(_REPO, "build", "bin", "oar-run")
    return here if os.access(here, os.X_OK) else shutil.which("oar-run")


def run_saved(model, eager, result):
    """jit.save + jit.load, then oar-run: fills the save_load and oar_run fields of `result`."""
    inputs = model.inputs()
    specs = [InputSpec.from_tensor(t, name=f"x{i}") for i, t in enumerate(inputs)]
    with tempfile.TemporaryDirectory(prefix="oar_zoo_") as tmp:
        path = os.path.join(tmp, model.name)
        try:
            layer = model.build()
            oar.jit.save(oar.jit.to_static(layer, full_graph=True), path, input_spec=specs)
            loaded = oar.jit.load(path)
            with oar.no_grad():
                got = _numpy(flatten(loaded(*inputs)))
            why = differences(eager.outputs, got)
        except Exception as e:  # noqa: BLE001
            why = one_line(e)
        result.save_load_ok, result.save_load_reason = not why, why
        if why:
            result.oar_run_reason = "not run: save+load failed"
            return
        binary = find_oar_run()
        if binary is None:
            result.oar_run_reason = "oar-run is not built"
            return
        result.oar_run_skipped = False
        in_file, out_file = os.path.join(tmp, "inputs.safetensors"), os.path.join(tmp, "outputs.safetensors")
        try:
            oar.save(dict(zip(loaded.input_names, inputs)), in_file)
            run = subprocess.run([binary, path, "--device", oar.get_device().split(":")[0], "--inputs", in_file,
                                  "--output", out_file], capture_output=True, text=True, timeout=120)
            if run.returncode != 0:
                lines = (run.stderr.strip() or run.stdout.strip() or "no message").splitlines()
                why = f"oar-run exit {run.returncode}: {lines[-1][:250]}"
            else:
                saved = oar.load(out_file)
                why = differences(eager.outputs, _numpy([saved[n] for n in loaded.output_names]))
        except Exception as e:  # noqa: BLE001
            why = one_line(e)
        result.oar_run_ok, result.oar_run_reason = not why, why


def check(model, modes=MODES + ("save_load",)):
    """Runs `model` (a ZooModel) eagerly and in each of `modes`; returns a Result."""
    result = Result(model.name)
    eager = run_eager(model)
    result.eager_ok, result.eager_reason = eager.ok, eager.reason
    for mode in MODES:
        if mode not in modes:
            continue
        run = run_static(model, mode, eager)
        setattr(result, f"{mode}_ok", run.ok)
        setattr(result, f"{mode}_reason", run.reason)
        if mode == "full_graph":
            result.full_graph_traced = run.forward_ran
        if mode == "graph_break":
            result.n_breaks, result.breaks = run.n_breaks, run.breaks or []
    if "save_load" in modes:
        if result.full_graph_traced:  # an inference export needs only the forward to trace
            run_saved(model, eager, result)
        else:
            result.save_load_reason = "not run: full_graph export failed"
            result.oar_run_reason = "not run: full_graph export failed"
    return result
