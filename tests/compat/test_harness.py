"""The compatibility harness's own logic; needs neither paddle nor oar.

    python -m pytest -q tests/compat/test_harness.py
"""
import importlib
import os
import sys
import textwrap

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness_alias  # noqa: E402
import harness_child  # noqa: E402
import harness_compare as hc  # noqa: E402
import harness_extract as he  # noqa: E402

FAKE_DOC = '''
    Adds things.

    Examples:
        .. code-block:: python
            :name: first

            >>> import paddle
            >>> x = paddle.to_tensor([1.0, 2.0])
            >>> if True:
            ...     y = x + 1
            ...
            >>> print(y)
            Tensor(shape=[2], dtype=float32, place=Place(cpu), stop_gradient=True,
            [2., 3.])

        .. code-block:: python

            >>> # doctest: +REQUIRES(env:GPU)
            >>> import paddle
            >>> paddle.set_device('gpu')

        .. code-block:: python

            >>> import paddle
            >>> z = paddle.rand([2])
            >>> # doctest: +SKIP("Random output")
            >>> print(z)
            [0.3, 0.1]
            >>> w = paddle.foo(z)
            >>> # doctest: -SKIP
            >>> v = z * 2  # doctest: +SKIP
            >>> u = z * 3
            >>> print(paddle.ones([2, 20]))
            [[1., 1., ...,
            ..., 1.]]
            ... 1.

    Returns:
        Tensor.
'''


def test_code_blocks_are_dedented_and_options_dropped():
    blocks = he.code_blocks(FAKE_DOC)
    assert len(blocks) == 3
    assert blocks[0].splitlines()[0] == ">>> import paddle"
    assert "Returns" not in blocks[2]


def test_prompts_stripped_and_output_dropped():
    code, requires, random_hint = he.parse_block(he.code_blocks(FAKE_DOC)[0])
    assert code == ("import paddle\nx = paddle.to_tensor([1.0, 2.0])\nif True:\n"
                    "    y = x + 1\n\nprint(y)\n")
    assert requires == [] and random_hint is False


def test_skip_directives_drop_lines_and_hint_random():
    code, requires, random_hint = he.parse_block(he.code_blocks(FAKE_DOC)[2])
    assert code == ("import paddle\nz = paddle.rand([2])\nv = z * 2\nu = z * 3\n"
                    "print(paddle.ones([2, 20]))\n")
    assert random_hint is True


def test_examples_from_docstring_ids_and_skip_rules():
    exs = he.examples_from_docstring("paddle.foo", "paddle", FAKE_DOC)
    assert [e.id for e in exs] == ["paddle.foo#0", "paddle.foo#1", "paddle.foo#2"]
    assert exs[0].skip == "" and exs[0].random is False
    assert exs[1].skip == "needs GPU"
    assert exs[2].skip == "" and exs[2].random is True
    one = he.examples_from_docstring("paddle.bar", "paddle", ".. code-block:: python\n\n"
                                     "    >>> import paddle\n    >>> paddle.distributed.spawn(f)\n")
    assert one[0].id == "paddle.bar" and one[0].skip == "needs distributed launch"
    only_imports = he.examples_from_docstring("p.q", "paddle", ".. code-block:: python\n\n"
                                              "    >>> import paddle\n")
    assert only_imports[0].skip.startswith("no code to run")


def test_block_without_prompts_is_plain_code():
    doc = ".. code-block:: python\n\n    import paddle\n    x = paddle.ones([2])\n\nAfter.\n"
    assert he.parse_block(he.code_blocks(doc)[0])[0] == "import paddle\nx = paddle.ones([2])\n"


@pytest.mark.parametrize("code,expected", [
    ("x = paddle.randn([2])", True),
    ("y = F.dropout(x, p=0.5)", True),
    ("x = paddle.to_tensor(np.random.rand(2, 3))", False),   # numpy is seeded alike
    ("import random\nk = random.randint(0, 3)", False),
    ("x = paddle.arange(3)", False),
    ("sampler = RandomSampler(data_source=ds)", True),
    ("loader = DataLoader(ds, batch_size=2, shuffle=True)", True),
    ("paddle.seed(2023)\nparts = paddle.io.random_split(range(10), [3, 7])", True),
])
def test_random_api_detection(code, expected):
    assert he.calls_random_api(code) is expected


def _val(arr, dtype=None, kind="tensor"):
    arr = np.asarray(arr)
    return {"kind": kind, "dtype": dtype or str(arr.dtype), "shape": list(arr.shape), "array": arr}


def _res(error=None, **values):
    return {"error": error, "values": values}


def test_compare_values_dtypes_shapes():
    ref = _res(x=_val(np.float32([1, 2, 3]), "paddle.float32"), i=_val(np.int64([1, 2])))
    assert hc.compare(ref, _res(x=_val(np.float32([1, 2, 3 + 1e-6]), "oar.float32"),
                                i=_val(np.int64([1, 2]))), False) is None
    reason, detail = hc.compare(ref, _res(x=_val(np.float32([1, 2, 3.1])),
                                          i=_val(np.int64([1, 2]))), False)
    assert reason == hc.VALUE and detail.startswith("x: max abs diff 0.1")
    reason, detail = hc.compare(ref, _res(x=_val(np.float64([1, 2, 3])),
                                          i=_val(np.int64([1, 2]))), False)
    assert (reason, detail) == (hc.DTYPE, "x: dtype float32 expected, got float64")
    reason, detail = hc.compare(ref, _res(x=_val(np.float32([1, 2])),
                                          i=_val(np.int64([1, 2]))), False)
    assert (reason, detail) == (hc.SHAPE, "x: shape [3] expected, got [2]")
    reason, _ = hc.compare(ref, _res(x=_val(np.float32([1, 2, 3])), i=_val(np.int64([1, 3]))),
                           False)
    assert reason == hc.VALUE   # ints are exact
    reason, detail = hc.compare(ref, _res(x=_val(np.float32([1, 2, 3]))), False)
    assert (reason, detail) == (hc.STRUCTURE, "missing i")


def test_compare_random_checks_shape_and_dtype_only():
    ref = _res(r=_val(np.float32([0.1, 0.7])), k=_val(np.float32([1, 2])))
    got = _res(r=_val(np.float32([0.5, 0.2])), k=_val(np.float32([1, 2])))
    assert hc.compare(ref, got, random=True) is None
    assert hc.compare(ref, got, random=False, random_names={"r"}) is None
    assert hc.compare(ref, got, random=False)[0] == hc.VALUE
    assert hc.compare(ref, _res(r=_val(np.float64([0.5, 0.2])), k=ref["values"]["k"]),
                      random=True)[0] == hc.DTYPE


def test_values_paddle_cannot_read_are_not_compared():
    # a static-graph variable under paddle, a Tensor under oar: nothing to compare
    ref = _res(x=_val(np.asarray(0), "Value", kind="other"), y=_val(np.float32([1.0])))
    got = _res(x=_val(np.float32([5.0])), y=_val(np.float32([1.0])))
    assert hc.compare(ref, got, False) is None
    # nor are the items of such a name (an empty dict under paddle)
    got = _res(x=_val(np.asarray(0), "dict", kind="other"), y=_val(np.float32([1.0])))
    got["values"]["x['@step']"] = _val(np.float32([0.0]))
    assert hc.compare(ref, got, False) is None
    # the other way round is a failure that names the type oar returned
    got = _res(x=_val(np.float32([5.0])), y=_val(np.asarray(0), "Variable", kind="other"))
    assert hc.compare(ref, got, False) == (hc.STRUCTURE,
                                           "y is a tensor in paddle but a Variable in oar")


def test_half_precision_is_compared_loosely():
    ref = _res(h=_val(np.float32([1.0]), "float16"))
    assert hc.compare(ref, _res(h=_val(np.float32([1.0005]), "float16")), False) is None
    assert hc.compare(_res(h=_val(np.float32([1.0]))), _res(h=_val(np.float32([1.0005]))),
                      False)[0] == hc.VALUE


def test_seed_dependent_names():
    a = _res(r=_val(np.float32([0.1])), c=_val(np.float32([1.0])))
    b = _res(r=_val(np.float32([0.9])), c=_val(np.float32([1.0])))
    assert hc.seed_dependent([a, b]) == {"r"}
    assert hc.seed_dependent([a]) == set()


@pytest.mark.parametrize("error,expected", [
    ({"type": "AttributeError", "message": "module 'oar' has no attribute 'cummax'"},
     (hc.MISSING, "paddle.cummax")),
    ({"type": "AttributeError", "message": "module 'oar.nn.functional' has no attribute 'glu'"},
     (hc.MISSING, "paddle.nn.functional.glu")),
    ({"type": "AttributeError", "message": "'Tensor' object has no attribute 'frac_'"},
     (hc.MISSING, "Tensor.frac_")),
    ({"type": "AttributeError", "message": "type object 'oar._C.Tensor' has no attribute 'mT'"},
     (hc.MISSING, "Tensor.mT")),
    ({"type": "ImportError", "message": "cannot import name 'Bilinear' from 'oar.nn'"},
     (hc.MISSING, "paddle.nn.Bilinear")),
    ({"type": "ImportError",
      "message": "No module named 'paddle.sparse' (oar has no module 'oar.sparse')"},
     (hc.MISSING, "paddle.sparse")),
    ({"type": "TypeError", "message": "relu() got an unexpected keyword argument 'x'"},
     (hc.EXCEPTION, "TypeError: relu() got an unexpected keyword argument 'x'")),
])
def test_classify_error(error, expected):
    assert hc.classify_error(dict(error, name=None, line=1)) == expected


def test_timeout_is_its_own_class():
    assert hc.compare(_res(), {"error": None, "values": {}, "timeout": 60}, False)[0] == hc.TIMEOUT


@pytest.fixture
def fake_packages(tmp_path, monkeypatch):
    """A package `fakeoar` with nn/functional.py, aliased from `fakepaddle`."""
    root = tmp_path / "fakeoar"
    (root / "nn").mkdir(parents=True)
    (root / "__init__.py").write_text("from . import nn\nVALUE = 1\n")
    (root / "nn" / "__init__.py").write_text("from . import functional\n")
    (root / "nn" / "functional.py").write_text("def relu(x):\n    return max(x, 0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = harness_alias.install("fakepaddle", "fakeoar")
    yield
    sys.meta_path.remove(finder)
    for name in list(sys.modules):
        if name.split(".")[0] in ("fakepaddle", "fakeoar"):
            del sys.modules[name]


def test_alias_maps_every_submodule(fake_packages):
    import fakeoar
    import fakepaddle
    import fakepaddle.nn.functional as F
    from fakepaddle.nn import functional
    assert fakepaddle is fakeoar and fakepaddle.VALUE == 1
    assert F is fakeoar.nn.functional and functional is F and F.relu(-2) == 0
    assert importlib.import_module("fakepaddle.nn") is fakeoar.nn


def test_alias_missing_submodule_names_it(fake_packages):
    with pytest.raises(ImportError, match=r"fakepaddle\.vision") as info:
        importlib.import_module("fakepaddle.vision.models")
    assert info.value.name == "fakepaddle.vision"
    with pytest.raises(ImportError, match="cannot import name 'conv9'"):
        exec("from fakepaddle.nn.functional import conv9", {})


class FakeTensor:
    def __init__(self, data, dtype="float32"):
        self.data, self.dtype = np.asarray(data, dtype=np.float32), f"fake.{dtype}"
        self.shape = list(self.data.shape)

    def astype(self, dtype):
        return FakeTensor(self.data, dtype)

    def numpy(self):
        return self.data


def test_collect_flattens_tensors_lists_dicts_and_scalars():
    ns = {"t": FakeTensor([1, 2]), "pair": (FakeTensor([3]), 4), "d": {"w": FakeTensor([5], "float16")},
          "a": np.int32([7, 8]), "s": "text", "f": len, "_hidden": FakeTensor([0]), "n": 2.5,
          "npf": np.float64(0.5)}
    out = harness_child.collect(ns, FakeTensor)
    assert sorted(out) == ["a", "d['w']", "f", "n", "npf", "pair[0]", "pair[1]", "s", "t"]
    assert out["f"][:2] == ("other", "builtin_function_or_method") and out["s"][1] == "str"
    assert out["npf"][:2] == out["n"][:2] == ("scalar", "float")   # np.float64 is a float
    kind, dtype, shape, arr = out["t"]
    assert (kind, dtype, shape, arr.tolist()) == ("tensor", "float32", [2], [1.0, 2.0])
    assert out["d['w']"][1] == "float16" and out["pair[1]"][:2] == ("scalar", "int")
    assert out["a"][:3] == ("ndarray", "int32", [2])


def test_child_save_and_load_round_trip(tmp_path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    run_compat = pytest.importorskip("run_compat")
    records = {"x": ("tensor", "int64", [2], np.int64([1, 2]))}
    path = str(tmp_path / "r.npz")
    harness_child.save(path, [(None, records), ({"type": "E", "message": "m"}, {})])
    runs = run_compat.load_result(path)
    assert runs[0]["values"]["x"]["array"].tolist() == [1, 2]
    assert runs[1]["error"]["type"] == "E"


def test_child_runs_an_example_end_to_end(tmp_path, fake_packages):
    code = textwrap.dedent("""
        import numpy as np
        a = np.arange(3) * 2
        b = a.sum()
    """)
    # the child's run_once seeds paddle: give it a module named paddle
    fake = type(sys)("paddle")
    fake.seed = lambda s: None
    fake.Tensor = FakeTensor
    sys.modules["paddle"] = fake
    try:
        error, records = harness_child.run_once(code, 1, "paddle")
    finally:
        del sys.modules["paddle"]
    assert error is None
    assert records["a"][3].tolist() == [0, 2, 4] and int(records["b"][3]) == 6


def test_report_table_and_failure_groups():
    run_compat = pytest.importorskip("run_compat")
    records = [
        {"id": "paddle.a", "area": "paddle", "status": "pass", "reason": "", "detail": ""},
        {"id": "paddle.b", "area": "paddle", "status": "fail", "reason": hc.MISSING,
         "detail": "paddle.zeta"},
        {"id": "paddle.c", "area": "paddle", "status": "fail", "reason": hc.MISSING,
         "detail": "paddle.zeta"},
        {"id": "paddle.d", "area": "paddle", "status": "skip", "reason": "needs GPU", "detail": ""},
        {"id": "paddle.fft.f", "area": "fft", "status": "fail", "reason": hc.VALUE,
         "detail": "y: max abs diff 1"},
    ]
    table = run_compat.area_table(records)
    assert table[2] == "| paddle | 4 | 1 | 3 | 1 | 33.3 |"
    assert table[3] == "| fft | 1 | 0 | 1 | 0 | 0.0 |"
    assert table[4] == "| **overall** | 5 | 1 | 4 | 1 | 25.0 |"
    lines = run_compat.failure_lines(records)
    assert "### missing name (2)" in lines
    assert "- `paddle.zeta` (2): paddle.b, paddle.c" in lines
    assert "- paddle.fft.f (y: max abs diff 1)" in lines
    assert run_compat.skip_lines(records) == ["- needs GPU (1): paddle.d"]
    text = run_compat.failures_text(records, "3.3.1", "today", "oar x")
    assert "  2  paddle.zeta   <- paddle.b, paddle.c" in text
