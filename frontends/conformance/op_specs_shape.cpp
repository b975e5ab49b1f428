// Op cases of matmul and the manipulation ops.
#include "op_specs_util.h"

namespace oar_conformance::specs {

namespace {

OpSpec matmul_spec() {
  return {
      "matmul", kFloatComplex, 10, [](DType dt, Tier tier, uint32_t& seed) {
        struct C {
          Shape a, b;
          bool ta, tb;
        };
        std::vector<C> cs = {{{17, 33}, {33, 5}, false, false}, {{33, 17}, {5, 33}, true, true}};
        if (tier != Tier::smoke)
          cs.insert(cs.end(), {{{33, 17}, {33, 5}, true, false},
                               {{17, 33}, {5, 33}, false, true},
                               {{2, 1, 7, 9}, {3, 9, 4}, false, false},
                               {{9}, {9, 4}, false, false},
                               {{7, 9}, {9}, false, false},
                               {{1, 1}, {1, 1}, false, false},
                               {{0, 3}, {3, 4}, false, false},
                               {{3, 0}, {0, 4}, false, false}});
        if (tier == Tier::full) cs.push_back({{64, 129}, {129, 65}, false, false});
        std::vector<OpCase> cases;
        for (const auto& c : cs) {
          bool ta = c.ta, tb = c.tb;
          cases.push_back(
              {"a " + str(c.a) + (ta ? "^T" : "") + ", b " + str(c.b) + (tb ? "^T" : ""),
               {random(c.a, dt, -1, 1, seed), random(c.b, dt, -1, 1, seed)},
               [=](const Inputs& in, const oar::Device&) {
                 return oar::matmul(in[0], in[1], ta, tb);
               }});
        }
        return cases;
      }};
}

// Every dtype cast to every dtype, in ranges both can hold.

}  // namespace

void add_shape_specs(std::vector<OpSpec>& s) {
  using oar::Device;
  s.push_back(matmul_spec());
  // ---- complex <-> (real, imaginary) pairs ----
  s.push_back(shaped("as_real", kComplex, [](Tier t) {
    return smoke_cut(t, {{{3, 4}, "", [](const Tensor& x) { return oar::as_real(x); }},
                         {{4, 3}, "of x^T", [](const Tensor& x) { return oar::as_real(oar::transpose(x, {1, 0})); }},
                         {{0, 2}, "", [](const Tensor& x) { return oar::as_real(x); }}});
  }));
  s.push_back(shaped("as_complex", kComposite, [](Tier t) {
    return smoke_cut(t, {{{3, 2}, "", [](const Tensor& x) { return oar::as_complex(x); }},
                         {{2, 5, 2}, "", [](const Tensor& x) { return oar::as_complex(x); }},
                         {{0, 2}, "", [](const Tensor& x) { return oar::as_complex(x); }}});
  }));
  // ---- manipulation ----
  s.push_back(shaped("transpose", kAllComplex, [](Tier t) {
    return smoke_cut(t, {{{3, 4},
                          "perm [1, 0]",
                          [](const Tensor& x) {
                            return oar::transpose(x, {1, 0});
                          }},
                         {{2, 3, 4},
                          "perm [2, 0, 1]",
                          [](const Tensor& x) {
                            return oar::transpose(x, {2, 0, 1});
                          }},
                         {{1, 5, 1},
                          "perm [2, 1, 0]",
                          [](const Tensor& x) {
                            return oar::transpose(x, {2, 1, 0});
                          }},
                         {{0, 3}, "perm [1, 0]", [](const Tensor& x) {
                            return oar::transpose(x, {1, 0});
                          }}});
  }));
  s.push_back(shaped("broadcast_to", kAllComplex, [](Tier t) {
    return smoke_cut(t, {{{1}, "to [5]", [](const Tensor& x) { return oar::broadcast_to(x, {5}); }},
                         {{3, 1},
                          "to [3, 4]",
                          [](const Tensor& x) {
                            return oar::broadcast_to(x, {3, 4});
                          }},
                         {{2, 1, 4},
                          "to [2, 3, 4]",
                          [](const Tensor& x) {
                            return oar::broadcast_to(x, {2, 3, 4});
                          }},
                         {{},
                          "to [2, 2]",
                          [](const Tensor& x) {
                            return oar::broadcast_to(x, {2, 2});
                          }},
                         {{3}, "to [0, 3]", [](const Tensor& x) {
                            return oar::broadcast_to(x, {0, 3});
                          }}});
  }));
  s.push_back(shaped("slice", kAllComplex, [](Tier t) {
    return smoke_cut(
        t, {{{10}, "[1:8:2]", [](const Tensor& x) { return oar::slice(x, {0}, {1}, {8}, {2}); }},
            {{5, 6},
             "[:, 4:0:-1]",
             [](const Tensor& x) { return oar::slice(x, {1}, {4}, {0}, {-1}); }},
            {{4, 5, 6},
             "[1:3, :, 0:6:3]",
             [](const Tensor& x) {
               return oar::slice(x, {0, 2}, {1, 0}, {3, 6}, {1, 3});
             }},
            {{3, 0}, "[0:2]", [](const Tensor& x) { return oar::slice(x, {0}, {0}, {2}); }},
            {{7}, "[-3:]", [](const Tensor& x) { return oar::slice(x, {0}, {-3}, {100}); }}});
  }));
  s.push_back({"concat", kAllComplex, 1, [](DType dt, Tier tier, uint32_t& seed) {
                 std::vector<std::pair<std::vector<Shape>, int64_t>> cs = {
                     {{{2, 3}, {4, 3}}, 0}, {{{2, 3}, {2, 1}, {2, 0}}, 1}};
                 if (tier != Tier::smoke)
                   cs.insert(cs.end(), {{{{5}}, 0}, {{{2, 2, 3}, {2, 1, 3}}, -2}});
                 std::vector<OpCase> cases;
                 for (const auto& [shapes, axis] : cs) {
                   OpCase c{"axis " + std::to_string(axis),
                            {},
                            [axis = axis](const Inputs& in, const Device&) {
                              return oar::concat(in, axis);
                            }};
                   for (const auto& sh : shapes)
                     c.inputs.push_back(random(sh, dt, -9, 9, seed)), c.label += " " + str(sh);
                   cases.push_back(std::move(c));
                 }
                 return cases;
               }});
  s.push_back(shaped("pad", kAllComplex, [](Tier t) {
    return smoke_cut(t, {{{3, 4},
                          "pads [1, 0, 2, 1] value 1",
                          [](const Tensor& x) {
                            return oar::pad(x, {1, 0, 2, 1}, 1);
                          }},
                         {{5},
                          "pads [0, 3] value -1",
                          [](const Tensor& x) {
                            return oar::pad(x, {0, 3}, -1);
                          }},
                         {{0, 2}, "pads [1, 1, 0, 0]", [](const Tensor& x) {
                            return oar::pad(x, {1, 1, 0, 0});
                          }}});
  }));
  s.push_back({"gather", kNumericComplex, 1, [](DType dt, Tier tier, uint32_t& seed) {
                 std::vector<OpCase> cases;
                 struct C {
                   Shape x;
                   int64_t n, axis;
                   DType index;
                 };
                 std::vector<C> cs = {{{5, 4}, 3, 0, DType::i64}, {{3, 7}, 10, 1, DType::i32}};
                 if (tier != Tier::smoke)
                   cs.insert(cs.end(), {{{5}, 0, 0, DType::i64}, {{2, 3, 4}, 5, 2, DType::i64}});
                 for (const auto& c : cs) {
                   int64_t axis = c.axis;
                   cases.push_back({"x " + str(c.x) + " index [" + std::to_string(c.n) + "] axis " +
                                        std::to_string(axis),
                                    {random(c.x, dt, -9, 9, seed),
                                     indices(c.n, c.x[static_cast<size_t>(axis)], c.index, seed)},
                                    [axis](const Inputs& in, const Device&) {
                                      return oar::gather(in[0], in[1], axis);
                                    }});
                 }
                 return cases;
               }});
  s.push_back({"scatter_add", kNumeric, 1, [](DType dt, Tier tier, uint32_t& seed) {
                 std::vector<OpCase> cases;
                 struct C {
                   Shape x;
                   int64_t n, axis;
                   Shape updates;
                 };
                 std::vector<C> cs = {{{5, 4}, 6, 0, {6, 4}}, {{3, 7}, 4, 1, {3, 4}}};
                 if (tier != Tier::smoke) cs.push_back({{4}, 9, 0, {9}});
                 for (const auto& c : cs) {
                   int64_t axis = c.axis;
                   cases.push_back({"x " + str(c.x) + " index [" + std::to_string(c.n) + "] axis " +
                                        std::to_string(axis),
                                    {random(c.x, dt, -9, 9, seed),
                                     indices(c.n, c.x[static_cast<size_t>(axis)], DType::i64, seed),
                                     random(c.updates, dt, -9, 9, seed)},
                                    [axis](const Inputs& in, const Device&) {
                                      return oar::scatter_add(in[0], in[1], in[2], axis);
                                    }});
                 }
                 return cases;
               }});
}

}  // namespace oar_conformance::specs
