// libFuzzer target: the safetensors reader (oar::ir::load_safetensors, the
// one reader behind oar.load, oar.jit.load and oar-run). The input is written
// to a file and read onto the cpu device; it must give tensors or an
// oar::Error naming the file. Anything else is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "oar/error.h"
#include "oar/ir/safetensors.h"

namespace {
// A file in memory (tmpfs) where there is one: rewriting a file on ext4
// waits for its blocks on every close (auto_da_alloc), 3 ms a run.
std::string input_path() {
  const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/oar_fuzz_safetensors_" + std::to_string(::getpid());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = input_path();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    auto tensors = oar::ir::load_safetensors(path, oar::Device{"cpu", 0});
    for (const auto& [name, t] : tensors) (void)t.numel();
  } catch (const oar::Error& e) {
    // A bad file is an invalid_argument error whose sentence names the file.
    bool named = std::string(e.what()).rfind(path + ": ", 0) == 0;
    if (e.code() == oar::ErrorCode::invalid_argument && !named) __builtin_trap();
  }
  return 0;
}
