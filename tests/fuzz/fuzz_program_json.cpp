// libFuzzer target: the program JSON reader (oar::ir::from_json, which also
// runs every meta rule through the verifier). Any input must give a Program
// or an oar::Error; another exception, a crash, a sanitizer report or a
// hang is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "oar/error.h"
#include "oar/ir/serialize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    oar::ir::Program program = oar::ir::from_json(text, {}, "fuzz.json");
    (void)oar::ir::to_json(program);  // a program that loads also writes
  } catch (const oar::Error&) {
  }
  return 0;
}
