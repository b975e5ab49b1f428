"""paddle.vision: models, transforms, datasets (their public names are also
re-exported here, as Paddle does)."""
from . import datasets, models, ops, transforms
from .datasets import *  # noqa: F401,F403
from .models import *  # noqa: F401,F403
from .transforms import *  # noqa: F401,F403

_image_backend = None


def set_image_backend(backend):
    """'pil' or 'cv2': what datasets and the default image loader return."""
    global _image_backend
    if backend not in ("pil", "cv2"):
        raise ValueError(f"set_image_backend: backend must be 'pil' or 'cv2', got '{backend}'")
    _image_backend = backend


def get_image_backend():
    """The backend set, else 'pil' when Pillow is installed, else 'cv2' (numpy arrays)."""
    if _image_backend is not None:
        return _image_backend
    try:
        import PIL  # noqa: F401
        return "pil"
    except ImportError:
        return "cv2"


def image_load(path, backend=None):
    """Reads an image file: a PIL image (backend 'pil') or a BGR numpy array ('cv2')."""
    backend = backend or get_image_backend()
    if backend == "pil":
        try:
            from PIL import Image
        except ImportError:
            raise RuntimeError(f"image_load: reading '{path}' with backend 'pil' needs Pillow, which is not "
                               f"installed") from None
        return Image.open(path)
    if backend == "cv2":
        try:
            import cv2
        except ImportError:
            raise RuntimeError(f"image_load: reading '{path}' with backend 'cv2' needs OpenCV, which is not "
                               f"installed") from None
        return cv2.imread(path)
    raise ValueError(f"image_load: backend must be 'pil' or 'cv2', got '{backend}'")


__all__ = ["set_image_backend", "get_image_backend", "image_load"]
