"""oar: a deep-learning framework in the spirit of PaddlePaddle 3.x.

The Paddle-style API over the C++ core (oar._C, liboar_core.so and the device
plugins installed in oar/lib)."""
from . import _C
from ._C import ResourceExhaustedError, UnsupportedError  # noqa: F401 - oar.Error codes as exceptions
from .framework import (Place, CPUPlace, CustomPlace, Tensor, dtype, float32, float64, float16, bfloat16, int8,
                        uint8, int32, int64, bool, complex64, complex128, set_default_dtype, get_default_dtype,
                        set_device, get_device, get_all_device_type, device_count, seed, environment)
from .creation import (to_tensor, full, zeros, ones, empty, full_like, zeros_like, ones_like, empty_like, arange,
                       linspace, eye, rand, uniform, randn, standard_normal, normal, randint, randperm, assign,
                       from_numpy, logspace, rand_like, randn_like, randint_like, bernoulli, multinomial, poisson,
                       hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window, as_tensor,
                       asarray, binomial, standard_gamma, inclusive_range as range)  # noqa: A004 - paddle.range
from .math import *  # noqa: F401,F403
from .math import (sum, max, min, abs, pow, all, any, slice)  # noqa: A004 - paddle names
from .math_extra import *  # noqa: F401,F403
from .manip_extra import *  # noqa: F401,F403
from .framework import (Size, iinfo, finfo, get_rng_state, set_rng_state, get_cuda_rng_state,  # noqa: F401
                        set_cuda_rng_state)
from .printing import set_printoptions  # noqa: F401
from . import tensor_methods as _tensor_methods  # noqa: F401 - installs Tensor methods
from . import tensor_attrs as _tensor_attrs  # noqa: F401 - stride, new_*, fill_diagonal_, ...
from .inplace import index_put, index_put_  # noqa: F401 - paddle.index_put(_)
from .complex_ops import (complex, real, imag, conj, angle, as_real, as_complex, polar,  # noqa: F401,A004
                          is_complex)
from .autograd import no_grad, enable_grad, set_grad_enabled, is_grad_enabled, grad
from . import autograd  # noqa: F401 - paddle.autograd (PyLayer, backward, jacobian, hessian)
from . import nn, optimizer, io, metric, callbacks, jit, static, utils
from .static import enable_static, disable_static, in_dynamic_mode  # noqa: F401
from . import linalg, sparse  # noqa: F401 - paddle.linalg, paddle.sparse
from .linalg import cholesky, eigvalsh, inv as inverse  # noqa: F401 - paddle's top-level aliases
from . import fft, signal  # noqa: F401 - paddle.fft, paddle.signal
from .utils.dlpack import from_dlpack  # noqa: F401 - torch.from_dlpack
from .nn.functional import softmax  # noqa: F401
from .serialization import save, load
from . import vision  # noqa: F401 - paddle.vision
from .nn.layer import Layer  # noqa: F401
from .nn.parameter import ParamAttr, create_parameter  # noqa: F401
from .hapi import Model  # noqa: F401
from .distributed.data_parallel import DataParallel  # noqa: F401 - paddle.DataParallel
from .summary import summary  # noqa: F401
from . import hapi  # noqa: F401
from . import distributed  # noqa: F401
from . import amp, profiler  # noqa: F401 - paddle.amp, paddle.profiler
from .dynamic_flops import flops  # noqa: F401 - paddle.flops
from . import compat, regularizer, random_more as _random_more  # noqa: F401 - random_more: Tensor.normal_, ...
from .compat import enable_compat, disable_compat  # noqa: F401
from .math_more import gammainc, gammaincc, shard_index  # noqa: F401
from .runtime_flags import get_flags, set_flags, disable_signal_handler, LazyGuard  # noqa: F401
from .mmap_storage import MmapStorage  # noqa: F401

__version__ = "0.1.0"

manual_seed = seed
get_default_device, set_default_device = get_device, set_device
from .complex_ops import as_real as view_as_real, as_complex as view_as_complex  # noqa: E402,F401
from .utils.dlpack import to_dlpack  # noqa: E402,F401
e, pi, inf, nan, newaxis = 2.718281828459045, 3.141592653589793, float("inf"), float("nan"), None
float, double, half, long, int = float32, float64, float16, int64, int32  # noqa: A001 - paddle's dtype aliases
cfloat, cdouble = complex64, complex128
is_compiled_with_xpu = is_compiled_with_rocm = lambda: False  # noqa: E731
is_compiled_with_ipu = is_compiled_with_cinn = lambda: False  # noqa: E731
is_compiled_with_distribute = lambda: True  # noqa: E731 - oar.distributed is always there

is_compiled_with_cuda = lambda: False  # noqa: E731


class device:  # noqa: N801 - paddle.device namespace
    set_device = staticmethod(set_device)
    get_device = staticmethod(get_device)
    get_all_device_type = staticmethod(get_all_device_type)
    device_count = staticmethod(device_count)

    @staticmethod
    def synchronize(device=None):
        _C.synchronize(None if device is None else str(device))


from . import tensor  # noqa: E402,F401 - paddle.tensor and its submodules (last: it lists the names above)
