"""paddle.vision.datasets: folder datasets and MNIST/FashionMNIST from local files."""
from .folder import DatasetFolder, ImageFolder
from .mnist import MNIST, FashionMNIST

__all__ = ["DatasetFolder", "ImageFolder", "MNIST", "FashionMNIST"]
