// Creation ops: full, arange, and counter-based random numbers (uniform,
// normal) whose values depend only on (seed, offset, shape).
#include <atomic>
#include <tuple>
#include <cmath>

#include "oar/ops.h"
#include "oar/runtime.h"
#include "ops/op_util.h"
#include "ops/spmd_util.h"

namespace oar {

namespace {

std::vector<TensorMeta> creation_meta(const OpDef& op, std::span<const TensorMeta>, const Attrs& attrs) {
  const Shape& shape = attrs.get_ints("shape");
  for (int64_t d : shape) {
    OAR_CHECK_ARG(d >= 0, op.name + ": shape " + shape_str(shape) + " has a negative dim");
  }
  auto dtype = static_cast<DType>(attrs.get_int("dtype"));
  if ((op.name == "uniform" || op.name == "normal") && !is_floating(dtype)) {
    throw Error(ErrorCode::invalid_argument, op.name + ": dtype " + std::string(dtype_name(dtype)) +
                                                 " is not a floating dtype");
  }
  return {{dtype, shape}};
}

// uniform_like: input x (its values are not read); the result has x's shape.
std::vector<TensorMeta> uniform_like_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  auto dtype = static_cast<DType>(attrs.get_int("dtype"));
  if (!is_floating(dtype)) {
    throw Error(ErrorCode::invalid_argument, op.name + ": dtype " + std::string(dtype_name(dtype)) +
                                                 " is not a floating dtype");
  }
  return {{dtype, in[0].shape}};
}
// A device without a uniform_like kernel draws uniform at the operand's
// (example) shape: the same numbers, since both are a function of the
// element's row-major position only.
std::vector<Tensor> uniform_like_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  Attrs a = attrs;
  a.set("shape", std::vector<int64_t>(in[0].shape()));
  Device dev = in[0].device();
  return {apply1(OAR_OP("uniform"), {}, a, &dev)};
}
// Note [Sharded random numbers]
// Element n (row-major) of a random op's result is a pure function of
// (seed, offset, n) (docs/kernels.md), so a sharded piece can draw exactly
// the numbers of its slice of the dense result: uniform_like's localize
// (run by the distributed dispatcher, spmd.h) gives the local kernel the
// global shape and where its piece starts, and the kernel numbers each
// element by its global position. A sharded dropout, which decomposes
// into uniform_like and elementwise ops that all have rules, thus equals
// the dense dropout's slice. Without the two attributes (every dense call)
// the kernels number elements by their own position, as before.
// uniform_like reads only x's shape, so its rule is full_like's.
Attrs uniform_like_localize(const LocalizeArgs& args) {
  const Shape& global = args.global_outputs[0].shape;
  if (args.local_outputs[0].shape == global) return args.attrs;
  Attrs attrs = args.attrs;
  attrs.set("global_shape", std::vector<int64_t>(global));
  attrs.set("global_offset", args.output_offsets.empty() ? std::vector<int64_t>(global.size(), 0)
                                                         : args.output_offsets[0]);
  return attrs;
}

// The numbers do not depend on x's values: no gradient. (A VJP rule, so
// program autodiff keeps the op instead of decomposing it.)
std::vector<Tensor> uniform_like_vjp(const VjpContext& c) { return std::vector<Tensor>(c.inputs.size()); }

// Global generator (paddle.seed): each random call takes the next offset.
struct Generator {
  std::atomic<uint64_t> seed{0x5eed};
  std::atomic<uint64_t> offset{0};
};
Generator& generator() {
  static Generator g;
  return g;
}

}  // namespace

std::pair<uint64_t, uint64_t> next_random_state(uint64_t count) {
  return {generator().seed.load(), generator().offset.fetch_add(count)};
}

namespace {

Tensor create(const OpDef& op, Attrs attrs, const std::optional<Device>& device) {
  Device dev = device ? *device : default_device();
  return apply1(op, {}, attrs, &dev);
}

Tensor random(const OpDef& op, const Shape& shape, double a, double b, const char* a_name, const char* b_name,
              DType dtype, const std::optional<Device>& device, std::optional<uint64_t> seed, uint64_t offset) {
  if (!seed) std::tie(seed, offset) = next_random_state();
  return create(op,
                Attrs{{"shape", shape},
                      {"dtype", static_cast<int64_t>(dtype)},
                      {"seed", static_cast<int64_t>(*seed)},
                      {"offset", static_cast<int64_t>(offset)},
                      {a_name, a},
                      {b_name, b}},
                device);
}

}  // namespace

OAR_REGISTER_OPS(creation) {
  const AttrSpec shape = attr("shape", AttrKind::ints, "the result's shape");
  const AttrSpec dtype = attr("dtype", AttrKind::int_, "the result's DType");
  const AttrSpec seed = attr("seed", AttrKind::int_, "Philox key (set per run in static mode)");
  const AttrSpec offset = attr("offset", AttrKind::int_, "Philox counter offset");
  // Note [Sharded random numbers]: set on a sharded piece only.
  const AttrSpec global_shape =
      attr("global_shape", std::vector<int64_t>{}, "sharded piece: the whole result's shape (empty: this one)");
  const AttrSpec global_offset =
      attr("global_offset", std::vector<int64_t>{}, "sharded piece: where it starts in the whole result");
  add_op({.name = "full", .num_inputs = 0, .meta = creation_meta,
          .attrs = {shape, dtype, attr("value", AttrKind::float_, "every element's value"),
                    attr("value_imag", 0.0, "complex dtypes: the imaginary part of the value")},
          .doc = "every element = value (cast to the dtype)"});
  add_op({.name = "arange", .num_inputs = 0, .meta = creation_meta,
          .attrs = {shape, dtype, attr("start", AttrKind::float_, "the first value"), attr("step", 1.0, "the spacing")},
          .doc = "1-D: y[i] = start + i * step, in double, then cast"});
  add_op({.name = "uniform", .num_inputs = 0, .meta = creation_meta, .random = true,
          .attrs = {shape, dtype, seed, offset, attr("low", 0.0, "inclusive bound"),
                    attr("high", 1.0, "exclusive bound"), global_shape, global_offset},
          .doc = "float: Philox uniform in [low, high) (below)"});
  // Composite: the cpu and mock plugins run it natively (Note [Dynamic dims]
  // in oar/ir/trace.h: dropout's mask takes x's shape when it runs).
  add_op({.name = "uniform_like", .kind = OpKind::composite, .meta = uniform_like_meta,
          .decompose = uniform_like_decompose, .vjp = uniform_like_vjp, .differentiable = false, .random = true,
          .attrs = {dtype, seed, offset, attr("low", 0.0, "inclusive bound"), attr("high", 1.0, "exclusive bound"),
                    global_shape, global_offset},
          .dtypes = {.accepts = kAllDTypes}, .spmd = spmd_util::fill_like, .localize = uniform_like_localize,
          .doc = "x's shape (x's values are not read): the numbers uniform draws for that shape, seed and offset"});
  add_op({.name = "normal", .num_inputs = 0, .meta = creation_meta, .random = true,
          .attrs = {shape, dtype, seed, offset, attr("mean", 0.0, "the mean"),
                    attr("std", 1.0, "the standard deviation")},
          .doc = "float: Philox Box-Muller normal (below)"});
}

Tensor full(const Shape& shape, double value, DType dtype, std::optional<Device> device) {
  return create(OAR_OP("full"), Attrs{{"shape", shape}, {"dtype", static_cast<int64_t>(dtype)}, {"value", value}},
                device);
}
Tensor full(const Shape& shape, std::complex<double> value, DType dtype, std::optional<Device> device) {
  Attrs attrs{{"shape", shape}, {"dtype", static_cast<int64_t>(dtype)}, {"value", value.real()}};
  if (value.imag() != 0 && is_complex(dtype)) attrs.set("value_imag", value.imag());
  return create(OAR_OP("full"), attrs, device);
}
Tensor zeros(const Shape& shape, DType dtype, std::optional<Device> device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, std::optional<Device> device) { return full(shape, 1.0, dtype, device); }
// full_like, zeros_like and ones_like take x's shape when they run: shape_ops.cpp.

Tensor arange(double start, double end, double step, DType dtype, std::optional<Device> device) {
  OAR_CHECK_ARG(step != 0, "arange: step is 0");
  double count = std::ceil((end - start) / step);
  auto n = static_cast<int64_t>(std::max(count, 0.0));
  return create(OAR_OP("arange"),
                Attrs{{"shape", Shape{n}}, {"dtype", static_cast<int64_t>(dtype)}, {"start", start}, {"step", step}},
                device);
}

void seed(uint64_t value) {
  generator().seed = value;
  generator().offset = 0;
}

std::pair<uint64_t, uint64_t> random_state() { return {generator().seed.load(), generator().offset.load()}; }

void set_random_state(uint64_t seed, uint64_t offset) {
  generator().seed = seed;
  generator().offset = offset;
}

Tensor uniform(const Shape& shape, double low, double high, DType dtype, std::optional<Device> device,
               std::optional<uint64_t> seed, uint64_t offset) {
  return random(OAR_OP("uniform"), shape, low, high, "low", "high", dtype, device, seed, offset);
}

Tensor normal(const Shape& shape, double mean, double std, DType dtype, std::optional<Device> device,
              std::optional<uint64_t> seed, uint64_t offset) {
  return random(OAR_OP("normal"), shape, mean, std, "mean", "std", dtype, device, seed, offset);
}

}  // namespace oar
