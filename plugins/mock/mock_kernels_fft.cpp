// The mock's reference DFT: fft_c2c, fft_r2c, fft_c2r as plain O(n^2)
// loops per transformed axis, accumulating in complex<double> with twiddles
// e^(+-2 pi i (j k mod n) / n) computed directly (no recurrence), so the
// reference is accurate to a few ulps of f64 for every length, prime or not.
// The semantics are numpy.fft's (and those of liboar_fftw.so, which
// conformance compares with these): c2r is the inverse c2c over every axis
// but the last, then a 1-D c2r on the last, whose DC (and for even n
// Nyquist) bins count with their real parts only.
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "mock_internal.h"

namespace oar_mock {
namespace {

using Cpx = std::complex<double>;
constexpr int32_t kC64 = OAR_DTYPE_C64, kC128 = OAR_DTYPE_C128;  // ABI 1.3

struct FftAttrs {
  std::vector<int64_t> axes;
  std::string norm;
  bool forward = true, onesided = true;
};

bool read_attrs(const Launch& l, int32_t ndim, FftAttrs* a) {
  op::Attrs attrs(l.ctx);
  a->axes = attrs.get_ints("axes");
  a->norm = attrs.get_string("normalization", "backward");
  a->forward = attrs.get_bool("forward", true);
  a->onesided = attrs.get_bool("onesided", true);
  if (!attrs.ok()) return false;
  bool seen[OAR_MAX_NDIM] = {};
  for (int64_t& axis : a->axes) {
    if (axis < 0) axis += ndim;
    if (axis < 0 || axis >= ndim || seen[axis]) {
      fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: axes must be distinct dims of a rank-%d input", l.op, ndim));
      return false;
    }
    seen[axis] = true;
  }
  if (a->axes.empty()) {
    fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: axes is empty; at least one axis is transformed", l.op));
    return false;
  }
  if (a->norm != "backward" && a->norm != "ortho" && a->norm != "forward") {
    fail(OAR_ERROR_INVALID_ARGUMENT,
         format("%s: normalization is '%s' but must be \"backward\", \"ortho\" or \"forward\"", l.op, a->norm.c_str()));
    return false;
  }
  return true;
}

double scale_of(const std::string& norm, double n, bool forward) {
  if (norm == "ortho") return 1.0 / std::sqrt(n);
  if (norm == (forward ? "forward" : "backward")) return 1.0 / n;
  return 1.0;
}

/// A dense row-major complex<double> array of some shape.
struct Buffer {
  int32_t ndim = 0;
  int64_t shape[OAR_MAX_NDIM] = {};
  std::vector<Cpx> data;
  int64_t stride(int32_t d) const {
    int64_t s = 1;
    for (int32_t e = ndim - 1; e > d; --e) s *= shape[e];
    return s;
  }
};

Cpx load(const View& v, const int64_t* index) {
  const char* p = v.at(index);
  switch (v.dtype) {
    case OAR_DTYPE_F32: return {*reinterpret_cast<const float*>(p), 0.0};
    case OAR_DTYPE_F64: return {*reinterpret_cast<const double*>(p), 0.0};
    case kC64: return Cpx(*reinterpret_cast<const std::complex<float>*>(p));
    default: return *reinterpret_cast<const Cpx*>(p);
  }
}
void store(const View& v, const int64_t* index, Cpx value) {
  char* p = v.at(index);
  switch (v.dtype) {
    case OAR_DTYPE_F32: *reinterpret_cast<float*>(p) = static_cast<float>(value.real()); break;
    case OAR_DTYPE_F64: *reinterpret_cast<double*>(p) = value.real(); break;
    case kC64: *reinterpret_cast<std::complex<float>*>(p) = std::complex<float>(value); break;
    default: *reinterpret_cast<Cpx*>(p) = value;
  }
}

Buffer read(const View& v) {
  Buffer b;
  b.ndim = v.ndim;
  for (int32_t d = 0; d < v.ndim; ++d) b.shape[d] = v.shape[d];
  b.data.resize(static_cast<size_t>(v.numel()));
  for_each_index(v.ndim, v.shape, [&](const int64_t* index, int64_t i) { b.data[static_cast<size_t>(i)] = load(v, index); });
  return b;
}

/// In place: the DFT of every line of `b` along `axis`, sign -1 or +1.
void dft_axis(Buffer& b, int32_t axis, int sign) {
  const int64_t n = b.shape[axis], stride = b.stride(axis);
  if (n <= 1) return;
  std::vector<Cpx> twiddle(static_cast<size_t>(n)), line(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) twiddle[k] = std::polar(1.0, sign * 2.0 * M_PI * static_cast<double>(k) / n);
  const int64_t total = static_cast<int64_t>(b.data.size()), outer = total / (n * stride);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t inner = 0; inner < stride; ++inner) {
      Cpx* base = b.data.data() + o * n * stride + inner;
      for (int64_t k = 0; k < n; ++k) {
        Cpx acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += base[j * stride] * twiddle[(j * k) % n];
        line[k] = acc;
      }
      for (int64_t k = 0; k < n; ++k) base[k * stride] = line[k];
    }
}

void write(const View& y, const Buffer& b, double factor) {
  for_each_index(y.ndim, y.shape, [&](const int64_t* index, int64_t) {
    int64_t off = 0;
    for (int32_t d = 0; d < b.ndim; ++d) off += index[d] * b.stride(d);
    store(y, index, b.data[static_cast<size_t>(off)] * factor);
  });
}

// fft_c2c: the DFT over each of `axes` with sign -1 (forward) or +1.
OarStatus c2c_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "fft_c2c", 1, 1, &l)) return s;
  FftAttrs a;
  if (!read_attrs(l, l.in[0].ndim, &a)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x = l.in[0], y = l.out[0], a](std::string&) {
    Buffer b = read(x);
    double points = 1;
    for (int64_t axis : a.axes) dft_axis(b, static_cast<int32_t>(axis), a.forward ? -1 : 1), points *= x.shape[axis];
    write(y, b, scale_of(a.norm, points, a.forward));
    return OAR_OK;
  });
}

// fft_r2c: the forward DFT of real input over `axes`; the output keeps
// n/2 + 1 entries of the last axis when onesided (write reads the prefix).
OarStatus r2c_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "fft_r2c", 1, 1, &l)) return s;
  FftAttrs a;
  if (!read_attrs(l, l.in[0].ndim, &a)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x = l.in[0], y = l.out[0], a](std::string&) {
    Buffer b = read(x);
    double points = 1;
    for (int64_t axis : a.axes) dft_axis(b, static_cast<int32_t>(axis), -1), points *= x.shape[axis];
    write(y, b, scale_of(a.norm, points, true));
    return OAR_OK;
  });
}

// fft_c2r: inverse c2c over every axis but the last of `axes`, then the
// Hermitian extension of each line of the last axis to n (the output's
// size), its inverse DFT and the real part.
OarStatus c2r_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "fft_c2r", 1, 1, &l)) return s;
  FftAttrs a;
  if (!read_attrs(l, l.in[0].ndim, &a)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x = l.in[0], y = l.out[0], a](std::string&) {
    Buffer half = read(x);
    double points = 1;
    for (size_t i = 0; i + 1 < a.axes.size(); ++i) {
      dft_axis(half, static_cast<int32_t>(a.axes[i]), 1);
      points *= y.shape[a.axes[i]];
    }
    const int32_t last = static_cast<int32_t>(a.axes.back());
    const int64_t n = y.shape[last], m = x.shape[last];
    points *= static_cast<double>(n);
    Buffer full;
    full.ndim = half.ndim;
    for (int32_t d = 0; d < half.ndim; ++d) full.shape[d] = half.shape[d];
    full.shape[last] = n;
    full.data.assign(static_cast<size_t>(y.numel()), Cpx(0));
    for_each_index(full.ndim, full.shape, [&](const int64_t* index, int64_t i) {
      const int64_t k = index[last];
      int64_t src = 0;
      const int64_t kk = k < m ? k : n - k;  // k >= m reads the conjugate of bin n - k
      for (int32_t d = 0; d < half.ndim; ++d) src += (d == last ? kk : index[d]) * half.stride(d);
      Cpx v = kk < m ? half.data[static_cast<size_t>(src)] : Cpx(0);
      if (k >= m) v = std::conj(v);
      if (k == 0 || 2 * k == n) v = Cpx(v.real(), 0.0);
      full.data[static_cast<size_t>(i)] = v;
    });
    dft_axis(full, last, 1);
    write(y, full, scale_of(a.norm, points, false));
    return OAR_OK;
  });
}

}  // namespace

void register_fft_kernels(op::KernelTable& t) {
  if (op::host_table()->abi_minor < 3) return;  // complex dtypes came with ABI 1.3
  t.add("fft_c2c", {kC64}, {kC64}, c2c_kernel).add("fft_c2c", {kC128}, {kC128}, c2c_kernel);
  t.add("fft_r2c", {OAR_DTYPE_F32}, {kC64}, r2c_kernel).add("fft_r2c", {OAR_DTYPE_F64}, {kC128}, r2c_kernel);
  t.add("fft_c2r", {kC64}, {OAR_DTYPE_F32}, c2r_kernel).add("fft_c2r", {kC128}, {OAR_DTYPE_F64}, c2r_kernel);
}

}  // namespace oar_mock
