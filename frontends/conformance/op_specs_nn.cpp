// Op cases of convolution, pooling, the creation ops and the composite ops
// (relu, sigmoid, silu and mean are generated from the registry:
// op_specs_registry.cpp).
#include "oar/builder.h"
#include "oar/op.h"
#include "op_specs_util.h"

namespace oar_conformance::specs {

void add_nn_specs(std::vector<OpSpec>& s) {
  using oar::Device;
  // ---- convolution and pooling (NCHW); their *_grad kernels run in grad.* ----
  s.push_back({"conv2d", kComposite, 10, [](DType dt, Tier tier, uint32_t& seed) {
                 struct C {
                   Shape x, w;
                   bool bias;
                   std::vector<int64_t> stride, padding, dilation;
                   int64_t groups;
                 };
                 std::vector<C> cs = {{{1, 3, 7, 7}, {4, 3, 3, 3}, true, {1}, {0}, {1}, 1},
                                      {{2, 4, 9, 8}, {6, 2, 3, 2}, false, {2, 1}, {1, 0}, {1}, 2}};
                 if (tier != Tier::smoke)
                   cs.insert(cs.end(), {{{1, 2, 10, 10}, {3, 2, 3, 3}, true, {1}, {2}, {2}, 1},
                                        {{1, 1, 1, 1}, {1, 1, 1, 1}, false, {1}, {0}, {1}, 1},
                                        {{0, 3, 7, 7}, {4, 3, 3, 3}, true, {1}, {1}, {1}, 1}});  // empty batch
                 std::vector<OpCase> cases;
                 for (const auto& c : cs) {
                   OpCase oc{"x " + str(c.x) + " w " + str(c.w) + " stride " + str(c.stride) +
                                 " pad " + str(c.padding) + " dil " + str(c.dilation) + " groups " +
                                 std::to_string(c.groups),
                             {random(c.x, dt, -1, 1, seed), random(c.w, dt, -1, 1, seed)},
                             [c](const Inputs& in, const Device&) {
                               return oar::conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(),
                                                  c.stride, c.padding, c.dilation, c.groups);
                             }};
                   if (c.bias) oc.inputs.push_back(random({c.w[0]}, dt, -1, 1, seed));
                   cases.push_back(std::move(oc));
                 }
                 return cases;
               }});
  for (const char* name : {"max_pool2d", "avg_pool2d"}) {
    bool is_max = std::string(name) == "max_pool2d";
    s.push_back({name, kComposite, 10, [is_max](DType dt, Tier tier, uint32_t& seed) {
                   struct C {
                     Shape x;
                     std::vector<int64_t> k, stride, padding;
                     bool exclusive;
                   };
                   std::vector<C> cs = {{{1, 2, 6, 6}, {2}, {}, {0}, true},
                                        {{2, 3, 7, 5}, {3, 2}, {2, 1}, {1, 0}, true}};
                   if (tier != Tier::smoke) {
                     cs.push_back({{1, 1, 5, 5}, {3}, {2}, {1}, false});
                     cs.push_back({{0, 2, 6, 6}, {2}, {}, {0}, true});  // empty batch
                   }
                   std::vector<OpCase> cases;
                   for (const auto& c : cs)
                     cases.push_back(case1(
                         "x " + str(c.x) + " kernel " + str(c.k) + " stride " + str(c.stride) +
                             " pad " + str(c.padding) + (c.exclusive ? "" : " inclusive"),
                         random(c.x, dt, -3, 3, seed), [c, is_max](const Tensor& x) {
                           return is_max
                                      ? oar::max_pool2d(x, c.k, c.stride, c.padding)
                                      : oar::avg_pool2d(x, c.k, c.stride, c.padding, c.exclusive);
                         }));
                   return cases;
                 }});
  }
  // ---- creation ----
  s.push_back(creation("full", kAll, [](Tier) {
    return std::vector<std::pair<std::string, std::function<Tensor(DType, const Device&)>>>{
        {"[3, 4] = 2.5",
         [](DType dt, const Device& d) {
           return oar::full({3, 4}, 2.5, dt, d);
         }},
        {"[] = -1",
         [](DType dt, const Device& d) { return oar::full({}, dt == DType::u8 ? 1 : -1, dt, d); }},
        {"[0] = 7", [](DType dt, const Device& d) { return oar::full({0}, 7, dt, d); }},
        {"[1031] = 0", [](DType dt, const Device& d) { return oar::full({1031}, 0, dt, d); }}};
  }));
  s.push_back(creation("arange", {DType::f32, DType::f64, DType::i32, DType::i64}, [](Tier) {
    return std::vector<std::pair<std::string, std::function<Tensor(DType, const Device&)>>>{
        {"0..17", [](DType dt, const Device& d) { return oar::arange(0, 17, 1, dt, d); }},
        {"-3..5 step 0.5",
         [](DType dt, const Device& d) {
           return oar::arange(-3, 5, oar::is_floating(dt) ? 0.5 : 2, dt, d);
         }},
        {"10..0 step -3", [](DType dt, const Device& d) { return oar::arange(10, 0, -3, dt, d); }}};
  }));
  for (const char* name : {"uniform", "normal"}) {
    bool is_uniform = std::string(name) == "uniform";
    s.push_back(creation(name, kFloat, [is_uniform](Tier) {
      return std::vector<std::pair<std::string, std::function<Tensor(DType, const Device&)>>>{
          {"[1000] seed 42",
           [is_uniform](DType dt, const Device& d) {
             return is_uniform ? oar::uniform({1000}, -2, 3, dt, d, 42)
                               : oar::normal({1000}, 1, 2, dt, d, 42);
           }},
          {"[3, 7] seed 7 offset 5", [is_uniform](DType dt, const Device& d) {
             return is_uniform ? oar::uniform({3, 7}, 0, 1, dt, d, 7, 5)
                               : oar::normal({3, 7}, 0, 1, dt, d, 7, 5);
           }}};
    }));
  }
  // ---- composite ops ----
  s.push_back(composite("gelu", [](DType dt, Tier tier, uint32_t& seed) {
    std::vector<OpCase> cases;
    for (const Shape& sh : unary_shapes(tier)) {
      cases.push_back(case1("x " + str(sh), random(sh, dt, -4, 4, seed),
                            [](const Tensor& x) { return oar::gelu(x); }));
      cases.push_back(case1("x " + str(sh) + " tanh", random(sh, dt, -4, 4, seed),
                            [](const Tensor& x) { return oar::gelu(x, true); }));
    }
    return cases;
  }));
  for (const char* name : {"softmax", "log_softmax"}) {
    bool log = std::string(name) == "log_softmax";
    s.push_back(composite(name, [log](DType dt, Tier tier, uint32_t& seed) {
      std::vector<std::pair<Shape, int64_t>> cs = {{{17}, -1}, {{3, 33}, -1}};
      if (tier != Tier::smoke) cs.insert(cs.end(), {{{33, 17}, 0}, {{2, 1, 5}, 1}, {{4, 0}, 0}});
      std::vector<OpCase> cases;
      for (const auto& [sh, axis] : cs)
        cases.push_back(case1("x " + str(sh) + " axis " + std::to_string(axis),
                              random(sh, dt, -10, 10, seed), [log, axis = axis](const Tensor& x) {
                                return log ? oar::log_softmax(x, axis) : oar::softmax(x, axis);
                              }));
      return cases;
    }));
  }
  s.push_back(composite("layer_norm", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"x [4, 33], weight, bias",
         {random({4, 33}, dt, -3, 3, seed), random({33}, dt, 0.5, 1.5, seed),
          random({33}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::layer_norm(in[0], in[1], in[2]); }},
        {"x [2, 3, 5] over the last 2 dims, no weight",
         {random({2, 3, 5}, dt, -3, 3, seed)},
         [](const Inputs& in, const oar::Device&) {
           return oar::layer_norm(in[0], Tensor(), Tensor(), 1e-5, 1);
         }},
        {"x [0, 33] (no rows), weight, bias",
         {random({0, 33}, dt, -3, 3, seed), random({33}, dt, 0.5, 1.5, seed),
          random({33}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::layer_norm(in[0], in[1], in[2]); }}};
  }));
  s.push_back(composite("rms_norm", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"x [4, 33], weight",
         {random({4, 33}, dt, -3, 3, seed), random({33}, dt, 0.5, 1.5, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::rms_norm(in[0], in[1]); }},
        {"x [0, 33] (no rows), weight",
         {random({0, 33}, dt, -3, 3, seed), random({33}, dt, 0.5, 1.5, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::rms_norm(in[0], in[1]); }}};
  }));
  s.push_back(composite("linear", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"x [5, 9], w [9, 4], b [4]",
         {random({5, 9}, dt, -1, 1, seed), random({9, 4}, dt, -1, 1, seed),
          random({4}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::linear(in[0], in[1], in[2]); }},
        {"x [0, 9] (no rows), w [9, 4], b [4]",
         {random({0, 9}, dt, -1, 1, seed), random({9, 4}, dt, -1, 1, seed), random({4}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::linear(in[0], in[1], in[2]); }}};
  }));
  s.push_back(composite("var", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        case1("x [33, 17] axes [0] unbiased", random({33, 17}, dt, -2, 2, seed),
              [](const Tensor& x) { return oar::var(x, {0}); }),
        case1("x [4, 5, 6] all, biased", random({4, 5, 6}, dt, -2, 2, seed),
              [](const Tensor& x) { return oar::var(x, {}, false); }),
        case1("x [0, 5] axes [0] (empty: nan)", random({0, 5}, dt, -2, 2, seed),
              [](const Tensor& x) { return oar::var(x, {0}); })};
  }));
  s.push_back(composite("mse_loss", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"[7, 3] mean",
         {random({7, 3}, dt, -2, 2, seed), random({7, 3}, dt, -2, 2, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::mse_loss(in[0], in[1]); }},
        {"[0, 3] sum (empty)",
         {random({0, 3}, dt, -2, 2, seed), random({0, 3}, dt, -2, 2, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::mse_loss(in[0], in[1], "sum"); }}};
  }));
  s.push_back(composite("cross_entropy", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"logits [5, 7], labels i64 [5]",
         {random({5, 7}, dt, -3, 3, seed), indices(5, 7, DType::i64, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::cross_entropy(in[0], in[1]); }},
        {"logits [0, 7], labels i64 [0] (empty), reduction none",
         {random({0, 7}, dt, -3, 3, seed), indices(0, 7, DType::i64, seed)},
         [](const Inputs& in, const oar::Device&) {
           return oar::cross_entropy(in[0], in[1], false, -1, "none");
         }}};
  }));
  s.push_back(composite("embedding", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"ids i64 [6], weight [10, 4]",
         {indices(6, 10, DType::i64, seed), random({10, 4}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::embedding(in[0], in[1]); }}};
  }));
  s.push_back(composite("scaled_dot_product_attention", [](DType dt, Tier, uint32_t& seed) {
    std::vector<OpCase> cases;
    for (bool causal : {false, true})
      cases.push_back(
          {std::string("q, k, v [2, 5, 2, 4]") + (causal ? " causal" : ""),
           {random({2, 5, 2, 4}, dt, -1, 1, seed), random({2, 5, 2, 4}, dt, -1, 1, seed),
            random({2, 5, 2, 4}, dt, -1, 1, seed)},
           [causal](const Inputs& in, const oar::Device&) {
             return oar::scaled_dot_product_attention(in[0], in[1], in[2], causal);
           }});
    return cases;
  }));
  s.push_back(composite("dropout", [](DType dt, Tier, uint32_t& seed) {
    // The mask comes from the global generator: reseed before each device.
    return std::vector<OpCase>{
        case1("x [8, 33] p 0.3", random({8, 33}, dt, -2, 2, seed), [](const Tensor& x) {
          oar::seed(1234);
          return oar::dropout(x, 0.3, true);
        })};
  }));
  // The fused Adam step (Note [Fused Adam]): two parameters, every output
  // flattened into one tensor; with and without amsgrad.
  s.push_back(composite("adam_update", [](DType dt, Tier, uint32_t& seed) {
    std::vector<OpCase> cases;
    for (bool amsgrad : {false, true}) {
      OpCase oc{std::string("params [5, 7] and [33], step 3, weight_decay 0.1") + (amsgrad ? ", amsgrad" : ""),
                {},
                [amsgrad](const Inputs& in, const oar::Device&) {
                  oar::Attrs attrs{{"lr", 0.01}, {"step", int64_t{3}}, {"weight_decay", 0.1}, {"amsgrad", amsgrad}};
                  const oar::OpDef& op = oar::OpRegistry::instance().get("adam_update");
                  std::vector<Tensor> flat;
                  for (const Tensor& t : oar::current_builder().apply(op, in, oar::with_defaults(op, attrs), nullptr))
                    flat.push_back(oar::reshape(t, {-1}));
                  return oar::concat(flat, 0);
                }};
      const double ranges[5][2] = {{-2, 2}, {-1, 1}, {-0.5, 0.5}, {0, 1}, {0, 1}};  // p, g, m, v, vmax
      for (int group = 0; group < (amsgrad ? 5 : 4); ++group)
        for (const Shape& shape : {Shape{5, 7}, Shape{33}})
          oc.inputs.push_back(random(shape, dt, ranges[group][0], ranges[group][1], seed));
      oc.differentiable = false;
      cases.push_back(std::move(oc));
    }
    return cases;
  }));
}

}  // namespace oar_conformance::specs
