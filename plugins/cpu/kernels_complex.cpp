// Complex kernels (c64, c128): elementwise math and arithmetic, the parts
// (real, imag, abs, angle, conj, complex, as_real, as_complex) and sum.
// Elementwise ones run through the strided iterator (Note [Strided
// iteration]); std::complex does the math, in the element's own precision.
// The c64/c128 matmul is kernels_matmul.cpp's (BLAS).
#include <cmath>
#include <complex>
#include <cstring>
#include <vector>

#include "cpu_common.h"

namespace oar_cpu {
namespace {

template <class T>
using Part = typename T::value_type;  // float for c64, double for c128

// ------------------------------------------------------------------ ops ---
// Each op: `f` on one (or two) elements; In/Out say what it reads and
// writes: the complex type T, its part type, or bool.
enum class Kind { complex, part, boolean };

template <Kind K, class T>
using Of = std::conditional_t<K == Kind::complex, T, std::conditional_t<K == Kind::part, Part<T>, bool>>;

#define OAR_COMPLEX_UNARY(Name, OutKind, expr)   \
  struct Name {                                  \
    static constexpr Kind kIn = Kind::complex;   \
    static constexpr Kind kOut = OutKind;        \
    template <class T>                           \
    static Of<OutKind, T> f(T a) {               \
      return expr;                               \
    }                                            \
  };
OAR_COMPLEX_UNARY(Neg, Kind::complex, -a)
OAR_COMPLEX_UNARY(Conj, Kind::complex, std::conj(a))
OAR_COMPLEX_UNARY(Exp, Kind::complex, std::exp(a))
OAR_COMPLEX_UNARY(Log, Kind::complex, std::log(a))
OAR_COMPLEX_UNARY(Sqrt, Kind::complex, std::sqrt(a))
OAR_COMPLEX_UNARY(Sin, Kind::complex, std::sin(a))
OAR_COMPLEX_UNARY(Cos, Kind::complex, std::cos(a))
OAR_COMPLEX_UNARY(Tanh, Kind::complex, std::tanh(a))
OAR_COMPLEX_UNARY(Real, Kind::part, a.real())
OAR_COMPLEX_UNARY(Imag, Kind::part, a.imag())
OAR_COMPLEX_UNARY(Abs, Kind::part, std::abs(a))
OAR_COMPLEX_UNARY(Angle, Kind::part, std::arg(a))
#undef OAR_COMPLEX_UNARY

#define OAR_COMPLEX_BINARY(Name, InKind, OutKind, expr) \
  struct Name {                                         \
    static constexpr Kind kIn = InKind;                 \
    static constexpr Kind kOut = OutKind;               \
    template <class T>                                  \
    static Of<OutKind, T> f(Of<InKind, T> a, Of<InKind, T> b) { \
      return expr;                                      \
    }                                                   \
  };
OAR_COMPLEX_BINARY(Add, Kind::complex, Kind::complex, a + b)
OAR_COMPLEX_BINARY(Sub, Kind::complex, Kind::complex, a - b)
OAR_COMPLEX_BINARY(Mul, Kind::complex, Kind::complex, a * b)
OAR_COMPLEX_BINARY(Div, Kind::complex, Kind::complex, a / b)
OAR_COMPLEX_BINARY(Equal, Kind::complex, Kind::boolean, a == b)
OAR_COMPLEX_BINARY(NotEqual, Kind::complex, Kind::boolean, a != b)
OAR_COMPLEX_BINARY(MakeComplex, Kind::part, Kind::complex, T(a, b))  // complex(real, imag)
#undef OAR_COMPLEX_BINARY

// ----------------------------------------------------------------- rows ---

template <class T, class Op>
void unary_row(void*, char* const* p, const int64_t* s, int64_t n) {
  using I = Of<Op::kIn, T>;
  using O = Of<Op::kOut, T>;
  const int64_t sy = s[0] / static_cast<int64_t>(sizeof(O)), sx = s[1] / static_cast<int64_t>(sizeof(I));
  O* y = reinterpret_cast<O*>(p[0]);
  const I* x = reinterpret_cast<const I*>(p[1]);
  for (int64_t i = 0; i < n; ++i) y[i * sy] = Op::template f<T>(x[i * sx]);
}

template <class T, class Op>
void binary_row(void*, char* const* p, const int64_t* s, int64_t n) {
  using I = Of<Op::kIn, T>;
  using O = Of<Op::kOut, T>;
  constexpr int64_t kI = sizeof(I);
  const int64_t sy = s[0] / static_cast<int64_t>(sizeof(O)), sa = s[1] / kI, sb = s[2] / kI;
  O* y = reinterpret_cast<O*>(p[0]);
  const I* a = reinterpret_cast<const I*>(p[1]);
  const I* b = reinterpret_cast<const I*>(p[2]);
  for (int64_t i = 0; i < n; ++i) y[i * sy] = Op::template f<T>(a[i * sa], b[i * sb]);
}

// -------------------------------------------------------------- kernels ---

// The complex dtype an op computes in, from its first input (complex, or
// the part dtype of MakeComplex).
int32_t complex_of(int32_t dtype) {
  if (dtype == OAR_DTYPE_F32) return OAR_DTYPE_C64;
  if (dtype == OAR_DTYPE_F64) return OAR_DTYPE_C128;
  return dtype;
}

template <class Op, int kInputs>
OarStatus elementwise_kernel(const OarKernelContext* ctx) {
  if (ctx->num_inputs != kInputs || ctx->num_outputs != 1) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "expected %d inputs and 1 output, got %d and %d", kInputs,
                ctx->num_inputs, ctx->num_outputs);
  }
  const OarTensorView& y = ctx->outputs[0];
  const OarTensorView& a = ctx->inputs[0];
  RowFn fn = nullptr;
  visit_complex(complex_of(a.dtype), [&](auto tag) {
    using T = decltype(tag);
    if (a.dtype != op::dtype_of<Of<Op::kIn, T>>() || y.dtype != op::dtype_of<Of<Op::kOut, T>>()) return;
    if (ctx->inputs[kInputs - 1].dtype != a.dtype) return;
    if constexpr (kInputs == 1)
      fn = &unary_row<T, Op>;
    else
      fn = &binary_row<T, Op>;
  });
  if (fn == nullptr) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtypes %s -> %s are not supported", dtype_name(a.dtype),
                dtype_name(y.dtype));
  }
  StridedIter it;
  bool ok;
  if constexpr (kInputs == 1)
    ok = make_iter(ctx, &it, y, {&a});
  else
    ok = make_iter(ctx, &it, y, {&a, &ctx->inputs[1]});
  if (!ok) return OAR_ERROR_INVALID_ARGUMENT;
  iter_run(it, fn, nullptr);
  return OAR_OK;
}

// as_real / as_complex: the same bytes under another dtype and shape (the
// host hands both contiguous).
OarStatus reinterpret_kernel(const OarKernelContext* ctx) {
  if (ctx->num_inputs != 1 || ctx->num_outputs != 1)
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "expected 1 input and 1 output");
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  const size_t bytes = static_cast<size_t>(oar_view_numel(&x)) * oar_dtype_size(x.dtype);
  if (bytes != static_cast<size_t>(oar_view_numel(&y)) * oar_dtype_size(y.dtype))
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "input and output sizes differ");
  if (bytes > 0) std::memcpy(oar_view_ptr(&y), oar_view_ptr(&x), bytes);
  return OAR_OK;
}

// sum over `axes` (sorted, unique), keepdim or not; accumulates in
// complex<double>. The input arrives contiguous.
OarStatus sum_kernel(const OarKernelContext* ctx) {
  if (ctx->num_inputs != 1 || ctx->num_outputs != 1)
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "expected 1 input and 1 output");
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  if (x.dtype != y.dtype)
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "output dtype %s differs from input dtype %s", dtype_name(y.dtype),
                dtype_name(x.dtype));
  Attrs attrs(ctx);
  const std::vector<int64_t> axes = attrs.get_ints("axes");
  if (!attrs.ok()) return attrs.status();
  bool reduced[OAR_MAX_NDIM] = {};
  for (int64_t a : axes) {
    if (a < 0 || a >= x.ndim)
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", static_cast<long long>(a),
                  x.ndim);
    reduced[a] = true;
  }
  // Output stride (in elements) of each input dim; 0 for a reduced one.
  int64_t out_stride[OAR_MAX_NDIM] = {};
  for (int64_t d = x.ndim - 1, s = 1; d >= 0; --d) {
    if (reduced[d]) continue;
    out_stride[d] = s;
    s *= x.shape[d];
  }
  const int64_t n = oar_view_numel(&x), m = oar_view_numel(&y);
  visit_complex(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<std::complex<double>> acc(static_cast<size_t>(m));
    const T* src = static_cast<const T*>(oar_view_ptr(&x));
    int64_t index[OAR_MAX_NDIM] = {};
    int64_t out = 0;
    for (int64_t i = 0; i < n; ++i) {
      acc[static_cast<size_t>(out)] += std::complex<double>(src[i].real(), src[i].imag());
      for (int64_t d = x.ndim - 1; d >= 0; --d) {  // next row-major index
        out += out_stride[d];
        if (++index[d] < x.shape[d]) break;
        out -= out_stride[d] * index[d];
        index[d] = 0;
      }
    }
    T* dst = static_cast<T*>(oar_view_ptr(&y));
    for (int64_t j = 0; j < m; ++j) dst[j] = T(static_cast<Part<T>>(acc[j].real()), static_cast<Part<T>>(acc[j].imag()));
  });
  return OAR_OK;
}

// One row per op: name, kernel, what it reads and writes, its input count.
// Registered for c64 and c128.
struct Row {
  const char* name;
  OarKernelFn fn;
  Kind in, out;
  int inputs;
};
constexpr uint32_t kStrided = OAR_KERNEL_STRIDED;
const Row kRows[] = {
    {"neg", &guarded<&elementwise_kernel<Neg, 1>>, Kind::complex, Kind::complex, 1},
    {"conj", &guarded<&elementwise_kernel<Conj, 1>>, Kind::complex, Kind::complex, 1},
    {"exp", &guarded<&elementwise_kernel<Exp, 1>>, Kind::complex, Kind::complex, 1},
    {"log", &guarded<&elementwise_kernel<Log, 1>>, Kind::complex, Kind::complex, 1},
    {"sqrt", &guarded<&elementwise_kernel<Sqrt, 1>>, Kind::complex, Kind::complex, 1},
    {"sin", &guarded<&elementwise_kernel<Sin, 1>>, Kind::complex, Kind::complex, 1},
    {"cos", &guarded<&elementwise_kernel<Cos, 1>>, Kind::complex, Kind::complex, 1},
    {"tanh", &guarded<&elementwise_kernel<Tanh, 1>>, Kind::complex, Kind::complex, 1},
    {"real", &guarded<&elementwise_kernel<Real, 1>>, Kind::complex, Kind::part, 1},
    {"imag", &guarded<&elementwise_kernel<Imag, 1>>, Kind::complex, Kind::part, 1},
    {"abs", &guarded<&elementwise_kernel<Abs, 1>>, Kind::complex, Kind::part, 1},
    {"angle", &guarded<&elementwise_kernel<Angle, 1>>, Kind::complex, Kind::part, 1},
    {"add", &guarded<&elementwise_kernel<Add, 2>>, Kind::complex, Kind::complex, 2},
    {"sub", &guarded<&elementwise_kernel<Sub, 2>>, Kind::complex, Kind::complex, 2},
    {"mul", &guarded<&elementwise_kernel<Mul, 2>>, Kind::complex, Kind::complex, 2},
    {"div", &guarded<&elementwise_kernel<Div, 2>>, Kind::complex, Kind::complex, 2},
    {"equal", &guarded<&elementwise_kernel<Equal, 2>>, Kind::complex, Kind::boolean, 2},
    {"not_equal", &guarded<&elementwise_kernel<NotEqual, 2>>, Kind::complex, Kind::boolean, 2},
    {"complex", &guarded<&elementwise_kernel<MakeComplex, 2>>, Kind::part, Kind::complex, 2},
};

int32_t dtype_for(Kind k, int32_t complex_dtype) {
  if (k == Kind::complex) return complex_dtype;
  if (k == Kind::boolean) return OAR_DTYPE_BOOL;
  return complex_dtype == OAR_DTYPE_C64 ? OAR_DTYPE_F32 : OAR_DTYPE_F64;
}

}  // namespace

void register_complex_kernels(op::KernelTable& r) {
  for (int32_t c : kComplexDtypes) {
    for (const Row& row : kRows) {
      const int32_t in = dtype_for(row.in, c), out = dtype_for(row.out, c);
      if (row.inputs == 1)
        r.add(row.name, {in}, {out}, row.fn, kStrided);
      else
        r.add(row.name, {in, in}, {out}, row.fn, kStrided);
    }
    const int32_t part = dtype_for(Kind::part, c);
    r.add("as_real", {c}, {part}, &guarded<&reinterpret_kernel>);
    r.add("as_complex", {part}, {c}, &guarded<&reinterpret_kernel>);
    r.add("sum", {c}, {c}, &guarded<&sum_kernel>);
  }
}

}  // namespace oar_cpu
