/// \file pass.h
/// Passes over a program and the pass manager that runs them in order,
/// verifying after each and optionally printing the IR after each
/// (PassManager::set_print_after_each, or OAR_PRINT_IR_AFTER_PASS=1).
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "oar/device.h"
#include "oar/ir/program.h"

namespace oar::ir {

/// One transformation. run() returns whether it changed the program.
/// The passes below walk the top-level block once (decomposition once per
/// round) and rewrite through use lists, so each is linear in the size of
/// the program (Note [Use lists] in value.h); operations in regions are
/// left as they are, but the values they use count as used.
class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual bool run(Program& program) = 0;
};

class PassManager {
 public:
  PassManager();
  PassManager& add(std::unique_ptr<Pass> pass);
  /// Prints "// IR after <pass>" and the program after every pass to `os`.
  void set_print_after_each(bool on, std::ostream* os = nullptr);
  /// Runs the passes in order, verifying after each; returns whether any
  /// changed the program.
  bool run(Program& program);
  std::vector<std::string> pass_names() const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  bool print_ = false;
  std::ostream* os_ = nullptr;
};

/// Replaces composite operations whose op name `select` accepts by their
/// decomposition into other ops (traced through the op's DecomposeFn, so
/// it is the same decomposition eager mode uses). Repeats until nothing
/// selected is left (decompositions may produce composite ops).
std::unique_ptr<Pass> make_decomposition_pass(std::function<bool(const OpDef&)> select);
/// Decomposes the named ops only.
std::unique_ptr<Pass> make_decomposition_pass(std::set<std::string> op_names);
/// Removes operations whose results reach no output or update (ops with
/// side effects are kept) and constants nothing uses.
std::unique_ptr<Pass> make_dce_pass();
/// Merges operations of the same op on the same operands with equal
/// attributes (side-effect-free ops only).
std::unique_ptr<Pass> make_cse_pass();
/// Evaluates operations whose operands are all constants (or that have no
/// operands, like full/arange) on `device` and replaces their results by
/// constants. Random ops are never folded; results larger than
/// `max_elements` are left alone (folding them would bloat the file).
std::unique_ptr<Pass> make_constant_folding_pass(const Device& device, int64_t max_elements = 1 << 20);

/// Makes a pass for the device a pipeline is built for.
using PassFactory = std::function<std::unique_ptr<Pass>(const Device& device)>;

/// Registers a pass that default_pipeline runs when the compiler is on
/// (PipelineOptions::compiler), after the composite ops are decomposed, in
/// registration order. The compiler plugin registers "compiler" from its
/// oar_plugin_init. Registering a name again replaces its factory. Thread-safe.
void register_pipeline_pass(const std::string& name, PassFactory factory);
/// The names of the registered pipeline passes, in registration order.
std::vector<std::string> registered_pipeline_passes();

/// True when the environment asks for the compiler: OAR_COMPILER=1 or
/// Paddle's FLAGS_use_cinn=1 (or "true"); OAR_COMPILER=0 turns it off.
bool compiler_enabled_by_env();
/// True when the environment asks for every composite op to be decomposed
/// before the compiler runs: FLAGS_prim_all=1 (or "true") or OAR_COMPILER=1.
bool prim_all_by_env();

/// What default_pipeline runs (Note [The compiler in the pipeline] in
/// pass_manager.cpp).
struct PipelineOptions {
  /// Run the registered pipeline passes (the compiler plugin's fusion).
  bool compiler = compiler_enabled_by_env();
  /// With `compiler`: decompose every composite op first, so the compiler
  /// sees rms_norm's primitives rather than the fused op.
  bool decompose_composites = prim_all_by_env();
};

/// The default optimization pipeline: constant folding, CSE, DCE; with
/// options.compiler then: the decomposition of the composite ops (when
/// options.decompose_composites), CSE, the registered pipeline passes, DCE.
/// When the compiler is asked for and no pass is registered (the plugin is
/// absent), one warning per process and the program runs uncompiled.
PassManager default_pipeline(const Device& device, const PipelineOptions& options = {});

}  // namespace oar::ir
