"""paddle.vision: models, transforms, datasets."""
from . import datasets, models, transforms
from .models import *  # noqa: F401,F403

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
