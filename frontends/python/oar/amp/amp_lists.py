"""The op lists of auto_cast (paddle.amp.amp_lists), by Paddle's op names.

White-list ops are numerically safe and fast in half precision: under O1 their
float32 inputs are cast to the AMP dtype. Black-list ops lose too much in half
precision: their half inputs are cast to float32. Every other op follows its
inputs (Note [AMP dispatch] in auto_cast.py)."""

WHITE_LIST = {"conv2d", "einsum", "matmul", "matmul_v2", "linear_v2", "max_pool2d_with_index", "mul",
              "fused_gemm_epilogue", "fused_rotary_position_embedding", "flash_attn"}

ONLY_FP16_WHITE_LIST = {"fused_attention", "fused_feedforward"}

FP16_WHITE_LIST = WHITE_LIST | ONLY_FP16_WHITE_LIST
BF16_WHITE_LIST = WHITE_LIST

FP16_BLACK_LIST = {
    "tan", "acos", "asin", "sinh", "cosh", "atanh", "tanh_shrink", "erfinv", "exp", "expm1", "log", "log10",
    "log2", "reciprocal", "rsqrt", "pow", "square", "reduce_sum", "mean", "reduce_mean", "reduce_prod",
    "cumprod", "cumsum", "dist", "pnorm", "frobenius_norm", "renorm", "group_norm", "layer_norm", "softmax",
    "softmin", "softplus", "log_softmax", "softmax_with_cross_entropy", "sigmoid_cross_entropy_with_logits",
    "c_softmax_with_cross_entropy", "cross_entropy", "cross_entropy2", "nll_loss", "huber_loss",
    "triplet_margin_loss", "log_loss", "hsigmoid_loss", "margin_cross_entropy"}
BF16_BLACK_LIST = FP16_BLACK_LIST

# Ops whose half-precision backward is slower than float32: black at O1 and O2.
EXTRA_BLACK_LIST = {"linear_interp_v2", "nearest_interp_v2", "bilinear_interp_v2", "bicubic_interp_v2",
                    "trilinear_interp_v2", "lookup_table", "lookup_table_v2", "scatter"}


def white_list():
    """{dtype: {level: set of op names}} of the ops that run in half precision."""
    return {"float16": {"OD": FP16_WHITE_LIST, "O1": FP16_WHITE_LIST, "O2": FP16_WHITE_LIST},
            "bfloat16": {"OD": BF16_WHITE_LIST, "O1": BF16_WHITE_LIST, "O2": BF16_WHITE_LIST}}


def black_list():
    """{dtype: {level: set of op names}} of the ops that stay in float32."""
    return {"float16": {"OD": set(), "O1": FP16_BLACK_LIST | EXTRA_BLACK_LIST, "O2": EXTRA_BLACK_LIST},
            "bfloat16": {"OD": set(), "O1": BF16_BLACK_LIST | EXTRA_BLACK_LIST, "O2": EXTRA_BLACK_LIST}}


# oar's eager op (a name in oar._C.ops, or an op run through oar._C.ops.call)
# -> the Paddle op names it answers to in the lists and in custom lists.
OP_ALIASES = {
    "matmul": ("matmul", "matmul_v2", "bmm", "mm"),
    "linear": ("linear", "linear_v2", "fc"),
    "conv2d": ("conv2d",),
    "conv2d_transpose": ("conv2d_transpose",),
    "sum": ("sum", "reduce_sum"),
    "mean": ("mean", "reduce_mean"),
    "prod": ("prod", "reduce_prod"),
    "pow_scalar": ("pow",),
    "cross_entropy": ("cross_entropy", "cross_entropy2", "softmax_with_cross_entropy"),
    "add": ("add", "elementwise_add"),
    "subtract": ("subtract", "elementwise_sub"),
    "multiply": ("multiply", "elementwise_mul"),
    "divide": ("divide", "elementwise_div"),
    "max_pool2d": ("max_pool2d", "pool2d", "max_pool2d_with_index"),
    "avg_pool2d": ("avg_pool2d", "pool2d"),
    "embedding": ("embedding", "lookup_table", "lookup_table_v2"),
}
