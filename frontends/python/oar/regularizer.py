"""paddle.regularizer: weight decay terms for ParamAttr(regularizer=...) and
the optimizers' weight_decay (a parameter's own regularizer wins)."""
from .optimizer.optimizer import L1Decay, L2Decay

__all__ = ["L1Decay", "L2Decay"]
