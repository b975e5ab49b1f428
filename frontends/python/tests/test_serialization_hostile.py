"""oar.load reads with the core's one safetensors reader: every hostile file
raises ValueError naming the file and the fault (never TypeError, KeyError,
RecursionError, a crash or a silently wrong value); shapes that overflow or
have more than 8 dims are refused at the op; oar.jit.load refuses deep JSON
and 9-D programs with a sentence."""
import json
import struct

import numpy as np
import pytest

import oar

F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


def st_file(header, data=b"", length=None):
    """A safetensors file: header (dict or raw text/bytes) and data bytes."""
    raw = header if isinstance(header, bytes) else (
        header.encode() if isinstance(header, str) else json.dumps(header).encode())
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def structured(structure, tensors=None):
    """A file as oar.save writes it, with the given oar.structure text."""
    header = dict(tensors or {"a": F32_2})
    header["__metadata__"] = {"format": "oar", "oar.structure": structure}
    return st_file(header, bytes(8))


DEEP = "[" * 100_000 + "]" * 100_000

# (case, file bytes, a fragment of the expected sentence)
HOSTILE = [
    ("empty", b"", "fewer than the 8 of the header length"),
    ("three bytes", b"\x01\x02\x03", "the file has 3 bytes"),
    ("huge header length", st_file("{}", length=1 << 63), "exceeds the limit of 100000000 bytes"),
    ("header length past the end", st_file("{}", length=3), "exceeds the 2 bytes that follow it"),
    ("garbage header", st_file("notjs"), "the header is not valid JSON"),
    ("empty header", st_file(""), "the header is not valid JSON"),
    ("invalid utf-8", st_file(b'{"\xff\xfe": 1}'), "the header is not valid JSON"),
    ("truncated JSON", st_file('{"a": {"dtype": "F32"'), "the header is not valid JSON"),
    ("header is a list", st_file("[1, 2]"), "the header is a JSON array, not an object"),
    ("header is a number", st_file("7"), "the header is a JSON number, not an object"),
    ("entry is a number", st_file({"a": 5}), "tensor 'a' is described by a JSON number, not an object"),
    ("entry is a list", st_file({"a": [1]}), "tensor 'a' is described by a JSON array"),
    ("no dtype", st_file({"a": {"shape": [2], "data_offsets": [0, 8]}}, bytes(8)), "tensor 'a' has no 'dtype'"),
    ("no shape", st_file({"a": {"dtype": "F32", "data_offsets": [0, 8]}}, bytes(8)), "tensor 'a' has no 'shape'"),
    ("no offsets", st_file({"a": {"dtype": "F32", "shape": [2]}}, bytes(8)), "has no 'data_offsets'"),
    ("unknown key", st_file({"a": dict(F32_2, x=1)}, bytes(8)), "unknown key 'x'"),
    ("dtype not a string", st_file({"a": dict(F32_2, dtype=7)}, bytes(8)), "a dtype that is not a string"),
    ("unknown dtype", st_file({"a": dict(F32_2, dtype="F31")}, bytes(8)), "the unsupported dtype 'F31'"),
    ("shape not a list", st_file({"a": dict(F32_2, shape=2)}, bytes(8)), "a shape that is not a list"),
    ("negative dim", st_file({"a": dict(F32_2, shape=[-1, 2])}, bytes(8)), "dims must be non-negative integers"),
    ("float dim", st_file({"a": dict(F32_2, shape=[2.0])}, bytes(8)), "dims must be non-negative integers"),
    ("string dim", st_file({"a": dict(F32_2, shape=["2"])}, bytes(8)), "dims must be non-negative integers"),
    ("overflowing shape, no data",
     st_file({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}}),
     "whose size overflows 64 bits"),
    ("one offset", st_file({"a": dict(F32_2, data_offsets=[0])}, bytes(8)), "expected two non-negative integers"),
    ("negative offsets", st_file({"a": dict(F32_2, data_offsets=[-8, 0])}, bytes(8)),
     "expected two non-negative integers"),
    ("offsets not ints", st_file({"a": dict(F32_2, data_offsets=["0", "8"])}, bytes(8)),
     "expected two non-negative integers"),
    ("begin after end", st_file({"a": dict(F32_2, data_offsets=[8, 0])}, bytes(8)), "with begin > end"),
    ("offsets past the data", st_file({"a": dict(F32_2, data_offsets=[0, 1000])}, bytes(8)),
     "beyond the data section of 8 bytes"),
    ("truncated data", st_file({"a": F32_2}, bytes(4)), "beyond the data section of 4 bytes"),
    ("size does not match shape", st_file({"a": dict(F32_2, data_offsets=[0, 4])}, bytes(4)),
     "has data_offsets [0, 4] but shape [2] of F32 needs 8 bytes"),
    ("overlapping tensors", st_file({"a": F32_2, "b": F32_2}, bytes(8)), "overlaps tensor"),
    ("a gap", st_file({"a": dict(F32_2, data_offsets=[4, 12])}, bytes(12)),
     "bytes [0, 4) of the data section belong to no tensor"),
    ("trailing bytes", st_file({"a": F32_2}, bytes(12)), "bytes [8, 12) of the data section belong to no tensor"),
    ("duplicate key", st_file('{"a": %s, "a": %s}' % (json.dumps(F32_2), json.dumps(F32_2)), bytes(8)),
     "has the key 'a' twice in one object"),
    ("metadata not an object", st_file({"__metadata__": 3}), "__metadata__ is not an object"),
    ("metadata value not a string", st_file({"__metadata__": {"k": 1}}), "__metadata__ entry 'k' is not a string"),
    ("deep header", st_file('{"a": {"dtype": "F32", "shape": %s, "data_offsets": [0, 0]}}' % DEEP),
     "nests arrays and objects more than 64 levels deep"),
    ("structure not JSON", structured("{not json"), "an oar.structure that is not valid JSON"),
    ("structure nested deep", structured(DEEP), "an oar.structure that nests more than 300 levels deep"),
    ("structure names a missing tensor", structured('{"__tensor__": "zz"}'),
     'it names the tensor "zz", which the file does not hold'),
    ("structure tensor key not a string", structured('{"__tensor__": [1]}'), "names the tensor [1]"),
    ("structure unknown tag", structured('{"x": 1}'), "a node is tagged 'x' with a value of type int"),
    ("structure two keys", structured('{"x": 1, "y": 2}'), "expected one of __dict__, __list__, __tuple__"),
    ("structure list tag without a list", structured('{"__list__": 3}'), "tagged '__list__' with a value of type int"),
    ("structure dict item not a pair", structured('{"__dict__": [[1, 2, 3]]}'), "not a [key, value] pair"),
    ("structure dict key not a value", structured('{"__dict__": [[[1], 2]]}'), "not a [key, value] pair"),
    ("structure list of garbage", structured('[1, 2]'), "a node is [1, 2], not a value or a tagged object"),
]


@pytest.mark.parametrize("case,data,fragment", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_load_refuses_a_hostile_file_naming_it_and_the_fault(tmp_path, case, data, fragment):
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(data)
    with pytest.raises(ValueError) as info:
        oar.load(str(path))
    assert type(info.value) is ValueError
    message = str(info.value)
    assert str(path) in message and fragment in message, message


def test_load_of_a_directory_or_missing_file_says_so(tmp_path):
    with pytest.raises(ValueError, match="is not a regular file"):
        oar.load(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="there is no file"):
        oar.load(str(tmp_path / "nothing"))


def test_every_truncation_of_a_saved_file_is_a_value_error(tmp_path):
    good = tmp_path / "good.st"
    oar.save({"w": oar.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3)), "step": 4}, str(good))
    raw = good.read_bytes()
    cut = tmp_path / "cut.st"
    for n in range(len(raw)):
        cut.write_bytes(raw[:n])
        with pytest.raises(ValueError, match="cut.st"):
            oar.load(str(cut))
    assert oar.load(str(good))["step"] == 4


def test_load_accepts_what_the_cpp_reader_accepts_and_foreign_files(tmp_path):
    # A file another tool wrote: no oar.structure, a dict of tensors by name.
    values = np.array([1.5, -2.0], np.float32)
    path = tmp_path / "foreign.safetensors"
    path.write_bytes(st_file({"b": {"dtype": "I32", "shape": [1], "data_offsets": [8, 12]}, "a": F32_2},
                             values.tobytes() + np.array([7], np.int32).tobytes()))
    back = oar.load(str(path))
    assert sorted(back) == ["a", "b"]
    np.testing.assert_array_equal(back["a"].numpy(), values)
    assert back["b"].numpy().tolist() == [7]
    # A zero-size tensor of a huge but empty shape is fine: it has no elements.
    path.write_bytes(st_file({"e": {"dtype": "F32", "shape": [4294967296, 0], "data_offsets": [0, 0]}}))
    assert oar.load(str(path))["e"].shape == [4294967296, 0]


# ---- shapes that overflow or have more than 8 dims (issue 19, items 2 and 3) ----

def test_overflowing_shapes_are_refused_at_the_op(device):
    with pytest.raises(ValueError, match=r"full: the shape \[4611686018427387904\] of float32 has more elements"):
        oar.zeros([1 << 62])
    with pytest.raises(ValueError, match=r"\[4294967296, 4294967296\] of float32 has more elements"):
        oar.zeros([1 << 32, 1 << 32])
    assert oar.zeros([1 << 32, 0]).shape == [1 << 32, 0]


def test_reshape_and_unsqueeze_refuse_nine_dims(device):
    x = oar.ones([1] * 8)
    with pytest.raises(ValueError, match=r"reshape: the shape \[1, 1, 1, 1, 1, 1, 1, 1, 1\] of float32 has 9 dims"):
        oar.reshape(x, [1] * 9)
    with pytest.raises(ValueError, match="unsqueeze: the shape .* has 9 dims; at most 8 are supported"):
        oar.unsqueeze(x, 0)
    assert oar.reshape(x, [1] * 8).sum().item() == 1.0


def _program(input_shape, result_shape, attrs=None):
    return json.dumps({
        "format": "oar.program", "version": 1,
        "inputs": [{"id": 0, "name": "x", "type": {"dtype": "f32", "shape": input_shape}}],
        "parameters": [], "constants": [],
        "ops": [{"op": "reshape", "operands": [0], "attrs": attrs or {"shape": {"ints": result_shape}},
                 "results": [{"id": 1, "type": {"dtype": "f32", "shape": result_shape}}]}],
        "outputs": [{"name": "y", "value": 1}], "updates": []})


def _write_program(tmp_path, name, text):
    path = str(tmp_path / name)
    with open(path + ".json", "w") as f:
        f.write(text)
    oar._C.save_safetensors(path + ".safetensors", {}, {})
    return path


def test_jit_load_refuses_a_nine_dim_reshape_and_deep_attrs(tmp_path):
    ok = _write_program(tmp_path, "ok", _program([2, 1], [1] * 7 + [2]))
    assert oar.jit.load(ok)(oar.ones([2, 1])).shape == [1] * 7 + [2]
    nine = _write_program(tmp_path, "nine", _program([2, 1], [1] * 8 + [2]))
    with pytest.raises(ValueError, match="nine.json: verify: operation 0 .reshape.* has 9 dims; at most 8"):
        oar.jit.load(nine)
    text = _program([2], [2])
    deep = text.replace('"attrs": {', '"attrs": {"deep": {"ints": %s}, ' % DEEP, 1)
    path = _write_program(tmp_path, "deep", deep)
    with pytest.raises(ValueError, match="deep.json: the program nests arrays and objects more than 64 levels deep"):
        oar.jit.load(path)
