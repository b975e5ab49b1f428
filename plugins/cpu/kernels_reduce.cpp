// Reductions: sum, prod, max, min over axes; argmax, argmin over one axis.
//
// Note [Blocked reduction]: the input (contiguous) is coalesced into kept
// and reduced dims. Values are combined in fixed blocks — up to kBlock
// contiguous elements (reduced innermost dim) or kRowBlock rows (kept
// innermost dim) — with kLanes independent accumulators the compiler
// vectorizes, and the block results are then combined in order. Short
// reduced rows (fewer than kLanes elements, back to back) are vectorized
// across rows instead: kLanes rows at once, one accumulator each. A kept
// innermost dim is never transposed: the rows of a block stream past in
// order (strided over the reduced dim, contiguous along the kept one) into
// one accumulator per column of a tile of up to kRowTile columns (in L1).
// Float sums and products accumulate in double (so 1e8 f32 ones sum to
// exactly 1e8; a contiguous f32 sum first adds runs of up to 32 values per
// lane in f32, see sum_f32_in_f64),
// integer ones in wrapping uint64. The blocking never depends on the thread
// count, so results are identical for any OAR_NUM_THREADS; threads share
// outputs when there are many, else they share the blocks of one output.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "cpu_common.h"
#include "cpu_vec_math.h"  // OAR_CPU_CLONES

namespace oar_cpu {

/// Independent accumulators of a contiguous block (Note [Blocked reduction]):
/// enough vector registers' worth that the adds' latency is hidden (8 were
/// one AVX-512 register of doubles, a 3-4 cycle chain per 8 elements: a
/// [4096, 768] f32 sum over the last dim took 2.3x torch's time).
constexpr int kLanes = 32;

/// Combines acc[0..kLanes) pairwise, always in the same tree.
template <class A, class F>
A combine_lanes(A* acc, F&& f) {
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] = f(acc[j], acc[j + w]);
  }
  return acc[0];
}

/// f32 sum in f64 with kLanes accumulators, cloned per ISA: the same
/// sequence of additions in every clone (no reassociation), only the vector
/// width changes, so the result never depends on the machine. Each lane
/// first adds up to kF32Run consecutive values of its column in f32 (exact
/// for integers below 2^24; otherwise at most kF32Run - 1 f32 roundings of a
/// partial), then the partial joins the lane's f64 sum: a conversion per
/// kF32Run elements instead of per element, which had made the loop
/// compute-bound at half of torch's f32 speed. The last run of a row may be
/// shorter (a [*, 768] row is 24 values per lane: one run).
///
/// Note [Accumulators in registers]: written with GCC vector types (eight
/// f32 lanes per part[v], four f64 lanes per acc[w]) because the plain-array
/// form kept part[] and acc[] on the stack in the AVX2 clone: every step
/// stored two 16-byte halves and reloaded them as one 32-byte operand, a
/// failed store forward each time. With that, runs of 32 instead of 8 and
/// two rows at a time (sum_f32_rows), x.sum(-1) of [4096, 768] f32 went from
/// 1.06 to 0.75-0.83 ms at 1 thread (torch 0.71-0.80) and [1024, 768] from
/// 24 to 38 GB/s (2026-12-07, AMD EPYC Zen 1 VM, AVX2). The longer runs cost
/// accuracy within numpy's own f32 sum: the error stayed below 2e-9 of
/// sum(|x|) over 200 random [5, 40000] rows (numpy's f32 sum: 2e-9).
constexpr int kF32Run = 32;
typedef float F32x8 __attribute__((vector_size(32)));
typedef float F32x8u __attribute__((vector_size(32), aligned(4), __may_alias__));  // unaligned loads
typedef double F64x4 __attribute__((vector_size(32)));
constexpr int kVecs = kLanes / 8;
static_assert(kLanes % 8 == 0 && (kVecs & (kVecs - 1)) == 0,
              "kLanes is a power-of-two multiple of the vector width");

/// acc[0], acc[1] += the low and high halves of p, widened to f64.
inline __attribute__((always_inline)) void add_widened(F64x4* acc, F32x8 p) {
  F64x4 lo = {double(p[0]), double(p[1]), double(p[2]), double(p[3])};
  F64x4 hi = {double(p[4]), double(p[5]), double(p[6]), double(p[7])};
  acc[0] += lo;
  acc[1] += hi;
}

/// y[k] = the f32-in-f64 sum of row k of R rows of n values, n apart: the
/// rows interleaved run by run (two streams in flight read DRAM faster than
/// one: [4096, 768] from DRAM, 1 thread, Zen 1, 13.3 -> 15.7 GB/s in a C++
/// probe), every row's additions exactly those of a single row.
template <int R>
inline __attribute__((always_inline)) void sum_f32_rows(const float* x, int64_t n, double* y) {
  F64x4 acc[R][2 * kVecs];
  for (int k = 0; k < R; ++k) {
    for (F64x4& a : acc[k]) a = F64x4{0, 0, 0, 0};
  }
  int64_t i = 0;
  while (i + kLanes <= n) {  // one run: up to kF32Run groups of kLanes per row
    F32x8 part[R][kVecs];
    for (int k = 0; k < R; ++k) {
      for (int v = 0; v < kVecs; ++v) part[k][v] = *reinterpret_cast<const F32x8u*>(x + k * n + i + 8 * v);
    }
    i += kLanes;
    for (int g = 1; g < kF32Run && i + kLanes <= n; ++g, i += kLanes) {
      for (int k = 0; k < R; ++k) {
        for (int v = 0; v < kVecs; ++v) part[k][v] += *reinterpret_cast<const F32x8u*>(x + k * n + i + 8 * v);
      }
    }
    for (int k = 0; k < R; ++k) {
      for (int v = 0; v < kVecs; ++v) add_widened(acc[k] + 2 * v, part[k][v]);
    }
  }
  for (int k = 0; k < R; ++k) {
    // The scalar tail joins lanes 0 .. n - i - 1 (padded with -0.0, which
    // leaves every value as it is, -0.0 included), then combine_lanes'
    // tree, level by level on whole vectors: lanes j and j + w are
    // acc[j / 4] and acc[(j + w) / 4] for w >= 4, then within acc[0].
    F64x4* a = acc[k];
    if (i < n) {
      const float* row = x + k * n;
      double tail[kLanes];
      for (int j = 0; j < kLanes; ++j) tail[j] = i + j < n ? static_cast<double>(row[i + j]) : -0.0;
      for (int w = 0; w < 2 * kVecs; ++w) a[w] += F64x4{tail[4 * w], tail[4 * w + 1], tail[4 * w + 2], tail[4 * w + 3]};
    }
    for (int w = kVecs; w >= 1; w /= 2) {
      for (int j = 0; j < w; ++j) a[j] += a[j + w];
    }
    y[k] = (a[0][0] + a[0][2]) + (a[0][1] + a[0][3]);
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) double sum_f32_in_f64(const float* x, int64_t n) {
  double y;
  sum_f32_rows<1>(x, n, &y);
  return y;
}

/// y[r] = sum_f32_in_f64(x + r * n, n) for r < rows (rows back to back), bitwise.
__attribute__((target_clones("avx512f", "avx2", "default"))) void sum_f32_in_f64_rows(
    const float* x, int64_t n, int64_t rows, double* y) {
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2) sum_f32_rows<2>(x + r * n, n, y + r);
  if (r < rows) sum_f32_rows<1>(x + r * n, n, y + r);
}

/// acc[b] += x[q * stride + b] for q < rows, b < w, in f64, cloned per ISA
/// (each column's additions in row order in every clone).
__attribute__((target_clones("avx512f", "avx2", "default"))) void add_rows_f32_in_f64(
    const float* x, int64_t stride, int64_t rows, int64_t w, double* acc) {
  for (int64_t q = 0; q < rows; ++q, x += stride) {
    for (int64_t b = 0; b < w; ++b) acc[b] += static_cast<double>(x[b]);
  }
}

namespace {

constexpr int64_t kBlock = 8192;     // contiguous elements per block
constexpr int64_t kRowBlock = 1024;  // rows per block when the inner dim is kept
constexpr int64_t kRowTile = 1024;   // inner elements per tile when the inner dim is kept

enum class RedOp { kSum, kProd, kMax, kMin };

/// Block, Acc and Out types of a reduction (Note [Blocked reduction]).
template <class T, RedOp kOp>
struct RedTypes {
  using C = typename Num<T>::C;
  static constexpr bool kIntegral = !kIsFloat<T>;  // ints and bool
  static constexpr bool kArith = kOp == RedOp::kSum || kOp == RedOp::kProd;
  // Integer sums and products wrap in uint64 and are written as i64.
  using Acc = std::conditional_t<kArith, std::conditional_t<kIntegral, uint64_t, double>, C>;
  // Blocks accumulate in Acc too: f32 sums in double cost nothing measurable
  // (the loop is memory-bound) and round like the mock's reference sum.
  using Block = Acc;
  using Out = std::conditional_t<kArith && kIntegral, int64_t, T>;
};

template <RedOp kOp>
struct Combine {
  template <class A>
  static A identity() {
    if constexpr (kOp == RedOp::kSum) {
      return A(0);
    } else if constexpr (kOp == RedOp::kProd) {
      return A(1);
    } else if constexpr (kOp == RedOp::kMax) {
      return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                  : std::numeric_limits<A>::lowest();
    } else {
      return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                  : std::numeric_limits<A>::max();
    }
  }
  template <class A>
  static A f(A a, A b) {  // max/min propagate NaN
    if constexpr (kOp == RedOp::kSum)
      return a + b;
    else if constexpr (kOp == RedOp::kProd)
      return a * b;
    else if constexpr (kOp == RedOp::kMax)
      return (a > b || a != a) ? a : b;
    else
      return (a < b || a != a) ? a : b;
  }
};

/// Reduces n contiguous elements with kLanes independent accumulators,
/// cloned per ISA like sum_f32_in_f64 (the same operations in every clone).
template <class T, class B, RedOp kOp>
OAR_CPU_CLONES B block_reduce(const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<B, double> && kOp == RedOp::kSum) {
    return sum_f32_in_f64(x, n);
  } else if constexpr (std::is_floating_point_v<B> && (kOp == RedOp::kMax || kOp == RedOp::kMin)) {
    // Float max/min: Combine's rule as a branch-free select (a NaN in acc
    // stays, a NaN in x enters), which vectorizes.
    B acc[kLanes];
    for (B& a : acc) a = Combine<kOp>::template identity<B>();
    auto step = [](B a, B v) {
      const bool keep = (kOp == RedOp::kMax ? a > v : a < v) | (a != a);
      return keep ? a : v;
    };
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) acc[j] = step(acc[j], static_cast<B>(Num<T>::load(x[i + j])));
    }
    for (int j = 0; i < n; ++i, ++j) acc[j] = step(acc[j], static_cast<B>(Num<T>::load(x[i])));
    return combine_lanes(acc, [](B a, B b) { return Combine<kOp>::f(a, b); });
  } else {
    using Op = Combine<kOp>;
    B acc[kLanes];
    for (B& a : acc) a = Op::template identity<B>();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) acc[j] = Op::f(acc[j], static_cast<B>(Num<T>::load(x[i + j])));
    }
    for (int j = 0; i < n; ++i, ++j) acc[j] = Op::f(acc[j], static_cast<B>(Num<T>::load(x[i])));
    return combine_lanes(acc, [](B a, B b) { return Op::f(a, b); });
  }
}

/// Coalesced layout of a reduction over a contiguous input.
struct RedPlan {
  int nkept = 0, nred = 0;  // outer kept / reduced dims (the innermost dim excluded)
  int64_t kept_shape[OAR_MAX_NDIM], kept_stride[OAR_MAX_NDIM];
  int64_t red_shape[OAR_MAX_NDIM], red_stride[OAR_MAX_NDIM];
  bool inner_reduced = false;
  int64_t inner = 1;        // innermost dim: L (reduced) or B (kept)
  int64_t outer_count = 1;  // product of kept_shape
  int64_t red_count = 1;    // product of red_shape

  int64_t kept_offset(int64_t o) const { return offset(o, nkept, kept_shape, kept_stride); }
  int64_t red_offset(int64_t q) const { return offset(q, nred, red_shape, red_stride); }
  static int64_t offset(int64_t i, int n, const int64_t* shape, const int64_t* stride) {
    int64_t off = 0;
    for (int d = n - 1; d >= 0; --d) {
      off += (i % shape[d]) * stride[d];
      i /= shape[d];
    }
    return off;
  }
};

RedPlan make_plan(const OarTensorView& x, const bool* reduced) {
  int64_t shape[OAR_MAX_NDIM];
  bool red[OAR_MAX_NDIM];
  int n = 0;
  for (int d = 0; d < x.ndim; ++d) {
    if (x.shape[d] == 1) continue;
    if (n > 0 && red[n - 1] == reduced[d]) {
      shape[n - 1] *= x.shape[d];
    } else {
      shape[n] = x.shape[d];
      red[n++] = reduced[d];
    }
  }
  if (n == 0) {  // scalar: one kept element
    shape[0] = 1;
    red[0] = false;
    n = 1;
  }
  RedPlan p;
  int64_t stride = 1;
  p.inner = shape[n - 1];
  p.inner_reduced = red[n - 1];
  stride = p.inner;
  for (int d = n - 2; d >= 0; --d) {  // filled innermost first, then reversed
    if (red[d]) {
      p.red_shape[p.nred] = shape[d];
      p.red_stride[p.nred++] = stride;
    } else {
      p.kept_shape[p.nkept] = shape[d];
      p.kept_stride[p.nkept++] = stride;
    }
    stride *= shape[d];
  }
  std::reverse(p.red_shape, p.red_shape + p.nred);
  std::reverse(p.red_stride, p.red_stride + p.nred);
  std::reverse(p.kept_shape, p.kept_shape + p.nkept);
  std::reverse(p.kept_stride, p.kept_stride + p.nkept);
  for (int d = 0; d < p.nkept; ++d) p.outer_count *= p.kept_shape[d];
  for (int d = 0; d < p.nred; ++d) p.red_count *= p.red_shape[d];
  return p;
}

/// Innermost dim reduced: output o = combine over q of the contiguous run
/// of L elements at kept_offset(o) + red_offset(q), in blocks of kBlock.
template <class T, RedOp kOp>
void reduce_inner(const RedPlan& p, const T* x, typename RedTypes<T, kOp>::Out* y) {
  using Ty = RedTypes<T, kOp>;
  using Acc = typename Ty::Acc;
  using Block = typename Ty::Block;
  using Op = Combine<kOp>;
  const int64_t L = p.inner;
  const int64_t per_run = (L + kBlock - 1) / kBlock;
  const int64_t pieces = p.red_count * per_run;
  auto piece = [&](const T* base, int64_t k) -> Acc {
    const int64_t q = k / per_run;
    const int64_t c = (k % per_run) * kBlock;
    return static_cast<Acc>(
        block_reduce<T, Block, kOp>(base + p.red_offset(q) + c, std::min(kBlock, L - c)));
  };
  const int64_t total = p.outer_count * pieces * std::min(L, kBlock);
  // Rows per parallel piece: about kParallelMin elements (parallel_range
  // runs small reductions on the calling thread without an OpenMP region).
  const int64_t row_grain = std::max<int64_t>(1, kParallelMin / std::max<int64_t>(1, p.red_count * L));
  if (p.nred == 0 && L < kLanes) {
    // Short rows back to back: kLanes rows at once, one accumulator per row
    // (vectorized across rows), each row's elements combined in order.
    parallel_range((p.outer_count + kLanes - 1) / kLanes, std::max<int64_t>(1, row_grain / kLanes),
                   [&](int64_t g0, int64_t g1) {
                     for (int64_t g = g0; g < g1; ++g) {
                       const int64_t r0 = g * kLanes;
                       const int64_t rows = std::min<int64_t>(kLanes, p.outer_count - r0);
                       const T* base = x + r0 * L;
                       Acc acc[kLanes];
                       for (Acc& a : acc) a = Op::template identity<Acc>();
                       for (int64_t l = 0; l < L; ++l) {
                         for (int64_t j = 0; j < rows; ++j)
                           acc[j] = Op::f(acc[j], static_cast<Acc>(Num<T>::load(base[j * L + l])));
                       }
                       for (int64_t j = 0; j < rows; ++j) y[r0 + j] = cast_to<typename Ty::Out>(acc[j]);
                     }
                   });
    return;
  }
  if (p.outer_count >= current_threads() || total < kParallelMin) {
    parallel_range(p.outer_count, row_grain, [&](int64_t o0, int64_t o1) {
      if (p.nred == 0 && L <= kBlock) {  // rows back to back, one block each: no index arithmetic
        if constexpr (std::is_same_v<T, float> && std::is_same_v<Block, double> && kOp == RedOp::kSum) {
          double sums[64];  // two rows at a time (sum_f32_rows)
          for (int64_t o = o0; o < o1; o += 64) {
            const int64_t rows = std::min<int64_t>(64, o1 - o);
            sum_f32_in_f64_rows(x + o * L, L, rows, sums);
            for (int64_t r = 0; r < rows; ++r) y[o + r] = static_cast<float>(sums[r]);
          }
          return;
        }
        for (int64_t o = o0; o < o1; ++o) {
          y[o] = cast_to<typename Ty::Out>(static_cast<Acc>(block_reduce<T, Block, kOp>(x + o * L, L)));
        }
        return;
      }
      for (int64_t o = o0; o < o1; ++o) {
        const T* base = x + p.kept_offset(o);
        Acc acc = Op::template identity<Acc>();
        for (int64_t k = 0; k < pieces; ++k) acc = Op::f(acc, piece(base, k));
        y[o] = cast_to<typename Ty::Out>(acc);
      }
    });
    return;
  }
  // Few outputs: threads share their pieces (not std::vector: Acc may be bool).
  refresh_num_threads();  // Note [Threads on a busy machine] (cpu_common.h)
  std::unique_ptr<Acc[]> partial(new Acc[static_cast<size_t>(pieces)]);
  for (int64_t o = 0; o < p.outer_count; ++o) {
    const T* base = x + p.kept_offset(o);
#pragma omp parallel for num_threads(current_threads()) schedule(static)
    for (int64_t k = 0; k < pieces; ++k) partial[static_cast<size_t>(k)] = piece(base, k);
    Acc acc = Op::template identity<Acc>();
    for (int64_t k = 0; k < pieces; ++k) acc = Op::f(acc, partial[static_cast<size_t>(k)]);
    y[o] = cast_to<typename Ty::Out>(acc);
  }
}

/// Innermost dim kept (B wide): output row o' accumulates the rows at
/// kept_offset(o') + red_offset(q), kRowBlock rows per block, in tiles of
/// kRowTile columns.
template <class T, RedOp kOp>
void reduce_outer(const RedPlan& p, const T* x, typename RedTypes<T, kOp>::Out* y) {
  using Ty = RedTypes<T, kOp>;
  using Acc = typename Ty::Acc;
  using Block = typename Ty::Block;
  using Op = Combine<kOp>;
  const int64_t B = p.inner;
  const int64_t col_tiles = (B + kRowTile - 1) / kRowTile;
  const int64_t tiles = p.outer_count * col_tiles;
  const int64_t row_blocks = (p.red_count + kRowBlock - 1) / kRowBlock;
  // Block `rb` of tile (o', c0..c0+w) into blk[0..w).
  auto block = [&](const T* base, int64_t rb, int64_t w, Block* blk) {
    for (int64_t b = 0; b < w; ++b) blk[b] = Op::template identity<Block>();
    const int64_t q0 = rb * kRowBlock;
    const int64_t q1 = std::min(p.red_count, q0 + kRowBlock);
    if (p.nred == 1 && p.red_stride[0] == B && w == B && B <= 32) {
      // Narrow rows stored back to back: walk the block as one flat run with
      // L = k * B accumulators (column j % B), which vectorizes.
      const T* flat = base + q0 * B;
      const int64_t len = (q1 - q0) * B;
      const int64_t L = (64 / B) * B;
      Block acc[64];
      for (int64_t j = 0; j < L; ++j) acc[j] = Op::template identity<Block>();
      int64_t i = 0;
      for (; i + L <= len; i += L) {
        for (int64_t j = 0; j < L; ++j)
          acc[j] = Op::f(acc[j], static_cast<Block>(Num<T>::load(flat[i + j])));
      }
      for (int64_t j = 0; i < len; ++i, ++j)
        acc[j] = Op::f(acc[j], static_cast<Block>(Num<T>::load(flat[i])));
      for (int64_t j = 0; j < L; ++j) blk[j % B] = Op::f(blk[j % B], acc[j]);
      return;
    }
    if (p.nred == 1) {
      // One reduced dim: the block's rows stream past in order, each added
      // into the tile's accumulators (L1-resident): contiguous loads, no
      // transpose, the same additions as the odometer walk below.
      const int64_t stride = p.red_stride[0];
      const T* row = base + q0 * stride;
      if constexpr (std::is_same_v<T, float> && std::is_same_v<Block, double> && kOp == RedOp::kSum) {
        add_rows_f32_in_f64(row, stride, q1 - q0, w, blk);
      } else {
        for (int64_t q = q0; q < q1; ++q, row += stride) {
          for (int64_t b = 0; b < w; ++b) blk[b] = Op::f(blk[b], static_cast<Block>(Num<T>::load(row[b])));
        }
      }
      return;
    }
    // Walk the reduced dims with an odometer (no division per row).
    int64_t idx[OAR_MAX_NDIM];
    int64_t rest = q0;
    for (int d = p.nred - 1; d >= 0; --d) {
      idx[d] = rest % p.red_shape[d];
      rest /= p.red_shape[d];
    }
    const T* row = base + p.red_offset(q0);
    for (int64_t q = q0; q < q1; ++q) {
      for (int64_t b = 0; b < w; ++b)
        blk[b] = Op::f(blk[b], static_cast<Block>(Num<T>::load(row[b])));
      for (int d = p.nred - 1; d >= 0; --d) {
        row += p.red_stride[d];
        if (++idx[d] < p.red_shape[d]) break;
        row -= p.red_shape[d] * p.red_stride[d];
        idx[d] = 0;
      }
    }
  };
  const int64_t total = p.outer_count * p.red_count * B;
  if (tiles >= current_threads() || total < kParallelMin) {
    const int64_t tile_grain = std::max<int64_t>(1, kParallelMin / std::max<int64_t>(1, total / tiles));
    parallel_range(tiles, tile_grain, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t o = t / col_tiles;
        const int64_t c0 = (t % col_tiles) * kRowTile;
        const int64_t w = std::min(kRowTile, B - c0);
        const T* base = x + p.kept_offset(o) + c0;
        Block blk[kRowTile];
        Acc acc[kRowTile];
        for (int64_t b = 0; b < w; ++b) acc[b] = Op::template identity<Acc>();
        for (int64_t rb = 0; rb < row_blocks; ++rb) {
          block(base, rb, w, blk);
          for (int64_t b = 0; b < w; ++b) acc[b] = Op::f(acc[b], static_cast<Acc>(blk[b]));
        }
        for (int64_t b = 0; b < w; ++b) y[o * B + c0 + b] = cast_to<typename Ty::Out>(acc[b]);
      }
    });
    return;
  }
  // Few tiles: threads share the row blocks of each tile.
  refresh_num_threads();
  std::unique_ptr<Block[]> partial(
      new Block[static_cast<size_t>(row_blocks * std::min(B, kRowTile))]);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t o = t / col_tiles;
    const int64_t c0 = (t % col_tiles) * kRowTile;
    const int64_t w = std::min(kRowTile, B - c0);
    const T* base = x + p.kept_offset(o) + c0;
#pragma omp parallel for num_threads(current_threads()) schedule(static)
    for (int64_t rb = 0; rb < row_blocks; ++rb)
      block(base, rb, w, &partial[static_cast<size_t>(rb * w)]);
    for (int64_t b = 0; b < w; ++b) {
      Acc acc = Op::template identity<Acc>();
      for (int64_t rb = 0; rb < row_blocks; ++rb) {
        acc = Op::f(acc, static_cast<Acc>(partial[static_cast<size_t>(rb * w + b)]));
      }
      y[o * B + c0 + b] = cast_to<typename Ty::Out>(acc);
    }
  }
}

template <RedOp kOp>
OarStatus reduce_kernel(const OarKernelContext* ctx) {
  if (ctx->num_inputs != 1 || ctx->num_outputs != 1) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "expected 1 input and 1 output");
  }
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  Attrs attrs(ctx);
  bool reduced[OAR_MAX_NDIM] = {};
  int64_t count = 0;
  const bool present = attrs.has("axes");
  const std::vector<int64_t> axes_list = attrs.get_ints("axes", {});
  const int64_t* axes = axes_list.data();
  count = static_cast<int64_t>(axes_list.size());
  if (!attrs.ok()) return attrs.status();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + x.ndim : axes[i];
    if (a < 0 || a >= x.ndim || reduced[a]) {
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                  "axis %lld is out of range or repeated for rank %d",
                  static_cast<long long>(axes[i]), x.ndim);
    }
    reduced[a] = true;
  }
  // Missing axes: every dim. Empty axes (as the mock): nothing when y keeps
  // x's shape, else every dim (both agree whenever both shapes fit).
  bool same_shape = x.ndim == y.ndim;
  for (int d = 0; same_shape && d < x.ndim; ++d) same_shape = x.shape[d] == y.shape[d];
  if (!present || (count == 0 && !same_shape)) std::fill(reduced, reduced + OAR_MAX_NDIM, true);
  bool ok = false;
  visit_all(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    using Ty = RedTypes<T, kOp>;
    using Out = typename Ty::Out;
    int32_t want = std::is_same_v<Out, int64_t> && !std::is_same_v<T, int64_t>
                       ? int32_t{OAR_DTYPE_I64}
                       : x.dtype;
    if (y.dtype != want) return;
    ok = true;
    Out* out = static_cast<Out*>(oar_view_ptr(&y));
    const int64_t n_out = oar_view_numel(&y);
    if (n_out == 0) return;
    if (oar_view_numel(&x) == 0) {  // empty reduction: sum 0, prod 1
      const Out v = cast_to<Out>(Combine<kOp>::template identity<typename Ty::Acc>());
      std::fill(out, out + n_out, v);
      return;
    }
    const RedPlan plan = make_plan(x, reduced);
    const T* in = static_cast<const T*>(oar_view_ptr(&x));
    if (plan.inner_reduced) {
      reduce_inner<T, kOp>(plan, in, out);
    } else {
      reduce_outer<T, kOp>(plan, in, out);
    }
  });
  if (!ok) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtypes %s -> %s are not supported",
                dtype_name(x.dtype), dtype_name(y.dtype));
  }
  return OAR_OK;
}

// ------------------------------------------------------- argmax/argmin ---

template <class C, bool kMax>
bool better(C v, C best) {  // NaN is the extreme; the first one wins
  if (best != best) return false;
  if (v != v) return true;
  return kMax ? v > best : v < best;
}

template <bool kMax>
OarStatus arg_kernel(const OarKernelContext* ctx) {
  if (ctx->num_inputs != 1 || ctx->num_outputs != 1) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "expected 1 input and 1 output");
  }
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  if (y.dtype != OAR_DTYPE_I64) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "output dtype is %s, expected i64",
                dtype_name(y.dtype));
  }
  Attrs attrs(ctx);
  const bool flatten = !attrs.has("axis") || x.ndim == 0;  // over all elements
  int64_t axis = attrs.get_int("axis", 0);
  if (!attrs.ok()) return attrs.status();
  if (axis < 0) axis += x.ndim;
  if (!flatten && (axis < 0 || axis >= x.ndim)) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                static_cast<long long>(axis), x.ndim);
  }
  int64_t A = 1, R = oar_view_numel(&x), B = 1;
  if (!flatten) {
    R = x.shape[axis];
    for (int d = 0; d < axis; ++d) A *= x.shape[d];
    for (int d = static_cast<int>(axis) + 1; d < x.ndim; ++d) B *= x.shape[d];
  }
  int64_t* out = static_cast<int64_t*>(oar_view_ptr(&y));
  if (A * B == 0) return OAR_OK;
  if (R == 0) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "the reduced axis %lld is empty",
                static_cast<long long>(axis));
  }
  const bool ok = visit_all(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = typename Num<T>::C;
    const T* in = static_cast<const T*>(oar_view_ptr(&x));
    const int64_t tiles_per_a = (B + kRowTile - 1) / kRowTile;
    const int64_t tiles = A * tiles_per_a;
    if (A * R * B >= kParallelMin) refresh_num_threads();
#pragma omp parallel for num_threads(current_threads()) schedule(static) if (A * R * B >= kParallelMin)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t a = t / tiles_per_a;
      const int64_t b0 = (t % tiles_per_a) * kRowTile;
      const int64_t w = std::min(kRowTile, B - b0);
      const T* base = in + a * R * B + b0;
      C best[kRowTile];
      int64_t idx[kRowTile];
      for (int64_t b = 0; b < w; ++b) {
        best[b] = Num<T>::load(base[b]);
        idx[b] = 0;
      }
      for (int64_t r = 1; r < R; ++r) {
        const T* row = base + r * B;
        for (int64_t b = 0; b < w; ++b) {
          const C v = Num<T>::load(row[b]);
          if (better<C, kMax>(v, best[b])) {
            best[b] = v;
            idx[b] = r;
          }
        }
      }
      for (int64_t b = 0; b < w; ++b) out[a * B + b0 + b] = idx[b];
    }
  });
  if (!ok)
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not supported", dtype_name(x.dtype));
  return OAR_OK;
}

}  // namespace

void register_reduce_kernels(op::KernelTable& r) {
  for (int32_t dt : kAllDtypes) {
    const bool is_float = visit_float(dt, [](auto) {});
    const int32_t arith_out = is_float ? dt : int32_t{OAR_DTYPE_I64};
    r.add("sum", {dt}, {arith_out}, &guarded<&reduce_kernel<RedOp::kSum>>);
    r.add("prod", {dt}, {arith_out}, &guarded<&reduce_kernel<RedOp::kProd>>);
    r.add("max", {dt}, {dt}, &guarded<&reduce_kernel<RedOp::kMax>>);
    r.add("min", {dt}, {dt}, &guarded<&reduce_kernel<RedOp::kMin>>);
    r.add("argmax", {dt}, {OAR_DTYPE_I64}, &guarded<&arg_kernel<true>>);
    r.add("argmin", {dt}, {OAR_DTYPE_I64}, &guarded<&arg_kernel<false>>);
  }
}

}  // namespace oar_cpu
