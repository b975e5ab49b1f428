// The loop IR's index simplifier (compiler/src/simplify.cpp): each rule on
// a hand-checkable expression, and every simplified expression evaluated
// against the original on many dim and variable values.
#include <doctest/doctest.h>

#include <random>

#include "oar/error.h"
#include "oar_compiler/loop_ir.h"

using namespace oar::compiler;

namespace {

const Expr v0 = var_expr(0), v1 = var_expr(1), v2 = var_expr(2);
const Expr d0 = dim_expr(0), d1 = dim_expr(1), d2 = dim_expr(2);

// simplify(e) equals e at random dims in [1, 40] and vars inside their extents.
void check_same_values(const Expr& e, const SimplifyContext& ctx, int trials = 300) {
  Expr s = simplify(e, ctx);
  std::mt19937 rng(7);
  for (int t = 0; t < trials; ++t) {
    std::vector<int64_t> dims(3);
    for (auto& d : dims) d = 1 + static_cast<int64_t>(rng() % 40);
    std::vector<int64_t> vars;
    for (const Expr& ext : ctx.var_extents) {
      int64_t n = ext.is_null() ? 50 : evaluate(ext, dims);
      vars.push_back(n <= 0 ? 0 : static_cast<int64_t>(rng() % static_cast<uint64_t>(n)));
    }
    CAPTURE(to_string(e));
    CAPTURE(to_string(s));
    REQUIRE(evaluate(s, dims, vars) == evaluate(e, dims, vars));
  }
}

}  // namespace

TEST_CASE("simplify folds constants and identities") {
  CHECK(to_string(simplify(Expr(3) * 4 + 5)) == "17");
  CHECK(to_string(simplify(v0 * 1 + 0)) == "v0");
  CHECK(to_string(simplify(v0 * 0 + d0)) == "d0");
  CHECK(to_string(simplify(v0 - v0)) == "0");
  CHECK(to_string(simplify(floordiv(Expr(-7), 2))) == "-4");  // floor, not truncation
  CHECK(to_string(simplify(mod(Expr(-7), 2))) == "1");
  CHECK(to_string(simplify(floordiv(v0, 1))) == "v0");
  CHECK(to_string(simplify(mod(v0, 1))) == "0");
}

TEST_CASE("simplify orders sums and products canonically") {
  // Equal polynomials written differently print the same.
  Expr a = simplify(v1 + v0 * 768);
  Expr b = simplify(Expr(768) * v0 + v1);
  CHECK(same_expr(a, b));
  CHECK(to_string(a) == "(v0 * 768) + v1");
  CHECK(same_expr(simplify((v0 + 1) * 2 - 2), simplify(v0 * 2)));
  CHECK(same_expr(simplify(d0 * v0 + v0 * d0), simplify(v0 * d0 * 2)));
}

TEST_CASE("simplify drops a division by a known size") {
  SimplifyContext ctx{{d0, Expr(768)}};
  // (v0 * 768 + v1) floordiv 768 -> v0 and mod -> v1, since 0 <= v1 < 768.
  CHECK(to_string(simplify(floordiv(v0 * 768 + v1, 768), ctx)) == "v0");
  CHECK(to_string(simplify(mod(v0 * 768 + v1, 768), ctx)) == "v1");
  // Symbolic: v1 < d1 holds for a variable of extent d1.
  SimplifyContext sym{{d0, d1}};
  CHECK(to_string(simplify(floordiv(v0 * d1 + v1, d1), sym)) == "v0");
  CHECK(to_string(simplify(mod(v0 * d1 + v1, d1), sym)) == "v1");
  CHECK(to_string(simplify(mod(v1, d1), sym)) == "v1");
  CHECK(to_string(simplify(floordiv(v1, d1), sym)) == "0");
  // Not provable: the remainder stays.
  CHECK(to_string(simplify(floordiv(v0 * 768 + v1, 768))) == "v0 + (v1 floordiv 768)");
  CHECK(to_string(simplify(mod(v0 * 768 + v1, 768))) == "v1 mod 768");
}

TEST_CASE("simplify folds nested divisions and undoes unflattening") {
  SimplifyContext ctx{{Expr(4) * d0, d1}};
  CHECK(to_string(simplify(floordiv(floordiv(v0, 4), d0), ctx)) == "v0 floordiv (d0 * 4)");
  // A row split into [batch, seq] and flattened back: (v0 / S) * S * H + (v0 % S) * H + v1 = v0 * H + v1.
  Expr row = floordiv(v0, d0) * (d0 * d1) + mod(v0, d0) * d1 + v1;
  CHECK(same_expr(simplify(row, ctx), simplify(v0 * d1 + v1)));
  // Three row dims [a, b, c] of extents d0, 3, d2.
  SimplifyContext ctx3{{d0 * 3 * d2, Expr(5)}};
  Expr c0 = floordiv(v0, Expr(3) * d2), c1 = mod(floordiv(v0, d2), 3), c2 = mod(v0, d2);
  Expr flat = c0 * (Expr(3) * d2 * 5) + c1 * (d2 * 5) + c2 * 5 + v1;
  CHECK(same_expr(simplify(flat, ctx3), simplify(v0 * 5 + v1)));
  check_same_values(flat, ctx3);
}

TEST_CASE("simplify decides comparisons, min, max and select from bounds") {
  SimplifyContext ctx{{Expr(16)}};
  CHECK(to_string(simplify(compare(ExprKind::lt, v0, 16), ctx)) == "1");
  CHECK(to_string(simplify(compare(ExprKind::lt, v0, 15), ctx)) == "v0 < 15");
  CHECK(to_string(simplify(min_expr(v0, 100), ctx)) == "v0");
  CHECK(to_string(simplify(max_expr(v0, -1), ctx)) == "v0");
  CHECK(to_string(simplify(select(compare(ExprKind::le, Expr(0), v0), v0 + 1, 3), ctx)) == "v0 + 1");
  CHECK(to_string(simplify(select(compare(ExprKind::eq, v0, 2), d0, d0), ctx)) == "d0");
  CHECK(upper_bound(v0 * 2 + 3, ctx) == 33);
  CHECK(lower_bound(v0 * 2 + 3, ctx) == 3);
  CHECK_FALSE(upper_bound(v0 + d0, ctx).has_value());
  CHECK(provably_in_range(v0 * d1 + var_expr(1), d0 * d1, SimplifyContext{{d0, d1}}));
  CHECK_FALSE(provably_in_range(v0 * d1 + var_expr(1), d0 * d1, SimplifyContext{{d0 + 1, d1}}));
}

TEST_CASE("simplify keeps the value on random expressions") {
  SimplifyContext ctx{{d0 * d1, d2, Expr(7)}};
  std::mt19937 rng(11);
  const Expr leaves[] = {v0, v1, v2, d0, d1, d2, Expr(0), Expr(1), Expr(3), Expr(-2)};
  std::function<Expr(int)> random_expr = [&](int depth) -> Expr {
    if (depth == 0 || rng() % 4 == 0) return leaves[rng() % 10];
    Expr a = random_expr(depth - 1), b = random_expr(depth - 1);
    switch (rng() % 9) {
      case 0: return a + b;
      case 1: return a - b;
      case 2: return a * b;
      case 3: return floordiv(a, d0 + Expr(static_cast<int64_t>(rng() % 3)));   // positive divisors
      case 4: return mod(a, d1 * Expr(static_cast<int64_t>(1 + rng() % 3)));
      case 5: return min_expr(a, b);
      case 6: return max_expr(a, b);
      case 7: return select(compare(ExprKind::lt, a, b), a, b);
      default: return floordiv(a * 4 + b, 4);
    }
  };
  for (int i = 0; i < 300; ++i) check_same_values(random_expr(4), ctx, 30);
}

TEST_CASE("to_c prints C text and evaluate rejects bad input") {
  auto dim = [](int i) { return "d[" + std::to_string(i) + "]"; };
  auto var = [](int i) { return "i" + std::to_string(i); };
  CHECK(to_c(simplify(v0 * d1 + v1), dim, var) == "(i1 + (d[1] * i0))");
  CHECK_THROWS_AS(evaluate(floordiv(v0, d0), std::vector<int64_t>{0}, std::vector<int64_t>{1}), oar::Error);
  CHECK_THROWS_AS(evaluate(d2, std::vector<int64_t>{1}), oar::Error);
}

TEST_CASE("simplify divides by a size with a common factor") {
  // Rows [d0, d1] of 768 columns: the flat index v0 * 768 + v1 split back into coordinates.
  SimplifyContext ctx{{d0 * d1, Expr(768)}};
  Expr flat = v0 * 768 + v1;
  CHECK(to_string(simplify(floordiv(flat, d1 * 768), ctx)) == "v0 floordiv d1");
  CHECK(same_expr(simplify(mod(flat, d1 * 768), ctx), simplify(mod(v0, d1) * 768 + v1, ctx)));
  check_same_values(floordiv(flat, d1 * 768), ctx);
  check_same_values(mod(flat, d1 * 768), ctx);
  // A constant divisor sharing a factor with the row length: [B, 7, 33] rows of 33.
  SimplifyContext rows7{{d0 * 7, Expr(33)}};
  CHECK(to_string(simplify(floordiv(v0 * 33 + v1, 231), rows7)) == "v0 floordiv 7");
  CHECK(same_expr(simplify(mod(v0 * 33 + v1, 231), rows7), simplify(mod(v0, 7) * 33 + v1, rows7)));
  check_same_values(floordiv(v0 * 33 + v1, 231), rows7);
  check_same_values(mod(v0 * 33 + v1, 231), rows7);
}
