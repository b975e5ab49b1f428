"""paddle.vision.transforms."""
from . import functional
from .functional import (adjust_brightness, adjust_contrast, adjust_hue, adjust_saturation, affine, center_crop, crop,
                         erase, hflip, normalize, pad, perspective, resize, rotate, to_grayscale, to_tensor, vflip)
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _classes

__all__ = list(_classes) + list(functional.__all__)
