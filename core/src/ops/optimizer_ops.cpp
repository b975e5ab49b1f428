// Optimizer update ops: adam_update, the fused multi-tensor Adam / AdamW
// step (Note [Fused Adam]).
#include <cmath>
#include <string>

#include "oar/ops.h"
#include "ops/op_util.h"

namespace oar {

namespace {

// Note [Fused Adam]
// One call updates a list of n parameters: the inputs are n params, n
// gradients, n first moments, n second moments, then (amsgrad) n running
// maxima of the second moment, then (master_weights) n f32 master copies of
// half-precision params; the outputs are the new params, moments, maxima
// and master copies in the same order. Per element, in the moments' dtype C:
//   w  = master ? master : p        g = C(grad)
//   m' = m * b1 + g * (1 - b1)      v' = v * b2 + (g * g) * (1 - b2)
//   u  = amsgrad ? max(vmax, v') : v'                (vmax' = u)
//   w' = w * (1 - lr * weight_decay) - (m' / (sqrt(u) + eps_t)) * lr_t
//   p' = dtype(p)(w')                master' = w'
// with Paddle's bias corrections folded into the scalars:
//   lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t),  eps_t = epsilon * sqrt(1 - b2^t).
// weight_decay is AdamW's decoupled decay (0: plain Adam; Adam's L2 decay
// is added to the gradient by the caller). The op is functional, as every
// optimizer update is (Note [Rebinding] in frontends/python/src/tensor.cpp):
// it returns new tensors and the caller rebinds. It is a composite op: the
// decomposition is the op-by-op update the Python optimizers ran before
// (the same ops in the same order, so a device without the fused kernel
// gives the same bits), and a device kernel (cpu: kernels_optimizer.cpp)
// does all of it in one pass over memory. Not differentiable.

struct AdamArgs {
  int64_t n = 0;  // tensors
  bool amsgrad = false, master = false;
};

AdamArgs adam_args(const std::string& op, size_t num_inputs, const Attrs& attrs) {
  AdamArgs a;
  a.amsgrad = attrs.has("amsgrad") && attrs.get_bool("amsgrad");
  a.master = attrs.has("master_weights") && attrs.get_bool("master_weights");
  const size_t groups = 4 + (a.amsgrad ? 1 : 0) + (a.master ? 1 : 0);
  OAR_CHECK_ARG(num_inputs % groups == 0,
                op + ": expected " + std::to_string(groups) + " inputs per parameter (param, grad, moment1, moment2" +
                    (a.amsgrad ? ", moment2_max" : "") + (a.master ? ", master weight" : "") + ") but got " +
                    std::to_string(num_inputs) + " inputs, not a multiple of " + std::to_string(groups));
  a.n = static_cast<int64_t>(num_inputs / groups);
  return a;
}

std::vector<TensorMeta> adam_update_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  const AdamArgs a = adam_args(op.name, in.size(), attrs);
  OAR_CHECK_ARG(attrs.get_int("step") >= 1,
                op.name + ": step must be at least 1 but is " + std::to_string(attrs.get_int("step")));
  const auto n = static_cast<size_t>(a.n);
  const char* group_names[] = {"param", "grad", "moment1", "moment2", a.amsgrad ? "moment2_max" : "master weight",
                               "master weight"};
  std::vector<TensorMeta> out;
  out.reserve(in.size() - n);
  for (size_t i = 0; i < n; ++i) {
    const TensorMeta& p = in[i];
    const DType c = in[2 * n + i].dtype;  // the moments' dtype: the compute dtype
    OAR_CHECK_ARG(c == DType::f32 || c == DType::f64,
                  op.name + ": moment1 of parameter " + std::to_string(i) + " must be float32 or float64 but is " +
                      std::string(dtype_name(c)));
    const bool half = p.dtype == DType::bf16 || p.dtype == DType::f16;
    OAR_CHECK_ARG(p.dtype == c || (half && c == DType::f32),
                  op.name + ": parameter " + std::to_string(i) + " is " + std::string(dtype_name(p.dtype)) +
                      " but its moments are " + std::string(dtype_name(c)) +
                      "; the moments must have the parameter's dtype, or float32 for a bfloat16/float16 parameter");
    OAR_CHECK_ARG(!a.master || half,
                  op.name + ": master_weights is for bfloat16/float16 parameters but parameter " +
                      std::to_string(i) + " is " + std::string(dtype_name(p.dtype)));
    for (size_t g = 1; g < in.size() / n; ++g) {
      const TensorMeta& t = in[g * n + i];
      OAR_CHECK_ARG(t.shape == p.shape, op.name + ": the " + group_names[g] + " of parameter " + std::to_string(i) +
                                            " has shape " + shape_str(t.shape) + " but the parameter has " +
                                            shape_str(p.shape));
      const DType want = g == 1 ? p.dtype : c;
      OAR_CHECK_ARG(t.dtype == want || (g == 1 && t.dtype == c),
                    op.name + ": the " + group_names[g] + " of parameter " + std::to_string(i) + " is " +
                        std::string(dtype_name(t.dtype)) + " but " + std::string(dtype_name(want)) +
                        " was expected");
    }
  }
  for (size_t i = 0; i < n; ++i) out.push_back(in[i]);
  for (size_t g = 2; g < in.size() / n; ++g)
    for (size_t i = 0; i < n; ++i) out.push_back(in[g * n + i]);
  return out;
}

std::vector<Tensor> adam_update_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const AdamArgs a = adam_args("adam_update", in.size(), attrs);
  const double lr = attrs.get_float("lr"), b1 = attrs.get_float("beta1"), b2 = attrs.get_float("beta2");
  const double eps = attrs.get_float("epsilon"), wd = attrs.get_float("weight_decay");
  const auto t = static_cast<double>(attrs.get_int("step"));
  const double b1p = std::pow(b1, t), b2p = std::pow(b2, t);
  const double lr_t = lr * std::sqrt(1.0 - b2p) / (1.0 - b1p), eps_t = eps * std::sqrt(1.0 - b2p);
  const auto n = static_cast<size_t>(a.n);
  std::vector<Tensor> out(in.size() - n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& m0 = in[2 * n + i];
    const DType c = m0.dtype();
    const Tensor w = a.master ? in[(a.amsgrad ? 5 : 4) * n + i] : cast(in[i], c);
    const Tensor g = cast(in[n + i], c);
    Tensor m = m0 * b1 + g * (1.0 - b1);
    Tensor v = in[3 * n + i] * b2 + multiply(g, g) * (1.0 - b2);
    out[n + i] = m;
    out[2 * n + i] = v;
    if (a.amsgrad) {
      v = maximum(in[4 * n + i], v);
      out[3 * n + i] = v;
    }
    const Tensor decayed = wd != 0.0 ? w * (1.0 - lr * wd) : w;
    Tensor w_new = decayed - divide(m, sqrt(v) + eps_t) * lr_t;
    if (a.master) out[(a.amsgrad ? 4 : 3) * n + i] = w_new;
    out[i] = cast(w_new, in[i].dtype());
  }
  return out;
}

}  // namespace

OAR_REGISTER_OPS(optimizer) {
  add_op({.name = "adam_update", .kind = OpKind::composite, .num_inputs = -1, .num_outputs = -1,
          .meta = adam_update_meta, .decompose = adam_update_decompose, .differentiable = false,
          .attrs = {attr("lr", AttrKind::float_, "the learning rate (times the parameter's lr ratio)"),
                    attr("beta1", 0.9, "decay of the first moment"),
                    attr("beta2", 0.999, "decay of the second moment"),
                    attr("epsilon", 1e-8, "added to sqrt(moment2), before the bias correction"),
                    attr("step", AttrKind::int_, "the step count t >= 1 of the bias corrections"),
                    attr("weight_decay", 0.0, "AdamW's decoupled decay coefficient (0: Adam)"),
                    attr("amsgrad", false, "keep the running max of moment2 (inputs and outputs moment2_max)"),
                    attr("master_weights", false, "bf16/f16 params carry f32 master copies (multi_precision)")},
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "fused multi-tensor Adam/AdamW step: new params, moments (Note [Fused Adam])"});
}

}  // namespace oar
