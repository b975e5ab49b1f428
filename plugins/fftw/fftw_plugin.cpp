// liboar_fftw.so: FFT kernels for the device type "cpu" from FFTW3, as a
// kernel-only plugin (ABI 1.1: it registers no device, only kernels for a
// device type the cpu plugin owns). FFTW is GPL; it stays in this .so
// (README.md). Kernels: fft_c2c, fft_r2c, fft_c2r in f32 (fftwf) and f64.
//
// Note [FFTW plans]
// ~~~~~~~~~~~~~~~~~
// FFTW splits a transform into planning (slow, and not thread-safe: the
// planner keeps global state) and execution (fast, thread-safe for distinct
// arrays). Each kernel call describes its problem with FFTW's guru64
// interface: the transformed dims (the `axes` attribute, in its order: for
// r2c/c2r the last one is the halved one) and the batch dims ("howmany"),
// each with its input and output strides, so strided inputs need no copy.
// A plan is cached per problem key: (kind, dtype, sign, shape, input and
// output strides, axes, the arrays' alignment, threads). Planning and plan
// destruction take g_planner_mutex; execution uses the new-array functions
// (fftw_execute_dft & co.) on the call's own pointers, which FFTW allows for
// any arrays with the planned strides and alignment. Scaling (the
// normalization attribute) is a pass over the output after the transform.
//
// Note [FFTW planning and wisdom]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// FFTW_ESTIMATE picks a plan by heuristics at once; FFTW_MEASURE times
// candidate plans on scratch arrays and on this machine was 1.7-3.5x
// faster per transform (2^20 c64 with 2 threads: 10.7 -> 5.4 ms; rfft2 of
// 1024 x 1024: 2.6 -> 1.4 ms) but costs seconds to plan (2^20: ~4 s). So
// OAR_FFTW_PLANNER:
//   auto (default): problems of at least kMeasureMinPoints points are
//     measured, smaller ones estimated (measuring gains little there);
//   measure: every problem is measured;  estimate: none is.
// What FFTW learns by measuring ("wisdom") is kept on disk
// (OAR_FFTW_WISDOM, default $XDG_CACHE_HOME/oar/ or ~/.cache/oar/, one file
// per precision): it is read at load, so a shape measured once on this
// machine is planned at once by every later process (FFTW_WISDOM_ONLY
// first), and written after each new measurement, merged with what other
// processes wrote meanwhile, to a temporary name and renamed (a reader
// never sees half a file; a writer that loses a race loses only its own new
// entries). OAR_FFTW_TIMELIMIT (seconds, default 30) bounds one measurement.
// An unreadable wisdom file is reported at info level and ignored: wisdom
// only chooses among correct plans.
//
// Note [FFTW threads on OpenMP]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// FFTW's threads library has its own worker pool. Beside the cpu plugin's
// OpenMP workers, which spin for a while after each region, the two pools
// fought for the cores of a 2-core machine. fftw_threads_set_callback (FFTW
// 3.3.9) hands FFTW's parallel loops to OpenMP instead: one pool, the same
// one the cpu plugin's kernels use.
//
// c2r: FFTW's multi-dim c2r overwrites its input, so the input is first
// copied to a contiguous scratch array (the plan is made for that layout).
// The result is numpy's irfftn: the inverse c2c over all axes but the last,
// then a 1-D c2r on the last, whose DC (and, for even n, Nyquist) bins
// contribute only their real parts.
#include <omp.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <fftw3.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oar/plugin.hpp"

namespace {

namespace op = oar::plugin;
using op::fail;
using op::format;

constexpr int32_t kC64 = OAR_DTYPE_C64, kC128 = OAR_DTYPE_C128;  // ABI 1.3

int g_num_threads = 1;       // threads of one transform (fftw_plan_with_nthreads)
std::mutex g_planner_mutex;  // guards every FFTW planner call, plan destruction and wisdom

// Note [FFTW planning and wisdom]. Set at init, read-only after it.
enum class Planner { estimate, measure, automatic };
Planner g_planner = Planner::automatic;
constexpr int64_t kMeasureMinPoints = int64_t{1} << 15;
double g_time_limit = 30.0;  // seconds of one measurement (OAR_FFTW_TIMELIMIT)
std::string g_wisdom_dir;    // empty: no wisdom on disk

/// The wisdom file of one precision.
std::string wisdom_path(bool single) {
  return g_wisdom_dir + (single ? "/fftw-wisdom-f32" : "/fftw-wisdom-f64");
}

/// Creates `dir` and its parents; false when that fails.
bool make_dirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos < dir.size() && dir[pos] != '/') continue;
    std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// The fftw / fftwf functions behind one name per precision.
// ---------------------------------------------------------------------------

template <typename R>
struct Fftw;
template <>
struct Fftw<double> {
  using plan = fftw_plan;
  using cpx = fftw_complex;
  static plan c2c(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* hd, cpx* in, cpx* out, int sign,
                  unsigned flags) {
    return fftw_plan_guru64_dft(r, d, hr, hd, in, out, sign, flags);
  }
  static plan r2c(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* hd, double* in, cpx* out,
                  unsigned flags) {
    return fftw_plan_guru64_dft_r2c(r, d, hr, hd, in, out, flags);
  }
  static plan c2r(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* hd, cpx* in, double* out,
                  unsigned flags) {
    return fftw_plan_guru64_dft_c2r(r, d, hr, hd, in, out, flags);
  }
  static void exec_c2c(plan p, cpx* in, cpx* out) { fftw_execute_dft(p, in, out); }
  static void exec_r2c(plan p, double* in, cpx* out) { fftw_execute_dft_r2c(p, in, out); }
  static void exec_c2r(plan p, cpx* in, double* out) { fftw_execute_dft_c2r(p, in, out); }
  static void destroy(plan p) { fftw_destroy_plan(p); }
  static void set_threads(int n) { fftw_plan_with_nthreads(n); }
  static int alignment(const void* p) { return fftw_alignment_of(static_cast<double*>(const_cast<void*>(p))); }
  static int import_wisdom(const char* path) { return fftw_import_wisdom_from_filename(path); }
  static int export_wisdom(const char* path) { return fftw_export_wisdom_to_filename(path); }
  static void set_timelimit(double t) { fftw_set_timelimit(t); }
  static constexpr bool single = false;
};
template <>
struct Fftw<float> {
  using plan = fftwf_plan;
  using cpx = fftwf_complex;
  static plan c2c(int r, const fftwf_iodim64* d, int hr, const fftwf_iodim64* hd, cpx* in, cpx* out, int sign,
                  unsigned flags) {
    return fftwf_plan_guru64_dft(r, d, hr, hd, in, out, sign, flags);
  }
  static plan r2c(int r, const fftwf_iodim64* d, int hr, const fftwf_iodim64* hd, float* in, cpx* out,
                  unsigned flags) {
    return fftwf_plan_guru64_dft_r2c(r, d, hr, hd, in, out, flags);
  }
  static plan c2r(int r, const fftwf_iodim64* d, int hr, const fftwf_iodim64* hd, cpx* in, float* out,
                  unsigned flags) {
    return fftwf_plan_guru64_dft_c2r(r, d, hr, hd, in, out, flags);
  }
  static void exec_c2c(plan p, cpx* in, cpx* out) { fftwf_execute_dft(p, in, out); }
  static void exec_r2c(plan p, float* in, cpx* out) { fftwf_execute_dft_r2c(p, in, out); }
  static void exec_c2r(plan p, cpx* in, float* out) { fftwf_execute_dft_c2r(p, in, out); }
  static void destroy(plan p) { fftwf_destroy_plan(p); }
  static void set_threads(int n) { fftwf_plan_with_nthreads(n); }
  static int alignment(const void* p) { return fftwf_alignment_of(static_cast<float*>(const_cast<void*>(p))); }
  static int import_wisdom(const char* path) { return fftwf_import_wisdom_from_filename(path); }
  static int export_wisdom(const char* path) { return fftwf_export_wisdom_to_filename(path); }
  static void set_timelimit(double t) { fftwf_set_timelimit(t); }
  static constexpr bool single = true;
};

/// Writes the wisdom of precision F to its file (Note [FFTW planning and
/// wisdom]): merged with the file's current contents, through a temporary
/// name. Called with g_planner_mutex held; failures are logged, not raised.
template <typename F>
void save_wisdom() {
  if (g_wisdom_dir.empty()) return;
  static bool warned = false;
  const std::string path = wisdom_path(F::single);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  if (::access(path.c_str(), F_OK) == 0) F::import_wisdom(path.c_str());  // others' entries
  bool ok = make_dirs(g_wisdom_dir) && F::export_wisdom(tmp.c_str()) != 0 && std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    std::remove(tmp.c_str());
    if (!warned) {
      warned = true;
      op::log(OAR_LOG_INFO, format("oar-fftw: could not write FFTW wisdom to '%s' (%s); measured plans are kept "
                                   "for this process only",
                                   path.c_str(), std::strerror(errno)).c_str());
    }
  }
}

/// Reads the wisdom file of precision F, if there is one.
template <typename F>
void load_wisdom() {
  if (g_wisdom_dir.empty()) return;
  const std::string path = wisdom_path(F::single);
  if (::access(path.c_str(), F_OK) != 0) return;
  if (!F::import_wisdom(path.c_str()))
    op::log(OAR_LOG_INFO, format("oar-fftw: ignoring the unreadable FFTW wisdom file '%s'", path.c_str()).c_str());
}

// ---------------------------------------------------------------------------
// The plan cache (Note [FFTW plans]).
// ---------------------------------------------------------------------------

enum class Kind : int64_t { c2c = 0, r2c = 1, c2r = 2 };

/// One cached plan; destroyed under the planner mutex when the last user lets go.
struct Plan {
  void* handle = nullptr;  // fftw_plan or fftwf_plan
  void (*destroy)(void*) = nullptr;
  ~Plan() {
    std::lock_guard<std::mutex> lock(g_planner_mutex);
    if (handle) destroy(handle);
  }
};

constexpr size_t kMaxCachedPlans = 512;
std::map<std::vector<int64_t>, std::shared_ptr<Plan>>* g_plans = nullptr;  // guarded by g_planner_mutex
int64_t g_plans_made = 0;                                                 // guarded by g_planner_mutex

/// The problem of one call: transformed dims (in axes order) and batch dims,
/// with the strides (in elements of each side's type) FFTW reads and writes.
struct Problem {
  std::vector<int64_t> n, in_stride, out_stride;        // transformed dims
  std::vector<int64_t> batch, in_bstride, out_bstride;  // batch (howmany) dims
};

template <typename R>
std::vector<typename std::conditional_t<std::is_same_v<R, double>, fftw_iodim64, fftwf_iodim64>> iodims(
    const std::vector<int64_t>& n, const std::vector<int64_t>& is, const std::vector<int64_t>& os) {
  std::vector<std::conditional_t<std::is_same_v<R, double>, fftw_iodim64, fftwf_iodim64>> d(n.size());
  for (size_t i = 0; i < n.size(); ++i) d[i] = {n[i], is[i], os[i]};
  return d;
}

/// The cached plan for `p` (made now if new); null when FFTW cannot plan it.
/// `in` and `out` are the call's arrays: only their alignment is used unless
/// the planner measures (then scratch arrays of the same alignment are).
template <typename R>
std::shared_ptr<Plan> get_plan(Kind kind, int sign, const Problem& p, void* in, void* out) {
  using F = Fftw<R>;
  std::vector<int64_t> key = {static_cast<int64_t>(kind), static_cast<int64_t>(sizeof(R)), sign,
                              F::alignment(in), F::alignment(out), in == out, g_num_threads};
  for (const auto* v : {&p.n, &p.in_stride, &p.out_stride, &p.batch, &p.in_bstride, &p.out_bstride}) {
    key.push_back(static_cast<int64_t>(v->size()));
    key.insert(key.end(), v->begin(), v->end());
  }
  std::lock_guard<std::mutex> lock(g_planner_mutex);
  if (!g_plans) g_plans = new std::map<std::vector<int64_t>, std::shared_ptr<Plan>>;
  auto it = g_plans->find(key);
  if (it != g_plans->end()) return it->second;
  if (g_plans->size() >= kMaxCachedPlans) {
    // Plans still in use live on in their callers' shared_ptrs. Destroying the
    // others needs the mutex we hold: move them out and drop them unlocked.
    auto old = std::move(*g_plans);
    g_plans->clear();
    g_planner_mutex.unlock();
    old.clear();
    g_planner_mutex.lock();
  }
  auto dims = iodims<R>(p.n, p.in_stride, p.out_stride);
  auto howmany = iodims<R>(p.batch, p.in_bstride, p.out_bstride);
  // Small transforms run on one thread: waking the others costs more.
  int64_t batches = 1;
  for (int64_t v : p.batch) batches *= v;
  int64_t total = batches;
  for (int64_t v : p.n) total *= v;
  F::set_threads(total >= (int64_t{1} << 15) ? g_num_threads : 1);
  const bool measure = g_planner == Planner::measure || (g_planner == Planner::automatic && total >= kMeasureMinPoints);
  unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;
  int rank = static_cast<int>(dims.size()), hrank = static_cast<int>(howmany.size());
  typename F::plan handle = nullptr;
  using C = typename F::cpx;
  if (!measure) {
    if (kind == Kind::c2c) handle = F::c2c(rank, dims.data(), hrank, howmany.data(), (C*)in, (C*)out, sign, flags);
    if (kind == Kind::r2c) handle = F::r2c(rank, dims.data(), hrank, howmany.data(), (R*)in, (C*)out, flags);
    if (kind == Kind::c2r) handle = F::c2r(rank, dims.data(), hrank, howmany.data(), (C*)in, (R*)out, flags);
  } else {
    // Measuring overwrites the arrays: plan on scratch arrays as large as the
    // strided extents, at the same offset from an aligned base.
    auto extent = [&](const std::vector<int64_t>& s, const std::vector<int64_t>& bs, bool out_side) {
      int64_t e = 1;
      for (size_t i = 0; i < p.n.size(); ++i) {
        int64_t len = p.n[i];
        if (i + 1 == p.n.size() && ((kind == Kind::r2c && out_side) || (kind == Kind::c2r && !out_side)))
          len = len / 2 + 1;
        e += (len - 1) * s[i];
      }
      for (size_t i = 0; i < p.batch.size(); ++i) e += (p.batch[i] - 1) * bs[i];
      return e;
    };
    size_t in_el = kind == Kind::r2c ? sizeof(R) : 2 * sizeof(R), out_el = kind == Kind::c2r ? sizeof(R) : 2 * sizeof(R);
    size_t in_bytes = static_cast<size_t>(extent(p.in_stride, p.in_bstride, false)) * in_el + 64;
    size_t out_bytes = static_cast<size_t>(extent(p.out_stride, p.out_bstride, true)) * out_el + 64;
    char* sin = static_cast<char*>(fftw_malloc(in_bytes));
    char* sout = in == out ? sin : static_cast<char*>(fftw_malloc(out_bytes));
    if (!sin || !sout) {
      if (sin) fftw_free(sin);
      if (sout && sout != sin) fftw_free(sout);
      return nullptr;
    }
    void* a = sin + F::alignment(in);
    void* b = in == out ? a : sout + F::alignment(out);
    auto plan_with = [&](unsigned f) -> typename F::plan {
      if (kind == Kind::c2c) return F::c2c(rank, dims.data(), hrank, howmany.data(), (C*)a, (C*)b, sign, f);
      if (kind == Kind::r2c) return F::r2c(rank, dims.data(), hrank, howmany.data(), (R*)a, (C*)b, f);
      return F::c2r(rank, dims.data(), hrank, howmany.data(), (C*)a, (R*)b, f);
    };
    // Wisdom from an earlier measurement (this process or the file) plans
    // at once; only a problem nobody measured yet is timed now.
    handle = plan_with(flags | FFTW_WISDOM_ONLY);
    if (!handle) {
      std::string shape;
      for (int64_t v : p.n) shape += (shape.empty() ? "" : ", ") + std::to_string(v);
      op::log(OAR_LOG_INFO,
              format("oar-fftw: measuring FFTW plans for a %s transform of [%s] x %lld (once per problem on this "
                     "machine: wisdom is kept in '%s'; OAR_FFTW_PLANNER=estimate skips it)",
                     kind == Kind::c2c ? "c2c" : kind == Kind::r2c ? "r2c" : "c2r", shape.c_str(),
                     static_cast<long long>(batches),
                     g_wisdom_dir.empty() ? "memory only" : g_wisdom_dir.c_str()).c_str());
      F::set_timelimit(g_time_limit);
      handle = plan_with(flags);
      if (handle) save_wisdom<F>();
    }
    fftw_free(sin);
    if (sout != sin) fftw_free(sout);
  }
  if (!handle) return nullptr;
  auto plan = std::make_shared<Plan>();
  plan->handle = handle;
  plan->destroy = [](void* h) { F::destroy(static_cast<typename F::plan>(h)); };
  (*g_plans)[key] = plan;
  ++g_plans_made;
  return plan;
}

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

/// The attributes every fft kernel reads.
struct FftAttrs {
  std::vector<int64_t> axes;  // normalized, in the op's order
  std::string normalization;  // "backward" | "ortho" | "forward"
  bool forward = true;        // c2c: the sign (-1 forward, +1 inverse)
  bool onesided = true;       // r2c
};

bool read_attrs(const OarKernelContext& ctx, int32_t ndim, FftAttrs* a, OarStatus* status) {
  op::Attrs attrs(ctx);
  a->axes = attrs.get_ints("axes");
  a->normalization = attrs.get_string("normalization", "backward");
  a->forward = attrs.get_bool("forward", true);
  a->onesided = attrs.get_bool("onesided", true);
  if (!attrs.ok()) return *status = attrs.status(), false;
  bool seen[OAR_MAX_NDIM] = {};
  for (int64_t& axis : a->axes) {
    if (axis < 0) axis += ndim;
    if (axis < 0 || axis >= ndim || seen[axis]) {
      *status = fail(&ctx, OAR_ERROR_INVALID_ARGUMENT, "axes must be distinct dims of a rank-%d input",
                     static_cast<int>(ndim));
      return false;
    }
    seen[axis] = true;
  }
  if (a->axes.empty()) {
    *status = fail(&ctx, OAR_ERROR_INVALID_ARGUMENT, "axes is empty; at least one axis is transformed");
    return false;
  }
  if (a->normalization != "backward" && a->normalization != "ortho" && a->normalization != "forward") {
    *status = fail(&ctx, OAR_ERROR_INVALID_ARGUMENT,
                   "normalization is '%s' but must be \"backward\", \"ortho\" or \"forward\"", a->normalization.c_str());
    return false;
  }
  return true;
}

/// The factor of a transform of `n` points in the given direction.
double scale_of(const std::string& norm, double n, bool forward) {
  if (norm == "ortho") return 1.0 / std::sqrt(n);
  if (norm == (forward ? "forward" : "backward")) return 1.0 / n;
  return 1.0;
}

/// Splits the dims of `in`/`out` (same rank) into transformed (axes order)
/// and batch dims; `len` gives the logical length of a transformed dim.
Problem problem_of(const OarTensorView& in, const OarTensorView& out, const std::vector<int64_t>& axes,
                   const std::vector<int64_t>& logical, int64_t in_unit, int64_t out_unit) {
  Problem p;
  bool is_axis[OAR_MAX_NDIM] = {};
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    is_axis[a] = true;
    p.n.push_back(logical[i]);
    p.in_stride.push_back(in.strides[a] * in_unit);
    p.out_stride.push_back(out.strides[a] * out_unit);
  }
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (is_axis[d] || in.shape[d] == 1) continue;
    p.batch.push_back(in.shape[d]);
    p.in_bstride.push_back(in.strides[d] * in_unit);
    p.out_bstride.push_back(out.strides[d] * out_unit);
  }
  return p;
}

std::vector<int64_t> contiguous_strides(const OarTensorView& v) {
  std::vector<int64_t> s(static_cast<size_t>(v.ndim));
  int64_t stride = 1;
  for (int32_t d = v.ndim - 1; d >= 0; --d) s[d] = stride, stride *= v.shape[d];
  return s;
}

template <typename R>
void scale_output(R* data, int64_t count, double factor) {
  if (factor == 1.0) return;
  const R f = static_cast<R>(factor);
  for (int64_t i = 0; i < count; ++i) data[i] *= f;
}

// fft_c2c: complex -> complex of the same shape over `axes`.
template <typename R>
OarStatus c2c_kernel(const OarKernelContext& ctx) {
  const OarTensorView &x = ctx.inputs[0], &y = ctx.outputs[0];
  FftAttrs a;
  OarStatus status = OAR_OK;
  if (!read_attrs(ctx, x.ndim, &a, &status)) return status;
  int64_t numel = op::numel(y);
  if (numel == 0) return OAR_OK;
  std::vector<int64_t> logical;
  double points = 1;
  for (int64_t axis : a.axes) logical.push_back(x.shape[axis]), points *= static_cast<double>(x.shape[axis]);
  Problem p = problem_of(x, y, a.axes, logical, 1, 1);
  void* in = op::data<std::complex<R>>(x);
  void* out = op::data<std::complex<R>>(y);
  auto plan = get_plan<R>(Kind::c2c, a.forward ? FFTW_FORWARD : FFTW_BACKWARD, p, in, out);
  if (!plan) return fail(&ctx, OAR_ERROR_INTERNAL, "FFTW could not plan a transform of shape %s",
                         op::shape_str(x.ndim, x.shape).c_str());
  using C = typename Fftw<R>::cpx;
  Fftw<R>::exec_c2c(static_cast<typename Fftw<R>::plan>(plan->handle), (C*)in, (C*)out);
  scale_output(op::data<R>(y), 2 * numel, scale_of(a.normalization, points, a.forward));
  return OAR_OK;
}

// fft_r2c: real -> complex; the last axis of `axes` has n/2 + 1 outputs when
// onesided, else all n (the rest filled by Hermitian symmetry).
template <typename R>
OarStatus r2c_kernel(const OarKernelContext& ctx) {
  const OarTensorView &x = ctx.inputs[0], &y = ctx.outputs[0];
  FftAttrs a;
  OarStatus status = OAR_OK;
  if (!read_attrs(ctx, x.ndim, &a, &status)) return status;
  int64_t numel = op::numel(y);
  if (numel == 0) return OAR_OK;
  std::vector<int64_t> logical;
  double points = 1;
  for (int64_t axis : a.axes) logical.push_back(x.shape[axis]), points *= static_cast<double>(x.shape[axis]);
  Problem p = problem_of(x, y, a.axes, logical, 1, 1);
  void* in = op::data<R>(x);
  void* out = op::data<std::complex<R>>(y);
  auto plan = get_plan<R>(Kind::r2c, FFTW_FORWARD, p, in, out);
  if (!plan) return fail(&ctx, OAR_ERROR_INTERNAL, "FFTW could not plan a transform of shape %s",
                         op::shape_str(x.ndim, x.shape).c_str());
  Fftw<R>::exec_r2c(static_cast<typename Fftw<R>::plan>(plan->handle), (R*)in, (typename Fftw<R>::cpx*)out);
  auto* py = op::data<std::complex<R>>(y);
  if (!a.onesided) {
    // y[k] = conj(y[-k mod n]) (every transformed axis) for the last axis' upper half.
    const int64_t last = a.axes.back(), n_last = x.shape[last], half = n_last / 2 + 1;
    std::vector<int64_t> idx(static_cast<size_t>(y.ndim), 0);
    for (int64_t i = 0; i < numel; ++i) {
      int64_t rem = i;
      for (int32_t d = y.ndim - 1; d >= 0; --d) idx[d] = rem % y.shape[d], rem /= y.shape[d];
      if (idx[last] < half) continue;
      int64_t src = 0;
      for (int32_t d = 0; d < y.ndim; ++d) {
        int64_t k = idx[d];
        for (int64_t axis : a.axes)
          if (axis == d) k = (y.shape[d] - k) % y.shape[d];
        src += k * y.strides[d];
      }
      py[i] = std::conj(py[src]);
    }
  }
  scale_output(op::data<R>(y), 2 * numel, scale_of(a.normalization, points, true));
  return OAR_OK;
}

// fft_c2r: complex (last axis of `axes`: n/2 + 1) -> real (last axis n =
// the output's), the inverse of a onesided r2c.
template <typename R>
OarStatus c2r_kernel(const OarKernelContext& ctx) {
  const OarTensorView &x = ctx.inputs[0], &y = ctx.outputs[0];
  FftAttrs a;
  OarStatus status = OAR_OK;
  if (!read_attrs(ctx, x.ndim, &a, &status)) return status;
  int64_t numel = op::numel(y);
  if (numel == 0) return OAR_OK;
  // A contiguous copy of the input, which FFTW may overwrite.
  OarTensorView tmp = x;
  std::vector<int64_t> ts = contiguous_strides(x);
  for (int32_t d = 0; d < x.ndim; ++d) tmp.strides[d] = ts[d];
  int64_t in_numel = op::numel(x);
  auto* scratch = static_cast<std::complex<R>*>(fftw_malloc(static_cast<size_t>(in_numel) * sizeof(std::complex<R>)));
  if (!scratch) return fail(&ctx, OAR_ERROR_OUT_OF_MEMORY, "out of host memory for a %lld-element scratch copy",
                            static_cast<long long>(in_numel));
  const auto* px = op::data<std::complex<R>>(x);
  std::vector<int64_t> idx(static_cast<size_t>(x.ndim), 0);
  for (int64_t i = 0; i < in_numel; ++i) {
    int64_t rem = i, off = 0;
    for (int32_t d = x.ndim - 1; d >= 0; --d) idx[d] = rem % x.shape[d], rem /= x.shape[d];
    for (int32_t d = 0; d < x.ndim; ++d) off += idx[d] * x.strides[d];
    scratch[i] = px[off];
  }
  std::vector<int64_t> logical;
  double points = 1;
  for (int64_t axis : a.axes) logical.push_back(y.shape[axis]), points *= static_cast<double>(y.shape[axis]);
  Problem p = problem_of(tmp, y, a.axes, logical, 1, 1);
  void* out = op::data<R>(y);
  auto plan = get_plan<R>(Kind::c2r, FFTW_BACKWARD, p, scratch, out);
  if (!plan) {
    fftw_free(scratch);
    return fail(&ctx, OAR_ERROR_INTERNAL, "FFTW could not plan a transform of shape %s",
                op::shape_str(y.ndim, y.shape).c_str());
  }
  Fftw<R>::exec_c2r(static_cast<typename Fftw<R>::plan>(plan->handle), (typename Fftw<R>::cpx*)scratch, (R*)out);
  fftw_free(scratch);
  scale_output(op::data<R>(y), numel, scale_of(a.normalization, points, false));
  return OAR_OK;
}

/// FFTW's parallel loop on OpenMP (Note [FFTW threads on OpenMP]): runs
/// work(jobdata + i * elsize) for every job i, on up to g_num_threads threads.
void omp_parallel_loop(void* (*work)(char*), char* jobdata, size_t elsize, int njobs, void*) {
  const int threads = std::max(1, std::min(njobs, g_num_threads));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int i = 0; i < njobs; ++i) work(jobdata + elsize * static_cast<size_t>(i));
}

/// Threads of one transform: OAR_NUM_THREADS (as the cpu plugin), else
/// OMP_NUM_THREADS, else the CPUs this process may run on.
int choose_num_threads() {
  for (const char* name : {"OAR_NUM_THREADS", "OMP_NUM_THREADS"}) {
    std::string v = op::option(name, "");
    if (v.empty()) {
      const char* env = std::getenv(name);
      v = env ? env : "";
    }
    char* end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    if (!v.empty() && *end == '\0' && n > 0 && n <= 4096) return static_cast<int>(n);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

extern "C" OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info) {
  if (OarStatus s = op::accept_host(host, info, "oar-fftw")) return s;
  if (host->abi_minor < 1)
    return fail(OAR_ERROR_UNSUPPORTED, "oar-fftw: a kernel-only plugin needs a host of ABI 1.1 or later");
  {
    std::lock_guard<std::mutex> lock(g_planner_mutex);
    static bool threads_ready = fftw_init_threads() != 0 && fftwf_init_threads() != 0;
    if (!threads_ready) return fail(OAR_ERROR_INTERNAL, "oar-fftw: fftw_init_threads failed");
  }
  // OAR_FFTW_DISABLE=1: load but register nothing, as if the plugin were
  // absent (what a build without FFTW gives; tests check the error then).
  if (op::option("OAR_FFTW_DISABLE", "0") != "0") {
    op::log(OAR_LOG_INFO, "oar-fftw: disabled by OAR_FFTW_DISABLE; the cpu has no FFT kernels");
    return OAR_OK;
  }
  g_num_threads = choose_num_threads();
  const std::string planner = op::option("OAR_FFTW_PLANNER", "auto");
  if (planner == "estimate") g_planner = Planner::estimate;
  else if (planner == "measure") g_planner = Planner::measure;
  else if (planner == "auto") g_planner = Planner::automatic;
  else
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("oar-fftw: OAR_FFTW_PLANNER is '%s' but must be auto, measure or estimate",
                planner.c_str()).c_str());
  const std::string limit = op::option("OAR_FFTW_TIMELIMIT", "30");
  char* end = nullptr;
  g_time_limit = std::strtod(limit.c_str(), &end);
  if (limit.empty() || *end != '\0' || !(g_time_limit > 0))
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("oar-fftw: OAR_FFTW_TIMELIMIT is '%s' but must be a positive number of seconds",
                limit.c_str()).c_str());
  {
    // Note [FFTW planning and wisdom]: OAR_FFTW_WISDOM names the directory
    // ("" keeps wisdom in memory only).
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    std::string fallback = xdg && *xdg ? std::string(xdg) + "/oar" : home && *home ? std::string(home) + "/.cache/oar" : "";
    g_wisdom_dir = op::option("OAR_FFTW_WISDOM", fallback);
    std::lock_guard<std::mutex> lock(g_planner_mutex);
    fftw_threads_set_callback(&omp_parallel_loop, nullptr);  // Note [FFTW threads on OpenMP]
    fftwf_threads_set_callback(&omp_parallel_loop, nullptr);
    load_wisdom<Fftw<double>>();
    load_wisdom<Fftw<float>>();
  }
  // Complex dtypes exist from ABI 1.3; an older host has no complex tensors.
  if (host->abi_minor < 3) {
    op::log(OAR_LOG_INFO, "oar-fftw: the host's ABI has no complex dtypes; no FFT kernels registered");
    return OAR_OK;
  }
  op::KernelTable t(host, "cpu");  // a kernel-only plugin: the cpu plugin owns the device type
  t.set_default_flags(OAR_KERNEL_STRIDED);  // guru strides read any layout (c2r copies its input)
  t.add("fft_c2c", {kC64}, {kC64}, OAR_KERNEL(c2c_kernel<float>))
      .add("fft_c2c", {kC128}, {kC128}, OAR_KERNEL(c2c_kernel<double>))
      .add("fft_r2c", {OAR_DTYPE_F32}, {kC64}, OAR_KERNEL(r2c_kernel<float>))
      .add("fft_r2c", {OAR_DTYPE_F64}, {kC128}, OAR_KERNEL(r2c_kernel<double>))
      .add("fft_c2r", {kC64}, {OAR_DTYPE_F32}, OAR_KERNEL(c2r_kernel<float>))
      .add("fft_c2r", {kC128}, {OAR_DTYPE_F64}, OAR_KERNEL(c2r_kernel<double>));
  return t.status();
}
