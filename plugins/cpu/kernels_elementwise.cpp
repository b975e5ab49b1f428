// Elementwise kernels: unary math, binary arithmetic, comparisons, logical
// ops and where. All run through the strided iterator (Note [Strided
// iteration]), so they accept any strides and broadcast inputs without
// copies; contiguous and scalar-broadcast rows get plain vectorizable loops,
// multiversioned for f32/f64 (Note [Multiversioned loops]).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu_common.h"
#include "cpu_vec_math.h"
#include "cpu_vec_math_f64.h"

namespace oar_cpu {
namespace {

// ------------------------------------------------------------------ ops ---
// Each op: `f` on compute values; kFamily: which dtypes it accepts.
enum Family { kNumeric, kFloatOnly, kAnyDtype };

template <class C>
constexpr bool kWraps = std::is_integral_v<C> && !std::is_same_v<C, bool>;

template <class C>
C wrap_neg(C a) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(U(0) - static_cast<U>(a)));
}

struct Neg {
  static constexpr Family kFamily = kNumeric;
  template <class C>
  static C f(C a) {
    if constexpr (kWraps<C>)
      return wrap_neg(a);
    else
      return -a;
  }
};
struct Abs {
  static constexpr Family kFamily = kNumeric;
  template <class C>
  static C f(C a) {
    if constexpr (std::is_unsigned_v<C>)
      return a;
    else if constexpr (kWraps<C>)
      return a < 0 ? wrap_neg(a) : a;
    else
      return std::fabs(a);
  }
};
struct Sign {
  static constexpr Family kFamily = kNumeric;
  template <class C>
  static C f(C a) {
    if constexpr (std::is_floating_point_v<C>) {
      return a > 0 ? C(1) : (a < 0 ? C(-1) : (a != a ? a : C(0)));  // NaN stays NaN
    } else {
      return static_cast<C>((C(0) < a) - (a < C(0)));
    }
  }
};
#define OAR_CPU_FLOAT_UNARY(Name, expr)           \
  struct Name {                                   \
    static constexpr Family kFamily = kFloatOnly; \
    template <class C>                            \
    static C f(C a) {                             \
      return expr;                                \
    }                                             \
  };
// f32 exp, log and tanh: the vectorizable ones of cpu_vec_math.h (within
// 2 ulp of libm's), f32 erf too (within 6.4 ulp); f64 exp and tanh those of
// cpu_vec_math_f64.h (within 2 ulp), f64 log and erf keep libm.
#define OAR_CPU_FLOAT_UNARY_F32(Name, f32_fn, expr)   \
  struct Name {                                       \
    static constexpr Family kFamily = kFloatOnly;     \
    template <class C>                                \
    static C f(C a) {                                 \
      if constexpr (std::is_same_v<C, float>)         \
        return vmath::f32_fn(a);                      \
      else                                            \
        return expr;                                  \
    }                                                 \
  };
OAR_CPU_FLOAT_UNARY_F32(Exp, exp_f32, vmath::exp_f64(a))
OAR_CPU_FLOAT_UNARY_F32(Log, log_f32, std::log(a))
OAR_CPU_FLOAT_UNARY_F32(Tanh, tanh_f32, vmath::tanh_f64(a))
OAR_CPU_FLOAT_UNARY_F32(Erf, erf_f32, std::erf(a))
#undef OAR_CPU_FLOAT_UNARY_F32
OAR_CPU_FLOAT_UNARY(Sqrt, std::sqrt(a))
OAR_CPU_FLOAT_UNARY(Rsqrt, C(1) / std::sqrt(a))
OAR_CPU_FLOAT_UNARY(Sin, std::sin(a))
OAR_CPU_FLOAT_UNARY(Cos, std::cos(a))
OAR_CPU_FLOAT_UNARY(Floor, std::floor(a))
OAR_CPU_FLOAT_UNARY(Ceil, std::ceil(a))
OAR_CPU_FLOAT_UNARY(Expm1, std::expm1(a))
#undef OAR_CPU_FLOAT_UNARY

struct LogicalNot {  // any dtype -> bool
  static constexpr Family kFamily = kAnyDtype;
  template <class C>
  static bool f(C a) {
    return a == C(0);
  }
};

struct Add {
  static constexpr Family kFamily = kNumeric;
  template <class C>
  static C f(C a, C b) {
    if constexpr (kWraps<C>) {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
};
struct Sub {
  static constexpr Family kFamily = kNumeric;
  template <class C>
  static C f(C a, C b) {
    if constexpr (kWraps<C>) {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
    } else {
      return a - b;
    }
  }
};
struct Mul {
  static constexpr Family kFamily = kNumeric;
  template <class C>
  static C f(C a, C b) {
    if constexpr (kWraps<C>) {
      using U = std::make_unsigned_t<C>;
      using W = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, U>;
      return static_cast<C>(
          static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
    } else {
      return a * b;
    }
  }
};
struct Div {  // ints: truncate toward zero; x / 0 = 0; MIN / -1 wraps
  static constexpr Family kFamily = kNumeric;
  template <class C>
  static C f(C a, C b) {
    if constexpr (kWraps<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return wrap_neg(a);
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};
struct Pow {
  static constexpr Family kFamily = kFloatOnly;
  template <class C>
  static C f(C a, C b) {
    return std::pow(a, b);
  }
};
struct Maximum {  // NaN propagates
  static constexpr Family kFamily = kNumeric;
  template <class C>
  static C f(C a, C b) {
    return (a > b || a != a) ? a : b;
  }
};
struct Minimum {
  static constexpr Family kFamily = kNumeric;
  template <class C>
  static C f(C a, C b) {
    return (a < b || a != a) ? a : b;
  }
};

#define OAR_CPU_COMPARE(Name, expr)              \
  struct Name {                                  \
    static constexpr Family kFamily = kAnyDtype; \
    template <class C>                           \
    static bool f(C a, C b) {                    \
      return expr;                               \
    }                                            \
  };
OAR_CPU_COMPARE(Equal, a == b)
OAR_CPU_COMPARE(NotEqual, a != b)
OAR_CPU_COMPARE(Less, a < b)
OAR_CPU_COMPARE(LessEqual, a <= b)
OAR_CPU_COMPARE(Greater, a > b)
OAR_CPU_COMPARE(GreaterEqual, a >= b)
OAR_CPU_COMPARE(LogicalAnd, a != C(0) && b != C(0))
OAR_CPU_COMPARE(LogicalOr, a != C(0) || b != C(0))
#undef OAR_CPU_COMPARE

// ----------------------------------------------------------------- rows ---

// Contiguous loops for f32/f64, cloned per ISA (Note [Multiversioned loops]);
// not for ops that call libm per element, which cloning cannot widen.
template <class T, class Op>
inline constexpr bool kCallsLibm =
    std::is_same_v<Op, Pow> || std::is_same_v<Op, Sin> || std::is_same_v<Op, Cos> ||
    (std::is_same_v<T, double> && (std::is_same_v<Op, Log> || std::is_same_v<Op, Erf>));
template <class T, class R, class Op>
inline constexpr bool kCloned = (std::is_same_v<T, float> || std::is_same_v<T, double>) &&
                                std::is_same_v<T, R> && !kCallsLibm<T, Op>;

template <class T, class Op>
OAR_CPU_CLONES_STREAM void unary_contig(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Op::f(x[i]);
}
template <class T, class Op>  // exp, log, tanh, sqrt, rsqrt, erf (f64 log: libm): compute-bound
OAR_CPU_CLONES void unary_contig_math(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Op::f(x[i]);
}
template <class T, class Op>
OAR_CPU_CLONES_STREAM void binary_contig(T* y, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Op::f(a[i], b[i]);
}
template <class T, class Op>
OAR_CPU_CLONES_STREAM void binary_scalar_a(T* y, T a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Op::f(a, b[i]);
}
template <class T, class Op>
OAR_CPU_CLONES_STREAM void binary_scalar_b(T* y, const T* a, T b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Op::f(a[i], b);
}

/// Note [Streaming stores for big outputs] (cpu_common.h): where iter_run
/// asked for it, compute(dst, i, m) fills an L1 buffer with output elements
/// [i, i + m), which then reach y by streaming stores; else it writes y.
template <class R, class F>
inline void write_row(R* y, int64_t n, F&& compute) {
  if (n * static_cast<int64_t>(sizeof(R)) < 1024 || !t_stream_output) {
    compute(y, int64_t{0}, n);
    return;
  }
  constexpr int64_t kChunk = 4096 / sizeof(R);
  alignas(64) R buf[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    compute(buf, i, m);
    stream_out(y + i, buf, m * static_cast<int64_t>(sizeof(R)));
  }
}

template <class T, class R, class Op>
void unary_row(void*, char* const* p, const int64_t* s, int64_t n) {
  using N = Num<T>;
  R* y = reinterpret_cast<R*>(p[0]);
  const T* x = reinterpret_cast<const T*>(p[1]);
  if (s[0] == sizeof(R) && s[1] == sizeof(T)) {
    if constexpr (kCloned<T, R, Op> && (std::is_same_v<Op, Exp> || std::is_same_v<Op, Log> ||
                                        std::is_same_v<Op, Tanh> || std::is_same_v<Op, Sqrt> ||
                                        std::is_same_v<Op, Rsqrt> || std::is_same_v<Op, Erf>)) {
      unary_contig_math<T, Op>(y, x, n);  // compute-bound: streaming did not pay (exp: 10% slower)
    } else if constexpr (kCloned<T, R, Op>) {
      write_row(y, n, [&](T* d, int64_t i, int64_t m) { unary_contig<T, Op>(d, x + i, m); });
    } else {
      for (int64_t i = 0; i < n; ++i) y[i] = cast_to<R>(Op::f(N::load(x[i])));
    }
  } else {
    const int64_t sy = s[0] / static_cast<int64_t>(sizeof(R));
    const int64_t sx = s[1] / static_cast<int64_t>(sizeof(T));
    for (int64_t i = 0; i < n; ++i) y[i * sy] = cast_to<R>(Op::f(N::load(x[i * sx])));
  }
}

template <class T, class R, class Op>
void binary_row(void*, char* const* p, const int64_t* s, int64_t n) {
  using N = Num<T>;
  constexpr int64_t kT = sizeof(T);
  constexpr bool kFast = kCloned<T, R, Op>;
  R* y = reinterpret_cast<R*>(p[0]);
  const T* a = reinterpret_cast<const T*>(p[1]);
  const T* b = reinterpret_cast<const T*>(p[2]);
  if (s[0] == sizeof(R)) {
    if (s[1] == kT && s[2] == kT) {
      if constexpr (kFast) {
        write_row(y, n, [&](T* d, int64_t i, int64_t m) { binary_contig<T, Op>(d, a + i, b + i, m); });
      } else {
        for (int64_t i = 0; i < n; ++i) y[i] = cast_to<R>(Op::f(N::load(a[i]), N::load(b[i])));
      }
      return;
    }
    if (s[1] == 0 && s[2] == kT) {
      if constexpr (kFast) {
        write_row(y, n, [&](T* d, int64_t i, int64_t m) { binary_scalar_a<T, Op>(d, *a, b + i, m); });
      } else {
        const auto av = N::load(*a);
        for (int64_t i = 0; i < n; ++i) y[i] = cast_to<R>(Op::f(av, N::load(b[i])));
      }
      return;
    }
    if (s[1] == kT && s[2] == 0) {
      if constexpr (kFast) {
        write_row(y, n, [&](T* d, int64_t i, int64_t m) { binary_scalar_b<T, Op>(d, a + i, *b, m); });
      } else {
        const auto bv = N::load(*b);
        for (int64_t i = 0; i < n; ++i) y[i] = cast_to<R>(Op::f(N::load(a[i]), bv));
      }
      return;
    }
  }
  const int64_t sy = s[0] / static_cast<int64_t>(sizeof(R));
  const int64_t sa = s[1] / kT;
  const int64_t sb = s[2] / kT;
  for (int64_t i = 0; i < n; ++i) y[i * sy] = cast_to<R>(Op::f(N::load(a[i * sa]), N::load(b[i * sb])));
}

template <class T>
void where_row(void*, char* const* p, const int64_t* s, int64_t n) {
  constexpr int64_t kT = sizeof(T);
  T* out = reinterpret_cast<T*>(p[0]);
  const bool* c = reinterpret_cast<const bool*>(p[1]);
  const T* x = reinterpret_cast<const T*>(p[2]);
  const T* y = reinterpret_cast<const T*>(p[3]);
  if (s[0] == kT && s[1] == 1 && s[2] == kT && s[3] == kT) {
    for (int64_t i = 0; i < n; ++i) out[i] = c[i] ? x[i] : y[i];
    return;
  }
  const int64_t so = s[0] / kT, sx = s[2] / kT, sy = s[3] / kT;
  for (int64_t i = 0; i < n; ++i) out[i * so] = c[i * s[1]] ? x[i * sx] : y[i * sy];
}

// -------------------------------------------------------------- kernels ---

template <class Op, class F>
bool visit_family(int32_t dtype, F&& f) {
  if constexpr (Op::kFamily == kFloatOnly)
    return visit_float(dtype, f);
  else if constexpr (Op::kFamily == kNumeric)
    return visit_numeric(dtype, f);
  else
    return visit_all(dtype, f);
}

OarStatus check_arity(const OarKernelContext* ctx, int inputs, int outputs) {
  if (ctx->num_inputs != inputs || ctx->num_outputs != outputs) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "expected %d inputs and %d outputs, got %d and %d",
                inputs, outputs, ctx->num_inputs, ctx->num_outputs);
  }
  return OAR_OK;
}

/// Unary (kBoolOut: logical_not writes bool) over any strides.
template <class Op, bool kBoolOut>
OarStatus unary_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = check_arity(ctx, 1, 1)) return s;
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  const int32_t want = kBoolOut ? int32_t{OAR_DTYPE_BOOL} : x.dtype;
  if (y.dtype != want) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "output dtype %s, expected %s",
                dtype_name(y.dtype), dtype_name(want));
  }
  RowFn fn = nullptr;
  visit_family<Op>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    using R = std::conditional_t<kBoolOut, bool, T>;
    fn = &unary_row<T, R, Op>;
  });
  if (fn == nullptr) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not supported", dtype_name(x.dtype));
  }
  StridedIter it;
  if (!make_iter(ctx, &it, y, {&x})) return OAR_ERROR_INVALID_ARGUMENT;
  iter_run(it, fn, nullptr);
  return OAR_OK;
}

/// Binary with broadcasting (kBoolOut: comparisons and logical ops).
template <class Op, bool kBoolOut>
OarStatus binary_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = check_arity(ctx, 2, 1)) return s;
  const OarTensorView& a = ctx->inputs[0];
  const OarTensorView& b = ctx->inputs[1];
  const OarTensorView& y = ctx->outputs[0];
  const int32_t want = kBoolOut ? int32_t{OAR_DTYPE_BOOL} : a.dtype;
  if (a.dtype != b.dtype || y.dtype != want) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtypes (%s, %s) -> %s are not supported",
                dtype_name(a.dtype), dtype_name(b.dtype), dtype_name(y.dtype));
  }
  RowFn fn = nullptr;
  visit_family<Op>(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using R = std::conditional_t<kBoolOut, bool, T>;
    fn = &binary_row<T, R, Op>;
  });
  if (fn == nullptr) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not supported", dtype_name(a.dtype));
  }
  StridedIter it;
  if (!make_iter(ctx, &it, y, {&a, &b})) return OAR_ERROR_INVALID_ARGUMENT;
  iter_run(it, fn, nullptr);
  return OAR_OK;
}

OarStatus where_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = check_arity(ctx, 3, 1)) return s;
  const OarTensorView& c = ctx->inputs[0];
  const OarTensorView& x = ctx->inputs[1];
  const OarTensorView& y = ctx->inputs[2];
  const OarTensorView& out = ctx->outputs[0];
  if (c.dtype != OAR_DTYPE_BOOL || x.dtype != y.dtype || out.dtype != x.dtype) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtypes (%s, %s, %s) -> %s are not supported",
                dtype_name(c.dtype), dtype_name(x.dtype), dtype_name(y.dtype),
                dtype_name(out.dtype));
  }
  RowFn fn = nullptr;
  visit_by_size(x.dtype, [&](auto tag) { fn = &where_row<decltype(tag)>; });
  if (fn == nullptr) return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "unknown dtype %d", x.dtype);
  StridedIter it;
  if (!make_iter(ctx, &it, out, {&c, &x, &y})) return OAR_ERROR_INVALID_ARGUMENT;
  iter_run(it, fn, nullptr);
  return OAR_OK;
}

template <class Op, bool kBoolOut = false>
void add_unary(op::KernelTable& r, const char* name) {
  constexpr uint32_t flags = OAR_KERNEL_STRIDED | (kBoolOut ? 0u : uint32_t{OAR_KERNEL_INPLACE});
  auto one = [&](int32_t dt) {
    r.add(name, {dt}, {kBoolOut ? int32_t{OAR_DTYPE_BOOL} : dt}, &guarded<&unary_kernel<Op, kBoolOut>>, flags);
  };
  if constexpr (Op::kFamily == kFloatOnly) {
    for (int32_t dt : kFloatDtypes) one(dt);
  } else if constexpr (Op::kFamily == kNumeric) {
    for (int32_t dt : kNumericDtypes) one(dt);
  } else {
    for (int32_t dt : kAllDtypes) one(dt);
  }
}

template <class Op, bool kBoolOut = false>
void add_binary(op::KernelTable& r, const char* name) {
  constexpr uint32_t flags = OAR_KERNEL_STRIDED | (kBoolOut ? 0u : uint32_t{OAR_KERNEL_INPLACE});
  auto one = [&](int32_t dt) {
    r.add(name, {dt, dt}, {kBoolOut ? int32_t{OAR_DTYPE_BOOL} : dt}, &guarded<&binary_kernel<Op, kBoolOut>>, flags);
  };
  if constexpr (Op::kFamily == kFloatOnly) {
    for (int32_t dt : kFloatDtypes) one(dt);
  } else if constexpr (Op::kFamily == kNumeric) {
    for (int32_t dt : kNumericDtypes) one(dt);
  } else {
    for (int32_t dt : kAllDtypes) one(dt);
  }
}

}  // namespace

void register_elementwise_kernels(op::KernelTable& r) {
  add_unary<Neg>(r, "neg");
  add_unary<Abs>(r, "abs");
  add_unary<Sign>(r, "sign");
  add_unary<Exp>(r, "exp");
  add_unary<Log>(r, "log");
  add_unary<Sqrt>(r, "sqrt");
  add_unary<Rsqrt>(r, "rsqrt");
  add_unary<Sin>(r, "sin");
  add_unary<Cos>(r, "cos");
  add_unary<Tanh>(r, "tanh");
  add_unary<Erf>(r, "erf");
  add_unary<Floor>(r, "floor");
  add_unary<Ceil>(r, "ceil");
  add_unary<Expm1>(r, "expm1");
  add_unary<LogicalNot, true>(r, "logical_not");

  add_binary<Add>(r, "add");
  add_binary<Sub>(r, "sub");
  add_binary<Mul>(r, "mul");
  add_binary<Div>(r, "div");
  add_binary<Pow>(r, "pow");
  add_binary<Maximum>(r, "maximum");
  add_binary<Minimum>(r, "minimum");
  add_binary<Equal, true>(r, "equal");
  add_binary<NotEqual, true>(r, "not_equal");
  add_binary<Less, true>(r, "less");
  add_binary<LessEqual, true>(r, "less_equal");
  add_binary<Greater, true>(r, "greater");
  add_binary<GreaterEqual, true>(r, "greater_equal");
  add_binary<LogicalAnd, true>(r, "logical_and");
  add_binary<LogicalOr, true>(r, "logical_or");

  for (int32_t dt : kAllDtypes) {
    r.add("where", {OAR_DTYPE_BOOL, dt, dt}, {dt}, &guarded<&where_kernel>, OAR_KERNEL_STRIDED);
  }
  for (int32_t dt : kComplexDtypes) {  // moves elements by size
    r.add("where", {OAR_DTYPE_BOOL, dt, dt}, {dt}, &guarded<&where_kernel>, OAR_KERNEL_STRIDED);
  }
}

}  // namespace oar_cpu
