// The static-mode executor against eager mode, op by op, on the mock (whose
// asynchronous streams expose missing synchronization) and the cpu.
#include <cmath>
#include <set>

#include "oar/ir/executor.h"
#include "oar/ir/interpreter.h"
#include "oar/ir/trace.h"
#include "test_util.h"

using oar::Device;
using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::test_devices;
using oar_test::values;
namespace ir = oar::ir;

namespace {

Tensor f32(const std::vector<float>& v, const Shape& s, const Device& d) {
  return Tensor::from_vector(v, s, d);
}

// Appends `op` with result types from its meta rule (static operand types).
ir::Value* append(ir::Program& p, const std::string& op, std::vector<ir::Value*> operands,
                  oar::Attrs attrs = {}) {
  const oar::OpDef& def = oar::OpRegistry::instance().get(op);
  std::vector<oar::TensorMeta> metas;
  for (const ir::Value* v : operands) metas.push_back({v->type().dtype, v->type().dims});
  std::vector<ir::TensorType> types;
  for (const auto& m : def.meta(def, metas, attrs)) types.push_back({m.dtype, m.shape});
  return p.append(def, std::move(operands), std::move(attrs), types)->result(0);
}

std::set<std::string> op_names(const ir::Program& p) {
  std::set<std::string> names;
  for (const auto& op : p.block().ops()) names.insert(op->name());
  return names;
}

// Deterministic values in [-1, 1).
Tensor random(const Shape& shape, const Device& d, uint64_t seed) {
  return oar::uniform(shape, -1.0, 1.0, DType::f32, d, seed);
}

}  // namespace

TEST_CASE("executor: an elementwise chain equals hand-computed values and eager mode") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    ir::Program p;
    ir::Value* x = p.add_input("x", {DType::f32, {2, 3}});
    ir::Value* y = p.add_input("y", {DType::f32, {2, 3}});
    ir::Value* e = append(p, "exp", {x});
    ir::Value* m = append(p, "mul", {e, y});
    ir::Value* a = append(p, "add", {m, x});
    p.add_output(append(p, "neg", {a}), "out");
    p.add_output(m, "product");

    std::vector<float> xv{0, 1, -1, 0.5f, 2, -2}, yv{1, 2, 3, -1, 0.5f, 4};
    Tensor X = f32(xv, {2, 3}, dev), Y = f32(yv, {2, 3}, dev);
    ir::Executor ex(p, dev);
    for (int run = 0; run < 3; ++run) {
      std::vector<Tensor> out = ex.run(std::vector<Tensor>{X, Y});
      REQUIRE(out.size() == 2);
      std::vector<double> want, prod;
      for (size_t i = 0; i < xv.size(); ++i) {
        prod.push_back(std::exp(double(xv[i])) * yv[i]);
        want.push_back(-(prod.back() + xv[i]));
      }
      check_close(out[0], want);
      check_close(out[1], prod);
      CHECK(out[0].shape() == Shape{2, 3});
      CHECK(out[0].device() == dev);
      check_close(values(out[0]), values(oar::neg(oar::exp(X) * Y + X)));
    }
    // Four kernels, one stream; the intermediates live in the arena.
    CHECK(ex.instructions().size() == 4);
    CHECK(ex.num_streams() == 1);
    const ir::Block& compiled = ex.program().block();
    CHECK(ex.memory_plan().buffers.at(compiled.op(2).result()).placement ==
          ir::Placement::arena);  // add
    CHECK(ex.memory_plan().buffers.at(compiled.op(1).result()).placement ==
          ir::Placement::output);  // mul
    (void)a;
  }
}

TEST_CASE(
    "executor: a traced MLP (matmul, add, relu) equals eager; relu is decomposed where it has no "
    "kernel") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    Tensor w1 = random({4, 8}, dev, 1), b1 = random({8}, dev, 2), w2 = random({8, 3}, dev, 3),
           b2 = random({3}, dev, 4);
    auto mlp = [&](const std::vector<Tensor>& in) {
      Tensor h = oar::relu(oar::matmul(in[0], w1) + b1);
      return std::vector<Tensor>{oar::matmul(h, w2) + b2};
    };
    ir::Trace t = ir::trace(mlp, {{{5, 4}, DType::f32, "x"}},
                            {{"w1", w1}, {"b1", b1}, {"w2", w2}, {"b2", b2}}, dev);
    ir::Executor ex(t.program, dev);
    ex.set_parameters(t.parameters);
    Tensor x = random({5, 4}, dev, 7);
    std::vector<Tensor> out = ex.run(std::vector<Tensor>{x});
    CHECK(out[0].shape() == Shape{5, 3});
    check_close(values(out[0]), values(mlp({x})[0]));
    // The cpu has a fused relu kernel; the mock runs relu's decomposition.
    bool has_relu = op_names(ex.program()).count("relu") > 0;
    CHECK(has_relu == (dev.type == "cpu"));
    CHECK(op_names(t.program).count("relu") == 1);  // the caller's program is untouched
  }
}

TEST_CASE(
    "executor: composite ops without a fused kernel run their decomposition and match eager") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    Tensor w = random({6}, dev, 11), b = random({6}, dev, 12);
    auto fn = [&](const std::vector<Tensor>& in) {
      Tensor y = oar::layer_norm(in[0], w, b);
      return std::vector<Tensor>{oar::softmax(y), oar::gelu(y), oar::mean(y, {1})};
    };
    ir::Trace t = ir::trace(fn, {{{4, 6}, DType::f32, "x"}}, {}, dev);
    ir::Executor ex(t.program, dev);
    Tensor x = random({4, 6}, dev, 13);
    std::vector<Tensor> got = ex.run(std::vector<Tensor>{x});
    std::vector<Tensor> want = fn({x});
    for (size_t i = 0; i < want.size(); ++i)
      check_close(values(got[i]), values(want[i]), 1e-5, 1e-4);
    std::set<std::string> names = op_names(ex.program());
    // mean is decomposed everywhere; the fused softmax/gelu/layer_norm exist only on the cpu.
    CHECK(names.count("mean") == 0);
    for (const char* fused : {"softmax", "gelu", "layer_norm"})
      CHECK(names.count(fused) == (dev.type == "cpu" ? 1u : 0u));
    // Softmax rows sum to 1.
    check_close(values(oar::sum(got[0], {1})), {1, 1, 1, 1});
  }
}

TEST_CASE("executor: reshape results alias their operand's memory") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    ir::Program p;
    ir::Value* x = p.add_input("x", {DType::f32, {2, 3}});
    ir::Value* r = append(p, "reshape", {x}, {{"shape", std::vector<int64_t>{3, 2}}});
    ir::Value* two = p.add_constant("two", Tensor::from_vector<float>({2}, {}, dev));
    ir::Value* m = append(p, "mul", {r, two});
    ir::Value* flat = append(p, "reshape", {m}, {{"shape", std::vector<int64_t>{6}}});
    ir::Value* s = append(p, "add", {flat, flat});
    p.add_output(s, "sum");
    p.add_output(flat, "flat");
    p.add_output(r, "x_as_3x2");

    ir::Executor ex(p, dev);
    Tensor X = f32({1, 2, 3, 4, 5, 6}, {2, 3}, dev);
    std::vector<Tensor> out = ex.run(std::vector<Tensor>{X});
    check_close(out[0], {4, 8, 12, 16, 20, 24});
    check_close(out[1], {2, 4, 6, 8, 10, 12});
    check_close(out[2], {1, 2, 3, 4, 5, 6});
    CHECK(out[1].shape() == Shape{6});
    CHECK(out[2].shape() == Shape{3, 2});
    const ir::MemoryPlan& plan = ex.memory_plan();
    const ir::Block& compiled = ex.program().block();
    CHECK(plan.buffers.at(compiled.op(0).result()).placement == ir::Placement::alias);  // r
    CHECK(plan.buffers.at(compiled.op(2).result()).placement == ir::Placement::alias);  // flat
    CHECK(plan.buffers.at(compiled.op(1).result()).placement ==
          ir::Placement::output);          // m, aliased by an output
    CHECK(ex.instructions().size() == 2);  // mul and add; the reshapes launch nothing
    // The returned view shares the storage of the output it aliases.
    CHECK(out[2].impl().storage == X.impl().storage);
  }
}

TEST_CASE("executor: two independent branches on two mock streams give eager's results") {
  Device dev{"mock", 0};
  // Large enough that a missing wait would let the join read unfinished data
  // (and the side stream read inputs eager kernels are still writing).
  Shape shape{512, 512};
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = oar::sin(oar::exp(in[0]) * in[0]);
    a = oar::tanh(a * a + a);
    Tensor b = oar::cos(in[1] - in[0]);
    b = oar::sqrt(oar::abs(b * b) + 1.0);
    // b ends on the side stream: reading it needs the end-of-run fence.
    return std::vector<Tensor>{a + b * 2.0, oar::sum(a, {0}), b};
  };
  ir::Trace t = ir::trace(fn, {{shape, DType::f32, "x"}, {shape, DType::f32, "y"}}, {}, dev);
  ir::Executor one(t.program, dev);
  ir::Executor two(t.program, dev, {.num_streams = 2});
  for (int run = 0; run < 5; ++run) {
    // Fresh inputs whose eager kernels may still run when the executor starts,
    // and outputs read at once.
    Tensor x = random(shape, dev, 100 + run), y = random(shape, dev, 200 + run);
    std::vector<Tensor> got = two.run(std::vector<Tensor>{x, y});
    std::vector<std::vector<float>> got_values;
    for (const Tensor& t : got) got_values.push_back(t.to_vector<float>());
    std::vector<Tensor> want = fn({x, y});
    std::vector<Tensor> serial = one.run(std::vector<Tensor>{x, y});
    for (size_t i = 0; i < want.size(); ++i) {
      CHECK(got_values[i] == want[i].to_vector<float>());
      CHECK(serial[i].to_vector<float>() == want[i].to_vector<float>());
    }
  }
  CHECK(one.num_streams() == 1);
  CHECK(two.num_streams() == 2);
  std::set<int> streams;
  size_t waits = 0;
  for (const ir::Instruction& ins : two.instructions()) {
    streams.insert(ins.stream);
    waits += ins.wait_for.size();
    for (int w : ins.wait_for)
      CHECK(two.instructions()[static_cast<size_t>(w)].stream != ins.stream);
  }
  CHECK(streams == std::set<int>{0, 1});
  CHECK(waits >= 1);  // the join waits for the other branch
  // The second branch starts without waiting for the first: its first four
  // kernels (sub, cos, mul, abs) wait for nothing (Note [Per-stream arena]).
  int free_running = 0;
  for (const ir::Instruction& ins : two.instructions()) {
    if (ins.stream != 1) continue;
    if (!ins.wait_for.empty()) break;
    ++free_running;
  }
  CHECK(free_running >= 4);
  std::string schedule = two.schedule_str();
  CHECK(schedule.find("[stream 1]") != std::string::npos);
  CHECK(schedule.find(" after #") != std::string::npos);
}

TEST_CASE("executor: a wide program on three streams reusing the arena matches the interpreter") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    Tensor w = random({64, 64}, dev, 5);
    auto fn = [&](const std::vector<Tensor>& in) {
      std::vector<Tensor> branches;
      for (int k = 0; k < 4; ++k) {
        Tensor h = oar::matmul(in[0] * double(k + 1), w);
        h = oar::tanh(h) + oar::exp(h * 0.01);
        h = oar::matmul(h, w) - in[0];
        branches.push_back(oar::softmax(h));
      }
      Tensor total = branches[0];
      for (int k = 1; k < 4; ++k) total = total + branches[static_cast<size_t>(k)] * double(k);
      return std::vector<Tensor>{total, oar::max(branches[3], {1})};
    };
    ir::Trace t = ir::trace(fn, {{{128, 64}, DType::f32, "x"}}, {}, dev);
    ir::Executor ex(t.program, dev, {.num_streams = 3});
    for (int run = 0; run < 4; ++run) {
      Tensor x = random({128, 64}, dev, 300 + run);
      std::vector<Tensor> got = ex.run(std::vector<Tensor>{x});
      std::vector<Tensor> want = ir::interpret(ex.program(), std::vector<Tensor>{x}, {});
      for (size_t i = 0; i < got.size(); ++i) CHECK(values(got[i]) == values(want[i]));
    }
    // cpu has no streams or events (Note [CPU streams are synchronous]): one stream.
    CHECK(ex.num_streams() == (dev.type == "cpu" ? 1 : 3));
    // Intermediates share bytes: the plan's peak is below one buffer each.
    CHECK(ex.memory_plan().arena_bytes < ex.memory_plan().naive_bytes);
  }
}

TEST_CASE("executor: new input shapes replan; a dynamic batch of zero gives an empty result") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    Tensor w = random({4, 3}, dev, 21), b = random({3}, dev, 22);
    auto fn = [&](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{oar::relu(oar::matmul(oar::exp(in[0]), w) + b) * 3.0};
    };
    ir::Trace t = ir::trace(fn, {{{-1, 4}, DType::f32, "x"}}, {}, dev);
    REQUIRE_FALSE(t.specialized);
    int streams = dev.type == "mock" ? 2 : 1;  // also replans a schedule over two streams
    ir::Executor ex(t.program, dev, {.num_streams = streams});
    int64_t naive_for_2 = 0;
    size_t instructions_for_2 = 0;
    for (int64_t batch : {2, 5, 2, 0, 7}) {
      INFO("batch " << batch);
      Tensor x = random({batch, 4}, dev, 40 + static_cast<uint64_t>(batch));
      std::vector<Tensor> out = ex.run(std::vector<Tensor>{x});
      CHECK(out[0].shape() == Shape{batch, 3});
      if (batch > 0) check_close(values(out[0]), values(fn({x})[0]));
      if (batch == 2)
        naive_for_2 = ex.memory_plan().naive_bytes, instructions_for_2 = ex.instructions().size();
      if (batch == 5) CHECK(ex.memory_plan().naive_bytes > naive_for_2);
      // Only ops with elements launch: the scalar 3.0 (full) but no [0, n] result.
      if (batch == 0) CHECK(ex.instructions().size() < instructions_for_2);
      // relu's decomposition needs concrete sizes: the mock compiles per shape.
      if (dev.type == "mock") CHECK(op_names(ex.program()).count("relu") == 0);
    }
  }
}

TEST_CASE("executor: updates rebind parameters after each run") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    Tensor w0 = f32({1, 2, 3}, {3}, dev);
    auto step = [&](const std::vector<Tensor>& in) {
      Tensor next = w0 - in[0] * 0.5;
      return std::vector<Tensor>{next, oar::sum(next * next)};
    };
    ir::Trace t = ir::trace(step, {{{3}, DType::f32, "g"}}, {{"w", w0}}, dev);
    t.program.add_update("w", t.program.outputs()[0].value);
    ir::Executor ex(t.program, dev);
    ex.set_parameters(t.parameters);
    Tensor g = f32({2, 2, 2}, {3}, dev);
    std::vector<Tensor> out = ex.run(std::vector<Tensor>{g});
    check_close(out[0], {0, 1, 2});
    check_close(out[1], {5});
    check_close(ex.parameters().at("w"), {0, 1, 2});
    out = ex.run(std::vector<Tensor>{g});  // continues from the updated w
    check_close(out[0], {-1, 0, 1});
    check_close(out[1], {2});
    check_close(ex.parameters().at("w"), {-1, 0, 1});
    check_close(w0, {1, 2, 3});  // the caller's tensor is never written
    ex.set_parameter("w", f32({10, 10, 10}, {3}, dev));
    check_close(ex.run(std::vector<Tensor>{g})[0], {9, 9, 9});
  }
}

TEST_CASE("executor: wrong inputs and parameters are errors naming them") {
  Device dev{"cpu", 0};
  ir::Program p;
  ir::Value* x = p.add_input("x", {DType::f32, {ir::kDynamic, 4}});
  ir::Value* w = p.add_parameter("w", {DType::f32, {4}});
  p.add_output(p.append(oar::OpRegistry::instance().get("mul"), {x, w}, {},
                        {ir::TensorType{DType::f32, {ir::kDynamic, 4}}})
                   ->result(0));
  ir::Executor ex(p, dev);
  Tensor good = oar::ones({2, 4}, DType::f32, dev);

  std::string msg = error_of([&] { ex.run(std::vector<Tensor>{good}); });
  CHECK(msg.find("parameter 'w'") != std::string::npos);
  CHECK(msg.find("not bound") != std::string::npos);

  msg = error_of([&] { ex.set_parameter("v", oar::ones({4}, DType::f32, dev)); });
  CHECK(msg.find("no parameter 'v'") != std::string::npos);
  CHECK(msg.find("w") != std::string::npos);
  // A whole state dict may carry tensors the program no longer uses.
  CHECK(error_of([&] { ex.set_parameters({{"v", oar::ones({4}, DType::f32, dev)}}); }).empty());
  msg = error_of([&] { ex.set_parameter("w", oar::ones({5}, DType::f32, dev)); });
  CHECK(msg.find("'w' expects f32[4] but got f32[5]") != std::string::npos);
  ex.set_parameter("w", oar::full({4}, 2.0, DType::f32, dev));

  msg = error_of([&] { ex.run(std::vector<Tensor>{}); });
  CHECK(msg.find("takes 1 input (x) but 0 were given") != std::string::npos);
  msg = error_of([&] { ex.run(std::vector<Tensor>{good, good}); });
  CHECK(msg.find("but 2 were given") != std::string::npos);
  msg = error_of([&] { ex.run(std::vector<Tensor>{oar::ones({2, 4}, DType::f64, dev)}); });
  CHECK(msg.find("input 'x' expects f32[-1, 4] but got f64[2, 4] (the dtype differs)") !=
        std::string::npos);
  msg = error_of([&] { ex.run(std::vector<Tensor>{oar::ones({2, 5}, DType::f32, dev)}); });
  CHECK(msg.find("input 'x' expects f32[-1, 4] but got f32[2, 5] (a static dim differs)") !=
        std::string::npos);
  msg = error_of([&] { ex.run(std::vector<Tensor>{oar::ones({8}, DType::f32, dev)}); });
  CHECK(msg.find("got f32[8] (the rank differs)") != std::string::npos);
  msg = error_of([&] { ex.run(std::vector<Tensor>{Tensor()}); });
  CHECK(msg.find("input 'x'") != std::string::npos);

  // After the errors the executor still runs.
  check_close(ex.run(std::vector<Tensor>{good})[0], std::vector<double>(8, 2.0));
  // Inputs on another device are moved to the executor's.
  check_close(ex.run(std::vector<Tensor>{oar::ones({1, 4}, DType::f32, Device{"mock", 0})})[0],
              {2, 2, 2, 2});
}

TEST_CASE(
    "executor: an op without a kernel on the device is an error naming op, dtypes and device") {
  // No device has a matmul kernel for bool, and matmul is a primitive.
  ir::Program p;
  ir::Value* a = p.add_input("a", {DType::boolean, {2, 2}});
  p.add_output(p.append(oar::OpRegistry::instance().get("matmul"), {a, a},
                        {{"transpose_a", false}, {"transpose_b", false}},
                        {ir::TensorType{DType::boolean, {2, 2}}})
                   ->result(0));
  for (const Device& dev : test_devices()) {
    std::string msg = error_of([&] { ir::Executor ex(p, dev); });
    INFO(msg);
    CHECK(msg.find("matmul") != std::string::npos);
    CHECK(msg.find("'" + dev.type + "'") != std::string::npos);
    CHECK(msg.find("bool") != std::string::npos);
  }
}

TEST_CASE("executor: outputs may be inputs, parameters and constants themselves, and repeat") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    ir::Program p;
    ir::Value* x = p.add_input("x", {DType::f32, {2}});
    ir::Value* w = p.add_parameter("w", {DType::f32, {2}});
    ir::Value* c = p.add_constant("c", f32({7, 8}, {2}, dev));
    ir::Value* y = append(p, "add", {x, w});
    p.add_output(x, "x");
    p.add_output(w, "w");
    p.add_output(c, "c");
    p.add_output(y, "y");
    p.add_output(y, "y_again");
    ir::Executor ex(p, dev);
    ex.set_parameter("w", f32({10, 20}, {2}, dev));
    Tensor X = f32({1, 2}, {2}, dev);
    std::vector<Tensor> out = ex.run(std::vector<Tensor>{X});
    REQUIRE(out.size() == 5);
    CHECK(out[0].impl_ptr() == X.impl_ptr());  // the caller's tensor, not a copy
    check_close(out[1], {10, 20});
    check_close(out[2], {7, 8});
    check_close(out[3], {11, 22});
    CHECK(out[4].impl_ptr() == out[3].impl_ptr());
    // Each run returns fresh outputs: earlier results stay valid.
    std::vector<Tensor> again = ex.run(std::vector<Tensor>{f32({0, 0}, {2}, dev)});
    check_close(again[3], {10, 20});
    check_close(out[3], {11, 22});
  }
}

TEST_CASE("executor: a program without inputs runs its creation ops on the executor's device") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    auto fn = [&](const std::vector<Tensor>&) {
      return std::vector<Tensor>{oar::arange(0, 4, 1, DType::f32, dev) * 2.0};
    };
    ir::Trace t = ir::trace(fn, {}, {}, dev);
    ir::Executor ex(t.program, dev, {.num_streams = 2});
    std::vector<Tensor> out = ex.run(std::vector<Tensor>{});
    CHECK(out[0].device() == dev);
    check_close(out[0], {0, 2, 4, 6});
  }
}
