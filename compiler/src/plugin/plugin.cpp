// liboar_compiler.so: the compiler as a kernel-only plugin (ABI 1.1).
//
// Note [The compiler plugin]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// oar_plugin_init registers two things and does no work:
//  - the cpu kernel of `fusion_group` (any inputs, any outputs, priority 10,
//    ahead of nothing: no other plugin implements the op). Its `accepts`
//    finds the group's compiled kernel (compiled_group: made once per key
//    and process, from the `program` attribute, through the disk cache) and
//    declines when there is none (lowering refused, compile failed or timed
//    out) or when the shapes fail the kernel's dim checks; the host then
//    runs the op's decomposition (Note [Kernel fall-through]). So a saved
//    program with fusion groups runs in `oar-run` with the plugin (compiled
//    kernels) and without it (decomposed), with the same results. The
//    executor decomposes a declined composite by op name, so once one
//    fusion_group of a program declines its shapes, every fusion_group of
//    that executor's program runs decomposed: correct, only slower.
//  - the pipeline pass "compiler" (ir::register_pipeline_pass), which
//    default_pipeline runs when the compiler is on (Note [The compiler in
//    the pipeline] in core/ir/passes/pass_manager.cpp).
// The loader first runs init in a short-lived probe child: registering a
// factory and a kernel touches no file, starts no thread and compiles
// nothing, so the probe is harmless. OAR_COMPILER_DISABLE=1 loads the plugin
// but registers nothing (as if it were absent).
#include <sched.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "oar/plugin.hpp"
#include "oar_compiler/compiler_pass.h"
#include "oar_compiler/log.h"

namespace {

namespace op = oar::plugin;
namespace cc = oar::compiler;

constexpr int32_t kPriority = 10;

int num_threads() {
  static const int n = [] {
    const char* v = std::getenv("OAR_NUM_THREADS");
    if (v != nullptr && *v != '\0') {
      char* end = nullptr;
      long t = std::strtol(v, &end, 10);
      if (end != v && *end == '\0' && t > 0 && t <= 4096) return static_cast<int>(t);
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return 1;
  }();
  return n;
}

// The compiled group of a launch, or null (with the reason) when there is none.
std::shared_ptr<const cc::CompiledGroup> group_of(const OarKernelContext& ctx, std::string* why_not) {
  op::Attrs attrs(ctx);
  std::string key = attrs.get_string("key", "");
  const char* program_text = attrs.get_string("program", "");
  if (!key.empty()) {  // the common case: known already, no need to copy the program text
    bool known = false;
    auto group = cc::known_group(key, program_text, &known, why_not);
    if (known) return group;
  }
  std::string program = program_text;
  std::string name = attrs.get_string("name", "fusion_group");
  if (program.empty()) {
    *why_not = "it has no program";
    return nullptr;
  }
  if (key.empty()) key = cc::group_key(program);
  return cc::compiled_group(key, program, name, why_not);
}

// The values of the kernel's dim symbols for this launch, or false when an
// input is missing the axis a symbol is read from.
bool dim_values(const cc::Kernel& kernel, const OarKernelContext& ctx, std::vector<int64_t>& dims) {
  dims.clear();
  for (const cc::DimSymbol& d : kernel.dims) {
    if (d.input < 0 || d.input >= ctx.num_inputs) return false;
    const OarTensorView& v = ctx.inputs[d.input];
    if (d.axis < 0 || d.axis >= v.ndim) return false;
    dims.push_back(v.shape[d.axis]);
  }
  return true;
}

// True when every buffer's shape is what the kernel computes from the dims
// and every dim check holds.
bool shapes_fit(const cc::Kernel& kernel, const OarKernelContext& ctx, const std::vector<int64_t>& dims,
                std::string* why_not) {
  auto fits = [&](const cc::Buffer& b, const OarTensorView& v, const char* what, size_t i) {
    bool ok = static_cast<int32_t>(b.shape.size()) == v.ndim;
    for (size_t d = 0; ok && d < b.shape.size(); ++d) ok = cc::evaluate(b.shape[d], dims) == v.shape[d];
    if (!ok) *why_not = std::string(what) + " " + std::to_string(i) + " has another shape than the kernel computes";
    return ok;
  };
  if (static_cast<size_t>(ctx.num_inputs) != kernel.inputs.size() ||
      static_cast<size_t>(ctx.num_outputs) != kernel.outputs.size()) {
    *why_not = "the operation's operands or results do not match the kernel's buffers";
    return false;
  }
  for (size_t i = 0; i < kernel.inputs.size(); ++i)
    if (!fits(kernel.inputs[i], ctx.inputs[i], "input", i)) return false;
  for (size_t i = 0; i < kernel.outputs.size(); ++i)
    if (!fits(kernel.outputs[i], ctx.outputs[i], "output", i)) return false;
  for (const cc::DimCheck& c : kernel.dim_checks) {
    if (cc::evaluate(c.a, dims) != cc::evaluate(c.b, dims)) {
      *why_not = "a dim check fails for these shapes (" + cc::to_string(c.a) + " != " + cc::to_string(c.b) + ")";
      return false;
    }
  }
  return true;
}

int32_t fusion_group_accepts(const OarKernelContext* ctx) {
  try {
    std::string why;
    auto group = group_of(*ctx, &why);
    std::vector<int64_t> dims;
    if (group && !dim_values(group->kernel, *ctx, dims)) why = "an input lacks an axis the kernel reads a dim from";
    if (group && why.empty() && shapes_fit(group->kernel, *ctx, dims, &why)) return 1;
    op::Attrs attrs(ctx);
    cc::log("fusion_group " + std::string(attrs.get_string("name", "?")) + " declined, runs decomposed: " + why);
    return 0;
  } catch (const std::exception& e) {
    cc::log(std::string("fusion_group declined: ") + e.what());
    return 0;
  }
}

OarStatus fusion_group_kernel(const OarKernelContext& ctx) {
  std::string why;
  auto group = group_of(ctx, &why);
  if (!group) return op::fail(&ctx, OAR_ERROR_UNSUPPORTED, "fusion_group has no compiled kernel: %s", why.c_str());
  std::vector<int64_t> dims;
  if (!dim_values(group->kernel, ctx, dims))
    return op::fail(&ctx, OAR_ERROR_INVALID_ARGUMENT, "fusion_group '%s': an input lacks an axis the kernel reads",
                    group->name.c_str());
  std::vector<void*> buffers;
  for (int32_t i = 0; i < ctx.num_inputs; ++i)
    buffers.push_back(static_cast<char*>(ctx.inputs[i].data) + ctx.inputs[i].byte_offset);
  for (int32_t i = 0; i < ctx.num_outputs; ++i)
    buffers.push_back(static_cast<char*>(ctx.outputs[i].data) + ctx.outputs[i].byte_offset);
  int rc = group->fn(buffers.data(), dims.data(), num_threads());
  if (rc != cc::kKernelOk) {
    return op::fail(&ctx, OAR_ERROR_INVALID_ARGUMENT, "fusion_group '%s': the compiled kernel returned %d (%s)",
                    group->name.c_str(), rc,
                    rc == cc::kKernelShapeMismatch ? "the shapes fail its dim checks" : "a null buffer or dims");
  }
  return OAR_OK;
}

}  // namespace

extern "C" OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info) {
  if (OarStatus s = op::accept_host(host, info, "oar-compiler")) return s;
  if (host->abi_minor < 1)
    return op::fail(OAR_ERROR_UNSUPPORTED, "oar-compiler: a kernel-only plugin needs a host of ABI 1.1 or later");
  if (op::option("OAR_COMPILER_DISABLE", "0") != "0") {
    op::log(OAR_LOG_INFO, "oar-compiler: disabled by OAR_COMPILER_DISABLE; nothing registered");
    return OAR_OK;
  }
  OarKernelDesc desc = op::make_struct<OarKernelDesc>();
  desc.num_input_dtypes = 0;
  desc.input_dtypes = nullptr;  // any inputs
  desc.num_output_dtypes = 0;
  desc.output_dtypes = nullptr;  // any outputs
  desc.flags = 0;                // contiguous views
  desc.fn = OAR_KERNEL(fusion_group_kernel);
  desc.priority = kPriority;
  desc.accepts = fusion_group_accepts;
  if (OarStatus s = host->register_kernel(host->host, "cpu", "fusion_group", &desc)) return s;
  oar::ir::register_pipeline_pass("compiler", [](const oar::Device& device) { return cc::make_compiler_pass(device); });
  return OAR_OK;
}
