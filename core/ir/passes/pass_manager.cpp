// The pass manager: runs passes in order, verifies after each, and prints
// the IR after each when asked (or when OAR_PRINT_IR_AFTER_PASS=1).
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "oar/ir/pass.h"
#include "oar/ir/printer.h"
#include "oar/ir/verifier.h"

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

PassManager default_pipeline(const Device& device) {
  PassManager manager;
  manager.add(make_constant_folding_pass(device)).add(make_cse_pass()).add(make_dce_pass());
  return manager;
}

}  // namespace oar::ir
