import numpy as np
import pytest

import oar
from conftest import assert_close

rng = np.random.default_rng(1)


def _frames_numpy(x, n_fft, hop, window):
    padded = np.pad(x, n_fft // 2, mode="reflect")
    count = 1 + (len(padded) - n_fft) // hop
    return np.stack([padded[i * hop:i * hop + n_fft] * window for i in range(count)])


def test_stft_matches_numpy_frames():
    x = rng.standard_normal(200)
    window = np.hanning(32)
    got = oar.signal.stft(oar.to_tensor(x), n_fft=32, hop_length=8, window=oar.to_tensor(window))
    expected = np.fft.rfft(_frames_numpy(x, 32, 8, window), axis=-1).T
    assert got.shape == [17, 26]
    assert_close(got, expected, rtol=1e-9, atol=1e-9)
    full = oar.to_tensor(x).stft(n_fft=32, onesided=False, normalized=True)
    assert_close(full, np.fft.fft(_frames_numpy(x, 32, 8, np.ones(32)), axis=-1).T / np.sqrt(32), atol=1e-9)


def test_istft_inverts_stft_and_is_differentiable():
    x = oar.to_tensor(rng.standard_normal((2, 300)), stop_gradient=False)
    window = oar.to_tensor(np.hanning(64))
    y = oar.signal.stft(x, n_fft=64, hop_length=16, window=window)
    back = y.istft(n_fft=64, hop_length=16, window=window, length=300)
    assert_close(back, x.numpy(), atol=1e-10)
    back.sum().backward()
    assert_close(x.grad, np.ones((2, 300)), atol=1e-9)


def test_errors_name_the_function():
    with pytest.raises(ValueError, match="stft: onesided"):
        oar.signal.stft(oar.to_tensor(np.ones(64) * (1 + 1j)), n_fft=16)
    with pytest.raises(ValueError, match="stft: win_length"):
        oar.signal.stft(oar.ones([64]), n_fft=16, win_length=32)
    with pytest.raises(ValueError, match="istft: x has 5 frequency bins"):
        oar.signal.istft(oar.to_tensor(np.ones((5, 4)) * 1j), n_fft=16)
