"""Parameter (a Tensor that is trainable by default) and ParamAttr."""
from .. import _C
from ..framework import Tensor, convert_dtype, default_float_dtype
from . import initializer as I


class Parameter(Tensor):
    """A trainable tensor owned by a Layer (paddle's EagerParamBase)."""

    def __init__(self, tensor, trainable=True, name=None, need_clip=True, learning_rate=1.0):
        super().__init__(tensor.detach())
        self.stop_gradient = not trainable
        self.name = name
        self.need_clip = need_clip
        self.optimize_attr = {"learning_rate": learning_rate}
        self.persistable = True

    @property
    def trainable(self):
        return not self.stop_gradient

    @trainable.setter
    def trainable(self, value):
        self.stop_gradient = not value

    def initialize(self):
        """Paddle initialises a parameter made under LazyGuard here; oar's are
        initialised when made, so there is nothing left to do."""

    @classmethod
    def _from_tensor(cls, tensor, like):
        return cls(tensor, trainable=like.trainable, name=like.name, need_clip=like.need_clip,
                   learning_rate=like.optimize_attr["learning_rate"])

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)


class ParamAttr:
    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None, trainable=True,
                 do_model_average=False, need_clip=True):
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable
        self.need_clip = need_clip


def create_parameter(shape, dtype=None, name=None, attr=None, is_bias=False, default_initializer=None):
    """A new Parameter: attr's initializer, else default_initializer, else
    Constant(0) for a bias and XavierUniform for a weight (Paddle's defaults)."""
    if isinstance(attr, I.Initializer):
        attr = ParamAttr(initializer=attr)
    attr = attr or ParamAttr()
    dtype = convert_dtype(dtype) or default_float_dtype()
    init = attr.initializer or default_initializer or (I.Constant(0.0) if is_bias else I.XavierUniform())
    p = Parameter(_C.ops.full([int(s) for s in shape], 0.0, dtype), trainable=attr.trainable,
                  name=attr.name or name, need_clip=attr.need_clip, learning_rate=attr.learning_rate)
    init(p)
    p.regularizer = attr.regularizer
    return p
