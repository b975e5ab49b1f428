// Optimizer kernels of the mock: adam_update (Note [Fused Adam] in
// core/src/ops/optimizer_ops.cpp) as a plain loop per element, in the
// moments' dtype with the scalars rounded to it, as the op defines it.
#include <cmath>

#include "mock_internal.h"

namespace oar_mock {
namespace {

/// Element `index` (row-major position) of `v` read as C.
template <class C>
C read(const View& v, const int64_t* index) {
  C out{};
  op::visit_float(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    out = static_cast<C>(op::Element<T>::load(v.at(index)));
  });
  return out;
}

template <class C>
void adam_elements(const std::vector<View>& in, const std::vector<View>& out, int64_t n, int64_t i, bool ams,
                   bool master, const double* scalars) {
  const auto s = [scalars](int k) { return static_cast<C>(scalars[k]); };
  const C b1 = s(0), one_minus_b1 = s(1), b2 = s(2), one_minus_b2 = s(3), eps_t = s(4), lr_t = s(5), decay = s(6);
  const auto at = [n, i](int64_t group) { return static_cast<size_t>(group * n + i); };
  const View& p = in[at(0)];
  for_each_index(p.ndim, p.shape, [&](const int64_t* idx, int64_t) {
    const C g = read<C>(in[at(1)], idx);
    const C m = read<C>(in[at(2)], idx) * b1 + g * one_minus_b1;
    C v = read<C>(in[at(3)], idx) * b2 + (g * g) * one_minus_b2;
    op::store_as(out[at(1)].dtype, out[at(1)].at(idx), m);
    op::store_as(out[at(2)].dtype, out[at(2)].at(idx), v);
    if (ams) {
      const C a = read<C>(in[at(4)], idx);
      v = (a > v || a != a) ? a : v;
      op::store_as(out[at(3)].dtype, out[at(3)].at(idx), v);
    }
    const C w = master ? read<C>(in[at(ams ? 5 : 4)], idx) : read<C>(p, idx);
    const C w_new = w * decay - (m / (std::sqrt(v) + eps_t)) * lr_t;
    if (master) op::store_as(out[at(ams ? 4 : 3)].dtype, out[at(ams ? 4 : 3)].at(idx), w_new);
    op::store_as(out[at(0)].dtype, out[at(0)].at(idx), w_new);
  });
}

OarStatus adam_update_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "adam_update", -1, ctx ? ctx->num_outputs : 0, &l)) return s;
  op::Attrs attrs(l.ctx);
  const double lr = attrs.get_float("lr"), b1 = attrs.get_float("beta1"), b2 = attrs.get_float("beta2");
  const double eps = attrs.get_float("epsilon"), wd = attrs.get_float("weight_decay", 0.0);
  const int64_t step = attrs.get_int("step");
  const bool ams = attrs.get_bool("amsgrad", false), master = attrs.get_bool("master_weights", false);
  if (!attrs.ok()) return attrs.status();
  const auto groups = static_cast<size_t>(4 + (ams ? 1 : 0) + (master ? 1 : 0));
  if (l.in.size() % groups != 0 || l.out.size() != l.in.size() - l.in.size() / groups)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("adam_update: expected %zu inputs per parameter and one output less per parameter, "
                       "got %zu inputs and %zu outputs",
                       groups, l.in.size(), l.out.size()));
  const auto n = static_cast<int64_t>(l.in.size() / groups);
  for (int64_t i = 0; i < n; ++i) {
    const View& p = l.in[static_cast<size_t>(i)];
    for (size_t g = 1; g < groups; ++g)
      if (!check_same_shape("adam_update", "an operand", l.in[g * static_cast<size_t>(n) + static_cast<size_t>(i)],
                            "its parameter", p))
        return OAR_ERROR_INVALID_ARGUMENT;
    const int32_t c = l.in[static_cast<size_t>(2 * n + i)].dtype;
    if (c != OAR_DTYPE_F32 && c != OAR_DTYPE_F64) return bad_dtype("adam_update", "moment1", c, "f32, f64");
  }
  const double t = static_cast<double>(step);
  const double b1p = std::pow(b1, t), b2p = std::pow(b2, t);
  const double scalars[7] = {b1,
                             1.0 - b1,
                             b2,
                             1.0 - b2,
                             eps * std::sqrt(1.0 - b2p),
                             lr * std::sqrt(1.0 - b2p) / (1.0 - b1p),
                             wd != 0.0 ? 1.0 - lr * wd : 1.0};
  std::vector<View> in = l.in, out = l.out;
  std::vector<double> sc(scalars, scalars + 7);
  return submit(l, [in, out, n, ams, master, sc](std::string&) -> OarStatus {
    for (int64_t i = 0; i < n; ++i) {
      if (in[static_cast<size_t>(2 * n + i)].dtype == OAR_DTYPE_F64)
        adam_elements<double>(in, out, n, i, ams, master, sc.data());
      else
        adam_elements<float>(in, out, n, i, ams, master, sc.data());
    }
    return OAR_OK;
  });
}

}  // namespace

void register_optimizer_kernels(op::KernelTable& t) {
  t.add("adam_update", std::vector<int32_t>{}, std::vector<int32_t>{}, adam_update_kernel);
}

}  // namespace oar_mock
