"""oar.nn (paddle.nn): Layer, layers, functional, initializer, gradient clipping."""
from . import functional, initializer
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from .layer import Layer
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers_all
from .rnn import *  # noqa: F401,F403
from .rnn import __all__ as _rnn_all
_layers_all = [*_layers_all, *_rnn_all]  # the RNN layers are listed in __all__ with the others
from .layers_conv import *  # noqa: F401,F403
from .layers_conv import __all__ as _conv_all
from .transformer import *  # noqa: F401,F403
from .transformer import __all__ as _transformer_all
from .parameter import Parameter, ParamAttr, create_parameter
from . import utils  # noqa: F401

__all__ = ["Layer", "Parameter", "ParamAttr", "functional", "initializer", "ClipGradByGlobalNorm",
           "ClipGradByNorm", "ClipGradByValue"] + list(_layers_all) + _conv_all + _transformer_all
