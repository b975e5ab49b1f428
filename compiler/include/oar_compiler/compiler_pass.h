/// \file compiler_pass.h
/// The compiler's pass (Note [The compiler pass] in
/// compiler/src/compiler_pass.cpp) and the compiled groups it and the
/// fusion_group kernel share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "oar/device.h"
#include "oar/ir/pass.h"
#include "oar_compiler/loop_ir.h"
#include "oar_compiler/toolchain.h"

namespace oar::compiler {

/// One group compiled for the cpu: its kernel description (for the dims and
/// the shape checks) and the loaded function.
struct CompiledGroup {
  using Fn = int (*)(void* const* buffers, const int64_t* dims, int num_threads);
  std::string name;   ///< the group's name
  std::string key;    ///< group_key of its program
  Kernel kernel;      ///< what lower_group made (dims, dim checks, buffers)
  CompiledLibrary library;
  Fn fn = nullptr;
};

/// The key of a group (the fusion_group's `key` attribute): a hash of its
/// program text and the target.
std::string group_key(const std::string& program_json, const std::string& target = "cpu");

/// The compiled kernel of the group whose program is `program_json`, made
/// once per process and key: lower_group, emit_cpu, compile_cpu (through the
/// disk cache). Returns null with the reason in *why_not when any step
/// fails; the failure is remembered (a group that failed is not compiled
/// again in this process). A `key` that names another program in this
/// process (a stale attribute) is ignored for the program's own hash.
/// Thread-safe.
std::shared_ptr<const CompiledGroup> compiled_group(const std::string& key, const std::string& program_json,
                                                    const std::string& name, std::string* why_not);

/// The outcome of compiled_group for `key` and `program` when this process
/// already knows it (*known = true; null with *why_not on failure), without
/// hashing or copying the program text.
std::shared_ptr<const CompiledGroup> known_group(const std::string& key, const char* program, bool* known,
                                                 std::string* why_not);

/// Counts of this process: groups compiled (or loaded), groups that failed.
struct PassStats {
  int64_t groups_fused = 0;     ///< fusion_group operations the pass made
  int64_t groups_unfused = 0;   ///< planned groups left as they were (lowering or compile failed)
};
PassStats pass_stats();

/// The pass: plans the fusion groups of a program (plan_fusion), lowers and
/// compiles each, and replaces each compiled group's operations by one
/// fusion_group operation. For devices other than "cpu" it changes nothing.
std::unique_ptr<ir::Pass> make_compiler_pass(const Device& device);

}  // namespace oar::compiler
