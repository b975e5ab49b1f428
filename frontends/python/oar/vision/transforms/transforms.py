"""paddle.vision.transforms classes. Random choices use Python's `random`
module (and numpy's for RandomResizedCrop's scale), as Paddle does, so
random.seed makes them repeatable."""
import math
import numbers
import random

import numpy as np

from . import functional as F


def _size_pair(size):
    return (int(size), int(size)) if isinstance(size, numbers.Number) else tuple(size)


def _image_size(img):
    """(width, height), as Paddle's _get_image_size (tensors are CHW)."""
    h, w = F._hw(img)
    return w, h


class Compose:
    """Applies the transforms in order."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, data):
        for t in self.transforms:
            data = t(data)
        return data

    def __repr__(self):
        return type(self).__name__ + "(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class BaseTransform:
    """Applies _apply_<key> to each element of a tuple input, by position in
    keys (default ('image',)); extra elements pass through unchanged."""

    def __init__(self, keys=None):
        keys = ("image",) if keys is None else keys
        if isinstance(keys, str) or not isinstance(keys, (list, tuple)):
            raise ValueError(f"{type(self).__name__}: keys must be a sequence of names, got {keys!r}")
        for k in keys:
            if getattr(self, f"_apply_{k}", None) is None:
                raise NotImplementedError(f"{type(self).__name__}: no rule to transform '{k}' data")
        self.keys, self.params = keys, None

    def _get_params(self, inputs):
        return None

    def __call__(self, inputs):
        single = not isinstance(inputs, tuple)
        inputs = (inputs,) if single else inputs
        self.params = self._get_params(inputs)
        outputs = [getattr(self, f"_apply_{self.keys[i]}")(inputs[i]) for i in range(min(len(inputs), len(self.keys)))]
        outputs += list(inputs[len(self.keys):])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _apply_image(self, image):
        raise NotImplementedError(f"{type(self).__name__} does not transform images")

    def __repr__(self):
        return f"{type(self).__name__}()"


class ToTensor(BaseTransform):
    def __init__(self, data_format="CHW", keys=None):
        super().__init__(keys)
        self.data_format = data_format

    def _apply_image(self, img):
        return F.to_tensor(img, self.data_format)


class Resize(BaseTransform):
    def __init__(self, size, interpolation="bilinear", keys=None):
        super().__init__(keys)
        if not (isinstance(size, numbers.Integral) or (isinstance(size, (list, tuple)) and len(size) == 2)):
            raise TypeError(f"Resize: size must be an int or a pair (h, w), got {size!r}")
        self.size, self.interpolation = size, interpolation

    def _apply_image(self, img):
        return F.resize(img, self.size, self.interpolation)


class RandomResizedCrop(BaseTransform):
    """A random window (area fraction in scale, aspect ratio in ratio) resized to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4, 4.0 / 3), interpolation="bilinear", keys=None):
        super().__init__(keys)
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError(f"RandomResizedCrop: scale and ratio must be (min, max), got {scale} and {ratio}")
        self.size, self.scale, self.ratio, self.interpolation = _size_pair(size), scale, ratio, interpolation

    def _get_param(self, image, attempts=10):
        width, height = _image_size(image)
        area = height * width
        log_ratio = tuple(math.log(x) for x in self.ratio)
        for _ in range(attempts):
            target_area = np.random.uniform(*self.scale) * area
            aspect_ratio = math.exp(np.random.uniform(*log_ratio))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return random.randint(0, height - h), random.randint(0, width - w), h, w
        in_ratio = width / height
        if in_ratio < min(self.ratio):
            w, h = width, int(round(width / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            h, w = height, int(round(height * max(self.ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def _apply_image(self, img):
        i, j, h, w = self._get_param(img)
        return F.resize(F.crop(img, i, j, h, w), self.size, self.interpolation)


class CenterCrop(BaseTransform):
    def __init__(self, size, keys=None):
        super().__init__(keys)
        self.size = _size_pair(size)

    def _apply_image(self, img):
        return F.center_crop(img, self.size)


class _RandomFlip(BaseTransform):
    _flip = None

    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        if not 0 <= prob <= 1:
            raise ValueError(f"{type(self).__name__}: prob must be in [0, 1], got {prob}")
        self.prob = prob

    def _apply_image(self, img):
        return type(self)._flip(img) if random.random() < self.prob else img


class RandomHorizontalFlip(_RandomFlip):
    _flip = staticmethod(F.hflip)


class RandomVerticalFlip(_RandomFlip):
    _flip = staticmethod(F.vflip)


class Normalize(BaseTransform):
    def __init__(self, mean=0.0, std=1.0, data_format="CHW", to_rgb=False, keys=None):
        super().__init__(keys)
        self.mean = [mean] * 3 if isinstance(mean, numbers.Number) else mean
        self.std = [std] * 3 if isinstance(std, numbers.Number) else std
        self.data_format, self.to_rgb = data_format, to_rgb

    def _apply_image(self, img):
        return F.normalize(img, self.mean, self.std, self.data_format, self.to_rgb)


class Transpose(BaseTransform):
    """Permutes the axes (default HWC -> CHW); a 2-D array gets a channel axis first."""

    def __init__(self, order=(2, 0, 1), keys=None):
        super().__init__(keys)
        self.order = order

    def _apply_image(self, img):
        if F._is_tensor_image(img):
            from ...math import transpose
            return transpose(img, list(self.order))
        img = np.asarray(img)
        if img.ndim == 2:
            img = img[..., None]
        return img.transpose(self.order)


def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
    """[lo, hi] of the random factor: center -/+ value for a number, or a given
    (lo, hi) pair; None when the range is just {center}."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"{name}: a single value must be non-negative, got {value}")
        value = [center - value, center + value]
        if clip_first_on_zero:
            value[0] = max(value[0], 0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name}: values must satisfy {bound[0]} <= lo <= hi <= {bound[1]}, got {value}")
    else:
        raise TypeError(f"{name}: value must be a number or a pair (lo, hi), got {value!r}")
    return None if value[0] == value[1] == center else value


class _RandomFactor(BaseTransform):
    _name, _fn, _range = None, None, {}

    def __init__(self, value, keys=None):
        super().__init__(keys)
        self.value = _check_input(value, self._name, **self._range)

    def _apply_image(self, img):
        if self.value is None:
            return img
        return type(self)._fn(img, random.uniform(self.value[0], self.value[1]))


class BrightnessTransform(_RandomFactor):
    _name, _fn = "brightness", staticmethod(F.adjust_brightness)


class ContrastTransform(_RandomFactor):
    _name, _fn = "contrast", staticmethod(F.adjust_contrast)


class SaturationTransform(_RandomFactor):
    _name, _fn = "saturation", staticmethod(F.adjust_saturation)


class HueTransform(_RandomFactor):
    _name, _fn = "hue", staticmethod(F.adjust_hue)
    _range = dict(center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)


class ColorJitter(BaseTransform):
    """Brightness, contrast, saturation and hue jitter, applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0, keys=None):
        super().__init__(keys)
        self.brightness, self.contrast, self.saturation, self.hue = brightness, contrast, saturation, hue

    def _apply_image(self, img):
        steps = [BrightnessTransform(self.brightness, self.keys), ContrastTransform(self.contrast, self.keys),
                 SaturationTransform(self.saturation, self.keys), HueTransform(self.hue, self.keys)]
        random.shuffle(steps)
        return Compose(steps)(img)


class RandomCrop(BaseTransform):
    """A random size window, after optional padding (pad_if_needed pads a too small image)."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant", keys=None):
        super().__init__(keys)
        self.size = _size_pair(size)
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    def _get_param(self, img, output_size):
        w, h = _image_size(img)
        th, tw = output_size
        if w == tw and h == th:
            return 0, 0, h, w
        if h < th or w < tw:
            raise ValueError(f"RandomCrop: the image ({h}x{w}) is smaller than the crop size ({th}x{tw}); "
                             f"set padding or pad_if_needed=True")
        return random.randint(0, h - th), random.randint(0, w - tw), th, tw

    def _apply_image(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        w, h = _image_size(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, (self.size[1] - w, 0), self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, (0, self.size[0] - h), self.fill, self.padding_mode)
        return F.crop(img, *self._get_param(img, self.size))


class RandomErasing(BaseTransform):
    """With probability prob, sets a random window (area fraction in scale,
    aspect ratio in ratio) to value: a number, one per channel, or 'random'
    (normal noise)."""

    def __init__(self, prob=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False, keys=None):
        super().__init__(keys)
        if not (isinstance(scale, (tuple, list)) and 0 <= scale[0] <= scale[1] <= 1):
            raise ValueError(f"RandomErasing: scale must be (min, max) within [0, 1], got {scale!r}")
        if not (isinstance(ratio, (tuple, list)) and 0 <= ratio[0] <= ratio[1]):
            raise ValueError(f"RandomErasing: ratio must be (min, max), got {ratio!r}")
        if not 0 <= prob <= 1:
            raise ValueError(f"RandomErasing: prob must be in [0, 1], got {prob}")
        if isinstance(value, str) and value != "random":
            raise ValueError(f"RandomErasing: a string value must be 'random', got '{value}'")
        if isinstance(value, (tuple, list)) and len(value) not in (1, 3):
            raise ValueError(f"RandomErasing: value must be a number or 1 or 3 numbers, got {value!r}")
        self.prob, self.scale, self.ratio, self.value, self.inplace = prob, scale, ratio, value, inplace

    def _get_param(self, img, value):
        if F._is_tensor_image(img):
            c, h, w = img.shape[-3], img.shape[-2], img.shape[-1]
        else:
            h, w, c = np.asarray(img).reshape(F._hw(img) + (-1,)).shape
        log_ratio = np.log(self.ratio)
        for _ in range(10):
            erase_area = np.random.uniform(*self.scale) * h * w
            aspect_ratio = np.exp(np.random.uniform(*log_ratio))
            eh, ew = int(round(np.sqrt(erase_area * aspect_ratio))), int(round(np.sqrt(erase_area / aspect_ratio)))
            if eh >= h or ew >= w:
                continue
            if value is None:
                v = np.random.normal(size=[eh, ew, c]) * (1 if F._is_tensor_image(img) else 255)
                v = v.transpose(2, 0, 1) if F._is_tensor_image(img) else v
            else:
                v = np.asarray(value, dtype=np.float64)
                v = v[:, None, None] if F._is_tensor_image(img) else v[None, None, :]
            return np.random.randint(0, h - eh + 1), np.random.randint(0, w - ew + 1), eh, ew, v
        return None

    def _apply_image(self, img):
        if random.random() >= self.prob:
            return img
        value = None if isinstance(self.value, str) else \
            [self.value] if isinstance(self.value, numbers.Number) else self.value
        params = self._get_param(img, value)
        return img if params is None else F.erase(img, *params, inplace=self.inplace)


class Pad(BaseTransform):
    def __init__(self, padding, fill=0, padding_mode="constant", keys=None):
        F._pad_amounts(padding, "Pad")
        if padding_mode not in F._NP_PAD_MODES:
            raise ValueError(f"Pad: padding_mode must be one of {list(F._NP_PAD_MODES)}, got '{padding_mode}'")
        super().__init__(keys)
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def _apply_image(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)


def _angle_range(x, name, sizes=(2,)):
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"{name}: a single value must be non-negative, got {x}")
        return [-float(x), float(x)]
    if not isinstance(x, (list, tuple)) or len(x) not in sizes:
        raise ValueError(f"{name}: must be a number or a sequence of length {' or '.join(map(str, sizes))}, got {x!r}")
    return [float(v) for v in x]


class RandomRotation(BaseTransform):
    """Rotation by an angle drawn uniformly from degrees ((-d, d) for a number d)."""

    def __init__(self, degrees, interpolation="nearest", expand=False, center=None, fill=0, keys=None):
        self.degrees = _angle_range(degrees, "RandomRotation: degrees")
        super().__init__(keys)
        self.interpolation, self.expand, self.center, self.fill = interpolation, expand, center, fill

    def _apply_image(self, img):
        angle = random.uniform(self.degrees[0], self.degrees[1])
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)


class RandomAffine(BaseTransform):
    """A random rotation (degrees), translation (fractions of width and
    height), scale range and shear (degrees: x range, or x and y ranges)."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation="nearest", fill=0, center=None,
                 keys=None):
        self.degrees = _angle_range(degrees, "RandomAffine: degrees")
        super().__init__(keys)
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"RandomAffine: interpolation must be 'nearest' or 'bilinear', got '{interpolation}'")
        if translate is not None and (len(translate) != 2 or not all(0.0 <= t <= 1.0 for t in translate)):
            raise ValueError(f"RandomAffine: translate must be 2 fractions in [0, 1], got {translate!r}")
        if scale is not None and (len(scale) != 2 or not all(v > 0 for v in scale)):
            raise ValueError(f"RandomAffine: scale must be 2 positive numbers, got {scale!r}")
        self.translate, self.scale, self.interpolation, self.center = translate, scale, interpolation, center
        self.shear = None if shear is None else _angle_range(shear, "RandomAffine: shear", (2, 4))
        self.fill = 0 if fill is None else fill

    def _get_param(self, img_size):
        angle = random.uniform(self.degrees[0], self.degrees[1])
        translations = (0, 0)
        if self.translate is not None:
            max_dx, max_dy = self.translate[0] * img_size[0], self.translate[1] * img_size[1]
            translations = (int(random.uniform(-max_dx, max_dx)), int(random.uniform(-max_dy, max_dy)))
        scale = 1.0 if self.scale is None else random.uniform(self.scale[0], self.scale[1])
        shear = (0.0, 0.0)
        if self.shear is not None:
            shear = (random.uniform(self.shear[0], self.shear[1]),
                     random.uniform(self.shear[2], self.shear[3]) if len(self.shear) == 4 else 0.0)
        return angle, translations, scale, shear

    def _apply_image(self, img):
        return F.affine(img, *self._get_param(list(_image_size(img))), interpolation=self.interpolation,
                        fill=self.fill, center=self.center)


class RandomPerspective(BaseTransform):
    """With probability prob, moves each corner inwards by up to
    distortion_scale of half the image size and warps accordingly."""

    def __init__(self, prob=0.5, distortion_scale=0.5, interpolation="nearest", fill=0, keys=None):
        super().__init__(keys)
        if not 0 <= prob <= 1 or not 0 <= distortion_scale <= 1:
            raise ValueError(f"RandomPerspective: prob and distortion_scale must be in [0, 1], got {prob} and "
                             f"{distortion_scale}")
        self.prob, self.distortion_scale, self.interpolation, self.fill = prob, distortion_scale, interpolation, fill

    def get_params(self, width, height, distortion_scale):
        dw, dh = int(distortion_scale * (width // 2)), int(distortion_scale * (height // 2))
        near_x, near_y = (lambda: int(random.uniform(0, dw + 1))), (lambda: int(random.uniform(0, dh + 1)))
        far_x, far_y = (lambda: int(random.uniform(width - dw - 1, width))), \
            (lambda: int(random.uniform(height - dh - 1, height)))
        topleft = [near_x(), near_y()]
        topright = [far_x(), near_y()]
        botright = [far_x(), far_y()]
        botleft = [near_x(), far_y()]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return startpoints, [topleft, topright, botright, botleft]

    def _apply_image(self, img):
        if random.random() >= self.prob:
            return img
        width, height = _image_size(img)
        return F.perspective(img, *self.get_params(width, height, self.distortion_scale), self.interpolation,
                             self.fill)


class Grayscale(BaseTransform):
    def __init__(self, num_output_channels=1, keys=None):
        super().__init__(keys)
        self.num_output_channels = num_output_channels

    def _apply_image(self, img):
        return F.to_grayscale(img, self.num_output_channels)


__all__ = ["Compose", "BaseTransform", "ToTensor", "Resize", "RandomResizedCrop", "CenterCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "Normalize", "Transpose", "BrightnessTransform",
           "ContrastTransform", "SaturationTransform", "HueTransform", "ColorJitter", "RandomCrop", "RandomErasing",
           "Pad", "Grayscale", "RandomRotation", "RandomAffine", "RandomPerspective"]
