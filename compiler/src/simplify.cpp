// The index-expression simplifier (loop_ir.h simplify, bounds).
//
// Note [Index expressions as polynomials]
// Sums and products are rewritten into a canonical polynomial: a sorted
// list of terms, each an integer coefficient times a sorted multiset of
// atoms (dims, vars, and the simplified non-linear nodes: floordiv, mod,
// min, max, comparisons, select). Equal polynomials print equally, so
// same_expr finds common subexpressions and x - x vanishes. Three rules
// work on the polynomial form:
//  - (Q*n + R) floordiv n = Q + R floordiv n and (Q*n + R) mod n = R mod n
//    for any integer Q and n > 0 (the terms of Q are those whose
//    coefficient and atoms n divides), then R floordiv n = 0 and
//    R mod n = R when 0 <= R < n is provable;
//  - (x floordiv n) * n * F + (x mod n) * F = x * F, which undoes the
//    unflattening of a flat index into coordinates and the flattening back
//    (a reshape, a row split into [batch, seq]);
//  - floordiv(floordiv(x, a), b) = floordiv(x, a * b) (a, b > 0).
// 0 <= R < n is proven with a symbolic maximum: every dim is a fixed value,
// a loop variable of extent E is at most E - 1 and x mod n at most n - 1,
// so max(R) is a polynomial, and n - 1 - max(R) is non-negative when all
// its terms are (non-negative coefficients over non-negative atoms). This
// proves v1 < cols and (v0 * cols + v1) < rows * cols without knowing the
// sizes.
#include <algorithm>
#include <numeric>

#include "oar/error.h"
#include "oar_compiler/loop_ir.h"

namespace oar::compiler {

namespace {

// A total order on expressions (for canonical sorting).
int expr_cmp(const Expr& a, const Expr& b) {
  if (a.node() == b.node()) return 0;
  if (a.kind() != b.kind()) return a.kind() < b.kind() ? -1 : 1;
  if (a.value() != b.value()) return a.value() < b.value() ? -1 : 1;
  if (a.args().size() != b.args().size()) return a.args().size() < b.args().size() ? -1 : 1;
  for (size_t i = 0; i < a.args().size(); ++i) {
    int c = expr_cmp(a.args()[i], b.args()[i]);
    if (c != 0) return c;
  }
  return 0;
}
bool expr_less(const Expr& a, const Expr& b) { return expr_cmp(a, b) < 0; }

struct Term {
  int64_t coeff = 0;
  std::vector<Expr> atoms;  // sorted by expr_less
};

bool same_atoms(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (expr_cmp(a[i], b[i]) != 0) return false;
  }
  return true;
}

bool atoms_less(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  // Constant terms (no atoms) go last; otherwise by size, then atom order.
  if (a.empty() != b.empty()) return b.empty();
  if (a.size() != b.size()) return a.size() < b.size();
  for (size_t i = 0; i < a.size(); ++i) {
    int c = expr_cmp(a[i], b[i]);
    if (c != 0) return c < 0;
  }
  return false;
}

using Poly = std::vector<Term>;

// Sorts, merges equal atom sets and drops zero terms.
Poly normalize(Poly p) {
  for (Term& t : p) std::sort(t.atoms.begin(), t.atoms.end(), expr_less);
  std::sort(p.begin(), p.end(), [](const Term& a, const Term& b) { return atoms_less(a.atoms, b.atoms); });
  Poly out;
  for (Term& t : p) {
    if (!out.empty() && same_atoms(out.back().atoms, t.atoms)) {
      out.back().coeff += t.coeff;
    } else {
      out.push_back(std::move(t));
    }
  }
  std::erase_if(out, [](const Term& t) { return t.coeff == 0; });
  return out;
}

Poly add(const Poly& a, const Poly& b, int64_t sign = 1) {
  Poly p = a;
  for (Term t : b) {
    t.coeff *= sign;
    p.push_back(std::move(t));
  }
  return normalize(std::move(p));
}

Poly mul(const Poly& a, const Poly& b) {
  Poly p;
  for (const Term& x : a) {
    for (const Term& y : b) {
      Term t{x.coeff * y.coeff, x.atoms};
      t.atoms.insert(t.atoms.end(), y.atoms.begin(), y.atoms.end());
      p.push_back(std::move(t));
    }
  }
  return normalize(std::move(p));
}

Poly constant_poly(int64_t c) { return c == 0 ? Poly{} : Poly{Term{c, {}}}; }

std::optional<int64_t> poly_constant(const Poly& p) {
  if (p.empty()) return 0;
  if (p.size() == 1 && p[0].atoms.empty()) return p[0].coeff;
  return std::nullopt;
}

Expr term_expr(const Term& t, int64_t coeff) {
  Expr e;
  for (const Expr& a : t.atoms) e = e.is_null() ? a : a.is_null() ? e : e * a;
  if (e.is_null()) return Expr(coeff);
  if (coeff != 1) e = e * Expr(coeff);
  return e;
}

Expr poly_expr(const Poly& p) {
  Expr e;
  for (const Term& t : p) {
    if (e.is_null()) {
      e = term_expr(t, t.coeff);
    } else if (t.coeff < 0) {
      e = e - term_expr(t, -t.coeff);
    } else {
      e = e + term_expr(t, t.coeff);
    }
  }
  return e.is_null() ? Expr(0) : e;
}

class Simplifier {
 public:
  explicit Simplifier(const SimplifyContext& ctx) : ctx_(ctx) {}

  Expr run(const Expr& e) { return poly_expr(poly(e)); }

  // The polynomial of an expression whose sub-expressions get simplified.
  Poly poly(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::constant: return constant_poly(e.value());
      case ExprKind::add: return merge_divmod(add(poly(e.args()[0]), poly(e.args()[1])));
      case ExprKind::sub: return merge_divmod(add(poly(e.args()[0]), poly(e.args()[1]), -1));
      case ExprKind::mul: return merge_divmod(mul(poly(e.args()[0]), poly(e.args()[1])));
      default: break;
    }
    Expr atom = simplify_atom(e);
    if (atom.is_constant()) return constant_poly(atom.value());
    if (atom.kind() == ExprKind::add || atom.kind() == ExprKind::sub || atom.kind() == ExprKind::mul) {
      return poly(atom);
    }
    return Poly{Term{1, {atom}}};
  }

  // Non-polynomial nodes with simplified operands.
  Expr simplify_atom(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::dim:
      case ExprKind::var: return e;
      case ExprKind::floordiv:
      case ExprKind::mod: return divmod(e.kind(), poly(e.args()[0]), poly(e.args()[1]));
      case ExprKind::min:
      case ExprKind::max: {
        Expr a = run(e.args()[0]), b = run(e.args()[1]);
        bool is_min = e.kind() == ExprKind::min;
        if (same_expr(a, b)) return a;
        if (a.is_constant() && b.is_constant()) return is_min ? std::min(a.value(), b.value()) : std::max(a.value(), b.value());
        auto d = sign_of(add(poly(a), poly(b), -1));  // a - b
        if (d && *d <= 0) return is_min ? a : b;
        if (d && *d >= 0) return is_min ? b : a;
        return make_expr(e.kind(), {a, b});
      }
      case ExprKind::lt:
      case ExprKind::le:
      case ExprKind::eq:
      case ExprKind::ne: {
        Expr a = run(e.args()[0]), b = run(e.args()[1]);
        Poly diff = add(poly(a), poly(b), -1);  // a - b
        auto c = poly_constant(diff);
        auto lo = lower(poly_expr(diff)), hi = upper(poly_expr(diff));
        switch (e.kind()) {
          case ExprKind::lt:
            if (hi && *hi < 0) return 1;
            if (lo && *lo >= 0) return 0;
            break;
          case ExprKind::le:
            if (hi && *hi <= 0) return 1;
            if (lo && *lo > 0) return 0;
            break;
          case ExprKind::eq:
            if (c) return *c == 0 ? 1 : 0;
            if ((lo && *lo > 0) || (hi && *hi < 0)) return 0;
            break;
          default:
            if (c) return *c != 0 ? 1 : 0;
            if ((lo && *lo > 0) || (hi && *hi < 0)) return 1;
            break;
        }
        return make_expr(e.kind(), {a, b});
      }
      case ExprKind::select: {
        Expr c = run(e.args()[0]), a = run(e.args()[1]), b = run(e.args()[2]);
        if (c.is_constant()) return c.value() != 0 ? a : b;
        if (same_expr(a, b)) return a;
        return make_expr(ExprKind::select, {c, a, b});
      }
      default: return run(e);
    }
  }

  // floordiv / mod of polynomials a and n (n > 0 by the Expr contract).
  Expr divmod(ExprKind kind, const Poly& a, const Poly& n) {
    bool is_div = kind == ExprKind::floordiv;
    auto nc = poly_constant(n);
    auto ac = poly_constant(a);
    if (nc && *nc == 1) return is_div ? poly_expr(a) : Expr(0);
    if (nc && ac && *nc > 0) {
      Expr e = make_expr(kind, {*ac, *nc});
      return evaluate(e, {}, {});
    }
    if (a.empty()) return 0;
    // Split a = Q * n + R where n (a single term) divides the terms of Q.
    Poly q, r;
    if (n.size() == 1 && n[0].coeff > 0) {
      for (const Term& t : a) {
        auto rest = divide_term(t, n[0]);
        if (rest) {
          q.push_back(*rest);
        } else {
          r.push_back(t);
        }
      }
    } else {
      r = a;
    }
    q = normalize(std::move(q));
    r = normalize(std::move(r));
    Expr n_expr = poly_expr(n);
    Expr r_expr = poly_expr(r);
    bool r_in_range = r.empty() || provably_below(r, n);
    if (!r_in_range && n.size() == 1) {
      if (auto e = common_factor(kind, q, r, n[0])) return *e;
    }
    if (is_div) {
      Expr rest = r.empty() || r_in_range ? Expr(0) : nested_div(r_expr, n);
      if (q.empty()) return rest;
      return poly_expr(add(q, poly(rest)));
    }
    if (r_in_range) return r_expr;
    return make_expr(ExprKind::mod, {r_expr, n_expr});
  }

  // With n = g * m and R = g * A + B, 0 <= B < g: floordiv(Q*n + R, n) =
  // Q + floordiv(A, m) and mod(R, n) = g * mod(A, m) + B (a row index
  // v0 * 768 + v1 divided by d1 * 768 is v0 floordiv d1).
  std::optional<Expr> common_factor(ExprKind kind, const Poly& q, const Poly& r, const Term& n) {
    std::vector<Term> candidates;
    if (n.atoms.empty()) {  // a constant n: the gcds of the coefficients with it (33 of 231 = 7 * 33)
      for (const Term& t : r) {
        int64_t g = std::gcd(t.coeff, n.coeff);
        if (g > 1 && g < n.coeff) candidates.push_back(Term{g, {}});
      }
    }
    if (n.coeff > 1 && !n.atoms.empty()) candidates.push_back(Term{n.coeff, {}});
    for (size_t i = 0; i < n.atoms.size(); ++i) {
      Term without{n.coeff, n.atoms};
      without.atoms.erase(without.atoms.begin() + static_cast<std::ptrdiff_t>(i));
      candidates.push_back(without);
      candidates.push_back(Term{1, {n.atoms[i]}});
    }
    for (const Term& g : candidates) {
      if (g.atoms.empty() && g.coeff <= 1) continue;
      auto m = divide_term(n, g);
      if (!m) continue;
      Poly a, b;
      for (const Term& t : r) {
        auto rest = divide_term(t, g);
        if (rest) {
          a.push_back(*rest);
        } else {
          b.push_back(t);
        }
      }
      a = normalize(std::move(a));
      b = normalize(std::move(b));
      if (a.empty() || !(b.empty() || provably_below(b, Poly{g}))) continue;
      Expr inner = divmod(kind, a, Poly{*m});
      if (kind == ExprKind::floordiv) return poly_expr(add(q, poly(inner)));
      return poly_expr(add(mul(Poly{g}, poly(inner)), b));
    }
    return std::nullopt;
  }

  // floordiv(x, n), folding floordiv(floordiv(y, a), n) into floordiv(y, a * n).
  Expr nested_div(const Expr& x, const Poly& n) {
    if (x.kind() == ExprKind::floordiv) {
      Poly inner = poly(x.args()[1]);
      return make_expr(ExprKind::floordiv, {x.args()[0], poly_expr(mul(inner, n))});
    }
    return make_expr(ExprKind::floordiv, {x, poly_expr(n)});
  }

  // t / d when d's coefficient and atoms divide t's.
  static std::optional<Term> divide_term(const Term& t, const Term& d) {
    if (d.coeff == 0 || t.coeff % d.coeff != 0) return std::nullopt;
    std::vector<Expr> rest = t.atoms;
    for (const Expr& a : d.atoms) {
      auto it = std::find_if(rest.begin(), rest.end(), [&](const Expr& x) { return expr_cmp(x, a) == 0; });
      if (it == rest.end()) return std::nullopt;
      rest.erase(it);
    }
    return Term{t.coeff / d.coeff, rest};
  }

  // (x floordiv n) * n * F + (x mod n) * F -> x * F (Note [Index expressions as polynomials]).
  Poly merge_divmod(Poly p) {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; !changed && i < p.size(); ++i) {
        for (size_t j = 0; !changed && j < p[i].atoms.size(); ++j) {  // p may be replaced below: test changed first
          const Expr& m = p[i].atoms[j];
          if (m.kind() != ExprKind::mod) continue;
          Term f{p[i].coeff, p[i].atoms};
          f.atoms.erase(f.atoms.begin() + static_cast<std::ptrdiff_t>(j));
          Poly x = poly(m.args()[0]);
          Poly n = poly(m.args()[1]);
          Expr div = simplify_atom(floordiv(m.args()[0], m.args()[1]));
          Term fd = f;
          fd.atoms.push_back(div);
          Poly want = mul(n, Poly{fd});  // the (x floordiv n) * n * F terms
          if (want.empty() || !contains_all(p, want)) continue;
          Poly rest = add(p, want, -1);
          Term fm = f;
          fm.atoms.push_back(m);
          rest = add(rest, Poly{fm}, -1);
          p = add(rest, mul(x, Poly{f}));
          changed = true;
        }
      }
    }
    return p;
  }

  static bool contains_all(const Poly& p, const Poly& want) {
    for (const Term& w : want) {
      bool found = false;
      for (const Term& t : p) {
        if (same_atoms(t.atoms, w.atoms)) {
          found = t.coeff == w.coeff;
          break;
        }
      }
      if (!found) return false;
    }
    return true;
  }

  // ---- bounds ----

  bool nonneg(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::constant: return e.value() >= 0;
      case ExprKind::dim:
      case ExprKind::var:
      case ExprKind::mod:
      case ExprKind::lt:
      case ExprKind::le:
      case ExprKind::eq:
      case ExprKind::ne: return true;
      case ExprKind::floordiv:
      case ExprKind::add:
      case ExprKind::mul:
      case ExprKind::min: return nonneg(e.args()[0]) && nonneg(e.args()[1]);
      case ExprKind::max: return nonneg(e.args()[0]) || nonneg(e.args()[1]);
      case ExprKind::select: return nonneg(e.args()[1]) && nonneg(e.args()[2]);
      case ExprKind::sub: {
        auto lo = lower(e);
        return lo && *lo >= 0;
      }
    }
    return false;
  }

  bool poly_nonneg(const Poly& p) {
    for (const Term& t : p) {
      if (t.coeff < 0) return false;
      for (const Expr& a : t.atoms) {
        if (!nonneg(a)) return false;
      }
    }
    return true;
  }

  // The sign of a polynomial when provable (-1: <= 0, 1: >= 0, 0: == 0).
  std::optional<int> sign_of(const Poly& p) {
    if (p.empty()) return 0;
    if (poly_nonneg(p)) return 1;
    Poly neg = add(Poly{}, p, -1);
    if (poly_nonneg(neg)) return -1;
    auto lo = lower(poly_expr(p)), hi = upper(poly_expr(p));
    if (lo && *lo >= 0) return 1;
    if (hi && *hi <= 0) return -1;
    return std::nullopt;
  }

  // A symbolic upper bound of a non-negative atom (nullopt: unbounded).
  std::optional<Poly> atom_max(const Expr& a) {
    switch (a.kind()) {
      case ExprKind::dim:
      case ExprKind::constant: return poly(a);
      case ExprKind::var: {
        size_t i = static_cast<size_t>(a.value());
        if (i >= ctx_.var_extents.size() || ctx_.var_extents[i].is_null()) return std::nullopt;
        return add(poly(ctx_.var_extents[i]), constant_poly(1), -1);
      }
      case ExprKind::mod: return add(poly(a.args()[1]), constant_poly(1), -1);
      case ExprKind::lt:
      case ExprKind::le:
      case ExprKind::eq:
      case ExprKind::ne: return constant_poly(1);
      default: return std::nullopt;
    }
  }

  // 0 <= r < n, with r's symbolic maximum (Note [Index expressions as polynomials]).
  bool provably_below(const Poly& r, const Poly& n) {
    if (!poly_nonneg(r)) return false;
    auto rc = poly_constant(r), nc = poly_constant(n);
    if (rc && nc) return *rc < *nc;
    Poly max_r;
    for (const Term& t : r) {
      Poly term = constant_poly(t.coeff);
      for (const Expr& a : t.atoms) {
        auto m = atom_max(a);
        if (!m) return false;
        term = mul(term, *m);
      }
      max_r = add(max_r, term);
    }
    Poly slack = add(add(n, constant_poly(1), -1), max_r, -1);  // n - 1 - max(r)
    if (poly_nonneg(slack)) return true;
    auto lo = lower(poly_expr(slack));
    if (lo && *lo >= 0) return true;
    auto hi_r = upper(poly_expr(r));
    auto lo_n = lower(poly_expr(n));
    return hi_r && lo_n && *hi_r < *lo_n;
  }

  std::optional<int64_t> lower(const Expr& e) { return bound(e, false); }
  std::optional<int64_t> upper(const Expr& e) { return bound(e, true); }

  std::optional<int64_t> bound(const Expr& e, bool up) {
    auto lo = [&](const Expr& x) { return bound(x, false); };
    auto hi = [&](const Expr& x) { return bound(x, true); };
    switch (e.kind()) {
      case ExprKind::constant: return e.value();
      case ExprKind::dim:
        if (up) return std::nullopt;
        return ctx_.dims_positive ? 1 : 0;
      case ExprKind::var: {
        if (!up) return 0;
        size_t i = static_cast<size_t>(e.value());
        if (i >= ctx_.var_extents.size() || ctx_.var_extents[i].is_null()) return std::nullopt;
        auto h = hi(ctx_.var_extents[i]);
        if (!h) return std::nullopt;
        return *h - 1;
      }
      case ExprKind::add: {
        auto a = bound(e.args()[0], up), b = bound(e.args()[1], up);
        if (a && b) return *a + *b;
        return std::nullopt;
      }
      case ExprKind::sub: {
        auto a = bound(e.args()[0], up), b = bound(e.args()[1], !up);
        if (a && b) return *a - *b;
        return std::nullopt;
      }
      case ExprKind::mul: {
        auto al = lo(e.args()[0]), ah = hi(e.args()[0]), bl = lo(e.args()[1]), bh = hi(e.args()[1]);
        if (al && bl && *al >= 0 && *bl >= 0) {
          if (!up) return *al * *bl;
          if (ah && bh) return *ah * *bh;
          return std::nullopt;
        }
        if (!(al && ah && bl && bh)) return std::nullopt;
        int64_t c[4] = {*al * *bl, *al * *bh, *ah * *bl, *ah * *bh};
        return up ? *std::max_element(c, c + 4) : *std::min_element(c, c + 4);
      }
      case ExprKind::floordiv: {
        auto n = e.args()[1];
        if (!n.is_constant() || n.value() <= 0) {
          if (!up && nonneg(e.args()[0])) return 0;
          if (up) {
            auto a = hi(e.args()[0]);
            if (a && nonneg(e.args()[0])) return *a;  // n >= 1
          }
          return std::nullopt;
        }
        auto a = bound(e.args()[0], up);
        if (!a) return std::nullopt;
        return evaluate(floordiv(*a, n), {}, {});
      }
      case ExprKind::mod: {
        if (!up) return 0;
        auto n = hi(e.args()[1]);
        auto a = hi(e.args()[0]);
        if (a && nonneg(e.args()[0]) && (!n || *a < *n)) return *a;
        if (n) return *n - 1;
        return std::nullopt;
      }
      case ExprKind::min:
      case ExprKind::max: {
        auto a = bound(e.args()[0], up), b = bound(e.args()[1], up);
        bool take_min = (e.kind() == ExprKind::min);
        if (a && b) return take_min ? std::min(*a, *b) : std::max(*a, *b);
        if (take_min == up) return a ? a : b;  // min's upper / max's lower: one side is enough
        return std::nullopt;
      }
      case ExprKind::lt:
      case ExprKind::le:
      case ExprKind::eq:
      case ExprKind::ne: return up ? 1 : 0;
      case ExprKind::select: {
        auto a = bound(e.args()[1], up), b = bound(e.args()[2], up);
        if (a && b) return up ? std::max(*a, *b) : std::min(*a, *b);
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

 private:
  const SimplifyContext& ctx_;
};

}  // namespace

Expr simplify(const Expr& e, const SimplifyContext& ctx) {
  OAR_CHECK_ARG(!e.is_null(), "loop IR: simplify of a null expression");
  Simplifier s(ctx);
  return s.run(e);
}

std::optional<int64_t> lower_bound(const Expr& e, const SimplifyContext& ctx) {
  Simplifier s(ctx);
  return s.lower(s.run(e));
}

std::optional<int64_t> upper_bound(const Expr& e, const SimplifyContext& ctx) {
  Simplifier s(ctx);
  return s.upper(s.run(e));
}

bool provably_in_range(const Expr& e, const Expr& n, const SimplifyContext& ctx) {
  Simplifier s(ctx);
  return s.provably_below(s.poly(e), s.poly(n));
}

}  // namespace oar::compiler
