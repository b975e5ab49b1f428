"""paddle.vision.datasets: folder datasets, MNIST/FashionMNIST and Cifar10/100 from local files."""
from .cifar import Cifar10, Cifar100
from .folder import DatasetFolder, ImageFolder
from .mnist import MNIST, FashionMNIST

__all__ = ["DatasetFolder", "ImageFolder", "MNIST", "FashionMNIST", "Cifar10", "Cifar100"]
