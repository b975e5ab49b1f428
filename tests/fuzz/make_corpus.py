"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/):
small valid files and a few near-misses, so libFuzzer starts from inputs
that reach deep into each reader. Run from anywhere: python3 make_corpus.py"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def t(dtype, shape):
    return {"dtype": dtype, "shape": shape}


def program(inputs, params, ops, outputs, updates=(), constants=()):
    ids = {}
    values = []
    for kind, items in (("inputs", inputs), ("parameters", params), ("constants", constants)):
        for name, typ in items:
            ids[name] = len(ids)
            values.append((kind, {"id": ids[name], "name": name, "type": typ}))
    op_list = []
    for op, operands, attrs, results in ops:
        res = []
        for name, typ in results:
            ids[name] = len(ids)
            res.append({"id": ids[name], "type": typ})
        op_list.append({"op": op, "operands": [ids[o] for o in operands], "attrs": attrs, "results": res})
    return {"format": "oar.program", "version": 1,
            "inputs": [v for k, v in values if k == "inputs"],
            "parameters": [v for k, v in values if k == "parameters"],
            "constants": [v for k, v in values if k == "constants"],
            "ops": op_list,
            "outputs": [{"name": n, "value": ids[v]} for n, v in outputs],
            "updates": [{"name": n, "value": ids[v]} for n, v in updates]}


PROGRAMS = {
    "mlp": program(
        [("x", t("f32", [-1, 4]))], [("w", t("f32", [4, 3])), ("b", t("f32", [3]))],
        [("matmul", ["x", "w"], {"transpose_a": {"bool": False}, "transpose_b": {"bool": False}},
          [("mm", t("f32", [-1, 3]))]),
         ("add", ["mm", "b"], {}, [("y", t("f32", [-1, 3]))]),
         ("relu", ["y"], {}, [("r", t("f32", [-1, 3]))])],
        [("out", "r")]),
    "reshape": program(
        [("x", t("f32", [2, 3]))], [],
        [("reshape", ["x"], {"shape": {"ints": [3, -1]}}, [("y", t("f32", [3, 2]))]),
         ("sum", ["y"], {"axes": {"ints": [0]}, "keepdim": {"bool": False}}, [("s", t("f32", [2]))])],
        [("y", "y"), ("s", "s")]),
    "attrs": program(
        [("x", t("f32", [2, 3]))], [],
        [("full", [], {"shape": {"ints": [3, 2]}, "dtype": {"int": 0}, "value": {"float": 0.5},
                       "scales": {"floats": [1.0, "inf", "-inf", "nan"]}, "note": {"str": "a \"q\" \\u00fc"}},
          [("f", t("f32", [3, 2]))]),
         ("transpose", ["x"], {"perm": {"ints": [1, 0]}}, [("tx", t("f32", [3, 2]))]),
         ("add", ["tx", "f"], {}, [("z", t("f32", [3, 2]))])],
        [("z", "z")]),
    "training": program(
        [("x", t("f32", [-1, 3]))], [("w", t("f32", [3]))],
        [("mul", ["x", "w"], {}, [("p", t("f32", [-1, 3]))]),
         ("sum", ["p"], {"axes": {"ints": [0]}, "keepdim": {"bool": False}}, [("g", t("f32", [3]))]),
         ("sub", ["w", "g"], {}, [("nw", t("f32", [3]))])],
        [("g", "g")], updates=[("w", "nw")]),
}


def safetensors(entries, data, metadata=None):
    header = dict(entries)
    if metadata:
        header["__metadata__"] = metadata
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


SAFETENSORS = {
    "empty": safetensors({}, b""),
    "one_f32": safetensors({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
                           struct.pack("<2f", 1.5, -2.0)),
    "dtypes": safetensors({"d": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]},
                           "i": {"dtype": "I32", "shape": [1, 1], "data_offsets": [8, 12]},
                           "h": {"dtype": "BF16", "shape": [2], "data_offsets": [12, 16]},
                           "b": {"dtype": "BOOL", "shape": [], "data_offsets": [16, 17]},
                           "e": {"dtype": "U8", "shape": [0, 3], "data_offsets": [17, 17]}},
                          bytes(17), {"format": "oar", "oar.structure": "{\"__tensor__\": \"d\"}"}),
    "overlap": safetensors({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                            "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, bytes(8)),
    "overflow": safetensors({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}}, b""),
}


def main():
    for name, p in PROGRAMS.items():
        with open(os.path.join(HERE, "corpus", "program_json", name + ".json"), "w") as f:
            json.dump(p, f, indent=1)
            f.write("\n")
    for name, data in SAFETENSORS.items():
        with open(os.path.join(HERE, "corpus", "safetensors", name + ".safetensors"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
