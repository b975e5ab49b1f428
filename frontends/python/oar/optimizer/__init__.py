"""oar.optimizer (paddle.optimizer)."""
from . import lr
from .lbfgs import LBFGS
from .optimizer import SGD, Adam, AdamW, L1Decay, L2Decay, Momentum, Optimizer

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamW", "LBFGS", "L1Decay", "L2Decay", "lr"]
