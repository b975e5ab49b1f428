"""oar.optimizer (paddle.optimizer)."""
from . import lr
from .lbfgs import LBFGS
from .more import ASGD, Adadelta, Adagrad, NAdam, RAdam, RMSProp, Rprop
from .optimizer import SGD, Adam, AdamW, L1Decay, L2Decay, Momentum, Optimizer

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamW", "LBFGS", "ASGD", "Adadelta", "Adagrad", "NAdam", "RAdam",
           "RMSProp", "Rprop", "L1Decay", "L2Decay", "lr"]
