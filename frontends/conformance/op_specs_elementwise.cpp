// Op cases of the elementwise ops that are not generated from the
// registry's domains (op_specs_registry.cpp): where, cast; and of the
// index-returning reductions argmax, argmin.
#include "op_specs_util.h"

namespace oar_conformance::specs {

namespace {

OpSpec cast_spec() {
  return {"cast", kAll, 1, [](DType from, Tier tier, uint32_t& seed) {
            std::vector<OpCase> cases;
            for (DType to : kAll) {
              if (tier == Tier::smoke && to != DType::f32 && to != DType::i64) continue;
              bool unsigned_side = from == DType::u8 || to == DType::u8;
              bool small = from == DType::i8 || to == DType::i8 || from == DType::boolean;
              double lo = unsigned_side ? 0
                          : small       ? -100
                                        : -300,
                     hi = unsigned_side || small ? 100 : 300;
              bool integral = to == DType::boolean;  // exact zeros make x != 0 interesting
              HostArray x = random({37}, from, to == DType::boolean ? -2 : lo,
                                   to == DType::boolean ? 2 : hi, seed, integral);
              cases.push_back(
                  {short_dtype(from) + " -> " + short_dtype(to) + " [37]",
                   {x},
                   [to](const Inputs& in, const oar::Device&) { return oar::cast(in[0], to); },
                   is_float(from) && is_float(to)});
            }
            return cases;
          }};
}


OpSpec arg_reduction(const std::string& op, bool is_max) {
  return {op, kNumeric, 1, [=](DType dt, Tier tier, uint32_t& seed) {
            std::vector<OpCase> cases;
            struct C {
              Shape s;
              std::optional<int64_t> axis;
              bool keep;
            };
            std::vector<C> cs = {{{17}, std::nullopt, false}, {{33, 17}, 1, true}};
            if (tier != Tier::smoke)
              cs.insert(cs.end(), {{{33, 17}, 0, false},
                                   {{4, 5, 6}, -1, false},
                                   {{5, 1, 7}, std::nullopt, true},
                                   {{1}, 0, false}});
            for (const auto& c : cs) {
              auto axis = c.axis;
              bool keep = c.keep;
              // Few distinct values: ties, where the first index must win.
              cases.push_back({"x " + str(c.s) +
                                   (axis ? " axis " + std::to_string(*axis) : std::string(" flat")),
                               {random(c.s, dt, -3, 3, seed, true)},
                               [=](const Inputs& in, const oar::Device&) {
                                 return is_max ? oar::argmax(in[0], axis, keep)
                                               : oar::argmin(in[0], axis, keep);
                               },
                               false});
            }
            return cases;
          }};
}


}  // namespace

void add_elementwise_specs(std::vector<OpSpec>& s) {
  using oar::Device;
  s.push_back(
      {"where", kNumeric, 1, [](DType dt, Tier tier, uint32_t& seed) {
         std::vector<std::array<Shape, 3>> shapes = {{Shape{7}, Shape{7}, Shape{7}},
                                                     {Shape{4, 1, 33}, Shape{5, 1}, Shape{33}}};
         if (tier != Tier::smoke)
           shapes.insert(shapes.end(),
                         {{Shape{0, 2}, Shape{2}, Shape{1}}, {Shape{}, Shape{3, 4}, Shape{}}});
         std::vector<OpCase> cases;
         for (const auto& sh : shapes)
           cases.push_back(
               {"cond " + str(sh[0]) + ", x " + str(sh[1]) + ", y " + str(sh[2]),
                {random(sh[0], DType::boolean, 0, 1, seed), random(sh[1], dt, -9, 9, seed),
                 random(sh[2], dt, -9, 9, seed)},
                [](const Inputs& in, const Device&) { return oar::where(in[0], in[1], in[2]); }});
         return cases;
       }});
  s.push_back(cast_spec());
}

void add_reduction_specs(std::vector<OpSpec>& s) {
  s.push_back(arg_reduction("argmax", true));
  s.push_back(arg_reduction("argmin", false));
}

}  // namespace oar_conformance::specs
