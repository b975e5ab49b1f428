// Checks of index values: on the host at eager ops, by the check_index op in
// programs (Note [Index values] in op_util.h).
#include <array>
#include <cstdint>
#include <exception>

#include "dist/dist_internal.h"
#include "oar/autograd.h"
#include "oar/dist_tensor.h"
#include "oar/ops.h"
#include "ops/op_util.h"

namespace oar {

namespace {

// "[1, 0]": the position of flat element `flat` in a tensor of `shape`.
std::string position_str(const Shape& shape, int64_t flat) {
  std::vector<int64_t> at(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = shape[d] > 0 ? shape[d] : 1;
    at[d] = flat % n;
    flat /= n;
  }
  return shape_str(at);
}

template <class T>
void check_values(const IndexCheck& c, const Tensor& index) {
  const std::vector<T> values = index.to_vector<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t v = static_cast<int64_t>(values[i]);
    if ((v >= 0 && v < c.size) || (c.ignore && v == *c.ignore)) continue;
    std::string allowed = "expected 0 <= " + std::string(c.what) + " < " + std::to_string(c.size) + " (" +
                          c.size_is + ")";
    if (c.ignore) allowed += " or " + std::string(c.what) + " == ignore_index " + std::to_string(*c.ignore);
    throw Error(ErrorCode::invalid_argument,
                c.op + ": " + c.what + " " + std::to_string(v) + " at position " +
                    position_str(index.shape(), static_cast<int64_t>(i)) + " of " + c.what + " tensor " +
                    shape_str(index.shape()) + " is out of range; " + allowed);
  }
}

std::vector<TensorMeta> check_index_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  if (in[0].dtype != DType::i32 && in[0].dtype != DType::i64) {
    throw Error(ErrorCode::invalid_argument, op.name + ": the index has dtype " + std::string(dtype_name(in[0].dtype)) +
                                                 " but int32 or int64 is required");
  }
  return {in[0]};
}

// A device without a check_index kernel runs the program unchecked (the
// values pass through), rather than not at all.
std::vector<Tensor> check_index_decompose(std::span<const Tensor> in, const Attrs&) { return {in[0]}; }

// A distributed index: each rank checks its piece (the values are global
// indices wherever the piece lies). When the pieces differ (a sharded or
// partial index) only some ranks may find a bad value, and the others
// would wait for them in the op's next collective, so the ranks all-reduce
// whether any found one (one int64) and every rank raises: the finder its
// sentence, the others one naming the op and the placements.
Tensor check_distributed_index(const IndexCheck& check, const Tensor& index) {
  const DistAttr& attr = dist::dist_attr(index);
  if (!attr.mesh.contains(dist::global_rank())) return index;  // no piece, no check
  std::exception_ptr found;
  try {
    check_index_values(check, dist::local_value(index));
  } catch (const Error&) {
    found = std::current_exception();
  }
  std::vector<Placement> flags(attr.placements.size(), Placement::Replicate());
  bool differ = false;
  for (size_t m = 0; m < flags.size(); ++m) {
    if (attr.placements[m].is_replicate()) continue;
    flags[m] = Placement::Partial(ReduceKind::max);
    differ = true;
  }
  if (differ) {
    NoGrad no_grad;
    Tensor flag = full({1}, found ? 1.0 : 0.0, DType::i64, dist::local_value(index).device());
    Tensor any = dist::unshard(dist::dtensor_from_local(flag, attr.mesh, flags, Shape{1}));
    if (!found && any.to_vector<int64_t>()[0] != 0) {
      throw Error(ErrorCode::invalid_argument,
                  check.op + ": another rank's piece of the " + check.what + " tensor " + shape_str(index.shape()) +
                      " (" + attr.str() + ") holds an out-of-range " + check.what + "; expected 0 <= " + check.what +
                      " < " + std::to_string(check.size) + " (" + check.size_is + ")");
    }
  }
  if (found) std::rethrow_exception(found);
  return index;
}

// Note [nonzero]
// nonzero(x) is [count, rank] int64, the positions of x's nonzero elements
// in row-major order: its first dim depends on x's values. It is a host op,
// computed on the host from x's values when it runs; its meta rule gives
// the largest count, x's numel, and run_host_op takes any size in that dim
// (data_dependent_shape). A trace makes that dim a fresh symbol (the shape
// inference, Note [Dynamic dims]), and a program holding it is interpreted
// op by op, each op's shapes those of the values that run reached (the
// executor's interpreted mode), so the ops after it (index_select, a Linear,
// index_add) work on however many positions there are, none included.
std::vector<TensorMeta> nonzero_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  if (is_complex(in[0].dtype)) {
    throw Error(ErrorCode::invalid_argument, op.name + ": x has dtype " + std::string(dtype_name(in[0].dtype)) +
                                                 " but a real or bool dtype is required");
  }
  int64_t numel = 1;
  for (int64_t d : in[0].shape) numel *= d;  // infer_meta has checked the sizes
  return {TensorMeta{DType::i64, Shape{numel, static_cast<int64_t>(in[0].shape.size())}}};
}

std::vector<Tensor> nonzero_host(std::span<const Tensor> in, const Attrs&) {
  NoGrad no_grad;
  const Tensor& x = in[0];
  const Shape& shape = x.shape();
  const std::vector<double> values = x.dtype() == DType::f64 ? x.to_vector<double>() : cast(x, DType::f64).to_vector<double>();
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> out;
  std::vector<int64_t> at(shape.size(), 0);
  int64_t count = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != 0) {
      ++count;
      out.insert(out.end(), at.begin(), at.end());
    }
    for (size_t d = shape.size(); d-- > 0;) {  // the next position, row-major
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
  return {Tensor::from_vector(out, Shape{count, rank}, x.device())};
}

// positions(x) = [0, 1, .., n-1] (int64) for n = x.shape[axis]: arange of a
// size a program learns when it runs (a loop-varying length, Note [Growing
// loop values] in core/ir/src/trace_control_flow.cpp; nonzero's count). Its
// size is x's dim, so a trace keeps x's symbol for it. A host op: it reads
// only x's shape.
std::vector<TensorMeta> positions_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  const int64_t axis = attrs.get_int("axis");
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  OAR_CHECK_ARG(axis >= 0 && axis < rank, op.name + ": axis " + std::to_string(axis) +
                                              " is out of range for x of rank " + std::to_string(rank));
  return {TensorMeta{DType::i64, Shape{in[0].shape[static_cast<size_t>(axis)]}}};
}

std::vector<Tensor> positions_host(std::span<const Tensor> in, const Attrs& attrs) {
  const int64_t n = in[0].shape()[static_cast<size_t>(attrs.get_int("axis"))];
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
  return {Tensor::from_vector(out, Shape{n}, in[0].device())};
}

}  // namespace

OAR_REGISTER_OPS(index_values) {
  add_op({.name = "positions", .num_inputs = 1, .meta = positions_meta, .differentiable = false,
          .attrs = {attr("axis", AttrKind::int_, "the dim of x whose size is the length, in [0, rank)")},
          .dtypes = {.accepts = kAllDTypes},
          .host = positions_host,
          .doc = "y = [0, 1, .., n-1] (int64) for n = x.shape[axis]: an arange whose length is a dim of x"});
  add_op({.name = "nonzero", .num_inputs = 1, .meta = nonzero_meta, .differentiable = false,
          .dtypes = {.accepts = kAllDTypes},
          .host = nonzero_host,
          .data_dependent_shape = true,
          .doc = "y[k] = the position of the k-th nonzero element of x, row-major; int64 [count, rank] "
                 "(Note [nonzero])"});
  add_op({.name = "check_index", .kind = OpKind::primitive, .num_inputs = 1, .meta = check_index_meta,
          .decompose = check_index_decompose,
          .attrs = {attr("size", AttrKind::int_, "values must be in [0, size)"),
                    attr("ignore_index", int64_t{0}, "a value allowed besides, when has_ignore"),
                    attr("has_ignore", false, "whether ignore_index is allowed"),
                    attr("op", AttrKind::string, "the user-facing op named in the error"),
                    attr("what", std::string("index"), "the value's name in the error")},
          .spmd = spmd::elementwise_unary, .doc = "y = index (i32/i64) after checking every value (Note [Index values])"});
}

Tensor check_index_values(const IndexCheck& check, const Tensor& index) {
  if (!index.defined()) return index;
  const bool symbolic = dist::is_dist(index) ? dist::local_value(index).is_symbolic() : index.is_symbolic();
  if (dist::is_dist(index) && !symbolic) return check_distributed_index(check, index);
  if (symbolic) {  // a trace: the check runs with the program
    if (index.dtype() != DType::i32 && index.dtype() != DType::i64) return index;
    std::array<Tensor, 1> in{index};
    return apply1(OAR_OP("check_index"), in,
                  Attrs{{"size", check.size},
                        {"ignore_index", check.ignore.value_or(0)},
                        {"has_ignore", check.ignore.has_value()},
                        {"op", check.op},
                        {"what", std::string(check.what)}});
  }
  if (index.dtype() == DType::i64) {
    check_values<int64_t>(check, index);
  } else if (index.dtype() == DType::i32) {
    check_values<int32_t>(check, index);
  }
  // Other dtypes: the op's meta rule names the dtype it expects.
  return index;
}

Tensor nonzero(const Tensor& x) {
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("nonzero"), in);
}

Tensor positions(const Tensor& x, int64_t axis) {
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("positions"), in, Attrs{{"axis", meta::normalize_axis("positions", axis, x.dim())}});
}

Tensor check_index(const Tensor& index, int64_t size, const std::string& op, const std::string& what,
                   const std::string& size_is, std::optional<int64_t> ignore_index) {
  return check_index_values({.op = op, .what = what.c_str(), .size = size, .size_is = size_is, .ignore = ignore_index},
                            index);
}

}  // namespace oar
