// Complex kernels of the mock (c64, c128): the reference the cpu plugin is
// compared with. Every value is computed in std::complex<double> and
// rounded to the element type once; inputs of two-input ops broadcast
// through View::at (a dim of 1 is read at 0).
#include <cmath>
#include <complex>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

#include "mock_internal.h"

namespace oar_mock {
namespace {

using Z = std::complex<double>;

bool is_complex_dtype(int32_t d) { return d == OAR_DTYPE_C64 || d == OAR_DTYPE_C128; }
int32_t part_of(int32_t c) { return c == OAR_DTYPE_C64 ? OAR_DTYPE_F32 : OAR_DTYPE_F64; }

// Loads and stores of one element of a complex, part (f32/f64) or bool dtype.
Z load(int32_t dtype, const char* p) {
  switch (dtype) {
    case OAR_DTYPE_C64: {
      std::complex<float> v;
      std::memcpy(&v, p, sizeof v);
      return {v.real(), v.imag()};
    }
    case OAR_DTYPE_C128: {
      Z v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case OAR_DTYPE_F32: {
      float v;
      std::memcpy(&v, p, sizeof v);
      return {v, 0.0};
    }
    default: {
      double v;
      std::memcpy(&v, p, sizeof v);
      return {v, 0.0};
    }
  }
}
void store(int32_t dtype, char* p, Z v) {
  switch (dtype) {
    case OAR_DTYPE_C64: {
      std::complex<float> s(static_cast<float>(v.real()), static_cast<float>(v.imag()));
      std::memcpy(p, &s, sizeof s);
      break;
    }
    case OAR_DTYPE_C128:
      std::memcpy(p, &v, sizeof v);
      break;
    case OAR_DTYPE_F32: {
      auto s = static_cast<float>(v.real());
      std::memcpy(p, &s, sizeof s);
      break;
    }
    case OAR_DTYPE_F64: {
      double s = v.real();
      std::memcpy(p, &s, sizeof s);
      break;
    }
    default:  // bool: the op wrote 1 or 0 in the real part
      *p = v.real() != 0;
  }
}

// ------------------------------------------------------------------------
// Elementwise: one row per op
// ------------------------------------------------------------------------

enum class Out { same, part, boolean };  // the output dtype, from the complex one
struct UnaryOp {
  const char* name;
  Z (*f)(Z);
  Out out;
};
const UnaryOp kUnary[] = {
    {"neg", [](Z a) { return -a; }, Out::same},
    {"conj", [](Z a) { return std::conj(a); }, Out::same},
    {"exp", [](Z a) { return std::exp(a); }, Out::same},
    {"log", [](Z a) { return std::log(a); }, Out::same},
    {"sqrt", [](Z a) { return std::sqrt(a); }, Out::same},
    {"sin", [](Z a) { return std::sin(a); }, Out::same},
    {"cos", [](Z a) { return std::cos(a); }, Out::same},
    {"tanh", [](Z a) { return std::tanh(a); }, Out::same},
    {"real", [](Z a) { return Z(a.real()); }, Out::part},
    {"imag", [](Z a) { return Z(a.imag()); }, Out::part},
    {"abs", [](Z a) { return Z(std::abs(a)); }, Out::part},
    {"angle", [](Z a) { return Z(std::arg(a)); }, Out::part},
};
struct BinaryOp {
  const char* name;
  Z (*f)(Z, Z);
  Out out;
  bool from_parts;  // inputs are the part dtype (complex(real, imag))
};
const BinaryOp kBinary[] = {
    {"add", [](Z a, Z b) { return a + b; }, Out::same, false},
    {"sub", [](Z a, Z b) { return a - b; }, Out::same, false},
    {"mul", [](Z a, Z b) { return a * b; }, Out::same, false},
    {"div", [](Z a, Z b) { return a / b; }, Out::same, false},
    {"equal", [](Z a, Z b) { return Z(a == b ? 1 : 0); }, Out::boolean, false},
    {"not_equal", [](Z a, Z b) { return Z(a != b ? 1 : 0); }, Out::boolean, false},
    {"complex", [](Z a, Z b) { return Z(a.real(), b.real()); }, Out::same, true},
};

int32_t out_dtype(Out out, int32_t c) {
  return out == Out::same ? c : out == Out::part ? part_of(c) : OAR_DTYPE_BOOL;
}

template <size_t I>
OarStatus unary_kernel(const OarKernelContext* ctx) {
  const UnaryOp& U = kUnary[I];
  Launch l;
  if (OarStatus s = prepare(ctx, U.name, 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (!is_complex_dtype(x.dtype)) return bad_dtype(l.op, "x", x.dtype, "complex dtypes");
  if (y.dtype != out_dtype(U.out, x.dtype))
    return bad_dtype(l.op, "the output", y.dtype, dtype_name(out_dtype(U.out, x.dtype)));
  if (!check_same_shape(l.op, "x", x, "y", y)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, y, f = U.f](std::string&) -> OarStatus {
    for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) { store(y.dtype, y.at(i), f(load(x.dtype, x.at(i)))); });
    return OAR_OK;
  });
}

template <size_t I>
OarStatus binary_kernel(const OarKernelContext* ctx) {
  const BinaryOp& B = kBinary[I];
  Launch l;
  if (OarStatus s = prepare(ctx, B.name, 2, 1, &l)) return s;
  const View a = l.in[0], b = l.in[1], y = l.out[0];
  const int32_t c = B.from_parts ? (a.dtype == OAR_DTYPE_F32 ? OAR_DTYPE_C64 : OAR_DTYPE_C128) : a.dtype;
  if (a.dtype != b.dtype)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: a has dtype %s but b has dtype %s", l.op,
                                                 dtype_name(a.dtype), dtype_name(b.dtype)));
  if (B.from_parts ? (a.dtype != OAR_DTYPE_F32 && a.dtype != OAR_DTYPE_F64) : !is_complex_dtype(a.dtype))
    return bad_dtype(l.op, "a", a.dtype, B.from_parts ? "f32 or f64" : "complex dtypes");
  if (y.dtype != out_dtype(B.out, c)) return bad_dtype(l.op, "the output", y.dtype, dtype_name(out_dtype(B.out, c)));
  if (!check_broadcastable(l.op, "a", a, y) || !check_broadcastable(l.op, "b", b, y))
    return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [a, b, y, f = B.f](std::string&) -> OarStatus {
    for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) {
      store(y.dtype, y.at(i), f(load(a.dtype, a.at(i)), load(b.dtype, b.at(i))));
    });
    return OAR_OK;
  });
}

// as_real / as_complex: element pairs <-> complex elements, through the
// views' strides (the last dim of the real side holds the two parts).
OarStatus reinterpret_kernel(const OarKernelContext* ctx, const char* name) {
  Launch l;
  if (OarStatus s = prepare(ctx, name, 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  const bool to_real = is_complex_dtype(x.dtype);
  const View& c = to_real ? x : y;  // the complex side
  const View& r = to_real ? y : x;  // the real side, [..., 2]
  bool ok = r.ndim == c.ndim + 1 && r.shape[r.ndim - 1] == 2 && r.dtype == part_of(c.dtype);
  for (int32_t d = 0; ok && d < c.ndim; ++d) ok = r.shape[d] == c.shape[d];
  if (!ok)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: %s %s and %s %s are not (real, imaginary) pairs of each other",
                                                 name, dtype_name(x.dtype), shape_str(x.ndim, x.shape).c_str(),
                                                 dtype_name(y.dtype), shape_str(y.ndim, y.shape).c_str()));
  return submit(l, [c, r, to_real](std::string&) -> OarStatus {
    for_each_index(c.ndim, c.shape, [&](const int64_t* i, int64_t) {
      int64_t ri[OAR_MAX_NDIM];
      for (int32_t d = 0; d < c.ndim; ++d) ri[d] = i[d];
      ri[c.ndim] = 0;
      char* re = r.at(ri);
      ri[c.ndim] = 1;
      char* im = r.at(ri);
      if (to_real) {
        Z v = load(c.dtype, c.at(i));
        store(r.dtype, re, Z(v.real()));
        store(r.dtype, im, Z(v.imag()));
      } else {
        store(c.dtype, c.at(i), Z(load(r.dtype, re).real(), load(r.dtype, im).real()));
      }
    });
    return OAR_OK;
  });
}
OarStatus as_real_kernel(const OarKernelContext* ctx) { return reinterpret_kernel(ctx, "as_real"); }
OarStatus as_complex_kernel(const OarKernelContext* ctx) { return reinterpret_kernel(ctx, "as_complex"); }

// sum over `axes` (all of them when absent), keepdim or not.
OarStatus sum_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "sum", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (y.dtype != x.dtype) return bad_dtype(l.op, "the output", y.dtype, dtype_name(x.dtype));
  op::Attrs attrs(l.ctx);
  const std::vector<int64_t> axes = attrs.get_ints("axes", {});
  const bool keepdim = attrs.get_bool("keepdim", false);
  if (!attrs.ok()) return attrs.status();
  bool mask[OAR_MAX_NDIM] = {};
  for (int64_t a : axes) {
    if (a < 0 || a >= x.ndim)
      return fail(OAR_ERROR_INVALID_ARGUMENT, format("sum: axis %lld is out of range for an input of shape %s",
                                                   static_cast<long long>(a), shape_str(x.ndim, x.shape).c_str()));
    mask[a] = true;
  }
  // y addressed with x's rank: reduced dims have stride 0.
  View y_keep = y;
  y_keep.ndim = x.ndim;
  int32_t expected_rank = 0;
  for (int32_t d = 0, j = 0; d < x.ndim; ++d) {
    const bool kept = keepdim || !mask[d];
    y_keep.shape[d] = mask[d] ? 1 : x.shape[d];
    y_keep.strides[d] = kept ? y.strides[j++] : 0;
    expected_rank += kept;
  }
  if (y.ndim != expected_rank)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("sum: the output %s does not fit reducing %s",
                                                 shape_str(y.ndim, y.shape).c_str(), shape_str(x.ndim, x.shape).c_str()));
  return submit(l, [x, y, y_keep](std::string&) -> OarStatus {
    std::vector<Z> acc(static_cast<size_t>(y.numel()));
    for_each_index(x.ndim, x.shape, [&](const int64_t* i, int64_t) {
      int64_t o[OAR_MAX_NDIM];
      int64_t flat = 0;
      for (int32_t d = 0; d < x.ndim; ++d) o[d] = y_keep.shape[d] == 1 ? 0 : i[d];
      // Row-major position of o in y (reduced dims dropped or kept as 1).
      for (int32_t d = 0; d < x.ndim; ++d) flat = flat * y_keep.shape[d] + o[d];
      acc[static_cast<size_t>(flat)] += load(x.dtype, x.at(i));
    });
    for_each_index(y_keep.ndim, y_keep.shape, [&](const int64_t* o, int64_t n) {
      store(y.dtype, y_keep.at(o), acc[static_cast<size_t>(n)]);
    });
    return OAR_OK;
  });
}

// matmul: y[..., i, j] = sum_p op(a)[..., i, p] op(b)[..., p, j] in complex<double>.
OarStatus matmul_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "matmul", 2, 1, &l)) return s;
  const View a = l.in[0], b = l.in[1], y = l.out[0];
  op::Attrs attrs(l.ctx);
  const bool ta = attrs.get_bool("transpose_a", false), tb = attrs.get_bool("transpose_b", false);
  if (!attrs.ok()) return attrs.status();
  if (a.dtype != b.dtype || y.dtype != a.dtype || !is_complex_dtype(a.dtype))
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("matmul: a, b and the output must share a complex dtype but are "
                                                 "%s, %s and %s",
                                                 dtype_name(a.dtype), dtype_name(b.dtype), dtype_name(y.dtype)));
  const int32_t nd = y.ndim;
  if (nd < 2 || a.ndim != nd || b.ndim != nd)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("matmul: a %s, b %s and the output %s must have one rank >= 2",
                                                 shape_str(a.ndim, a.shape).c_str(), shape_str(b.ndim, b.shape).c_str(),
                                                 shape_str(y.ndim, y.shape).c_str()));
  const int64_t k = a.shape[nd - (ta ? 2 : 1)];
  const int64_t kb = b.shape[nd - (tb ? 1 : 2)];
  if (k != kb || y.shape[nd - 2] != a.shape[nd - (ta ? 1 : 2)] || y.shape[nd - 1] != b.shape[nd - (tb ? 2 : 1)])
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("matmul: a %s and b %s (transpose_a=%d, transpose_b=%d) do not "
                                                 "give the output %s",
                                                 shape_str(a.ndim, a.shape).c_str(), shape_str(b.ndim, b.shape).c_str(),
                                                 ta, tb, shape_str(y.ndim, y.shape).c_str()));
  return submit(l, [a, b, y, ta, tb, k](std::string&) -> OarStatus {
    const int32_t nd = y.ndim;
    for_each_index(nd, y.shape, [&](const int64_t* yi, int64_t) {
      int64_t ai[OAR_MAX_NDIM], bi[OAR_MAX_NDIM];
      for (int32_t d = 0; d < nd - 2; ++d) ai[d] = bi[d] = yi[d];
      const int64_t i = yi[nd - 2], j = yi[nd - 1];
      Z acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        ai[nd - 2] = ta ? p : i;
        ai[nd - 1] = ta ? i : p;
        bi[nd - 2] = tb ? j : p;
        bi[nd - 1] = tb ? p : j;
        acc += load(a.dtype, a.at(ai)) * load(b.dtype, b.at(bi));
      }
      store(y.dtype, y.at(yi), acc);
    });
    return OAR_OK;
  });
}

template <size_t... I>
void add_unary(op::KernelTable& t, int32_t c, std::index_sequence<I...>) {
  (t.add(kUnary[I].name, {c}, {out_dtype(kUnary[I].out, c)}, unary_kernel<I>), ...);
}
template <size_t... I>
void add_binary(op::KernelTable& t, int32_t c, std::index_sequence<I...>) {
  (t.add(kBinary[I].name, {kBinary[I].from_parts ? part_of(c) : c, kBinary[I].from_parts ? part_of(c) : c},
         {out_dtype(kBinary[I].out, c)}, binary_kernel<I>),
   ...);
}

}  // namespace

void register_complex_kernels(op::KernelTable& t) {
  for (int32_t c : kComplexDtypes) {
    add_unary(t, c, std::make_index_sequence<std::size(kUnary)>{});
    add_binary(t, c, std::make_index_sequence<std::size(kBinary)>{});
    t.add("as_real", {c}, {part_of(c)}, as_real_kernel);
    t.add("as_complex", {part_of(c)}, {c}, as_complex_kernel);
    t.add("sum", {c}, {c}, sum_kernel);
    t.add("matmul", {c, c}, {c}, matmul_kernel);
  }
}

}  // namespace oar_mock
