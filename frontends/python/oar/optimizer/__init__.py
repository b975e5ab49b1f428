"""oar.optimizer (paddle.optimizer)."""
from . import lr
from .optimizer import SGD, Adam, AdamW, L1Decay, L2Decay, Momentum, Optimizer

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamW", "L1Decay", "L2Decay", "lr"]
