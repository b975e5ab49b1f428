// Elementwise kernels of the mock: unary, binary, comparisons, logical ops,
// where, cast, copy, and the generators full, arange, uniform, normal.
// Inputs of multi-input ops come with the output's rank; a dim of 1
// broadcasts (docs/kernels.md), which View::at handles.
#include <cmath>
#include <limits>

#include "mock_internal.h"

namespace oar_mock {
namespace {

// ------------------------------------------------------------------------
// Unary
// ------------------------------------------------------------------------

enum class Unary { Neg, Abs, Sign, Exp, Log, Sqrt, Rsqrt, Sin, Cos, Tanh, Erf, Floor, Ceil, Expm1 };
const char* const kUnaryNames[] = {"neg", "abs", "sign", "exp", "log",   "sqrt", "rsqrt",
                                   "sin", "cos", "tanh", "erf", "floor", "ceil", "expm1"};

template <typename T>
typename T::C unary_value(Unary op, typename T::C v) {
  using C = typename T::C;
  if constexpr (T::is_float) {
    switch (op) {
      case Unary::Neg:
        return -v;
      case Unary::Abs:
        return std::fabs(v);
      case Unary::Sign:
        return std::isnan(v) ? v : static_cast<C>((v > 0) - (v < 0));
      case Unary::Exp:
        return std::exp(v);
      case Unary::Log:
        return std::log(v);
      case Unary::Sqrt:
        return std::sqrt(v);
      case Unary::Rsqrt:
        return C(1) / std::sqrt(v);
      case Unary::Sin:
        return std::sin(v);
      case Unary::Cos:
        return std::cos(v);
      case Unary::Tanh:
        return std::tanh(v);
      case Unary::Erf:
        return std::erf(v);
      case Unary::Floor:
        return std::floor(v);
      case Unary::Ceil:
        return std::ceil(v);
      case Unary::Expm1:
        return std::expm1(v);
    }
    return v;
  } else {  // integers: neg and abs wrap (abs(INT_MIN) == INT_MIN)
    switch (op) {
      case Unary::Neg:
        return wrap_sub(0, v);
      case Unary::Abs:
        return v < 0 ? wrap_sub(0, v) : v;
      case Unary::Sign:
        return (v > 0) - (v < 0);
      default:
        return v;  // float-only ops are rejected before launch
    }
  }
}

template <Unary OP>
OarStatus unary_kernel(const OarKernelContext* ctx) {
  const bool float_only = OP != Unary::Neg && OP != Unary::Abs && OP != Unary::Sign;
  Launch l;
  if (OarStatus s = prepare(ctx, kUnaryNames[static_cast<int>(OP)], 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (y.dtype != x.dtype) return bad_dtype(l.op, "the output", y.dtype, "the input's dtype");
  if (!check_same_shape(l.op, "x", x, "y", y)) return OAR_ERROR_INVALID_ARGUMENT;
  auto family_ok = [&](auto) {};
  if (!(float_only ? visit_float(x.dtype, family_ok) : visit_numeric(x.dtype, family_ok)))
    return bad_dtype(l.op, "x", x.dtype, float_only ? "float dtypes" : "numeric dtypes");
  return submit(l, [x, y](std::string&) -> OarStatus {
    visit_numeric(x.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) {
        T::store(y.at(i), unary_value<T>(OP, T::load(x.at(i))));
      });
    });
    return OAR_OK;
  });
}

OarStatus logical_not_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "logical_not", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (y.dtype != OAR_DTYPE_BOOL) return bad_dtype(l.op, "the output", y.dtype, "bool");
  if (!check_same_shape(l.op, "x", x, "y", y)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, y](std::string&) -> OarStatus {
    visit_all(x.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) {
        Bool::store(y.at(i), T::load(x.at(i)) == 0);
      });
    });
    return OAR_OK;
  });
}

// ------------------------------------------------------------------------
// Binary, comparisons, logical
// ------------------------------------------------------------------------

enum class Binary { Add, Sub, Mul, Div, Pow, Maximum, Minimum };
const char* const kBinaryNames[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
enum class Compare { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, And, Or };
const char* const kCompareNames[] = {"equal",   "not_equal",     "less",        "less_equal",
                                     "greater", "greater_equal", "logical_and", "logical_or"};

template <typename T>
typename T::C binary_value(Binary op, typename T::C a, typename T::C b) {
  using C = typename T::C;
  if constexpr (T::is_float) {
    switch (op) {
      case Binary::Add:
        return a + b;
      case Binary::Sub:
        return a - b;
      case Binary::Mul:
        return a * b;
      case Binary::Div:
        return a / b;
      case Binary::Pow:
        return std::pow(a, b);
      case Binary::Maximum:
        return std::isnan(a) ? a : std::isnan(b) ? b : (a > b ? a : b);
      case Binary::Minimum:
        return std::isnan(a) ? a : std::isnan(b) ? b : (a < b ? a : b);
    }
    return C(0);
  } else {
    switch (op) {
      case Binary::Add:
        return wrap_add(a, b);
      case Binary::Sub:
        return wrap_sub(a, b);
      case Binary::Mul:
        return wrap_mul(a, b);
      case Binary::Div:  // truncates toward zero; x / 0 writes 0; MIN / -1 wraps
        if (b == 0) return 0;
        if (b == -1) return wrap_sub(0, a);
        return a / b;
      case Binary::Maximum:
        return a > b ? a : b;
      case Binary::Minimum:
        return a < b ? a : b;
      default:
        return 0;  // pow is float-only, rejected before launch
    }
  }
}

template <typename T>
bool compare_value(Compare op, typename T::C a, typename T::C b) {
  switch (op) {
    case Compare::Equal:
      return a == b;
    case Compare::NotEqual:
      return a != b;
    case Compare::Less:
      return a < b;
    case Compare::LessEqual:
      return a <= b;
    case Compare::Greater:
      return a > b;
    case Compare::GreaterEqual:
      return a >= b;
    case Compare::And:
      return a != 0 && b != 0;
    case Compare::Or:
      return a != 0 || b != 0;
  }
  return false;
}

// Shared checks of a two-input elementwise op; `out_dtype` is the dtype the
// output must have.
OarStatus check_binary(const Launch& l, int32_t out_dtype) {
  const View &a = l.in[0], &b = l.in[1], &y = l.out[0];
  if (a.dtype != b.dtype)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("%s: a has dtype %s but b has dtype %s; the host casts both to one dtype "
                     "first",
                     l.op, dtype_name(a.dtype), dtype_name(b.dtype)));
  if (y.dtype != out_dtype)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: the output has dtype %s, expected %s", l.op,
                                                 dtype_name(y.dtype), dtype_name(out_dtype)));
  if (!check_broadcastable(l.op, "a", a, y) || !check_broadcastable(l.op, "b", b, y))
    return OAR_ERROR_INVALID_ARGUMENT;
  return OAR_OK;
}

template <Binary OP>
OarStatus binary_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, kBinaryNames[static_cast<int>(OP)], 2, 1, &l)) return s;
  if (OarStatus s = check_binary(l, l.in[0].dtype)) return s;
  const View a = l.in[0], b = l.in[1], y = l.out[0];
  auto family_ok = [&](auto) {};
  if (!(OP == Binary::Pow ? visit_float(a.dtype, family_ok) : visit_numeric(a.dtype, family_ok)))
    return bad_dtype(l.op, "a", a.dtype, OP == Binary::Pow ? "float dtypes" : "numeric dtypes");
  return submit(l, [a, b, y](std::string&) -> OarStatus {
    visit_numeric(a.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) {
        T::store(y.at(i), binary_value<T>(OP, T::load(a.at(i)), T::load(b.at(i))));
      });
    });
    return OAR_OK;
  });
}

template <Compare OP>
OarStatus compare_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, kCompareNames[static_cast<int>(OP)], 2, 1, &l)) return s;
  if (OarStatus s = check_binary(l, OAR_DTYPE_BOOL)) return s;
  const View a = l.in[0], b = l.in[1], y = l.out[0];
  return submit(l, [a, b, y](std::string&) -> OarStatus {
    visit_all(a.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) {
        Bool::store(y.at(i), compare_value<T>(OP, T::load(a.at(i)), T::load(b.at(i))));
      });
    });
    return OAR_OK;
  });
}

OarStatus where_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "where", 3, 1, &l)) return s;
  const View cond = l.in[0], x = l.in[1], y = l.in[2], out = l.out[0];
  if (cond.dtype != OAR_DTYPE_BOOL) return bad_dtype(l.op, "cond", cond.dtype, "bool");
  if (x.dtype != y.dtype || out.dtype != x.dtype)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("where: x, y and the output must share a dtype but are %s, %s and %s",
                     dtype_name(x.dtype), dtype_name(y.dtype), dtype_name(out.dtype)));
  if (!check_broadcastable(l.op, "cond", cond, out) || !check_broadcastable(l.op, "x", x, out) ||
      !check_broadcastable(l.op, "y", y, out))
    return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [cond, x, y, out](std::string&) -> OarStatus {
    size_t es = out.elsize();
    for_each_index(out.ndim, out.shape, [&](const int64_t* i, int64_t) {
      std::memcpy(out.at(i), *cond.at(i) ? x.at(i) : y.at(i), es);
    });
    return OAR_OK;
  });
}

// ------------------------------------------------------------------------
// cast, copy
// ------------------------------------------------------------------------

// cast: float -> int truncates toward zero and saturates (NaN -> 0);
// int -> narrower int wraps; anything -> bool is x != 0; f64 -> f16/bf16
// rounds through f32 (Note [Cast contract] in oar/plugin.hpp).
OarStatus cast_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "cast", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (!check_same_shape(l.op, "x", x, "y", y)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, y](std::string&) -> OarStatus {
    if (x.dtype == OAR_DTYPE_C64 || x.dtype == OAR_DTYPE_C128 || y.dtype == OAR_DTYPE_C64 ||
        y.dtype == OAR_DTYPE_C128) {  // Note [Complex casts] in plugin.hpp
      auto visit_any = [](int32_t d, auto&& f) { return visit_all(d, f) || visit_complex(d, f); };
      visit_any(x.dtype, [&](auto s) {
        visit_any(y.dtype, [&](auto d) {
          using S = decltype(s);
          using D = decltype(d);
          for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) {
            S v;
            std::memcpy(&v, x.at(i), sizeof v);
            const D out = op::convert<D>(v);
            std::memcpy(y.at(i), &out, sizeof out);
          });
        });
      });
      return OAR_OK;
    }
    visit_all(x.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) {
        auto v = T::load(x.at(i));
        if constexpr (T::is_float)
          op::store_as(y.dtype, y.at(i), static_cast<double>(v));
        else
          op::store_as(y.dtype, y.at(i), v);
      });
    });
    return OAR_OK;
  });
}

OarStatus copy_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "copy", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (x.dtype != y.dtype) return bad_dtype(l.op, "the output", y.dtype, "the input's dtype");
  if (!check_same_shape(l.op, "x", x, "y", y)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, y](std::string&) -> OarStatus {
    size_t es = y.elsize();
    for_each_index(y.ndim, y.shape,
                   [&](const int64_t* i, int64_t) { std::memcpy(y.at(i), x.at(i), es); });
    return OAR_OK;
  });
}

// ------------------------------------------------------------------------
// Generators
// ------------------------------------------------------------------------

// full, and full_like (full with the shape of its input, whose values are not read).
OarStatus fill_kernel(const OarKernelContext* ctx, const char* op, int32_t inputs) {
  Launch l;
  if (OarStatus s = prepare(ctx, op, inputs, 1, &l)) return s;
  const View y = l.out[0];
  std::vector<unsigned char> bytes(y.elsize());
  op::Attrs attrs(l.ctx);
  if (!attrs.element_into("value", y.dtype, nullptr, bytes.data())) return attrs.status();
  return submit(l, [y, bytes](std::string&) -> OarStatus {
    for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) {
      std::memcpy(y.at(i), bytes.data(), bytes.size());
    });
    return OAR_OK;
  });
}

OarStatus full_kernel(const OarKernelContext* ctx) { return fill_kernel(ctx, "full", 0); }
OarStatus full_like_kernel(const OarKernelContext* ctx) { return fill_kernel(ctx, "full_like", 1); }

OarStatus arange_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "arange", 0, 1, &l)) return s;
  const View y = l.out[0];
  if (y.ndim != 1)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("arange: the output must be 1-D but has shape %s",
                                                 shape_str(y.ndim, y.shape).c_str()));
  if (y.dtype == OAR_DTYPE_BOOL) return bad_dtype(l.op, "the output", y.dtype, "numeric dtypes");
  op::Attrs attrs(l.ctx);
  const double start = attrs.get_float("start"), step = attrs.get_float("step", 1.0);
  if (!attrs.ok()) return attrs.status();
  return submit(l, [y, start, step](std::string&) -> OarStatus {
    for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t n) {
      op::store_as(y.dtype, y.at(i), start + static_cast<double>(n) * step);
    });
    return OAR_OK;
  });
}

// uniform and normal follow docs/kernels.md through oar_uniform_at and
// oar_normal_at: element n (row-major) is a pure function of (seed, offset, n).
// kInputs: 1 for uniform_like, whose input gives only the shape (its values are not read).
template <bool kNormal, int kInputs = 0>
OarStatus random_kernel(const OarKernelContext* ctx) {
  const char* op = kNormal ? "normal" : kInputs ? "uniform_like" : "uniform";
  Launch l;
  if (OarStatus s = prepare(ctx, op, kInputs, 1, &l)) return s;
  const View y = l.out[0];
  if (!visit_float(y.dtype, [](auto) {}))
    return bad_dtype(op, "the output", y.dtype, "float dtypes");
  op::Attrs attrs(l.ctx);
  const int64_t seed = attrs.get_int("seed"), offset = attrs.get_int("offset");
  const double a = attrs.get_float(kNormal ? "mean" : "low", 0.0);
  const double b = attrs.get_float(kNormal ? "std" : "high", 1.0);
  // Note [Sharded random numbers] (core/src/ops/creation.cpp): a sharded
  // piece numbers its elements by their position in the whole result.
  std::vector<int64_t> global, start;
  if (attrs.has("global_shape")) global = attrs.get_ints("global_shape");
  if (attrs.has("global_offset")) start = attrs.get_ints("global_offset");
  if (!attrs.ok()) return attrs.status();
  if (!global.empty()) {
    bool fits = static_cast<int32_t>(global.size()) == y.ndim && start.size() == global.size();
    for (int32_t d = 0; fits && d < y.ndim; ++d) fits = start[d] >= 0 && start[d] + y.shape[d] <= global[d];
    if (!fits) {
      return fail(OAR_ERROR_INVALID_ARGUMENT,
                  format("%s: global_shape and global_offset do not place the output piece", op));
    }
  }
  auto useed = static_cast<uint64_t>(seed), uoffset = static_cast<uint64_t>(offset);
  return submit(l, [y, useed, uoffset, a, b, global, start](std::string&) -> OarStatus {
    for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t n) {
      if (!global.empty()) {
        n = 0;
        for (int32_t d = 0; d < y.ndim; ++d) n = n * global[d] + i[d] + start[d];
      }
      auto un = static_cast<uint64_t>(n);
      double v = kNormal ? a + b * oar_normal_at(useed, uoffset, un)
                         : a + (b - a) * oar_uniform_at(useed, uoffset, un);
      op::store_as(y.dtype, y.at(i), v);
    });
    return OAR_OK;
  });
}

}  // namespace

void register_elementwise_kernels(op::KernelTable& t) {
  struct UnaryEntry {
    const char* name;
    OarKernelFn fn;
    bool float_only;
  };
  const UnaryEntry unary[] = {
      {"neg", unary_kernel<Unary::Neg>, false},    {"abs", unary_kernel<Unary::Abs>, false},
      {"sign", unary_kernel<Unary::Sign>, false},  {"exp", unary_kernel<Unary::Exp>, true},
      {"log", unary_kernel<Unary::Log>, true},     {"sqrt", unary_kernel<Unary::Sqrt>, true},
      {"rsqrt", unary_kernel<Unary::Rsqrt>, true}, {"sin", unary_kernel<Unary::Sin>, true},
      {"cos", unary_kernel<Unary::Cos>, true},     {"tanh", unary_kernel<Unary::Tanh>, true},
      {"erf", unary_kernel<Unary::Erf>, true},     {"floor", unary_kernel<Unary::Floor>, true},
      {"ceil", unary_kernel<Unary::Ceil>, true},   {"expm1", unary_kernel<Unary::Expm1>, true},
  };
  for (const auto& u : unary)
    for (int32_t dt : kNumericDtypes)
      if (!u.float_only || visit_float(dt, [](auto) {})) t.add(u.name, {dt}, {dt}, u.fn);
  for (int32_t dt : kAllDtypes) t.add("logical_not", {dt}, {OAR_DTYPE_BOOL}, logical_not_kernel);

  const std::pair<const char*, OarKernelFn> binary[] = {
      {"add", binary_kernel<Binary::Add>},         {"sub", binary_kernel<Binary::Sub>},
      {"mul", binary_kernel<Binary::Mul>},         {"div", binary_kernel<Binary::Div>},
      {"maximum", binary_kernel<Binary::Maximum>}, {"minimum", binary_kernel<Binary::Minimum>},
  };
  for (const auto& [name, fn] : binary)
    for (int32_t dt : kNumericDtypes) t.add(name, {dt, dt}, {dt}, fn);
  for (int32_t dt : kFloatDtypes) t.add("pow", {dt, dt}, {dt}, binary_kernel<Binary::Pow>);

  const std::pair<const char*, OarKernelFn> compare[] = {
      {"equal", compare_kernel<Compare::Equal>},
      {"not_equal", compare_kernel<Compare::NotEqual>},
      {"less", compare_kernel<Compare::Less>},
      {"less_equal", compare_kernel<Compare::LessEqual>},
      {"greater", compare_kernel<Compare::Greater>},
      {"greater_equal", compare_kernel<Compare::GreaterEqual>},
      {"logical_and", compare_kernel<Compare::And>},
      {"logical_or", compare_kernel<Compare::Or>},
  };
  for (const auto& [name, fn] : compare)
    for (int32_t dt : kAllDtypes) t.add(name, {dt, dt}, {OAR_DTYPE_BOOL}, fn);

  for (int32_t dt : kAllDtypes) {
    t.add("where", {OAR_DTYPE_BOOL, dt, dt}, {dt}, where_kernel);
    t.add("copy", {dt}, {dt}, copy_kernel, OAR_KERNEL_STRIDED_OUTPUT);
    t.add("full", {}, {dt}, full_kernel);
    t.add("full_like", {}, {dt}, full_like_kernel);
    for (int32_t to : kAllDtypes) t.add("cast", {dt}, {to}, cast_kernel);
    for (int32_t c : kComplexDtypes) {
      t.add("cast", {dt}, {c}, cast_kernel);
      t.add("cast", {c}, {dt}, cast_kernel);
    }
  }
  // Complex: copy, where, fill (value + value_imag) and casts among themselves.
  for (int32_t dt : kComplexDtypes) {
    t.add("copy", {dt}, {dt}, copy_kernel, OAR_KERNEL_STRIDED_OUTPUT);
    t.add("where", {OAR_DTYPE_BOOL, dt, dt}, {dt}, where_kernel);
    t.add("full", {}, {dt}, full_kernel);
    t.add("full_like", {}, {dt}, full_like_kernel);
    for (int32_t to : kComplexDtypes) t.add("cast", {dt}, {to}, cast_kernel);
  }
  for (int32_t dt : kNumericDtypes) t.add("arange", {}, {dt}, arange_kernel);
  for (int32_t dt : kFloatDtypes) {
    t.add("uniform", {}, {dt}, random_kernel<false>);
    t.add("normal", {}, {dt}, random_kernel<true>);
    t.add("uniform_like", {}, {dt}, random_kernel<false, 1>);
  }
}

}  // namespace oar_mock
