// Shape manipulation: reshape, transpose, broadcast_to, slice, diagonal
// (views in eager mode: Note [Views] in core/src/tensor/view.cpp), concat,
// pad, gather, scatter_add; squeeze/unsqueeze/flatten via reshape.
#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "ops/op_util.h"
#include "ops/shape_util.h"
#include "ops/spmd_util.h"

namespace oar {

namespace {

std::string ints_str(const std::vector<int64_t>& v) { return shape_str(v); }

// The target shape of reshape: 0 copies the input's dim (Paddle), one -1
// is inferred. The op keeps the shape as written, so a traced reshape to
// {0, -1} stays valid for every batch size (Note [Dynamic dims]).
Shape resolve_reshape(const Shape& in, const Shape& spec) {
  Shape out = spec;
  int64_t infer = -1, known = 1;
  bool has_zero = false, overflow = false;
  auto fail = [&] {
    return Error(ErrorCode::invalid_argument, "reshape: cannot reshape a tensor of shape " + shape_str(in) + " (" +
                                                  std::to_string(shape_numel(in)) + " elements) to " + shape_str(spec));
  };
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && i < in.size()) out[i] = in[i];
    if (out[i] == -1) {
      OAR_CHECK_ARG(infer < 0, "reshape: shape " + shape_str(spec) + " has more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (out[i] < 0) {
      throw fail();
    } else {
      has_zero = has_zero || out[i] == 0;
      overflow = overflow || __builtin_mul_overflow(known, out[i], &known);  // UB before (UBSan)
    }
  }
  if (has_zero) {
    known = 0;
    overflow = false;
  }
  if (overflow) {  // more elements than fit in int64: infer_meta's shape check names it
    if (infer >= 0) throw fail();
    return out;
  }
  if (infer >= 0) {
    if (known == 0 || shape_numel(in) % known != 0) throw fail();
    out[static_cast<size_t>(infer)] = shape_numel(in) / known;
  } else if (known != shape_numel(in)) {
    throw fail();
  }
  return out;
}

std::vector<TensorMeta> reshape_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs& attrs) {
  return {{in[0].dtype, resolve_reshape(in[0].shape, attrs.get_ints("shape"))}};
}

std::vector<TensorMeta> transpose_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs& attrs) {
  const auto& perm = attrs.get_ints("perm");
  const Shape& x = in[0].shape;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = perm.size() == x.size();
  for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
  if (!ok) {
    throw Error(ErrorCode::invalid_argument, "transpose: perm " + ints_str(perm) +
                                                 " is not a permutation of the dims of shape " + shape_str(x));
  }
  Shape out;
  for (int64_t p : perm) out.push_back(x[static_cast<size_t>(p)]);
  return {{in[0].dtype, out}};
}

std::vector<TensorMeta> broadcast_to_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& target = attrs.get_ints("shape");
  const Shape& x = in[0].shape;
  bool ok = x.size() <= target.size();
  for (size_t i = 0; ok && i < x.size(); ++i) {
    int64_t d = x[x.size() - 1 - i], t = target[target.size() - 1 - i];
    ok = d == t || d == 1;
  }
  if (!ok) {
    throw Error(ErrorCode::invalid_argument,
                "broadcast_to: shape " + shape_str(x) + " cannot be broadcast to " + shape_str(target));
  }
  return {{in[0].dtype, target}};
}

std::vector<TensorMeta> slice_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs& attrs) {
  const auto& starts = attrs.get_ints("starts");
  const auto& ends = attrs.get_ints("ends");
  const auto& steps = attrs.get_ints("steps");
  const Shape& x = in[0].shape;
  if (starts.size() != x.size() || ends.size() != x.size() || steps.size() != x.size()) {
    throw Error(ErrorCode::invalid_argument, "slice: starts/ends/steps need one entry per dim of shape " + shape_str(x));
  }
  Shape out(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    int64_t step = steps[d];
    OAR_CHECK_ARG(step != 0, "slice: step of dim " + std::to_string(d) + " is 0");
    // An end past the dim (kSliceToEnd) is its size (Note [Slices of dynamic dims]).
    const int64_t end = step > 0 ? std::min(ends[d], x[d]) : ends[d];
    int64_t len = step > 0 ? (end - starts[d] + step - 1) / step : (starts[d] - end - step - 1) / (-step);
    out[d] = std::max<int64_t>(len, 0);
    if (out[d] > 0) {
      int64_t last = starts[d] + (out[d] - 1) * step;
      OAR_CHECK_ARG(starts[d] >= 0 && starts[d] < x[d] && last >= 0 && last < x[d],
                "slice: dim " + std::to_string(d) + " selects indices outside [0, " + std::to_string(x[d]) + ")");
    }
  }
  return {{in[0].dtype, out}};
}

// The diagonal's axes and length: x's dims without axis1 and axis2, then
// the diagonal (numpy.diagonal).
std::vector<TensorMeta> diagonal_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  const int64_t offset = attrs.get_int("offset"), a1 = attrs.get_int("axis1"), a2 = attrs.get_int("axis2");
  const auto rank = static_cast<int64_t>(x.size());
  OAR_CHECK_ARG(rank >= 2, "diagonal: x must have at least 2 dims but has shape " + shape_str(x));
  OAR_CHECK_ARG(a1 >= 0 && a1 < rank && a2 >= 0 && a2 < rank && a1 != a2,
                "diagonal: axis1 " + std::to_string(a1) + " and axis2 " + std::to_string(a2) +
                    " must be two different dims of shape " + shape_str(x));
  Shape out;
  for (int64_t d = 0; d < rank; ++d)
    if (d != a1 && d != a2) out.push_back(x[static_cast<size_t>(d)]);
  const int64_t n1 = x[static_cast<size_t>(a1)], n2 = x[static_cast<size_t>(a2)];
  out.push_back(std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2)));
  return {{in[0].dtype, out}};
}

std::vector<TensorMeta> concat_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  OAR_CHECK_ARG(!in.empty(), "concat: needs at least one input");
  meta::require_same_dtype(op, in);
  int64_t axis = attrs.get_int("axis");
  Shape out = in[0].shape;
  OAR_CHECK_ARG(axis >= 0 && axis < static_cast<int64_t>(out.size()),
            "concat: axis " + std::to_string(axis) + " is out of range for shape " + shape_str(out));
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    bool ok = s.size() == out.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int64_t>(d) == axis || s[d] == out[d];
    if (!ok) {
      throw Error(ErrorCode::invalid_argument, "concat: input 0 has shape " + shape_str(in[0].shape) + " but input " +
                                                   std::to_string(i) + " has shape " + shape_str(s) +
                                                   "; they must agree except along axis " + std::to_string(axis));
    }
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  return {{in[0].dtype, out}};
}

std::vector<TensorMeta> pad_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs& attrs) {
  const auto& pads = attrs.get_ints("pads");
  Shape out = in[0].shape;
  OAR_CHECK_ARG(pads.size() == 2 * out.size(), "pad: pads has " + std::to_string(pads.size()) + " entries but shape " +
                                               shape_str(out) + " needs " + std::to_string(2 * out.size()));
  for (size_t d = 0; d < out.size(); ++d) {
    OAR_CHECK_ARG(pads[2 * d] >= 0 && pads[2 * d + 1] >= 0, "pad: pads " + ints_str(pads) + " has a negative entry");
    out[d] += pads[2 * d] + pads[2 * d + 1];
  }
  return {{in[0].dtype, out}};
}

void check_index(const std::string& op, const TensorMeta& index) {
  if ((index.dtype != DType::i32 && index.dtype != DType::i64) || index.shape.size() != 1) {
    throw Error(ErrorCode::invalid_argument, op + ": index must be a 1-D int32 or int64 tensor but has dtype " +
                                                 std::string(dtype_name(index.dtype)) + " and shape " +
                                                 shape_str(index.shape));
  }
}

std::vector<TensorMeta> gather_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs& attrs) {
  check_index("gather", in[1]);
  int64_t axis = attrs.get_int("axis");
  Shape out = in[0].shape;
  OAR_CHECK_ARG(axis >= 0 && axis < static_cast<int64_t>(out.size()),
            "gather: axis " + std::to_string(axis) + " is out of range for shape " + shape_str(out));
  out[static_cast<size_t>(axis)] = in[1].shape[0];
  return {{in[0].dtype, out}};
}

std::vector<TensorMeta> scatter_add_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  check_index("scatter_add", in[1]);
  int64_t axis = attrs.get_int("axis");
  Shape expected = in[0].shape;
  OAR_CHECK_ARG(axis >= 0 && axis < static_cast<int64_t>(expected.size()),
            "scatter_add: axis " + std::to_string(axis) + " is out of range for shape " + shape_str(expected));
  expected[static_cast<size_t>(axis)] = in[1].shape[0];
  if (in[2].shape != expected || in[2].dtype != in[0].dtype) {
    throw Error(ErrorCode::invalid_argument, op.name + ": updates must have shape " + shape_str(expected) + " and dtype " +
                                                 std::string(dtype_name(in[0].dtype)) + " but have " +
                                                 shape_str(in[2].shape) + " and " + std::string(dtype_name(in[2].dtype)));
  }
  return {in[0]};
}

// Note [Slices of dynamic dims]
// A slice's attributes hold one (start, end, step) per dim. A dim the call
// does not slice gets the end kSliceToEnd, which the meta rule reads as the
// dim's size, rather than the example's size: a program traced with a
// dynamic batch that slices the features then holds for every batch size
// (Note [Dynamic dims] in oar/ir/trace.h). The VJPs of slice, pad and
// concat likewise name only the dims they work along: slice's scatters
// into zeros shaped like x (full_like), pad's and concat's are slices
// along the padded or concatenated dims. Along a dim that is itself
// dynamic their positions come from the example's size; program autodiff
// sees that the gradient then does not have the operand's shape and makes
// the backward per input shapes (append_backward).
constexpr int64_t kSliceToEnd = std::numeric_limits<int64_t>::max();

// Python-style normalization of one slice dim.
void normalize_slice(int64_t n, int64_t& start, int64_t& end, int64_t step) {
  auto fix = [n](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v += n;
    return std::clamp(v, lo, hi);
  };
  if (step > 0) {
    start = fix(start, 0, n);
    end = fix(end, 0, n);
  } else {
    start = fix(start, -1, n - 1);
    end = fix(end, -1, n - 1);
  }
}

// ---- VJP rules ----
using Grads = std::vector<Tensor>;
Grads reshape_vjp(const VjpContext& c) {
  return {reshape(c.grads[0], reshape_spec(c.grads[0].shape(), c.inputs[0].shape()))};
}
Grads transpose_vjp(const VjpContext& c) {
  const auto& perm = c.attrs.get_ints("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {transpose(c.grads[0], inverse)};
}
Grads broadcast_to_vjp(const VjpContext& c) { return {sum_to_like(c.grads[0], c.inputs[0])}; }
// Scatters g back dim by dim, last to first: the slice along dim d is a
// gather with the index arange(start, start + len * step, step), whose
// adjoint is scatter_add into zeros shaped like x sliced along the dims
// before d (Note [Slices of dynamic dims]).
Grads slice_vjp(const VjpContext& c) {
  const Tensor& x = c.inputs[0];
  const auto& starts = c.attrs.get_ints("starts");
  const auto& ends = c.attrs.get_ints("ends");
  const auto& steps = c.attrs.get_ints("steps");
  const size_t rank = x.shape().size();
  auto sliced = [&](size_t d) {
    return !(starts[d] == 0 && steps[d] == 1 && ends[d] >= x.shape()[d] && c.grads[0].shape()[d] == x.shape()[d]);
  };
  Tensor g = c.grads[0];
  for (size_t d = rank; d-- > 0;) {
    if (!sliced(d)) continue;
    if (steps[d] == 1 && starts[d] >= 0 && ends[d] == kSliceToEnd) {
      // [start:] with step 1: zeros before, whatever the dim's size (a dynamic or
      // data-dependent dim, as a tensor array's stack has: Note [Tensor arrays] in dy2static)
      std::vector<int64_t> pads(2 * rank, 0);
      pads[2 * d] = starts[d];
      g = pad(g, pads);
      continue;
    }
    // x as the forward sliced it along the dims before d, whole from d on.
    std::vector<int64_t> part_starts(rank, 0), part_ends(rank, kSliceToEnd), part_steps(rank, 1);
    bool any = false;
    for (size_t k = 0; k < d; ++k) {
      if (!sliced(k)) continue;
      part_starts[k] = starts[k];
      part_ends[k] = ends[k];
      part_steps[k] = steps[k];
      any = true;
    }
    Tensor like = x;
    if (any) {
      std::array<Tensor, 1> in{x.detach()};
      like = apply1(OAR_OP("slice"), in, Attrs{{"starts", part_starts}, {"ends", part_ends}, {"steps", part_steps}});
    }
    const int64_t len = g.shape()[d];
    Tensor index = arange(static_cast<double>(starts[d]), static_cast<double>(starts[d] + len * steps[d]),
                          static_cast<double>(steps[d]), DType::i64, g.device());
    g = scatter_add(full_like(like, 0.0, g.dtype()), index, g, static_cast<int64_t>(d));
  }
  return {g};
}
// diagonal as other ops: axis1 and axis2 moved last and merged into one
// dim of n1 * n2 elements, whose diagonal elements are every (n2 + 1)-th
// from `start`. The decomposition gathers them; the VJP scatters into zeros
// (a diag-embed) and undoes the merge and the transpose.
struct DiagonalPlan {
  std::vector<int64_t> perm, inverse, merged, unmerged;  // transpose / reshape specs
  int64_t start = 0, step = 1, length = 0;
  int64_t axis = 0;  // the merged dim
};
DiagonalPlan diagonal_plan(const Shape& x, const Attrs& attrs) {
  const int64_t offset = attrs.get_int("offset"), a1 = attrs.get_int("axis1"), a2 = attrs.get_int("axis2");
  DiagonalPlan p;
  const auto rank = static_cast<int64_t>(x.size());
  bool empty = shape_numel(x) == 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == a1 || d == a2) continue;
    p.perm.push_back(d);
    // 0 keeps a dim as it is, so a traced program stays valid for every batch size (Note [Dynamic dims]).
    p.merged.push_back(empty ? x[static_cast<size_t>(d)] : 0);
    p.unmerged.push_back(0);
  }
  p.perm.push_back(a1);
  p.perm.push_back(a2);
  p.inverse.resize(p.perm.size());
  for (size_t i = 0; i < p.perm.size(); ++i) p.inverse[static_cast<size_t>(p.perm[i])] = static_cast<int64_t>(i);
  const int64_t n1 = x[static_cast<size_t>(a1)], n2 = x[static_cast<size_t>(a2)];
  p.merged.push_back(empty ? n1 * n2 : -1);
  p.unmerged.push_back(n1);
  p.unmerged.push_back(n2);
  p.axis = rank - 2;
  p.step = n2 + 1;
  p.start = offset >= 0 ? offset : -offset * n2;
  p.length = std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  return p;
}
Tensor diagonal_index(const DiagonalPlan& p, const Device& device) {
  return arange(static_cast<double>(p.start), static_cast<double>(p.start + p.length * p.step),
                static_cast<double>(p.step), DType::i64, device);
}
std::vector<Tensor> diagonal_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const DiagonalPlan p = diagonal_plan(in[0].shape(), attrs);
  Tensor merged = reshape(transpose(in[0], p.perm), p.merged);
  return {gather(merged, diagonal_index(p, in[0].device()), p.axis)};
}
Grads diagonal_vjp(const VjpContext& c) {
  const Tensor& x = c.inputs[0];
  const DiagonalPlan p = diagonal_plan(x.shape(), c.attrs);
  Shape merged_shape;
  for (int64_t d : p.perm) merged_shape.push_back(x.shape()[static_cast<size_t>(d)]);
  merged_shape.back() *= merged_shape[merged_shape.size() - 2];
  merged_shape.erase(merged_shape.end() - 2);
  Tensor g = scatter_add(zeros(merged_shape, c.grads[0].dtype(), x.device()), diagonal_index(p, x.device()),
                         c.grads[0], p.axis);
  return {transpose(reshape(g, p.unmerged), p.inverse)};
}

// Slices along the axis only (Note [Slices of dynamic dims]).
Grads concat_vjp(const VjpContext& c) {
  int64_t axis = c.attrs.get_int("axis");
  Grads out;
  int64_t offset = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    int64_t n = c.inputs[i].shape()[static_cast<size_t>(axis)];
    // The last part runs to the end: so it holds for every size of a dynamic last operand
    // (a tensor array's stack, Note [Tensor arrays] in dy2static).
    const int64_t end = i + 1 == c.inputs.size() ? kSliceToEnd : offset + n;
    out.push_back(c.needs[i] ? slice(c.grads[0], {axis}, {offset}, {end}) : Tensor());
    offset += n;
  }
  return out;
}
// Slices along the padded dims only (Note [Slices of dynamic dims]).
Grads pad_vjp(const VjpContext& c) {
  const auto& pads = c.attrs.get_ints("pads");
  const Shape& x = c.inputs[0].shape();
  std::vector<int64_t> axes, starts, ends;
  for (size_t d = 0; d < x.size(); ++d) {
    if (pads[2 * d] == 0 && pads[2 * d + 1] == 0) continue;
    axes.push_back(static_cast<int64_t>(d));
    starts.push_back(pads[2 * d]);
    ends.push_back(pads[2 * d] + x[d]);
  }
  if (axes.empty()) return {c.grads[0]};
  return {slice(c.grads[0], axes, starts, ends)};
}
// Scatters into zeros shaped like x when it runs (full_like).
Grads gather_vjp(const VjpContext& c) {
  const Tensor& x = c.inputs[0];
  return {scatter_add(full_like(x, 0.0, c.grads[0].dtype()), c.inputs[1], c.grads[0], c.attrs.get_int("axis")),
          Tensor()};
}
Grads scatter_add_vjp(const VjpContext& c) {
  return {c.needs[0] ? c.grads[0] : Tensor(), Tensor(),
          c.needs[2] ? gather(c.grads[0], c.inputs[1], c.attrs.get_int("axis")) : Tensor()};
}

// ---- SPMD rules (spmd.h) ----
// Note [SPMD rules of data-movement ops]
// reshape, transpose, broadcast_to, slice, concat, pad, gather and
// scatter_add move elements without combining them, so a Partial input
// passes through (the op applied to each rank's piece gives the pieces of
// the result: reshape(a + b) = reshape(a) + reshape(b), and the same for
// max and min, which select). A Shard survives where the sharded dim comes
// out of the op whole and in order: transpose moves it, broadcast_to shifts
// it by the new leading dims, slice/pad/concat/gather keep it unless it is
// the dim they slice, pad, concatenate or index (then the rule asks for
// Replicate(), as Paddle's rules do). reshape is Note [Reshape of a
// sharded dim]. Ops whose attributes name sizes (reshape's and
// broadcast_to's target shapes) get a localize writing the local ones.
using spmd_util::Candidate;

Shape spmd_output_shape(const SpmdArgs& a) { return infer_meta(a.op, a.inputs, a.attrs)[0].shape; }

// The attributes with "shape" set to the local output's.
Attrs localize_target_shape(const LocalizeArgs& a) {
  Attrs out = a.attrs;
  out.set("shape", a.local_outputs[0].shape);
  return out;
}

// Note [Reshape of a sharded dim]
// Leaving out dims of size 1, the dims of x and of y fall into groups of
// consecutive dims with equal element counts ([6, 4] -> [24]: one group;
// [2, 6] -> [2, 3, 2]: {2}->{2} and {6}->{3, 2}). Rank r's chunk of x's
// dim d is a contiguous run of the group's elements when d leads its group
// and either the group maps one dim to one dim (same size, same chunks,
// even when uneven) or both leading dims divide by the mesh dim size (then
// each rank holds 1/m of the group on both sides, in the same order). So
// Shard(d) becomes Shard(leading dim of y's side); anything else (a
// non-leading dim, a size-1 dim, an uneven split or merge) is gathered
// first: the rule asks for Replicate(). Paddle's reshape rule does the
// same. A tensor dim sharded over several mesh dims needs the divisions to
// hold for the product of their sizes, which a rule seeing one mesh dim
// cannot check; the local reshape then fails naming the shapes.
struct DimGroup {
  std::vector<size_t> in, out;
};

std::vector<DimGroup> reshape_groups(const Shape& in, const Shape& out) {
  std::vector<size_t> a, b;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1) a.push_back(i);
  for (size_t j = 0; j < out.size(); ++j)
    if (out[j] != 1) b.push_back(j);
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    DimGroup g{{a[i]}, {b[j]}};
    int64_t pa = in[a[i++]], pb = out[b[j++]];
    while (pa != pb) {
      if (pa < pb) {
        if (i == a.size()) return {};
        pa *= in[a[i]];
        g.in.push_back(a[i++]);
      } else {
        if (j == b.size()) return {};
        pb *= out[b[j]];
        g.out.push_back(b[j++]);
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

Placement reshaped_shard(const Shape& in, const Shape& out, int64_t d, int64_t ranks) {
  if (shape_numel(in) == 0) return Placement::Replicate();
  for (const DimGroup& g : reshape_groups(in, out)) {
    if (g.in.front() != static_cast<size_t>(d)) continue;
    const size_t j = g.out.front();
    const bool one_to_one = g.in.size() == 1 && g.out.size() == 1;
    if (one_to_one || (in[static_cast<size_t>(d)] % ranks == 0 && out[j] % ranks == 0))
      return Placement::Shard(static_cast<int64_t>(j));
  }
  return Placement::Replicate();
}

SpmdResult reshape_spmd(const SpmdArgs& a) {
  const Placement& p = a.placements[0];
  if (!p.is_shard()) return {{p}, {p}};
  const Placement out = reshaped_shard(a.inputs[0].shape, spmd_output_shape(a), p.dim, a.mesh_dim_size);
  return {{out.is_shard() ? p : Placement::Replicate()}, {out}};
}

SpmdResult transpose_spmd(const SpmdArgs& a) {
  const Placement& p = a.placements[0];
  if (!p.is_shard()) return {{p}, {p}};
  const auto& perm = a.attrs.get_ints("perm");
  const auto at = std::find(perm.begin(), perm.end(), p.dim);
  return {{p}, {Placement::Shard(at - perm.begin())}};
}

SpmdResult broadcast_to_spmd(const SpmdArgs& a) {
  const Placement& p = a.placements[0];
  if (!p.is_shard()) return {{p}, {p}};
  const Shape& x = a.inputs[0].shape;
  const Shape out = spmd_output_shape(a);
  if (spmd_util::is_broadcast_dim(x, out, p.dim)) return {{Placement::Replicate()}, {Placement::Replicate()}};
  return {{p}, {Placement::Shard(spmd_util::output_dim_of(x, out, p.dim))}};
}

// Whether slice changes dim d (else it keeps the whole dim).
bool slices_dim(const Attrs& attrs, const Shape& x, size_t d) {
  return !(attrs.get_ints("starts")[d] == 0 && attrs.get_ints("steps")[d] == 1 && attrs.get_ints("ends")[d] >= x[d]);
}

// An unsliced dim has start 0, step 1 and an end past the global size,
// which the meta rule reads as the local size: the local slice needs no
// other attributes (Note [Slices of dynamic dims]).
SpmdResult slice_spmd(const SpmdArgs& a) {
  const Placement& p = a.placements[0];
  if (p.is_shard() && slices_dim(a.attrs, a.inputs[0].shape, static_cast<size_t>(p.dim)))
    return {{Placement::Replicate()}, {Placement::Replicate()}};
  return {{p}, {p}};
}

// pad: a padded dim cannot stay sharded. Partial pieces padded with the
// value combine to the padded whole for max, min and avg; for sum only
// when the value is 0.
SpmdResult pad_spmd(const SpmdArgs& a) {
  const Placement& p = a.placements[0];
  const auto& pads = a.attrs.get_ints("pads");
  const bool padded = p.is_shard() && (pads[2 * p.dim] != 0 || pads[2 * p.dim + 1] != 0);
  const bool sum_of_values = p.is_partial() && p.reduce == ReduceKind::sum && a.attrs.has("value") && a.attrs.get_float("value") != 0.0;
  if (padded || sum_of_values) return {{Placement::Replicate()}, {Placement::Replicate()}};
  return {{p}, {p}};
}

// concat: sharded along a dim other than the axis (every input has it at
// the same size, so the chunks agree), or Partial when every input is the
// same Partial (a replicated input joins a Partial(sum) as coordinate 0's
// piece), or replicated: the cheapest of those the inputs suggest.
SpmdResult concat_spmd(const SpmdArgs& a) {
  const size_t n = a.inputs.size();
  const int64_t axis = a.attrs.get_int("axis");
  std::vector<Candidate> candidates;
  std::vector<int64_t> dims;
  std::optional<Placement> partial;
  for (const Placement& p : a.placements) {
    if (p.is_shard() && p.dim != axis && std::find(dims.begin(), dims.end(), p.dim) == dims.end()) dims.push_back(p.dim);
    if (p.is_partial() && !partial) partial = p;
  }
  for (int64_t d : dims) {
    candidates.push_back({std::vector<Placement>(n, Placement::Shard(d)), {Placement::Shard(d)}});
  }
  if (partial) {
    bool fits = true;
    for (const Placement& p : a.placements)
      fits = fits && (p == *partial || (p.is_replicate() && partial->reduce == ReduceKind::sum));
    if (fits) candidates.push_back({std::vector<Placement>(n, *partial), {*partial}});
  }
  candidates.push_back({spmd_util::replicated(n), {Placement::Replicate()}});
  return spmd_util::cheapest(a, candidates);
}

// gather(x, index, axis): x sharded on another dim with the whole index;
// or x whole with the index sharded (the output then sharded on axis); or
// a Partial x with the whole index. An x sharded on the axis is gathered
// (or moved to another dim, when that is cheaper).
SpmdResult gather_spmd(const SpmdArgs& a) {
  const int64_t axis = a.attrs.get_int("axis");
  const Placement R = Placement::Replicate();
  std::vector<Candidate> candidates;
  for (int64_t d = 0; d < static_cast<int64_t>(a.inputs[0].shape.size()); ++d) {
    if (d != axis) candidates.push_back({{Placement::Shard(d), R}, {Placement::Shard(d)}});
  }
  candidates.push_back({{R, Placement::Shard(0)}, {Placement::Shard(axis)}});
  if (a.placements[0].is_partial()) candidates.push_back({{a.placements[0], R}, {a.placements[0]}});
  candidates.push_back({{R, R}, {R}});
  return spmd_util::cheapest(a, candidates);
}

// scatter_add(x, index, updates, axis) = x + S(updates): x and updates
// sharded alike on a dim other than the axis, or both Partial(sum) (a
// replicated one becomes coordinate 0's piece), or replicated.
SpmdResult scatter_add_spmd(const SpmdArgs& a) {
  const int64_t axis = a.attrs.get_int("axis");
  const Placement R = Placement::Replicate();
  std::vector<Candidate> candidates;
  for (int64_t d = 0; d < static_cast<int64_t>(a.inputs[0].shape.size()); ++d) {
    if (d != axis) candidates.push_back({{Placement::Shard(d), R, Placement::Shard(d)}, {Placement::Shard(d)}});
  }
  auto sum_or_whole = [](const Placement& p) {
    return p.is_replicate() || (p.is_partial() && p.reduce == ReduceKind::sum);
  };
  const Placement& x = a.placements[0];
  const Placement& u = a.placements[2];
  if ((x.is_partial() || u.is_partial()) && sum_or_whole(x) && sum_or_whole(u)) {
    const Placement P = Placement::Partial(ReduceKind::sum);
    candidates.push_back({{P, R, P}, {P}});
  }
  candidates.push_back({{R, R, R}, {R}});
  return spmd_util::cheapest(a, candidates);
}


}  // namespace

OAR_REGISTER_OPS(manipulation) {
  const AttrSpec axis = attr("axis", AttrKind::int_, "the axis, in [0, rank)");
  add_op({.name = "reshape", .kind = OpKind::view, .meta = reshape_meta, .vjp = reshape_vjp,
          .attrs = {attr("shape", AttrKind::ints, "the new shape; one -1 is inferred")},
          .spmd = reshape_spmd, .localize = localize_target_shape,
          .doc = "same elements, new shape (a view in eager mode)"});
  add_op({.name = "transpose", .meta = transpose_meta, .vjp = transpose_vjp,
          .attrs = {attr("perm", AttrKind::ints, "a permutation of the dims")}, .spmd = transpose_spmd, .doc = "y.shape[i] = x.shape[perm[i]]"});
  add_op({.name = "broadcast_to", .layout = InputLayout::broadcast, .meta = broadcast_to_meta, .vjp = broadcast_to_vjp,
          .attrs = {attr("shape", AttrKind::ints, "the result's shape")},
          .spmd = broadcast_to_spmd, .localize = localize_target_shape, .doc = "x (ndim = y's) with its dims of 1 broadcast"});
  add_op({.name = "slice", .meta = slice_meta, .vjp = slice_vjp,
          .attrs = {attr("starts", AttrKind::ints, "first index per dim"), attr("ends", AttrKind::ints, "end per dim"),
                    attr("steps", AttrKind::ints, "step per dim, never 0")},
          .spmd = slice_spmd, .doc = "y[i0..] = x[starts[d] + i_d * steps[d]]; steps may be negative"});
  add_op({.name = "diagonal", .kind = OpKind::composite, .meta = diagonal_meta, .decompose = diagonal_decompose,
          .vjp = diagonal_vjp,
          .attrs = {attr("offset", AttrKind::int_, "0: the main diagonal, > 0 above it, < 0 below"),
                    attr("axis1", AttrKind::int_, "the first dim of the 2-D planes"),
                    attr("axis2", AttrKind::int_, "the second dim of the 2-D planes")},
          .doc = "the diagonals of the (axis1, axis2) planes, as a last dim (a view in eager mode)"});
  add_op({.name = "concat", .num_inputs = -1, .meta = concat_meta, .vjp = concat_vjp, .attrs = {axis}, .spmd = concat_spmd,
          .doc = "inputs agree except along axis"});
  add_op({.name = "pad", .meta = pad_meta, .vjp = pad_vjp,
          .attrs = {attr("pads", AttrKind::ints, "(before, after) per dim, >= 0"), attr("value", 0.0, "the fill value")},
          .spmd = pad_spmd, .doc = "constant padding"});
  add_op({.name = "gather", .num_inputs = 2, .meta = gather_meta, .vjp = gather_vjp, .attrs = {axis}, .spmd = gather_spmd,
          .doc = "x indexed along axis by a 1-D i32/i64 index; an out-of-range index is an error"});
  add_op({.name = "scatter_add", .num_inputs = 3, .meta = scatter_add_meta, .vjp = scatter_add_vjp, .attrs = {axis},
          .spmd = scatter_add_spmd, .doc = "y = x; y[.., index[i], ..] += updates[.., i, ..] along axis"});
}

Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape) {
  if (resolve_reshape(x.shape(), shape) == x.shape()) return x;
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("reshape"), in, Attrs{{"shape", shape}});
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> p = perm;
  for (auto& a : p) a = meta::normalize_axis("transpose", a, x.dim());
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("transpose"), in, Attrs{{"perm", p}});
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("broadcast_to"), in, Attrs{{"shape", shape}});
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
             const std::vector<int64_t>& ends, const std::vector<int64_t>& steps) {
  OAR_CHECK_ARG(starts.size() == axes.size() && ends.size() == axes.size() && (steps.empty() || steps.size() == axes.size()),
            "slice: axes, starts, ends (and steps) must have the same length");
  size_t rank = x.shape().size();
  std::vector<int64_t> all_starts(rank, 0), all_ends(rank, kSliceToEnd), all_steps(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto d = static_cast<size_t>(meta::normalize_axis("slice", axes[i], x.dim()));
    int64_t step = steps.empty() ? 1 : steps[i];
    OAR_CHECK_ARG(step != 0, "slice: step for axis " + std::to_string(axes[i]) + " is 0");
    int64_t s = starts[i], e = ends[i];
    const int64_t n = x.shape()[d];
    // A start in [0, n] and, for positive steps, an end >= 0 (past n: to
    // the end) do not depend on the dim's size; anything else does.
    const bool to_end = step > 0 && e >= n;
    if (!(step > 0 && s >= 0 && s <= n && e >= 0)) current_builder().note_size_read(x, static_cast<int64_t>(d));
    normalize_slice(n, s, e, step);
    all_starts[d] = s;
    all_ends[d] = to_end ? kSliceToEnd : e;
    all_steps[d] = step;
  }
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("slice"), in, Attrs{{"starts", all_starts}, {"ends", all_ends}, {"steps", all_steps}});
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t axis1, int64_t axis2) {
  OAR_CHECK_ARG(x.dim() >= 2, "diagonal: x must have at least 2 dims but has shape " + shape_str(x.shape()));
  int64_t a1 = meta::normalize_axis("diagonal", axis1, x.dim());
  int64_t a2 = meta::normalize_axis("diagonal", axis2, x.dim());
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("diagonal"), in, Attrs{{"offset", offset}, {"axis1", a1}, {"axis2", a2}});
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  OAR_CHECK_ARG(!xs.empty(), "concat: needs at least one input");
  DType d = xs[0].dtype();
  for (const auto& t : xs) d = promote_types(d, t.dtype());
  std::vector<Tensor> in;
  for (const auto& t : xs) in.push_back(cast(t, d));
  int64_t a = meta::normalize_axis("concat", axis, xs[0].dim());
  return apply1(OAR_OP("concat"), in, Attrs{{"axis", a}});
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value) {
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("pad"), in, Attrs{{"pads", pads}, {"value", value}});
}

namespace {
// Note [Index values] in op_util.h.
void check_axis_index(const std::string& op, const Tensor& x, const Tensor& index, int64_t axis) {
  if (x.dim() == 0) return;  // the meta rule names the rank
  if (index.is_symbolic()) return;  // in a program the gather/scatter_add kernels check
  const int64_t size = x.shape()[static_cast<size_t>(axis)];
  check_index_values({.op = op, .size = size, .size_is = "the size of axis " + std::to_string(axis) + " of x " + shape_str(x.shape())}, index);
}
}  // namespace

Tensor gather(const Tensor& x, const Tensor& index, int64_t axis) {
  std::array<Tensor, 2> in{x, index};
  const int64_t a = meta::normalize_axis("gather", axis, x.dim());
  check_axis_index("gather", x, index, a);
  return apply1(OAR_OP("gather"), in, Attrs{{"axis", a}});
}

Tensor scatter_add(const Tensor& x, const Tensor& index, const Tensor& updates, int64_t axis) {
  std::array<Tensor, 3> in{x, index, updates};
  const int64_t a = meta::normalize_axis("scatter_add", axis, x.dim());
  check_axis_index("scatter_add", x, index, a);
  return apply1(OAR_OP("scatter_add"), in, Attrs{{"axis", a}});
}

Tensor squeeze(const Tensor& x, std::vector<int64_t> axes) {
  axes = meta::normalize_axes("squeeze", std::move(axes), x.dim());
  Shape out;
  for (size_t i = 0; i < x.shape().size(); ++i) {
    bool listed = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!(listed && x.shape()[i] == 1)) out.push_back(x.shape()[i]);
  }
  return reshape(x, reshape_spec(x.shape(), out));
}

Tensor unsqueeze(const Tensor& x, std::vector<int64_t> axes) {
  int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  for (auto& a : axes) a = meta::normalize_axis("unsqueeze", a, rank);
  std::sort(axes.begin(), axes.end());
  Shape out;
  size_t src = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) out.push_back(1);
    else out.push_back(x.shape()[src++]);
  }
  checked_shape_bytes("unsqueeze", out, x.dtype());  // names this op, not reshape (Note [Checked shapes])
  if (shape_numel(x.shape()) == 0) return reshape(x, out);
  // The spec says which dims are new (1) and which are x's: x's dim at its own place is copied
  // (0), the first one that moved is inferred (-1), so a trace keeps a dynamic dim's symbol
  // however large its example (reshape_spec would read an example size 1 as a new dim).
  std::vector<int64_t> spec;
  bool inferred = false;
  src = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) {
      spec.push_back(1);
      continue;
    }
    if (static_cast<size_t>(i) == src) {
      spec.push_back(0);
    } else if (!inferred) {
      spec.push_back(-1);
      inferred = true;
    } else {
      spec.push_back(x.shape()[src]);
    }
    ++src;
  }
  return reshape(x, spec);
}

Tensor flatten(const Tensor& x, int64_t start_axis, int64_t stop_axis) {
  if (x.dim() == 0) return reshape(x, {1});
  int64_t s = meta::normalize_axis("flatten", start_axis, x.dim());
  int64_t e = meta::normalize_axis("flatten", stop_axis, x.dim());
  OAR_CHECK_ARG(s <= e, "flatten: start_axis " + std::to_string(start_axis) + " is after stop_axis " + std::to_string(stop_axis));
  // Leading dims are kept with 0 and the merged one inferred with -1, so a
  // traced flatten stays valid for every batch size (Note [Dynamic dims]);
  // an empty tensor cannot infer, so it gets the sizes themselves.
  bool empty = x.numel() == 0;
  Shape out;
  for (int64_t i = 0; i < s; ++i) out.push_back(empty ? x.shape()[static_cast<size_t>(i)] : 0);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged *= x.shape()[static_cast<size_t>(i)];
  out.push_back(empty ? merged : -1);
  for (int64_t i = e + 1; i < x.dim(); ++i) out.push_back(x.shape()[static_cast<size_t>(i)]);
  return reshape(x, out);
}

}  // namespace oar
