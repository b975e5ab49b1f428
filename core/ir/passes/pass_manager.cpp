// The pass manager: runs passes in order, verifies after each, and prints
// the IR after each when asked (or when OAR_PRINT_IR_AFTER_PASS=1).
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <utility>

#include "oar/ir/pass.h"
#include "oar/ir/printer.h"
#include "oar/ir/verifier.h"
#include "oar/runtime.h"
#include "runtime/runtime_state.h"

namespace oar::ir {

namespace {
bool print_requested_by_env() {
  const char* env = std::getenv("OAR_PRINT_IR_AFTER_PASS");
  return env != nullptr && std::strcmp(env, "1") == 0;
}
}  // namespace

PassManager::PassManager() = default;

PassManager& PassManager::add(std::unique_ptr<Pass> pass) {
  OAR_CHECK_ARG(pass != nullptr, "PassManager::add: the pass is null");
  passes_.push_back(std::move(pass));
  return *this;
}

void PassManager::set_print_after_each(bool on, std::ostream* os) {
  print_ = on;
  os_ = os;
}

bool PassManager::run(Program& program) {
  bool print = print_ || print_requested_by_env();
  std::ostream& os = os_ ? *os_ : std::cerr;
  bool changed = false;
  for (const auto& pass : passes_) {
    changed = pass->run(program) || changed;
    try {
      verify(program);
    } catch (const Error& e) {
      throw Error(e.code(), "pass '" + pass->name() + "' left an invalid program: " + e.what());
    }
    if (print) {
      std::string text = to_string(program);
      if (text.empty() || text.back() != '\n') text += '\n';
      os << "// IR after " << pass->name() << "\n" << text << std::flush;
    }
  }
  return changed;
}

std::vector<std::string> PassManager::pass_names() const {
  std::vector<std::string> names;
  names.reserve(passes_.size());
  for (const auto& pass : passes_) names.push_back(pass->name());
  return names;
}

// Note [The compiler in the pipeline]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The compiler is a plugin (compiler/, liboar_compiler.so); the core only
// keeps a list of named pass factories it registers from oar_plugin_init
// (register_pipeline_pass). With the compiler on (OAR_COMPILER=1,
// FLAGS_use_cinn=1, or oar.jit.to_static(fn, backend="CINN")) the default
// pipeline is: constant folding, CSE, DCE, then the decomposition of every
// composite op (FLAGS_prim_all=1, OAR_COMPILER=1 or backend="CINN": the user
// writes rms_norm and the compiler sees pow, mean, rsqrt, multiply), CSE
// again (decompositions repeat their scalar constants), the registered
// passes, DCE. The decomposition and each registered pass run guarded: one
// that throws leaves the program as it was before it, with a warning, so a
// compiler bug costs speed, never a run. Asked for with no pass registered,
// the program runs uncompiled after one warning per process.
namespace {

bool env_truthy(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "1" || s == "true" || s == "on" || s == "yes";
}

bool env_falsy(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "0" || s == "false" || s == "off" || s == "no";
}

struct PipelinePassRegistry {
  std::mutex mutex;
  std::vector<std::pair<std::string, PassFactory>> passes;  // in registration order
};

PipelinePassRegistry& pipeline_registry() {
  static PipelinePassRegistry* registry = new PipelinePassRegistry;  // never destroyed: plugins may outlive statics
  return *registry;
}

// Runs `inner`; when it throws or leaves an invalid program, the program is
// restored from a copy and the failure logged as a warning.
class GuardedPass final : public Pass {
 public:
  GuardedPass(std::unique_ptr<Pass> inner, std::string what) : inner_(std::move(inner)), what_(std::move(what)) {}
  std::string name() const override { return inner_->name(); }
  bool run(Program& program) override {
    Program backup = program.clone();
    try {
      bool changed = inner_->run(program);
      verify(program);  // a pass that breaks the program is undone like one that throws
      return changed;
    } catch (const std::exception& e) {
      program = std::move(backup);
      log_message(OAR_LOG_WARNING, "pass '" + inner_->name() + "' failed, so the program runs " + what_ +
                                       ": " + e.what());
      return false;
    }
  }

 private:
  std::unique_ptr<Pass> inner_;
  std::string what_;
};

// Every composite op but those whose decompositions read the example
// shape of an operand (full_like, broadcast_to_like, shape, numel: a
// dynamic dim has none, Note [Dynamic dims] in trace.h; the planner takes
// them as they are) and fusion groups (already compiled). sum_to_like is
// decomposed: its decomposition depends only on ranks and on which dims are
// 1, and whole it would cut every broadcasting VJP out of its group.
bool decomposed_for_compiler(const OpDef& def) {
  // stop_gradient: the training program's autodiff must still see it (Note [detach in a trace])
  static const std::set<std::string> kept = {"full_like", "broadcast_to_like", "shape", "numel", "fusion_group",
                                             "stop_gradient"};
  return kept.count(def.name) == 0;
}

}  // namespace

bool compiler_enabled_by_env() {
  if (env_falsy("OAR_COMPILER")) return false;
  return env_truthy("OAR_COMPILER") || env_truthy("FLAGS_use_cinn");
}

bool prim_all_by_env() { return env_truthy("FLAGS_prim_all") || env_truthy("OAR_COMPILER"); }

void register_pipeline_pass(const std::string& name, PassFactory factory) {
  OAR_CHECK_ARG(!name.empty(), "register_pipeline_pass: the name is empty");
  OAR_CHECK_ARG(factory != nullptr, "register_pipeline_pass: the factory of '" + name + "' is empty");
  PipelinePassRegistry& registry = pipeline_registry();
  std::lock_guard lock(registry.mutex);
  for (auto& [existing, f] : registry.passes) {
    if (existing == name) {
      f = std::move(factory);
      return;
    }
  }
  registry.passes.emplace_back(name, std::move(factory));
}

std::vector<std::string> registered_pipeline_passes() {
  PipelinePassRegistry& registry = pipeline_registry();
  std::lock_guard lock(registry.mutex);
  std::vector<std::string> names;
  for (const auto& [name, f] : registry.passes) names.push_back(name);
  return names;
}

PassManager default_pipeline(const Device& device, const PipelineOptions& options) {
  PassManager manager;
  manager.add(make_constant_folding_pass(device)).add(make_cse_pass()).add(make_dce_pass());
  if (!options.compiler) return manager;
  Runtime::global();  // the plugins register their passes while loading
  std::vector<std::pair<std::string, PassFactory>> passes;
  {
    PipelinePassRegistry& registry = pipeline_registry();
    std::lock_guard lock(registry.mutex);
    passes = registry.passes;
  }
  if (passes.empty()) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      log_message(OAR_LOG_WARNING,
                  "the compiler is asked for (OAR_COMPILER, FLAGS_use_cinn or to_static(backend=\"CINN\")) but no "
                  "compiler plugin registered a pass (liboar_compiler.so is not in the plugin directories or "
                  "failed to load: see `oar devices`); programs run uncompiled");
    });
    return manager;
  }
  if (options.decompose_composites) {
    manager.add(std::make_unique<GuardedPass>(make_decomposition_pass(decomposed_for_compiler), "with its composite ops"));
    manager.add(make_cse_pass());
  }
  for (auto& [name, factory] : passes) {
    std::unique_ptr<Pass> pass = factory(device);
    if (pass) manager.add(std::make_unique<GuardedPass>(std::move(pass), "without pass '" + name + "'"));
  }
  manager.add(make_dce_pass());
  return manager;
}

}  // namespace oar::ir
