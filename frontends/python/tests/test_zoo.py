"""The model zoo (tests/zoo) through to_static: per model, full_graph=True
and full_graph=False (graph breaks allowed) must give eager's outputs and
parameter gradients (zoo/harness.py). Known failures are listed in
EXPECTED_FAIL with their cause and marked xfail(strict=True), so a fix that
makes one pass shows up as an XPASS failure: then delete its entry.
scripts/run_zoo.py prints the same checks as a table (docs/zoo.md)."""
import functools

import pytest

import zoo
from zoo import harness

_SYMBOLIC_READ = "reads the values of a symbolic tensor while tracing"

EXPECTED_FAIL = {
    # -- Python that cannot be one program (the graph-break run handles them)
    ("numpy_in_forward", "full_graph"): "x.numpy() in forward reads a symbolic tensor",
    ("float_of_tensor", "full_graph"): "float(t) in forward reads a symbolic tensor",
}


def _cases():
    for model in zoo.MODELS:
        for mode in harness.MODES:
            reason = EXPECTED_FAIL.get((model.name, mode))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(model, mode, id=f"{model.name}-{mode}", marks=marks)


def test_expected_failures_name_zoo_models_and_modes():
    names = {m.name for m in zoo.MODELS}
    assert len(names) >= 45
    for name, mode in EXPECTED_FAIL:
        assert name in names and mode in harness.MODES, (name, mode)


@functools.lru_cache(maxsize=None)
def _eager(name):
    return harness.run_eager(zoo.by_name(name))


@pytest.mark.parametrize("model, mode", list(_cases()))
def test_zoo_model_matches_eager(model, mode):
    run = harness.run_static(model, mode, _eager(model.name))
    assert run.ok, f"{model.name} ({mode}): {run.reason}"
