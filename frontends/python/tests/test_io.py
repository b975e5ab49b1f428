"""DataLoader batching, datasets, save/load round trips."""
import json
import struct

import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.io import DataLoader, Dataset, TensorDataset
from conftest import assert_close


class Squares(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return np.array([i, i * i], np.float32), i


def test_dataloader_batches_in_order(device):
    loader = DataLoader(Squares(), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    x, y = batches[0]
    assert x.shape == [4, 2] and y.dtype == oar.int64
    assert_close(y, [0, 1, 2, 3])
    assert_close(batches[2][1], [8, 9])
    assert len(list(DataLoader(Squares(), batch_size=4, drop_last=True))) == 2


def test_dataloader_shuffle_is_a_seeded_permutation(device):
    oar.seed(5)
    first = np.concatenate([y.numpy() for _, y in DataLoader(Squares(), batch_size=3, shuffle=True)])
    oar.seed(5)
    again = np.concatenate([y.numpy() for _, y in DataLoader(Squares(), batch_size=3, shuffle=True)])
    assert sorted(first.tolist()) == list(range(10))
    np.testing.assert_array_equal(first, again)
    assert first.tolist() != list(range(10))


def test_tensor_dataset(device):
    x = oar.to_tensor(np.arange(20, dtype=np.float32).reshape(10, 2))
    y = oar.arange(10)
    ds = TensorDataset([x, y])
    assert len(ds) == 10
    xi, yi = ds[3]
    assert_close(xi, [6, 7])
    assert yi.item() == 3
    batches = list(DataLoader(ds, batch_size=4, shuffle=True, drop_last=True))
    assert len(batches) == 2
    for bx, by in batches:
        assert bx.shape == [4, 2]
        assert_close(bx[:, 0], by.numpy() * 2)
    with pytest.raises(ValueError):
        TensorDataset([x, oar.arange(3)])


def test_collate_dicts_and_custom(device):
    class D(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return {"x": oar.full([2], float(i)), "n": i}
    batch = next(iter(DataLoader(D(), batch_size=4)))
    assert batch["x"].shape == [4, 2] and batch["n"].numpy().tolist() == [0, 1, 2, 3]
    loader = DataLoader(D(), batch_size=2, collate_fn=lambda items: len(items))
    assert list(loader) == [2, 2]


def test_save_load_state_dict(device, tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    path = tmp_path / "model.safetensors"
    oar.save(model.state_dict(), str(path))
    loaded = oar.load(str(path))
    assert list(loaded) == list(model.state_dict())
    other = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    other.set_state_dict(loaded)
    for (n, a), (_, b) in zip(model.state_dict().items(), other.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # The file is plain safetensors: 8-byte length, JSON header, raw little-endian data.
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    info = header["0.weight"]
    assert info["dtype"] == "F32" and info["shape"] == [3, 4]
    begin, end = info["data_offsets"]
    data = np.frombuffer(raw[8 + n + begin:8 + n + end], "<f4").reshape(3, 4)
    np.testing.assert_array_equal(data, model[0].weight.numpy())


def test_save_load_nested_and_dtypes(device, tmp_path):
    obj = {"step": 3, "lr": 0.5, "name": "x", "list": [oar.to_tensor([1, 2]), None],
           "bf": oar.to_tensor([1.5, 2.0]).astype("bfloat16"), "b": oar.to_tensor([True, False]),
           "np": np.arange(3, dtype=np.int32)}
    oar.save(obj, str(tmp_path / "o.st"))
    back = oar.load(str(tmp_path / "o.st"))
    assert back["step"] == 3 and back["lr"] == 0.5 and back["name"] == "x" and back["list"][1] is None
    assert back["list"][0].dtype == oar.int64 and back["list"][0].numpy().tolist() == [1, 2]
    assert back["bf"].dtype == oar.bfloat16 and back["bf"].numpy().tolist() == [1.5, 2.0]
    assert back["b"].numpy().tolist() == [True, False]
    assert isinstance(back["np"], np.ndarray) and back["np"].tolist() == [0, 1, 2]
    numpy_back = oar.load(str(tmp_path / "o.st"), return_numpy=True)
    assert isinstance(numpy_back["list"][0], np.ndarray)


def test_optimizer_state_round_trip(device, tmp_path):
    lin = nn.Linear(2, 2)
    opt = oar.optimizer.AdamW(parameters=lin.parameters())
    lin(oar.ones([1, 2])).sum().backward()
    opt.step()
    oar.save(opt.state_dict(), str(tmp_path / "opt.st"))
    opt2 = oar.optimizer.AdamW(parameters=lin.parameters())
    opt2.set_state_dict(oar.load(str(tmp_path / "opt.st")))
    for key, value in opt._accumulators.items():
        got = opt2._accumulators[key]
        assert (got == value) if isinstance(value, int) else np.array_equal(got.numpy(), value.numpy())


def test_load_rejects_garbage(tmp_path):
    p = tmp_path / "bad"
    p.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00notjs")
    with pytest.raises(ValueError, match="safetensors"):
        oar.load(str(p))


def test_dataloader_is_callable_as_in_paddle():
    # The seed demo's `for data in loader():`.
    ds = oar.io.TensorDataset([oar.to_tensor(np.arange(8, dtype=np.float32).reshape(4, 2))])
    loader = oar.io.DataLoader(ds, batch_size=2)
    called = [b[0].numpy().tolist() for b in loader()]
    iterated = [b[0].numpy().tolist() for b in loader]
    assert called == iterated == [[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]]
