"""DatasetFolder and ImageFolder over a local directory (paddle.vision.datasets)."""
import os

from ...io import Dataset

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_valid_extension(filename, extensions):
    return filename.lower().endswith(tuple(x.lower() for x in extensions))


def pil_loader(path):
    try:
        from PIL import Image
    except ImportError:
        raise RuntimeError(f"pil_loader: reading '{path}' needs Pillow, which is not installed; install it or "
                           f"pass loader= to the dataset") from None
    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


def cv2_loader(path):
    try:
        import cv2
    except ImportError:
        raise RuntimeError(f"cv2_loader: reading '{path}' needs OpenCV (cv2), which is not installed") from None
    return cv2.cvtColor(cv2.imread(path), cv2.COLOR_BGR2RGB)


def default_loader(path):
    from .. import get_image_backend
    return cv2_loader(path) if get_image_backend() == "cv2" else pil_loader(path)


def _walk(path, accept):
    for root, _, fnames in sorted(os.walk(path, followlinks=True)):
        for fname in sorted(fnames):
            full = os.path.join(root, fname)
            if accept(full):
                yield full


def _validity(extensions, is_valid_file):
    if is_valid_file is not None:
        return is_valid_file
    return lambda p: has_valid_extension(p, extensions)


class DatasetFolder(Dataset):
    """root/<class>/**/<file>: samples (path, class index), classes sorted by name;
    item i is (loader(path) after transform, class index)."""

    def __init__(self, root, loader=None, extensions=None, transform=None, is_valid_file=None):
        self.root, self.transform = root, transform
        self.extensions = IMG_EXTENSIONS if extensions is None else tuple(extensions)
        if not os.path.isdir(root):
            raise RuntimeError(f"DatasetFolder: root '{root}' is not a directory")
        self.classes = sorted(d.name for d in os.scandir(root) if d.is_dir())
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        accept = _validity(self.extensions, is_valid_file)
        self.samples = [(p, self.class_to_idx[c]) for c in self.classes
                        for p in _walk(os.path.join(os.path.expanduser(root), c), accept)]
        if not self.samples:
            raise RuntimeError(f"DatasetFolder: found no files in the class folders of '{root}' "
                               f"(supported extensions: {', '.join(self.extensions)})")
        self.targets = [s[1] for s in self.samples]
        self.loader = default_loader if loader is None else loader

    def __getitem__(self, index):
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        return sample, target

    def __len__(self):
        return len(self.samples)


class ImageFolder(Dataset):
    """Every matching file under root, without labels; item i is [sample]."""

    def __init__(self, root, loader=None, extensions=None, transform=None, is_valid_file=None):
        self.root, self.transform = root, transform
        self.extensions = IMG_EXTENSIONS if extensions is None else tuple(extensions)
        if not os.path.isdir(root):
            raise RuntimeError(f"ImageFolder: root '{root}' is not a directory")
        self.samples = list(_walk(os.path.expanduser(root), _validity(self.extensions, is_valid_file)))
        if not self.samples:
            raise RuntimeError(f"ImageFolder: found no files under '{root}' "
                               f"(supported extensions: {', '.join(self.extensions)})")
        self.loader = default_loader if loader is None else loader

    def __getitem__(self, index):
        sample = self.loader(self.samples[index])
        if self.transform is not None:
            sample = self.transform(sample)
        return [sample]

    def __len__(self):
        return len(self.samples)
