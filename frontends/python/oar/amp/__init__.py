"""paddle.amp: automatic mixed precision (auto_cast, decorate, GradScaler)."""
from . import amp_lists
from .amp_lists import black_list, white_list
from .auto_cast import (amp_decorate, amp_guard, auto_cast, decorate, get_autocast_dtype, is_autocast_enabled,
                        is_bfloat16_supported, is_float16_supported)
from .grad_scaler import AmpScaler, GradScaler, OptimizerState

autocast = auto_cast
