"""The Python main job (examples/python/digits_cnn.py) end to end: a small
CNN on scikit-learn's 8x8 digits through oar.Model.fit reaches a test
accuracy of at least 0.95, and the saved and reloaded model predicts the
same. A few seconds with one thread."""
import os
import re
import sys

import pytest

import oar

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python"))
pytest.importorskip("sklearn", reason="scikit-learn is installed by scripts/python_env.sh")
import digits_cnn  # noqa: E402


def test_digits_cnn_main_job(tmp_path, capsys, monkeypatch):
    previous = oar._C.get_device()
    monkeypatch.setattr(sys, "argv", ["digits_cnn.py", "--device", "cpu", "--out", str(tmp_path)])
    try:
        assert digits_cnn.main() == 0
    finally:
        oar._C.set_device(previous)
    out = capsys.readouterr().out
    assert "Epoch 12/12" in out and "step 45/45 [==============================] - loss: " in out
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    assert accuracy >= 0.95
    assert "predictions identical" in out and (tmp_path / "digits_cnn.safetensors").exists()
