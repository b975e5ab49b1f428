"""oar.save / oar.load with a file-like object (io.BytesIO) instead of a path."""
from io import BytesIO

import numpy as np
import pytest

import oar


def test_records_follow_each_other_in_one_stream():
    layer = oar.nn.Linear(5, 3)
    state = layer.state_dict()
    t = oar.to_tensor([[1.0, 2.0, 3.0]])
    stream = BytesIO()
    oar.save(state, stream)
    oar.save({"t": t, "step": 7, "names": ["a", "b"]}, stream)
    stream.seek(0)
    loaded = oar.load(stream)
    assert list(loaded) == ["weight", "bias"]
    np.testing.assert_array_equal(loaded["weight"].numpy(), state["weight"].numpy())
    second = oar.load(stream)
    np.testing.assert_array_equal(second["t"].numpy(), [[1.0, 2.0, 3.0]])
    assert second["step"] == 7 and second["names"] == ["a", "b"]
    with pytest.raises(ValueError, match="load: cannot read a safetensors record from the stream BytesIO"):
        oar.load(stream)


def test_broken_stream_raises():
    with pytest.raises(ValueError, match="its header of 1000 bytes is cut short"):
        oar.load(BytesIO((1000).to_bytes(8, "little") + b"{}"))
    with pytest.raises(ValueError, match="its header is broken"):
        oar.load(BytesIO((2).to_bytes(8, "little") + b"[]"))
