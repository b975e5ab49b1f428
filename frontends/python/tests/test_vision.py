"""oar.vision: model shapes and parameter counts (counted in PaddlePaddle 3.3),
a LeNet training step, transforms against numpy, local datasets; and, when a
paddle install is present, the same state_dict names and outputs as Paddle."""
import gzip
import os
import random

import numpy as np
import pytest

import oar
from oar import vision
from oar.vision import models as M
from oar.vision import transforms as T
from oar.vision.transforms import functional as TF
from conftest import assert_close
from paddle_ref import run_paddle

rng = np.random.default_rng(3)


def counts(model):
    """(trainable parameters, elements in the state dict, state dict entries).
    Paddle keeps BatchNorm statistics as non-trainable parameters and oar as
    buffers; both appear in the state dict."""
    trainable = sum(int(np.prod(p.shape)) for p in model.parameters() if not p.stop_gradient)
    sd = model.state_dict()
    return trainable, sum(int(np.prod(v.shape)) for v in sd.values()), len(sd)


# Counted with paddle.vision.models in PaddlePaddle 3.3.
PADDLE_COUNTS = [
    ("LeNet", {}, 61610, 61610, 10),
    ("resnet18", {}, 11689512, 11699112, 102),
    ("resnet34", {}, 21797672, 21814696, 182),
    ("resnet50", {}, 25557032, 25610152, 267),
    ("resnet18", {"num_classes": 10}, 11181642, 11191242, 102),
    ("resnext50_32x4d", {}, 25028904, 25097128, 267),
    ("vgg11", {}, 132863336, 132863336, 22),
    ("vgg16", {"num_classes": 0}, 14714688, 14714688, 26),
    ("vgg16", {"batch_norm": True, "num_classes": 0}, 14723136, 14731584, 78),
    ("mobilenet_v2", {}, 3504872, 3538984, 262),
    ("mobilenet_v2", {"scale": 0.5}, 1968680, 1987224, 262),
    ("mobilenet_v1", {"scale": 0.25}, 470072, 475544, 137),
    ("mobilenet_v3_small", {}, 2542856, 2554968, 210),
    ("mobilenet_v3_large", {}, 5483032, 5507432, 266),
    ("mobilenet_v3_large", {"scale": 0.5, "num_classes": 10}, 1099986, 1112338, 266),
    ("shufflenet_v2_x1_0", {}, 2278604, 2294784, 282),
    ("densenet121", {}, 7978856, 8062504, 606),
    ("googlenet", {}, 11535736, 11535736, 69),
    ("inception_v3", {}, 23834568, 23869000, 472),
    ("shufflenet_v2_x0_25", {"num_classes": 10}, 95818, 99842, 282),
    ("alexnet", {}, 61100840, 61100840, 16),
    ("squeezenet1_0", {}, 1248424, 1248424, 52),
    ("squeezenet1_1", {"num_classes": 10}, 727626, 727626, 52),
]


@pytest.mark.parametrize("name,kwargs,trainable,total,entries", PADDLE_COUNTS)
def test_parameter_counts_match_paddle(name, kwargs, trainable, total, entries):
    assert counts(getattr(M, name)(**kwargs)) == (trainable, total, entries)


SHAPES = [
    (lambda: M.LeNet(), [2, 1, 28, 28], [2, 10]),
    (lambda: M.LeNet(num_classes=0), [1, 1, 28, 28], [1, 16, 5, 5]),
    (lambda: M.resnet18(num_classes=10), [1, 3, 32, 32], [1, 10]),
    (lambda: M.resnet18(num_classes=0, with_pool=False), [1, 3, 64, 64], [1, 512, 2, 2]),
    (lambda: M.resnet50(num_classes=0), [1, 3, 32, 32], [1, 2048, 1, 1]),
    (lambda: M.vgg11(batch_norm=True, num_classes=0, with_pool=False), [1, 3, 32, 32], [1, 512, 1, 1]),
    (lambda: M.vgg11(num_classes=0), [1, 3, 32, 32], [1, 512, 7, 7]),
    (lambda: M.mobilenet_v2(scale=0.5, num_classes=10), [1, 3, 32, 32], [1, 10]),
    (lambda: M.mobilenet_v1(scale=0.25, num_classes=7), [1, 3, 32, 32], [1, 7]),
    (lambda: M.alexnet(num_classes=0), [1, 3, 64, 64], [1, 256, 1, 1]),
    (lambda: M.DenseNet(layers=121, num_classes=0, with_pool=False, dropout=0.2), [1, 3, 64, 64], [1, 1024, 2, 2]),
    (lambda: M.shufflenet_v2_x0_33(num_classes=0, with_pool=False), [1, 3, 64, 64], [1, 512, 2, 2]),
    (lambda: M.mobilenet_v3_small(scale=0.5, num_classes=0, with_pool=False), [1, 3, 64, 64], [1, 288, 2, 2]),
    (lambda: M.squeezenet1_1(num_classes=10), [1, 3, 64, 64], [1, 10]),
    (lambda: M.squeezenet1_0(num_classes=10, with_pool=False), [1, 3, 64, 64], [1, 10, 2, 2]),
]


@pytest.mark.parametrize("make,shape,out_shape", SHAPES)
def test_output_shapes(make, shape, out_shape):
    model = make()
    model.eval()
    out = model(oar.to_tensor(rng.standard_normal(shape).astype(np.float32)))
    assert list(out.shape) == out_shape
    assert np.isfinite(out.numpy()).all()


def test_pretrained_raises_a_clear_error():
    for build in (M.resnet18, M.vgg16, M.mobilenet_v2, M.alexnet, M.squeezenet1_1):
        with pytest.raises(ValueError, match="pretrained=True .*no network"):
            build(pretrained=True)
    with pytest.raises(ValueError, match="depth"):
        M.ResNet(M.BasicBlock, depth=20)


def test_lenet_training_step_lowers_the_loss():
    oar.seed(0)
    model = M.LeNet()
    opt = oar.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    x = oar.to_tensor(rng.standard_normal((16, 1, 28, 28)).astype(np.float32))
    y = oar.to_tensor(rng.integers(0, 10, (16, 1)).astype(np.int64))
    loss_fn = oar.nn.CrossEntropyLoss()
    losses = []
    for _ in range(8):
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.8


# ---- transforms ----

def test_to_tensor_and_normalize():
    img = rng.integers(0, 256, (4, 5, 3)).astype(np.uint8)
    t = TF.to_tensor(img)
    assert t.dtype == oar.float32 and list(t.shape) == [3, 4, 5]
    assert_close(t, img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert list(TF.to_tensor(img, "HWC").shape) == [4, 5, 3]
    assert list(TF.to_tensor(img[:, :, 0]).shape) == [1, 4, 5]
    floats = img.astype(np.float64)
    assert_close(TF.to_tensor(floats), floats.transpose(2, 0, 1))  # not scaled
    mean, std = [0.5, 0.4, 0.3], [0.2, 0.3, 0.4]
    ref = (img.transpose(2, 0, 1) / 255.0 - np.reshape(mean, (3, 1, 1))) / np.reshape(std, (3, 1, 1))
    assert_close(T.Normalize(mean, std)(t), ref, rtol=1e-5, atol=1e-6)
    hwc = T.Normalize(mean, std, data_format="HWC")(img)
    assert hwc.dtype == np.float32
    assert_close(hwc, (img - np.float32(mean)) / np.float32(std), rtol=1e-5)
    assert_close(T.Normalize(mean, std, data_format="HWC", to_rgb=True)(img),
                 (img[..., ::-1] - np.float32(mean)) / np.float32(std), rtol=1e-5)


def test_resize_bilinear_and_nearest():
    img = np.array([[0, 4], [8, 12]], dtype=np.float32)[:, :, None]
    # Pixel centres: output x = 0.25 * (2 d - 1), clamped to the edges.
    expected = [[0, 1, 3, 4], [2, 3, 5, 6], [6, 7, 9, 10], [8, 9, 11, 12]]
    assert_close(TF.resize(img, (4, 4))[:, :, 0], expected)
    assert_close(TF.resize(img, (4, 4), "nearest")[:, :, 0], np.repeat(np.repeat([[0, 4], [8, 12]], 2, 0), 2, 1))
    u8 = (np.arange(12, dtype=np.uint8) * 20).reshape(3, 4, 1)
    down = TF.resize(u8, (3, 2))
    assert down.dtype == np.uint8
    assert_close(down[:, :, 0], np.rint((u8[:, 0::2, 0].astype(float) + u8[:, 1::2, 0]) / 2))
    # An int resizes the shorter side and keeps the aspect ratio.
    assert TF.resize(np.zeros((20, 10, 3)), 5).shape == (10, 5, 3)
    assert TF.resize(np.zeros((10, 30)), 5).shape == (5, 15)
    t = oar.to_tensor(rng.standard_normal((3, 6, 8)).astype(np.float32))
    assert list(T.Resize((3, 4))(t).shape) == [3, 3, 4]
    assert_close(T.Resize((3, 4))(t), TF.resize(t.numpy().transpose(1, 2, 0), (3, 4)).transpose(2, 0, 1))
    with pytest.raises(ValueError, match="interpolation"):
        TF.resize(img, (3, 3), "lanczos")
    ramp = np.arange(6, dtype=np.float64)[None, :, None] * np.ones((3, 1, 1))
    assert_close(TF.resize(ramp, (3, 6), "bicubic"), ramp)  # same size: unchanged
    with pytest.raises(TypeError, match="size"):
        T.Resize((1, 2, 3))


def test_crops_and_flips():
    img = rng.integers(0, 256, (6, 8, 3)).astype(np.uint8)
    assert_close(TF.crop(img, 1, 2, 3, 4), img[1:4, 2:6])
    assert_close(T.CenterCrop(4)(img), img[1:5, 2:6])
    assert_close(TF.center_crop(img, (3, 5)), img[2:5, 2:7])  # round((6 - 3) / 2) = 2
    assert_close(TF.hflip(img), img[:, ::-1])
    assert_close(TF.vflip(img), img[::-1])
    t = oar.to_tensor(img.transpose(2, 0, 1).astype(np.float32))
    assert_close(TF.hflip(t), img.transpose(2, 0, 1)[:, :, ::-1])
    assert_close(TF.vflip(t), img.transpose(2, 0, 1)[:, ::-1])
    assert_close(T.CenterCrop(4)(t), img[1:5, 2:6].transpose(2, 0, 1))
    assert_close(T.RandomHorizontalFlip(1.0)(img), img[:, ::-1])
    assert_close(T.RandomVerticalFlip(0.0)(img), img)
    assert_close(T.Transpose()(img), img.transpose(2, 0, 1))
    random.seed(4)
    out = T.RandomCrop(4, padding=2)(img)
    padded = np.pad(img, ((2, 2), (2, 2), (0, 0)))
    windows = [padded[i:i + 4, j:j + 4] for i in range(7) for j in range(9)]
    assert out.shape == (4, 4, 3) and any((w == out).all() for w in windows)
    assert T.RandomCrop((8, 10), pad_if_needed=True)(img).shape == (8, 10, 3)
    with pytest.raises(ValueError, match="does not fit in the 6x8 image"):
        TF.center_crop(img, 7)
    with pytest.raises(ValueError, match="does not fit"):
        TF.crop(t, 4, 0, 3, 3)
    with pytest.raises(ValueError, match="smaller than the crop size"):
        T.RandomCrop(10)(img)
    random.seed(0)
    np.random.seed(0)
    assert T.RandomResizedCrop(5)(img).shape == (5, 5, 3)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_modes_match_numpy(mode):
    img = rng.integers(0, 256, (4, 5, 2)).astype(np.uint8)
    np_mode = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}[mode]
    out = T.Pad((1, 2, 3, 0), padding_mode=mode)(img)  # left, top, right, bottom
    assert_close(out, np.pad(img, ((2, 0), (1, 3), (0, 0)), mode=np_mode))
    assert_close(TF.pad(img, (2, 1), padding_mode=mode), np.pad(img, ((1, 1), (2, 2), (0, 0)), mode=np_mode))
    if mode == "constant":
        filled = TF.pad(img, 1, fill=(7, 9))
        assert (filled[0, :, 0] == 7).all() and (filled[0, :, 1] == 9).all()
        t = oar.to_tensor(img.transpose(2, 0, 1).astype(np.float32))
        assert_close(TF.pad(t, 1), np.pad(img, ((1, 1), (1, 1), (0, 0))).transpose(2, 0, 1))
    with pytest.raises(ValueError, match="padding"):
        T.Pad((1, 2, 3))


def test_color_transforms():
    img = rng.integers(0, 256, (3, 4, 3)).astype(np.uint8)
    assert_close(TF.adjust_brightness(img, 1.5), np.clip(img * 1.5, 0, 255).astype(np.uint8))
    gray = img.astype(float) @ np.array([0.2989, 0.587, 0.114])
    contrast = np.clip(gray.mean() + 0.5 * (img - gray.mean()), 0, 255).astype(np.uint8)
    assert_close(TF.adjust_contrast(img, 0.5), contrast)
    assert_close(TF.adjust_contrast(img, 0.0), np.full(img.shape, gray.mean()).astype(np.uint8))
    assert_close(TF.to_grayscale(img)[:, :, 0], np.rint(gray))
    assert TF.to_grayscale(img, 3).shape == (3, 4, 3)
    assert_close(TF.adjust_saturation(img, 0.0), np.clip(np.repeat(gray[..., None], 3, 2), 0, 255).astype(np.uint8))
    assert T.BrightnessTransform(0.0).value is None
    random.seed(1)
    factor = random.Random(1).uniform(0.6, 1.4)
    assert_close(T.BrightnessTransform(0.4)(img), np.clip(img * factor, 0, 255).astype(np.uint8))
    t = oar.to_tensor(img.transpose(2, 0, 1) / 255.0)
    assert_close(TF.adjust_brightness(t, 2.0), np.clip(img.transpose(2, 0, 1) / 255.0 * 2, 0, 1), rtol=1e-6)
    with pytest.raises(ValueError, match="non-negative"):
        TF.adjust_brightness(img, -1)


def test_hue_and_color_jitter():
    import colorsys
    img = rng.random((3, 4, 3))
    shifted = np.array([[colorsys.hsv_to_rgb((h + 0.25) % 1.0, s, v)
                         for h, s, v in (colorsys.rgb_to_hsv(*p) for p in row)] for row in img])
    assert_close(TF.adjust_hue(img, 0.25), shifted, rtol=1e-10)
    assert_close(TF.adjust_hue(img[:, :, :1], 0.25), img[:, :, :1])
    with pytest.raises(ValueError, match="hue_factor"):
        TF.adjust_hue(img, 0.7)
    assert T.HueTransform(0.0).value is None and T.HueTransform(0.2).value == [-0.2, 0.2]
    u8 = rng.integers(0, 256, (5, 5, 3)).astype(np.uint8)
    out = T.ColorJitter(0.4, 0.4, 0.4, 0.1)(u8)
    assert out.shape == u8.shape and out.dtype == np.uint8
    assert_close(T.ColorJitter()(u8), u8)  # all factors 0: identity


def test_rotate_affine_perspective_on_arrays():
    img = rng.integers(0, 256, (4, 4, 3)).astype(np.uint8)
    assert_close(TF.rotate(img, 90), np.rot90(img))  # counter-clockwise
    assert_close(TF.rotate(img, 180, "bilinear"), img[::-1, ::-1])
    assert TF.rotate(np.zeros((4, 6, 1)), 90, expand=True).shape == (6, 4, 1)
    shifted = TF.affine(img, 0, (1, 0), 1.0, 0)
    assert_close(shifted[:, 1:], img[:, :-1])
    assert (shifted[:, 0] == 0).all()
    assert_close(TF.affine(img, 0, (0, 0), 1.0, 0, fill=(9, 8, 7))[:, :], img)
    corners = [[0, 0], [3, 0], [3, 3], [0, 3]]
    assert_close(TF.perspective(img, corners, corners), img)
    random.seed(2)
    assert T.RandomRotation(30)(img).shape == img.shape
    assert T.RandomAffine(10, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=(-5, 5, -5, 5))(img).shape == img.shape
    assert_close(T.RandomPerspective(prob=0.0)(img), img)
    assert T.RandomPerspective(prob=1.0, distortion_scale=0.3)(img).shape == img.shape
    with pytest.raises(ValueError, match="interpolation"):
        TF.rotate(img, 10, "bicubic")
    with pytest.raises(ValueError, match="translate"):
        T.RandomAffine(0, translate=(2, 0))


def test_compose_pipeline_and_tuple_inputs():
    img = (np.arange(8 * 6 * 3) % 256).astype(np.uint8).reshape(8, 6, 3)
    pipeline = T.Compose([T.Resize(4), T.CenterCrop(4), T.ToTensor(), T.Normalize(0.5, 0.5)])
    out = pipeline(img)
    assert list(out.shape) == [3, 4, 4]
    ref = TF.center_crop(TF.resize(img, (5, 4)), 4).transpose(2, 0, 1) / 255.0
    assert_close(out, (ref - 0.5) / 0.5, rtol=1e-5, atol=1e-6)
    image, label = T.Transpose()((img, 3))
    assert image.shape == (3, 8, 6) and label == 3
    assert "Resize" in repr(pipeline)
    with pytest.raises(TypeError, match="numpy array"):
        TF.hflip([[1, 2]])


# ---- datasets ----

def test_dataset_folder_and_image_folder(tmp_path):
    for cls, n in (("cat", 2), ("dog", 3)):
        os.makedirs(tmp_path / cls)
        for i in range(n):
            np.save(tmp_path / cls / f"{i}.npy", np.full((2, 2, 3), i, np.uint8))
    (tmp_path / "dog" / "notes.txt").write_text("skipped")
    ds = vision.datasets.DatasetFolder(str(tmp_path), loader=np.load, extensions=(".npy",), transform=T.ToTensor())
    assert ds.classes == ["cat", "dog"] and ds.targets == [0, 0, 1, 1, 1] and len(ds) == 5
    sample, target = ds[3]
    assert target == 1 and list(sample.shape) == [3, 2, 2]
    assert_close(sample, np.full((3, 2, 2), 1 / 255.0), rtol=1e-6)
    flat = vision.datasets.ImageFolder(str(tmp_path), loader=np.load, extensions=(".npy",))
    assert len(flat) == 5 and flat[0][0].shape == (2, 2, 3)
    with pytest.raises(RuntimeError, match="found no files"):
        vision.datasets.DatasetFolder(str(tmp_path), loader=np.load)


def _write_idx(path, array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def test_mnist_reads_local_files_and_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(RuntimeError, match="MNIST.*does not download"):
        vision.datasets.MNIST(mode="test")
    with pytest.raises(RuntimeError, match="FashionMNIST"):
        vision.datasets.FashionMNIST(mode="train", download=True)
    images = rng.integers(0, 256, (3, 28, 28))
    _write_idx(tmp_path / "img.gz", images)
    _write_idx(tmp_path / "lab.gz", np.array([7, 1, 4]))
    ds = vision.datasets.MNIST(str(tmp_path / "img.gz"), str(tmp_path / "lab.gz"), mode="test", backend="cv2")
    image, label = ds[2]
    assert len(ds) == 3 and image.dtype == np.float32 and label.dtype == np.int64
    assert_close(image, images[2])
    assert label.tolist() == [4]
    with pytest.raises(ValueError, match="mode"):
        vision.datasets.MNIST(mode="val")


# ---- against PaddlePaddle ----

PADDLE_SCRIPT = """
from paddle.vision import models as M
from paddle.vision.transforms import functional as TF
paddle.seed(5)
x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype("float32")
builds = {"lenet": "M.LeNet()", "resnet18": "M.resnet18(num_classes=10)",
          "mnv2": "M.mobilenet_v2(scale=0.5, num_classes=10)",
          "sqz": "M.squeezenet1_1(num_classes=10)", "vggbn": "M.vgg11(batch_norm=True, num_classes=0)",
          "mnv1": "M.mobilenet_v1(scale=0.25, num_classes=10)", "rx": "M.resnext50_32x4d(num_classes=0)",
          "mnv3s": "M.mobilenet_v3_small(num_classes=10)", "mnv3l": "M.mobilenet_v3_large(scale=0.5)",
          "shuf": "M.shufflenet_v2_x0_5(num_classes=10)", "shufsw": "M.shufflenet_v2_swish(num_classes=0)",
          "dense": "M.densenet121(num_classes=10)"}
for name, code in builds.items():
    model = eval(code)
    model.eval()
    for k, v in model.state_dict().items():
        save(**{f"{name}/{k}": v})
    inp = x[:, :1, :28, :28] if name == "lenet" else x
    save(**{f"out/{name}": model(paddle.to_tensor(inp))})
t = paddle.to_tensor(x[0, :, :6, :7])
for mode in ("bilinear", "nearest", "bicubic"):
    for size in ((4, 9), (8, 3), (12, 14)):
        save(**{f"resize/{mode}/{size[0]}x{size[1]}": TF.resize(t, size, mode)})
u = paddle.to_tensor(1 / (1 + np.exp(-x[1, :, :5, :6])))
w = paddle.to_tensor(x[1, :, :6, :8])
warps = {
    "rot30n": lambda: TF.rotate(w, 30), "rot30b": lambda: TF.rotate(w, 30, "bilinear", fill=0.5),
    "rot45e": lambda: TF.rotate(w, 45, expand=True), "rotc": lambda: TF.rotate(w, -70, "bilinear", center=(2, 1)),
    "aff": lambda: TF.affine(w, 20, (2, 1), 1.2, (10, 5), "bilinear"),
    "affn": lambda: TF.affine(w, -15, (-1, 0), 0.8, 7, fill=1.0),
    "persp": lambda: TF.perspective(w, [[0, 0], [7, 0], [7, 5], [0, 5]], [[1, 0], [6, 1], [7, 5], [0, 4]], "bilinear"),
}
for name, fn in warps.items():
    save(**{f"warp/{name}": fn()})
r = np.random.default_rng(4)
xy = r.uniform(0, 20, (30, 2))
boxes = np.concatenate([xy, xy + r.uniform(2, 12, (30, 2))], 1).astype("float32")
scores = r.random(30).astype("float32")
cats = r.integers(0, 3, 30)
save(nms_boxes=boxes, nms_scores=scores, nms_cats=cats)
bt, st, ct = paddle.to_tensor(boxes), paddle.to_tensor(scores), paddle.to_tensor(cats)
save(nms_plain=paddle.vision.ops.nms(bt, 0.3), nms_scored=paddle.vision.ops.nms(bt, 0.5, st),
     nms_cat=paddle.vision.ops.nms(bt, 0.4, st, ct, [0, 1, 2], top_k=8))
goog = M.googlenet(num_classes=10)
goog.eval()
for k, v in goog.state_dict().items():
    save(**{f"goog/{k}": v})
big = np.random.default_rng(2).standard_normal((1, 3, 224, 224)).astype("float32")
save(**{f"out/goog{i}": o for i, o in enumerate(goog(paddle.to_tensor(big)))})
incep = M.inception_v3(num_classes=10)
incep.eval()
for k, v in incep.state_dict().items():
    save(**{f"incep/{k}": v})
save(**{"out/incep": incep(paddle.to_tensor(big[:, :, :75, :75]))})
for fn, factor in (("adjust_hue", 0.2), ("adjust_hue", -0.45), ("adjust_brightness", 1.3), ("adjust_contrast", 0.6),
                   ("adjust_saturation", 1.7)):
    save(**{f"color/{fn}/{factor}": getattr(TF, fn)(u, factor)})
"""


@pytest.fixture(scope="module")
def paddle_ref(tmp_path_factory):
    return run_paddle(PADDLE_SCRIPT, tmp_path_factory.mktemp("paddle_vision"))


BUILDS = {"lenet": lambda: M.LeNet(), "resnet18": lambda: M.resnet18(num_classes=10),
          "mnv2": lambda: M.mobilenet_v2(scale=0.5, num_classes=10), "sqz": lambda: M.squeezenet1_1(num_classes=10),
          "vggbn": lambda: M.vgg11(batch_norm=True, num_classes=0),
          "mnv1": lambda: M.mobilenet_v1(scale=0.25, num_classes=10), "rx": lambda: M.resnext50_32x4d(num_classes=0),
          "mnv3s": lambda: M.mobilenet_v3_small(num_classes=10), "mnv3l": lambda: M.mobilenet_v3_large(scale=0.5),
          "shuf": lambda: M.shufflenet_v2_x0_5(num_classes=10), "shufsw": lambda: M.shufflenet_v2_swish(num_classes=0),
          "dense": lambda: M.densenet121(num_classes=10)}


@pytest.mark.parametrize("name", list(BUILDS))
def test_paddle_state_dict_loads_and_outputs_match(paddle_ref, name):
    model = BUILDS[name]()
    state = {k.split("/", 1)[1]: v for k, v in paddle_ref.items() if k.startswith(name + "/")}
    ours = model.state_dict()
    assert sorted(ours) == sorted(state)
    assert all(list(ours[k].shape) == list(v.shape) for k, v in state.items())
    missing, unexpected = model.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    assert missing == [] and unexpected == []
    model.eval()
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    out = model(oar.to_tensor(x[:, :1, :28, :28] if name == "lenet" else x))
    assert_close(out, paddle_ref[f"out/{name}"], rtol=1e-4, atol=1e-4)


def test_googlenet_heads_match_paddle(paddle_ref):
    model = M.googlenet(num_classes=10)
    model.set_state_dict({k[5:]: oar.to_tensor(v) for k, v in paddle_ref.items() if k.startswith("goog/")})
    model.eval()
    big = np.random.default_rng(2).standard_normal((1, 3, 224, 224)).astype(np.float32)
    outs = model(oar.to_tensor(big))
    assert len(outs) == 3
    for i, out in enumerate(outs):
        assert_close(out, paddle_ref[f"out/goog{i}"], rtol=1e-4, atol=1e-4)


def test_inception_v3_matches_paddle(paddle_ref):
    model = M.inception_v3(num_classes=10)
    missing, unexpected = model.set_state_dict(
        {k[6:]: oar.to_tensor(v) for k, v in paddle_ref.items() if k.startswith("incep/")})
    assert missing == [] and unexpected == []
    model.eval()
    big = np.random.default_rng(2).standard_normal((1, 3, 224, 224)).astype(np.float32)
    assert_close(model(oar.to_tensor(big[:, :, :75, :75])), paddle_ref["out/incep"], rtol=1e-4, atol=1e-4)


WARPS = {
    "rot30n": lambda w: TF.rotate(w, 30), "rot30b": lambda w: TF.rotate(w, 30, "bilinear", fill=0.5),
    "rot45e": lambda w: TF.rotate(w, 45, expand=True), "rotc": lambda w: TF.rotate(w, -70, "bilinear", center=(2, 1)),
    "aff": lambda w: TF.affine(w, 20, (2, 1), 1.2, (10, 5), "bilinear"),
    "affn": lambda w: TF.affine(w, -15, (-1, 0), 0.8, 7, fill=1.0),
    "persp": lambda w: TF.perspective(w, [[0, 0], [7, 0], [7, 5], [0, 5]], [[1, 0], [6, 1], [7, 5], [0, 4]],
                                      "bilinear"),
}


@pytest.mark.parametrize("name", list(WARPS))
def test_tensor_warps_match_paddle(paddle_ref, name):
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    out = WARPS[name](oar.to_tensor(x[1, :, :6, :8]))
    assert list(out.shape) == list(paddle_ref[f"warp/{name}"].shape)
    assert_close(out, paddle_ref[f"warp/{name}"], rtol=1e-5, atol=1e-5)


def test_nms_matches_paddle(paddle_ref):
    boxes, scores, cats = (oar.to_tensor(paddle_ref[k]) for k in ("nms_boxes", "nms_scores", "nms_cats"))
    ops = vision.ops
    assert ops.nms(boxes, 0.3).numpy().tolist() == paddle_ref["nms_plain"].tolist()
    assert ops.nms(boxes, 0.5, scores).numpy().tolist() == paddle_ref["nms_scored"].tolist()
    assert ops.nms(boxes, 0.4, scores, cats, [0, 1, 2], top_k=8).numpy().tolist() == paddle_ref["nms_cat"].tolist()


def test_tensor_resize_matches_paddle(paddle_ref):
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    t = oar.to_tensor(x[0, :, :6, :7])
    for key, ref in paddle_ref.items():
        if key.startswith("resize/"):
            _, mode, size = key.split("/")
            out = TF.resize(t, tuple(int(s) for s in size.split("x")), mode)
            assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_tensor_color_ops_match_paddle(paddle_ref):
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    u = oar.to_tensor(1 / (1 + np.exp(-x[1, :, :5, :6])))
    keys = [k for k in paddle_ref if k.startswith("color/")]
    assert len(keys) == 5
    for key in keys:
        _, fn, factor = key.split("/")
        assert_close(getattr(TF, fn)(u, float(factor)), paddle_ref[key], rtol=1e-5, atol=1e-5)


def test_pil_images_round_trip():
    Image = pytest.importorskip("PIL.Image")
    arr = rng.integers(0, 256, (6, 8, 3)).astype(np.uint8)
    img = Image.fromarray(arr)
    flipped = TF.hflip(img)
    assert isinstance(flipped, Image.Image) and (np.asarray(flipped) == arr[:, ::-1]).all()
    assert TF.resize(img, (3, 4)).size == (4, 3)  # PIL sizes are (width, height)
    assert_close(np.asarray(TF.center_crop(img, 4)), arr[1:5, 2:6])
    gray = T.Grayscale()(img)
    assert gray.mode == "L" and gray.size == (8, 6)
    assert_close(T.ToTensor()(img), arr.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert list(T.ToTensor()(gray).shape) == [1, 6, 8]


def test_erase_and_random_erasing():
    img = rng.integers(0, 256, (5, 6, 3)).astype(np.uint8)
    out = TF.erase(img, 1, 2, 2, 3, np.array([1, 2, 3]))
    ref = img.copy()
    ref[1:3, 2:5] = [1, 2, 3]
    assert_close(out, ref)
    assert not (img[1:3, 2:5] == [1, 2, 3]).all()  # not in place by default
    t = oar.to_tensor(img.transpose(2, 0, 1).astype(np.float32))
    ref_t = img.transpose(2, 0, 1).astype(np.float32)
    ref_t[:, 1:3, 2:5] = 0
    assert_close(TF.erase(t, 1, 2, 2, 3, 0.0), ref_t)
    TF.erase(t, 0, 0, 1, 1, 9.0, inplace=True)
    assert t.numpy()[:, 0, 0].tolist() == [9.0, 9.0, 9.0]
    random.seed(0)
    np.random.seed(0)
    erased = T.RandomErasing(prob=1.0, value=7)(img)
    filled = (erased == 7).all(axis=2)
    assert filled.sum() >= 1 and ((erased == img) | (erased == 7)).all()
    rows, cols = np.nonzero(filled)
    assert filled[rows.min():rows.max() + 1, cols.min():cols.max() + 1].all()  # one rectangle
    assert_close(T.RandomErasing(prob=0.0)(img), img)
    assert list(T.RandomErasing(prob=1.0, value="random")(t).shape) == [3, 5, 6]
    with pytest.raises(ValueError, match="random"):
        T.RandomErasing(value="noise")


def test_cifar_reads_a_local_archive(tmp_path, monkeypatch):
    import io
    import pickle
    import tarfile
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(RuntimeError, match="Cifar10.*does not download"):
        vision.datasets.Cifar10()
    data = rng.integers(0, 256, (3, 3 * 32 * 32)).astype(np.uint8)
    path = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, rows, labels in (("data_batch_1", data[:2], [3, 5]), ("test_batch", data[2:], [9])):
            blob = pickle.dumps({b"data": rows, b"labels": labels})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    train = vision.datasets.Cifar10(str(path), mode="train", backend="cv2")
    test = vision.datasets.Cifar10(str(path), mode="test", backend="cv2", transform=T.ToTensor())
    assert len(train) == 2 and len(test) == 1
    image, label = train[1]
    assert image.shape == (32, 32, 3) and image.dtype == np.float32 and int(label) == 5
    assert_close(image, data[1].reshape(3, 32, 32).transpose(1, 2, 0))
    tensor, label = test[0]
    assert list(tensor.shape) == [3, 32, 32] and int(label) == 9


def test_vision_namespace_and_backend():
    assert vision.LeNet is M.LeNet and vision.Resize is T.Resize and vision.Cifar10 is vision.datasets.Cifar10
    assert vision.hflip is TF.hflip
    previous = vision.get_image_backend()
    try:
        vision.set_image_backend("cv2")
        assert vision.get_image_backend() == "cv2"
        with pytest.raises(ValueError, match="backend"):
            vision.set_image_backend("tensor")
    finally:
        vision.set_image_backend(previous)
    with pytest.raises(ValueError, match="backend"):
        vision.image_load("x.png", backend="tensor")


def test_nms_by_hand():
    boxes = oar.to_tensor([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10], [20, 20, 30, 30]], dtype="float32")
    # IoU(box 0, box 1) = 81 / 119 = 0.68; box 2 equals box 0.
    assert vision.ops.nms(boxes, 0.69).numpy().tolist() == [0, 1, 3]
    assert vision.ops.nms(boxes, 0.68).numpy().tolist() == [0, 3]
    scores = oar.to_tensor([0.1, 0.9, 0.5, 0.3])
    assert vision.ops.nms(boxes, 0.5, scores).numpy().tolist() == [1, 3]
    assert vision.ops.nms(boxes, 0.5, scores, oar.to_tensor([0, 1, 0, 1]), [0, 1]).numpy().tolist() == [1, 2, 3]
    assert vision.ops.ConvNormActivation is M._utils.ConvNormActivation
    with pytest.raises(ValueError, match=r"\[N, 4\]"):
        vision.ops.nms(oar.ones([3, 3]))
