// The CUDA kernels of the compiler's test programs, shared by
// test_compiler_codegen_cuda.cpp (NVRTC + ptxas, no GPU) and the GPU
// runner (compiler/tools/gpu_compiler_runner.cpp: load and run them).
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fusion_programs.h"
#include "oar_compiler/codegen_cuda.h"
#include "oar_compiler/fusion.h"
#include "oar_compiler/loop_ir.h"

namespace cuda_test {

using namespace oar;

/// The group's operations as a program: its inputs in order, then its ops,
/// then its outputs (what the compiler pass hands to lower_group).
inline ir::Program extract(const compiler::Group& g) {
  ir::Program sub;
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    map[g.inputs[i]] = sub.add_input("in" + std::to_string(i), g.inputs[i]->type());
  for (const ir::Operation* op : g.ops) {
    std::vector<ir::Value*> operands;
    for (const ir::Value* v : op->operands()) operands.push_back(map.at(v));
    std::vector<ir::TensorType> types;
    for (const ir::Value* r : op->results()) types.push_back(r->type());
    ir::Operation* copy = sub.append(op->def(), operands, op->attrs(), types);
    for (size_t i = 0; i < op->results().size(); ++i) map[op->result(i)] = copy->result(i);
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) sub.add_output(map.at(g.outputs[i]), "out" + std::to_string(i));
  return sub;
}

/// One generated kernel: its group's sub-program (the CPU reference), the
/// Kernel, its symbol and CUDA source.
struct CudaCase {
  std::string program;  ///< "rms_norm", "transformer_block_backward", "rms_norm_bf16", ...
  std::string group;    ///< the group's name
  ir::Program sub;
  compiler::Kernel kernel;
  std::string symbol;
  std::string source;
  std::vector<ir::Value*> inputs;   ///< the group's inputs in the planned program (not owned)
  std::vector<ir::Value*> outputs;  ///< the group's outputs in the planned program (not owned)
};

/// A program of the plan tests and RMSNorm/softmax/layer_norm in other
/// dtypes (the vectorized bf16/f16 paths, f64).
inline std::vector<std::pair<std::string, std::function<ir::Program()>>> cuda_test_programs() {
  auto programs = oar_test::fusion_test_programs();
  for (DType dt : {DType::bf16, DType::f16, DType::f64}) {
    const std::string suffix = "_" + std::string(dtype_short_name(dt));
    programs.push_back({"rms_norm" + suffix, [dt] {
                          return oar_test::traced(
                              [](const std::vector<Tensor>& in) { return std::vector<Tensor>{rms_norm(in[0], in[1])}; },
                              {{{-1, 4096}, dt, "x"}, {{4096}, dt, "w"}});
                        }});
    programs.push_back({"softmax" + suffix, [dt] {
                          return oar_test::traced(
                              [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; },
                              {{{-1, 1000}, dt, "x"}});
                        }});
    programs.push_back({"layer_norm" + suffix, [dt] {
                          return oar_test::traced(
                              [](const std::vector<Tensor>& in) {
                                return std::vector<Tensor>{layer_norm(in[0], in[1], in[2], 1e-5, -1)};
                              },
                              {{{-1, 768}, dt, "x"}, {{768}, dt, "w"}, {{768}, dt, "b"}});
                        }});
  }
  return programs;
}

/// Every group of `program` planned, lowered and emitted; the groups that
/// do not lower are listed in *refused (the lowering tests check those).
inline std::vector<CudaCase> cuda_cases(const std::string& name, ir::Program& program,
                                        std::vector<std::string>* refused) {
  std::vector<CudaCase> cases;
  for (const compiler::Group& g : compiler::plan_fusion(program.block(), {}, nullptr)) {
    CudaCase c;
    c.program = name;
    c.group = g.name;
    c.sub = extract(g);
    c.inputs = g.inputs;
    c.outputs = g.outputs;
    std::string why;
    std::optional<compiler::Kernel> k = compiler::lower_group(c.sub, &why);
    if (!k) {
      if (refused) refused->push_back(name + "/" + g.name + ": " + why);
      continue;
    }
    c.kernel = std::move(*k);
    c.symbol = "oar_" + name + "_" + std::to_string(cases.size());
    c.source = compiler::emit_cuda(c.kernel, c.symbol);
    cases.push_back(std::move(c));
  }
  return cases;
}

/// The sources of `cases` as one translation unit (the prelude is guarded).
inline std::string module_source(const std::vector<CudaCase>& cases) {
  std::string s;
  for (const CudaCase& c : cases) s += c.source + "\n";
  return s;
}

}  // namespace cuda_test
