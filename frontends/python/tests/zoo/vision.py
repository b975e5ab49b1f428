"""Vision models of the zoo: convolutional networks as their authors write them."""
import oar as paddle
import oar.nn as nn
import oar.nn.functional as F

from . import floats, ints, register


def images(channels=3, size=16, batch=2):
    return lambda: (floats(batch, channels, size, size, seed=1),)


# ---- LeNet -------------------------------------------------------------------

class LeNet(nn.Layer):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0),
            nn.ReLU(),
            nn.MaxPool2D(2, 2))
        self.fc = nn.Sequential(
            nn.Linear(16 * 2 * 2, 32),
            nn.Linear(32, 16),
            nn.Linear(16, num_classes))

    def forward(self, inputs):
        x = self.features(inputs)
        x = paddle.flatten(x, 1)
        x = self.fc(x)
        return x


register("lenet", images(1, 16))(lambda: LeNet())


# ---- ResNet-18 (tiny widths) -------------------------------------------------

class BasicBlock(nn.Layer):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2D
        self.conv1 = nn.Conv2D(inplanes, planes, 3, padding=1, stride=stride, bias_attr=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2D(planes, planes, 3, padding=1, bias_attr=False)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Layer):
    def __init__(self, block, depth=18, width=8, num_classes=10, with_pool=True):
        super().__init__()
        layer_cfg = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3]}
        layers = layer_cfg[depth]
        self.num_classes = num_classes
        self.with_pool = with_pool
        self._norm_layer = nn.BatchNorm2D
        self.inplanes = width
        self.dilation = 1
        self.conv1 = nn.Conv2D(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias_attr=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((1, 1))
        if num_classes > 0:
            self.fc = nn.Linear(width * 8 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        norm_layer = self._norm_layer
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2D(self.inplanes, planes * block.expansion, 1, stride=stride, bias_attr=False),
                norm_layer(planes * block.expansion))
        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample, norm_layer))
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = paddle.flatten(x, 1)
            x = self.fc(x)
        return x


@register("resnet18", images(3, 32), notes="train mode: batch norm updates its running statistics")
def _resnet18():
    return ResNet(BasicBlock, 18, width=8)


# ---- VGG-style ---------------------------------------------------------------

def make_vgg_layers(cfg, batch_norm=False):
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2D(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2D(in_channels, v, kernel_size=3, padding=1)
            if batch_norm:
                layers += [conv2d, nn.BatchNorm2D(v), nn.ReLU()]
            else:
                layers += [conv2d, nn.ReLU()]
            in_channels = v
    return nn.Sequential(*layers)


class VGG(nn.Layer):
    def __init__(self, features, num_classes=10):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2D((2, 2))
        self.classifier = nn.Sequential(
            nn.Linear(32 * 2 * 2, 32),
            nn.ReLU(),
            nn.Dropout(),
            nn.Linear(32, 32),
            nn.ReLU(),
            nn.Dropout(),
            nn.Linear(32, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = paddle.flatten(x, 1)
        x = self.classifier(x)
        return x


@register("vgg", images(3, 16), notes="eval mode (dropout off)")
def _vgg():
    model = VGG(make_vgg_layers([8, "M", 16, "M", 32, 32, "M"]))
    model.eval()
    return model


# ---- MobileNetV2 inverted residuals ------------------------------------------

def _make_divisible(v, divisor=8, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1, norm_layer=nn.BatchNorm2D):
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2D(in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias_attr=False),
            norm_layer(out_planes),
            nn.ReLU6())


class InvertedResidual(nn.Layer):
    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=nn.BatchNorm2D):
        super().__init__()
        self.stride = stride
        assert stride in [1, 2]
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer))
        layers.extend([
            ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, norm_layer=norm_layer),
            nn.Conv2D(hidden_dim, oup, 1, 1, 0, bias_attr=False),
            norm_layer(oup),
        ])
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)


class MobileNetV2(nn.Layer):
    def __init__(self, scale=0.25, num_classes=10):
        super().__init__()
        input_channel = 32
        last_channel = 64
        inverted_residual_setting = [
            [1, 16, 1, 1],
            [6, 24, 2, 2],
            [6, 32, 2, 2],
        ]
        input_channel = _make_divisible(input_channel * scale)
        self.last_channel = _make_divisible(last_channel * max(1.0, scale))
        features = [ConvBNReLU(3, input_channel, stride=2)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * scale)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(InvertedResidual(input_channel, output_channel, stride, expand_ratio=t))
                input_channel = output_channel
        features.append(ConvBNReLU(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = self.pool2d_avg(x)
        x = paddle.flatten(x, 1)
        x = self.classifier(x)
        return x


@register("mobilenet_v2", images(3, 32), notes="eval mode")
def _mobilenet_v2():
    model = MobileNetV2()
    model.eval()
    return model


# ---- U-Net -------------------------------------------------------------------

class DoubleConv(nn.Layer):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv2D(in_channels, out_channels, 3, padding=1),
            nn.BatchNorm2D(out_channels),
            nn.ReLU(),
            nn.Conv2D(out_channels, out_channels, 3, padding=1),
            nn.BatchNorm2D(out_channels),
            nn.ReLU())

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Layer):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2D(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Layer):
    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        else:
            self.up = nn.Conv2DTranspose(in_channels // 2, in_channels // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.shape[2] - x1.shape[2]
        diffX = x2.shape[3] - x1.shape[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = paddle.concat([x2, x1], axis=1)
        return self.conv(x)


class UNet(nn.Layer):
    def __init__(self, n_channels=3, n_classes=2, width=8):
        super().__init__()
        self.inc = DoubleConv(n_channels, width)
        self.down1 = Down(width, width * 2)
        self.down2 = Down(width * 2, width * 4)
        self.up1 = Up(width * 4 + width * 2, width * 2, bilinear=True)
        self.up2 = Up(width * 2, width, bilinear=False)
        self.up2.up = nn.Conv2DTranspose(width * 2, width, kernel_size=2, stride=2)
        self.up2.conv = DoubleConv(width * 2, width)
        self.outc = nn.Conv2D(width, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        logits = self.outc(x)
        return logits


@register("unet", images(3, 16), notes="bilinear Upsample and Conv2DTranspose ups, concat skips; eval mode")
def _unet():
    model = UNet()
    model.eval()
    return model


# ---- conv + batch norm in eval mode ------------------------------------------

class ConvBNEval(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2D(8)
        self.conv2 = nn.Conv2D(8, 8, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm(8, act="relu")

    def forward(self, x):
        return self.bn2(self.conv2(F.relu(self.bn(self.conv(x)))))


@register("conv_bn_eval", images(3, 16), notes="running statistics set before eval()")
def _conv_bn_eval():
    model = ConvBNEval()
    # trained-looking statistics, so eval differs from train
    model.bn._mean.set_value(paddle.full([8], 0.1))
    model.bn._variance.set_value(paddle.full([8], 2.0))
    model.eval()
    return model


# ---- depthwise separable conv ------------------------------------------------

class DepthwiseSeparable(nn.Layer):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.depthwise = nn.Conv2D(in_channels, in_channels, kernel_size=3, stride=stride, padding=1,
                                   groups=in_channels)
        self.pointwise = nn.Conv2D(in_channels, out_channels, kernel_size=1)
        self.act = nn.Hardswish()

    def forward(self, x):
        return self.act(self.pointwise(self.depthwise(x)))


class TinyXception(nn.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(DepthwiseSeparable(3, 8), DepthwiseSeparable(8, 16, stride=2),
                                    DepthwiseSeparable(16, 16))
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = self.blocks(x)
        x = F.adaptive_avg_pool2d(x, 1).squeeze([2, 3])
        return self.head(x)


register("depthwise_separable", images(3, 16))(lambda: TinyXception())


# ---- squeeze-excitation ------------------------------------------------------

class SEBlock(nn.Layer):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Sequential(
            nn.Linear(channels, channels // reduction, bias_attr=False),
            nn.ReLU(),
            nn.Linear(channels // reduction, channels, bias_attr=False),
            nn.Sigmoid())

    def forward(self, x):
        b, c, _, _ = x.shape
        y = self.avg_pool(x).reshape([b, c])
        y = self.fc(y).reshape([b, c, 1, 1])
        return x * y.expand_as(x)


class SENet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 16, 3, padding=1)
        self.se = SEBlock(16)
        self.out = nn.Conv2D(16, 4, 1)

    def forward(self, x):
        return self.out(self.se(F.relu(self.conv(x))))


register("squeeze_excitation", images(3, 16))(lambda: SENet())


# ---- PixelShuffle super-resolution (ESPCN) -----------------------------------

class ESPCN(nn.Layer):
    def __init__(self, upscale_factor=2, channels=1):
        super().__init__()
        self.conv1 = nn.Conv2D(channels, 16, 5, padding=2)
        self.conv2 = nn.Conv2D(16, 8, 3, padding=1)
        self.conv3 = nn.Conv2D(8, channels * upscale_factor ** 2, 3, padding=1)
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = paddle.tanh(self.conv1(x))
        x = paddle.tanh(self.conv2(x))
        x = F.sigmoid(self.pixel_shuffle(self.conv3(x)))
        return x


register("pixel_shuffle_sr", images(1, 16))(lambda: ESPCN())


# ---- ViT ---------------------------------------------------------------------

class PatchEmbed(nn.Layer):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=16):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2D(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose((0, 2, 1))
        return x


class Attention(nn.Layer):
    def __init__(self, dim, num_heads=2, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias_attr=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        N, C = x.shape[1:]
        qkv = self.qkv(x).reshape((-1, N, 3, self.num_heads, C // self.num_heads)).transpose((2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q.matmul(k.transpose((0, 1, 3, 2)))) * self.scale
        attn = nn.functional.softmax(attn, axis=-1)
        attn = self.attn_drop(attn)
        x = (attn.matmul(v)).transpose((0, 2, 1, 3)).reshape((-1, N, C))
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Mlp(nn.Layer):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class ViTBlock(nn.Layer):
    def __init__(self, dim, num_heads, mlp_ratio=2.0, epsilon=1e-6):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, epsilon=epsilon)
        self.attn = Attention(dim, num_heads=num_heads)
        self.norm2 = nn.LayerNorm(dim, epsilon=epsilon)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x


class VisionTransformer(nn.Layer):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, class_num=10, embed_dim=16, depth=2, num_heads=2):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.pos_embed = self.create_parameter(shape=(1, num_patches + 1, embed_dim),
                                               default_initializer=nn.initializer.TruncatedNormal(std=0.02))
        self.cls_token = self.create_parameter(shape=(1, 1, embed_dim),
                                               default_initializer=nn.initializer.Constant(0.0))
        self.blocks = nn.LayerList([ViTBlock(embed_dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, epsilon=1e-6)
        self.head = nn.Linear(embed_dim, class_num)

    def forward_features(self, x):
        B = paddle.shape(x)[0]
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand((B, -1, -1))
        x = paddle.concat((cls_tokens, x), axis=1)
        x = x + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return x[:, 0]

    def forward(self, x):
        x = self.forward_features(x)
        x = self.head(x)
        return x


register("vit", images(3, 16))(lambda: VisionTransformer())


# ---- Siamese network ---------------------------------------------------------

class SiameseNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2D(1, 8, 3), nn.ReLU(), nn.MaxPool2D(2),
            nn.Conv2D(8, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2D(1), nn.Flatten())
        self.fc = nn.Linear(16, 8)

    def forward_once(self, x):
        return self.fc(self.cnn(x))

    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        distance = F.pairwise_distance(output1, output2)
        similarity = F.cosine_similarity(output1, output2, axis=1)
        return distance, similarity


register("siamese", lambda: (floats(2, 1, 16, 16, seed=1), floats(2, 1, 16, 16, seed=2)))(lambda: SiameseNet())


# ---- convolutional autoencoder -----------------------------------------------

class ConvAutoEncoder(nn.Layer):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2D(1, 8, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2D(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.decoder = nn.Sequential(
            nn.Conv2DTranspose(16, 8, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
            nn.Conv2DTranspose(8, 1, 3, stride=2, padding=1, output_padding=1), nn.Sigmoid())

    def forward(self, x):
        z = self.encoder(x)
        recon = self.decoder(z)
        loss = F.mse_loss(recon, x)
        return recon, loss


register("conv_autoencoder", images(1, 16))(lambda: ConvAutoEncoder())


# ---- capsule squash ----------------------------------------------------------

def squash(inputs, axis=-1, epsilon=1e-7):
    norm = paddle.norm(inputs, p=2, axis=axis, keepdim=True)
    scale = norm ** 2 / (1 + norm ** 2) / (norm + epsilon)
    return scale * inputs


class PrimaryCaps(nn.Layer):
    def __init__(self, in_channels=8, dim_caps=4, n_channels=4):
        super().__init__()
        self.dim_caps = dim_caps
        self.conv = nn.Conv2D(in_channels, dim_caps * n_channels, kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        out = self.conv(x)
        out = out.reshape([out.shape[0], -1, self.dim_caps])
        return squash(out)


class CapsNetLite(nn.Layer):
    def __init__(self, num_classes=3):
        super().__init__()
        self.conv1 = nn.Conv2D(1, 8, 3, padding=1)
        self.primary = PrimaryCaps()
        self.W = self.create_parameter([1, 64, num_classes, 6, 4])
        self.num_classes = num_classes

    def forward(self, x):
        u = self.primary(F.relu(self.conv1(x)))  # [b, 64, 4]
        u_hat = paddle.matmul(self.W, u.unsqueeze(2).unsqueeze(-1)).squeeze(-1)  # [b, 64, classes, 6]
        b = paddle.zeros([x.shape[0], 64, self.num_classes])
        for _ in range(3):  # dynamic routing
            c = F.softmax(b, axis=2)
            s = (c.unsqueeze(-1) * u_hat).sum(axis=1)
            v = squash(s)
            b = b + (u_hat * v.unsqueeze(1)).sum(axis=-1)
        return paddle.norm(v, axis=-1)


register("capsule_routing", images(1, 8))(lambda: CapsNetLite())


# ---- ConvNeXt block (channels-last LayerNorm, layer scale, DropPath) ---------

def drop_path(x, drop_prob=0.0, training=False):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = paddle.to_tensor(1 - drop_prob, dtype=x.dtype)
    shape = (paddle.shape(x)[0],) + (1,) * (x.ndim - 1)
    random_tensor = keep_prob + paddle.rand(shape).astype(x.dtype)
    random_tensor = paddle.floor(random_tensor)
    return x.divide(keep_prob) * random_tensor


class DropPath(nn.Layer):
    def __init__(self, drop_prob=None):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)


class ConvNeXtBlock(nn.Layer):
    def __init__(self, dim, drop_path=0.1, layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2D(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, epsilon=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = self.create_parameter(shape=[dim], default_initializer=nn.initializer.Constant(
            layer_scale_init_value)) if layer_scale_init_value > 0 else None
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        input = x
        x = self.dwconv(x)
        x = x.transpose([0, 2, 3, 1])  # (N, C, H, W) -> (N, H, W, C)
        x = self.norm(x)
        x = self.pwconv1(x)
        x = self.act(x)
        x = self.pwconv2(x)
        if self.gamma is not None:
            x = self.gamma * x
        x = x.transpose([0, 3, 1, 2])
        x = input + self.drop_path(x)
        return x


class TinyConvNeXt(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, 16, kernel_size=4, stride=4))
        self.blocks = nn.Sequential(ConvNeXtBlock(16), ConvNeXtBlock(16))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean([-2, -1]))


@register("convnext_eval", images(3, 16), notes="DropPath returns x in eval mode")
def _convnext():
    model = TinyConvNeXt()
    model.eval()
    return model


# ---- Swin window attention (roll, window partition, relative position bias) --

def window_partition(x, window_size):
    B, H, W, C = x.shape
    x = x.reshape([B, H // window_size, window_size, W // window_size, window_size, C])
    windows = x.transpose([0, 1, 3, 2, 4, 5]).reshape([-1, window_size, window_size, C])
    return windows


def window_reverse(windows, window_size, H, W):
    C = windows.shape[-1]
    x = windows.reshape([-1, H // window_size, W // window_size, window_size, window_size, C])
    x = x.transpose([0, 1, 3, 2, 4, 5]).reshape([-1, H, W, C])
    return x


class WindowAttention(nn.Layer):
    def __init__(self, dim, window_size, num_heads):
        super().__init__()
        self.dim = dim
        self.window_size = window_size
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.relative_position_bias_table = self.create_parameter(
            shape=((2 * window_size[0] - 1) * (2 * window_size[1] - 1), num_heads),
            default_initializer=nn.initializer.TruncatedNormal(std=0.02))
        coords_h = paddle.arange(self.window_size[0])
        coords_w = paddle.arange(self.window_size[1])
        coords = paddle.stack(paddle.meshgrid([coords_h, coords_w]))
        coords_flatten = paddle.flatten(coords, 1)
        coords_flatten_1 = coords_flatten.unsqueeze(axis=2)
        coords_flatten_2 = coords_flatten.unsqueeze(axis=1)
        relative_coords = coords_flatten_1 - coords_flatten_2
        relative_coords = relative_coords.transpose([1, 2, 0])
        relative_coords[:, :, 0] += self.window_size[0] - 1
        relative_coords[:, :, 1] += self.window_size[1] - 1
        relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
        relative_position_index = relative_coords.sum(-1)
        self.register_buffer("relative_position_index", relative_position_index)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.softmax = nn.Softmax(axis=-1)

    def forward(self, x, mask=None):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape([B_, N, 3, self.num_heads, C // self.num_heads]).transpose([2, 0, 3, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q * self.scale
        attn = paddle.mm(q, k.transpose([0, 1, 3, 2]))
        index = self.relative_position_index.reshape([-1])
        relative_position_bias = paddle.index_select(self.relative_position_bias_table, index)
        relative_position_bias = relative_position_bias.reshape(
            [self.window_size[0] * self.window_size[1], self.window_size[0] * self.window_size[1], -1])
        relative_position_bias = relative_position_bias.transpose([2, 0, 1])
        attn = attn + relative_position_bias.unsqueeze(0)
        if mask is not None:
            nW = mask.shape[0]
            attn = attn.reshape([B_ // nW, nW, self.num_heads, N, N]) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.reshape([-1, self.num_heads, N, N])
        attn = self.softmax(attn)
        x = paddle.mm(attn, v).transpose([0, 2, 1, 3]).reshape([B_, N, C])
        return self.proj(x)


class SwinBlock(nn.Layer):
    def __init__(self, dim=16, input_resolution=(8, 8), num_heads=2, window_size=4, shift_size=2):
        super().__init__()
        self.input_resolution = input_resolution
        self.window_size = window_size
        self.shift_size = shift_size
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, (window_size, window_size), num_heads)
        H, W = input_resolution
        img_mask = paddle.zeros((1, H, W, 1))
        slices = (slice(0, -window_size), slice(-window_size, -shift_size), slice(-shift_size, None))
        cnt = 0
        for h in slices:
            for w in slices:
                img_mask[:, h, w, :] = cnt
                cnt += 1
        mask_windows = window_partition(img_mask, window_size).reshape([-1, window_size * window_size])
        attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
        huns = -100.0 * paddle.ones_like(attn_mask)
        attn_mask = huns * (attn_mask != 0).astype("float32")
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x):
        H, W = self.input_resolution
        B, L, C = x.shape
        shortcut = x
        x = self.norm1(x).reshape([B, H, W, C])
        shifted_x = paddle.roll(x, shifts=(-self.shift_size, -self.shift_size), axis=(1, 2))
        x_windows = window_partition(shifted_x, self.window_size).reshape([-1, self.window_size ** 2, C])
        attn_windows = self.attn(x_windows, mask=self.attn_mask)
        attn_windows = attn_windows.reshape([-1, self.window_size, self.window_size, C])
        shifted_x = window_reverse(attn_windows, self.window_size, H, W)
        x = paddle.roll(shifted_x, shifts=(self.shift_size, self.shift_size), axis=(1, 2))
        return shortcut + x.reshape([B, H * W, C])


register("swin_shifted_window", lambda: (floats(2, 64, 16, seed=41),))(lambda: SwinBlock())


# ---- YOLO head decoding (meshgrid, sigmoid/exp box decode) -------------------

class YOLOHead(nn.Layer):
    def __init__(self, in_channels=8, num_classes=3, anchors=((2.0, 3.0), (4.0, 5.0)), stride=4):
        super().__init__()
        self.num_classes = num_classes
        self.anchors = anchors
        self.stride = stride
        self.na = len(anchors)
        self.backbone = nn.Sequential(nn.Conv2D(3, in_channels, 3, stride=4, padding=1), nn.LeakyReLU(0.1))
        self.pred = nn.Conv2D(in_channels, self.na * (5 + num_classes), 1)

    def forward(self, img):
        p = self.pred(self.backbone(img))
        bs, _, ny, nx = p.shape
        p = p.reshape([bs, self.na, 5 + self.num_classes, ny, nx]).transpose([0, 1, 3, 4, 2])
        yv, xv = paddle.meshgrid([paddle.arange(ny), paddle.arange(nx)])
        grid = paddle.stack((xv, yv), 2).reshape([1, 1, ny, nx, 2]).astype("float32")
        anchor_grid = paddle.to_tensor(self.anchors, dtype="float32").reshape([1, self.na, 1, 1, 2])
        xy = (F.sigmoid(p[..., :2]) + grid) * self.stride
        wh = paddle.exp(p[..., 2:4]) * anchor_grid
        conf = F.sigmoid(p[..., 4:])
        return paddle.concat([xy, wh, conf], axis=-1).reshape([bs, -1, 5 + self.num_classes])


register("yolo_head_decode", images(3, 16))(lambda: YOLOHead())


# ---- spatial transformer network (affine_grid + grid_sample) -----------------

class STN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.localization = nn.Sequential(nn.Conv2D(1, 8, kernel_size=5), nn.MaxPool2D(2, stride=2), nn.ReLU())
        self.fc_loc = nn.Sequential(nn.Linear(8 * 6 * 6, 16), nn.ReLU(), nn.Linear(16, 3 * 2))
        self.fc_loc[2].weight.set_value(paddle.zeros([16, 6]))
        self.fc_loc[2].bias.set_value(paddle.to_tensor([1, 0, 0, 0, 1, 0], dtype="float32"))
        self.classifier = nn.Linear(16 * 16, 10)

    def stn(self, x):
        xs = self.localization(x)
        xs = xs.reshape([-1, 8 * 6 * 6])
        theta = self.fc_loc(xs).reshape([-1, 2, 3])
        grid = F.affine_grid(theta, x.shape, align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    def forward(self, x):
        x = self.stn(x)
        return self.classifier(x.flatten(1))


register("spatial_transformer", images(1, 16))(lambda: STN())


# ---- CRNN + CTC loss ---------------------------------------------------------

class CRNN(nn.Layer):
    def __init__(self, num_classes=6, hidden=8):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2D(1, 8, 3, padding=1), nn.BatchNorm2D(8), nn.ReLU(), nn.MaxPool2D((2, 2)),
            nn.Conv2D(8, 16, 3, padding=1), nn.BatchNorm2D(16), nn.ReLU(), nn.MaxPool2D((2, 1), (2, 1)))
        self.rnn = nn.LSTM(16 * 4, hidden, direction="bidirectional")
        self.fc = nn.Linear(hidden * 2, num_classes)
        self.ctc = nn.CTCLoss(blank=0, reduction="mean")

    def forward(self, images, labels, label_lengths):
        conv = self.cnn(images)  # [b, c, h, w]
        b, c, h, w = conv.shape
        seq = conv.transpose([0, 3, 1, 2]).reshape([b, w, c * h])
        rnn_out, _ = self.rnn(seq)
        logits = self.fc(rnn_out)  # [b, T, classes]
        log_probs = F.log_softmax(logits, axis=-1).transpose([1, 0, 2])  # [T, b, classes]
        input_lengths = paddle.full([b], w, dtype="int64")
        loss = self.ctc(log_probs, labels, input_lengths, label_lengths)
        return logits, loss


@register("crnn_ctc", lambda: (floats(2, 1, 16, 16, seed=42), ints(1, 6, 2, 3, seed=42),
                               paddle.to_tensor([3, 2], dtype="int64")), notes="eval mode")
def _crnn():
    model = CRNN()
    model.eval()
    return model
