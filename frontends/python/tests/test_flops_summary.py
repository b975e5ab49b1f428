"""paddle.flops by hand-counted FLOPs (Paddle's rules) and paddle.summary
against the table Paddle prints for its LeNet."""
import re

import pytest

import oar
import oar.nn as nn


class LeNet(nn.Layer):
    """paddle.vision.models.LeNet."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1), nn.ReLU(), nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0), nn.ReLU(), nn.MaxPool2D(2, 2))
        self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, num_classes))

    def forward(self, x):
        x = self.features(x)
        return self.fc(oar.flatten(x, 1))


class Mixed(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2D(8)
        self.relu = nn.ReLU()
        self.pool = nn.AvgPool2D(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)
        self.leaky = nn.LeakyReLU()

    def forward(self, x):
        x = self.pool(self.relu(self.bn(self.conv(x))))
        return self.leaky(self.fc(oar.flatten(x, 1)))


def test_flops_of_lenet(capsys):
    # conv1: 6*28*28 outputs * (1*3*3 + 1 bias); conv2: 16*10*10 * (6*5*5 + 1);
    # linears: in_features * outputs (bias not counted); ReLU and max pooling count zero.
    expected = 6 * 28 * 28 * 10 + 16 * 10 * 10 * 151 + 400 * 120 + 120 * 84 + 84 * 10
    assert expected == 347560
    net = LeNet()
    assert oar.flops(net, [1, 1, 28, 28]) == expected
    out = capsys.readouterr().out
    assert "Total Flops: 347560     Total Params: 61610" in out
    assert "MaxPool2D'>. Treat it as zero FLOPs." in out
    assert net.training  # restored


def test_flops_per_layer_type_and_custom_ops(capsys):
    net = Mixed()
    conv = 2 * 8 * 8 * 8 * (3 * 9 + 1)
    bn = 2 * (2 * 8 * 8 * 8)
    pool = 2 * 8 * 4 * 4
    fc = 128 * 2 * 10
    leaky = 2 * 10
    assert oar.flops(net, [2, 3, 16, 16], print_detail=True) == conv + bn + pool + fc + leaky
    out = capsys.readouterr().out
    params = (3 * 8 * 9 + 8) + 4 * 8 + (128 * 10 + 10)  # the batch norm's running stats count, as in Paddle
    assert f"Total Flops: {conv + bn + pool + fc + leaky}     Total Params: {params}" in out
    lines = out.splitlines()
    header = next(line for line in lines if "Layer Name" in line)
    assert [c.strip() for c in header.strip("|").split("|")] == ["Layer Name", "Input Shape", "Output Shape",
                                                                 "Params", "Flops"]
    row = next(line for line in lines if line.startswith("|") and net.conv.full_name() in line)
    assert [c.strip() for c in row.strip("|").split("|")][1:] == ["[2, 3, 16, 16]", "[2, 8, 8, 8]", "224",
                                                                  str(conv)]

    def linear_as_1000(m, x, y):
        m.total_ops += 1000

    assert oar.flops(net, [2, 3, 16, 16], custom_ops={nn.Linear: linear_as_1000}) == conv + bn + pool + 1000 + leaky
    assert "Customize Function has been applied to" in capsys.readouterr().out
    with pytest.raises(TypeError, match="net must be an oar.nn.Layer"):
        oar.flops("net", [1, 2])
    with pytest.raises(ValueError, match="input_size must be a list of positive ints"):
        oar.flops(net, [2, -3, 16, 16])


# Paddle 3.3's paddle.summary(paddle.vision.models.LeNet(), (1, 1, 28, 28)), the
# layer numbers written as N (they count the layers of a class made so far).
PADDLE_LENET = """\
---------------------------------------------------------------------------
 Layer (type)       Input Shape          Output Shape         Param #    
===========================================================================
   Conv2D-N       [[1, 1, 28, 28]]      [1, 6, 28, 28]          60       
    ReLU-N        [[1, 6, 28, 28]]      [1, 6, 28, 28]           0       
  MaxPool2D-N     [[1, 6, 28, 28]]      [1, 6, 14, 14]           0       
   Conv2D-N       [[1, 6, 14, 14]]     [1, 16, 10, 10]         2,416     
    ReLU-N       [[1, 16, 10, 10]]     [1, 16, 10, 10]           0       
  MaxPool2D-N    [[1, 16, 10, 10]]      [1, 16, 5, 5]            0       
   Linear-N          [[1, 400]]            [1, 120]           48,120     
   Linear-N          [[1, 120]]            [1, 84]            10,164     
   Linear-N          [[1, 84]]             [1, 10]              850      
===========================================================================
Total params: 61,610
Trainable params: 61,610
Non-trainable params: 0
---------------------------------------------------------------------------
Input size (MB): 0.00
Forward/backward pass size (MB): 0.11
Params size (MB): 0.24
Estimated Total Size (MB): 0.35
---------------------------------------------------------------------------

"""


def _numbers_as_n(text):
    """Rows with their layer numbers as N and runs of spaces as one (the centring
    moves with the number's width); every other line exactly."""
    lines = []
    for line in text.split("\n"):
        if re.search(r"[A-Za-z0-9]-\d+ ", line) or "-N " in line:
            line = re.sub(r" +", " ", re.sub(r"([A-Za-z0-9])-(\d+|N) ", r"\1-N ", line)).strip()
        lines.append(line)
    return lines


def test_summary_matches_paddle_for_lenet(capsys):
    info = oar.summary(LeNet(), (1, 1, 28, 28))
    assert info == {"total_params": 61610, "trainable_params": 61610}
    assert _numbers_as_n(capsys.readouterr().out) == _numbers_as_n(PADDLE_LENET)


def test_summary_layer_numbers_follow_full_names(capsys):
    net = LeNet()
    oar.summary(net, (1, 1, 28, 28))
    first = int(net.features[0].full_name().split("_")[-1]) + 1
    assert f"Conv2D-{first} " in capsys.readouterr().out
    assert re.fullmatch(r"conv2d_\d+", net.features[0].full_name())
    assert re.fullmatch(r"batch_norm2d_\d+", nn.BatchNorm2D(2).full_name())
    assert re.fullmatch(r"re_lu_\d+", nn.ReLU().full_name())


def test_summary_trainable_counts_and_inputs(capsys):
    net = Mixed()
    net.fc.weight.stop_gradient = True
    info = oar.summary(net, input=oar.rand([2, 3, 16, 16]))
    trainable = 224 + 16 + 10  # conv, the batch norm's weight and bias, the linear bias
    assert info == {"total_params": 224 + 32 + 1290, "trainable_params": trainable}
    out = capsys.readouterr().out
    assert "Non-trainable params: 1,296" in out and "[[2, 3, 16, 16]]" in out
    with pytest.raises(ValueError, match="cannot both be None"):
        oar.summary(net)
    with pytest.raises(ValueError, match="only the batch dim"):
        oar.summary(net, (None, -1, 16, 16))


def test_summary_against_paddle_for_the_same_net():
    paddle = pytest.importorskip("paddle")
    theirs = paddle.summary(paddle.vision.models.LeNet(), (1, 1, 28, 28))
    ours = oar.summary(LeNet(), (1, 1, 28, 28))
    assert {k: int(v) for k, v in theirs.items()} == ours
