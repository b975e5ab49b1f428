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
from .layers_conv_nd import *  # noqa: F401,F403
from .layers_extra import *  # noqa: F401,F403
from .transformer_decoder import *  # noqa: F401,F403
from . import layers_conv_nd as _conv_nd, layers_extra as _extra, transformer_decoder as _decoder
from .parameter import Parameter, ParamAttr, create_parameter
from . import utils  # noqa: F401
from . import layer, layer_paths, loss  # noqa: F401 - paddle.nn.layer.<group> and paddle.nn.loss paths
layer_paths.install(layer)
globals().update({alias: globals()[name] for alias, name in layer_paths.ALIASES.items() if name in globals()})

__all__ = ["Layer", "Parameter", "ParamAttr", "functional", "initializer", "ClipGradByGlobalNorm",
           "ClipGradByNorm", "ClipGradByValue"] + list(_layers_all) + _conv_all + _transformer_all
__all__ += _conv_nd.__all__ + _extra.__all__ + _decoder.__all__ + list(layer_paths.ALIASES)
