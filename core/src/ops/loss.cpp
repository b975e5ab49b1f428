// Losses (composite ops): cross_entropy with hard or soft labels, mse_loss.
#include <array>

#include "oar/dist_tensor.h"
#include "oar/ops.h"
#include "ops/op_util.h"
#include "ops/shape_util.h"

namespace oar {

namespace {

Shape without_axis(const Shape& shape, int64_t axis) {
  Shape out = shape;
  out.erase(out.begin() + axis);
  return out;
}

Shape reduced(const Shape& per_element, const std::string& reduction) {
  return reduction == "none" ? per_element : Shape{};
}

void check_reduction(const std::string& op, const std::string& reduction) {
  OAR_CHECK_ARG(reduction == "mean" || reduction == "sum" || reduction == "none",
            op + ": reduction must be 'mean', 'sum' or 'none' but is '" + reduction + "'");
}

std::vector<TensorMeta> cross_entropy_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  const Shape& x = in[0].shape;
  int64_t axis = attrs.get_int("axis");
  OAR_CHECK_ARG(axis >= 0 && axis < static_cast<int64_t>(x.size()),
            "cross_entropy: axis " + std::to_string(axis) + " is out of range for logits of shape " + shape_str(x));
  const std::string& reduction = attrs.get_string("reduction");
  check_reduction(op.name, reduction);
  Shape per_element = without_axis(x, axis);
  if (attrs.get_bool("soft_label")) {
    OAR_CHECK_ARG(in[1].shape == x && in[1].dtype == in[0].dtype,
              "cross_entropy: soft labels must have the logits' shape " + shape_str(x) + " and dtype " +
                  std::string(dtype_name(in[0].dtype)) + " but have " + shape_str(in[1].shape) + " and " +
                  std::string(dtype_name(in[1].dtype)));
  } else {
    Shape keep = x;
    keep[static_cast<size_t>(axis)] = 1;
    bool int_label = in[1].dtype == DType::i32 || in[1].dtype == DType::i64;
    OAR_CHECK_ARG(int_label && (in[1].shape == per_element || in[1].shape == keep),
              "cross_entropy: hard labels must be int32/int64 of shape " + shape_str(per_element) + " or " +
                  shape_str(keep) + " for logits of shape " + shape_str(x) + " but have dtype " +
                  std::string(dtype_name(in[1].dtype)) + " and shape " + shape_str(in[1].shape));
  }
  return {{in[0].dtype, reduced(per_element, reduction)}};
}

Tensor apply_reduction(const Tensor& loss, const std::string& reduction, const Tensor& weight_sum) {
  if (reduction == "none") return loss;
  Tensor total = sum(loss);
  return reduction == "sum" ? total : (weight_sum.defined() ? total / weight_sum : mean(loss));
}

// Note [Vocab-parallel cross entropy]
// cross_entropy has no SPMD rule: on distributed logits the dispatcher
// runs this decomposition in dist mode, and there the log-softmax is
// written as x - m - log(sum(exp(x - m))) with m the (detached) max along
// the class axis, rather than the log_softmax op (whose rule gathers a
// sharded class axis). With the classes sharded (Megatron's vocab-parallel
// loss) the max and the sum are reductions over a sharded dim: Partial(max)
// and Partial(sum), all_reduced where the next op needs them whole, and the
// label's log-probability is picked by the one-hot product summed over the
// classes, a local pick on the rank holding the label's class and zeros
// elsewhere, Partial(sum). No rank gathers the logits. m only shifts the
// exponent (its gradient cancels), so detaching it keeps the gradient
// exact. Dense logits keep the log_softmax op.
Tensor class_log_softmax(const Tensor& logits, int64_t axis) {
  if (!dist::is_dist(logits)) return log_softmax(logits, axis);
  Tensor shifted = logits - max(logits, {axis}, true).detach();
  return shifted - log(sum(exp(shifted), {axis}, true));
}

std::vector<Tensor> cross_entropy_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const Tensor& logits = in[0];
  int64_t axis = attrs.get_int("axis");
  const std::string& reduction = attrs.get_string("reduction");
  Tensor lsm = class_log_softmax(logits, axis);
  if (attrs.get_bool("soft_label")) {
    return {apply_reduction(-sum(in[1] * lsm, {axis}), reduction, Tensor())};
  }
  Shape keep = logits.shape();
  int64_t classes = keep[static_cast<size_t>(axis)];
  keep[static_cast<size_t>(axis)] = 1;
  Tensor label = reshape(cast(in[1], DType::i64), reshape_spec(in[1].shape(), keep));
  Shape class_shape(keep.size(), 1);
  class_shape[static_cast<size_t>(axis)] = classes;
  Tensor class_ids = reshape(arange(0, static_cast<double>(classes), 1, DType::i64, logits.device()), class_shape);
  Tensor one_hot = cast(equal(class_ids, label), logits.dtype());
  Tensor valid = cast(not_equal(label, full({}, static_cast<double>(attrs.get_int("ignore_index")), DType::i64,
                                            logits.device())),
                      logits.dtype());
  Tensor loss = -sum(one_hot * lsm * valid, {axis});
  return {apply_reduction(loss, reduction, sum(valid))};
}

std::vector<TensorMeta> mse_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  meta::require_same_dtype(op, in);
  check_reduction(op.name, attrs.get_string("reduction"));
  Shape s = meta::broadcast_shapes(op.name, in[0].shape, in[1].shape);
  return {{in[0].dtype, reduced(s, attrs.get_string("reduction"))}};
}

std::vector<Tensor> mse_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  Tensor d = in[0] - in[1];
  return {apply_reduction(d * d, attrs.get_string("reduction"), Tensor())};
}

}  // namespace

OAR_REGISTER_OPS(loss) {
  add_op({.name = "cross_entropy", .kind = OpKind::composite, .num_inputs = 2, .meta = cross_entropy_meta,
          .decompose = cross_entropy_decompose,
          .attrs = {attr("soft_label", false, "labels are probabilities (else class indices)"),
                    attr("axis", AttrKind::int_, "the class axis, in [0, rank)"),
                    attr("reduction", std::string("mean"), "none, mean or sum"),
                    attr("ignore_index", int64_t{-100}, "a hard label that contributes nothing")},
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "softmax cross entropy of logits against labels"});
  add_op({.name = "mse_loss", .kind = OpKind::composite, .num_inputs = 2, .meta = mse_meta, .decompose = mse_decompose,
          .attrs = {attr("reduction", std::string("mean"), "none, mean or sum")},
          .dtypes = {.accepts = kFloatDTypes}, .doc = "(input - label)^2, reduced"});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& label, bool soft_label, int64_t axis,
                     const std::string& reduction, int64_t ignore_index) {
  const int64_t a = meta::normalize_axis("cross_entropy", axis, logits.dim());
  Tensor checked = label;
  if (!soft_label && logits.dim() > 0) {  // Note [Index values] in op_util.h
    checked = check_index_values({.op = "cross_entropy", .what = "label", .size = logits.shape()[static_cast<size_t>(a)],
                                  .size_is = "the number of classes along axis " + std::to_string(a) + " of logits " +
                                             shape_str(logits.shape()),
                                  .ignore = ignore_index},
                                 label);
  }
  std::array<Tensor, 2> in{logits, soft_label ? cast(label, logits.dtype()) : checked};
  return apply1(OAR_OP("cross_entropy"), in,
                Attrs{{"soft_label", soft_label},
                      {"axis", a},
                      {"reduction", reduction},
                      {"ignore_index", ignore_index}});
}

Tensor mse_loss(const Tensor& input, const Tensor& label, const std::string& reduction) {
  DType d = promote_types(input.dtype(), label.dtype());
  std::array<Tensor, 2> in{cast(input, d), cast(label, d)};
  return apply1(OAR_OP("mse_loss"), in, Attrs{{"reduction", reduction}});
}

}  // namespace oar
