// NVRTC loaded with dlopen, and ptxas run in a child process.
#include "oar_compiler/nvrtc.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace oar::compiler {

namespace fs = std::filesystem;

// Note [Finding NVRTC]
// NVRTC is part of the CUDA toolkit, not of the driver, and its soname carries
// the toolkit's major version (libnvrtc.so.13). The unversioned libnvrtc.so
// exists only with the toolkit's development files, and the toolkit's lib
// directory is often not in the loader's path, so we try, in order: an
// explicit file (OAR_NVRTC_LIBRARY), the loader's own search by name, then
// every lib64/ and lib/ of the usual CUDA homes, newest toolkit first. Only
// the C API is used (nvrtcCreateProgram ... nvrtcGetPTX), which has been
// stable since CUDA 7; no header of the toolkit is needed to build oar.

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

struct Nvrtc::Api {
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetPTX)(nvrtcProgram, char*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*);  // optional (NVRTC 11.1+)
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);        // optional
};

namespace {

std::vector<fs::path> cuda_homes() {
  std::vector<fs::path> homes;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"}) {
    if (const char* v = std::getenv(var); v && *v) homes.emplace_back(v);
  }
  homes.emplace_back("/usr/local/cuda");
  std::vector<fs::path> versioned;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/local", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("cuda-", 0) == 0) versioned.push_back(entry.path());
  }
  // Newest first: "cuda-13.0" > "cuda-12.4" > "cuda-11.8" (compare as versions).
  auto version_of = [](const fs::path& p) {
    int a = 0, b = 0;
    std::sscanf(p.filename().string().c_str(), "cuda-%d.%d", &a, &b);
    return a * 1000 + b;
  };
  std::sort(versioned.begin(), versioned.end(),
            [&](const fs::path& x, const fs::path& y) { return version_of(x) > version_of(y); });
  homes.insert(homes.end(), versioned.begin(), versioned.end());
  return homes;
}

// Files named libnvrtc.so or libnvrtc.so.<N>[.<M>...] in dir (not the
// builtins or the .alt variant), highest version first.
std::vector<fs::path> nvrtc_files_in(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "libnvrtc.so" || name.rfind("libnvrtc.so.", 0) == 0) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end(), std::greater<>());
  return found;
}

template <typename F>
bool resolve(void* lib, const char* name, F*& out, std::string* missing) {
  out = reinterpret_cast<F*>(dlsym(lib, name));
  if (!out) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return out != nullptr;
}

}  // namespace

const Nvrtc* Nvrtc::get(std::string* why_not) {
  static std::once_flag once;
  static const Nvrtc* instance = nullptr;
  static std::string reason;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* v = std::getenv("OAR_NVRTC_LIBRARY"); v && *v) candidates.emplace_back(v);
    for (const char* name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"})
      candidates.emplace_back(name);
    for (const auto& home : cuda_homes())
      for (const char* sub : {"lib64", "lib", "targets/x86_64-linux/lib"})
        for (const auto& f : nvrtc_files_in(home / sub)) candidates.push_back(f.string());
    std::string tried;
    for (const auto& c : candidates) {
      void* lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        tried += "\n  " + c + ": " + dlerror();
        continue;
      }
      auto* api = new Api{};
      std::string missing;
      resolve(lib, "nvrtcGetErrorString", api->GetErrorString, &missing);
      resolve(lib, "nvrtcVersion", api->Version, &missing);
      resolve(lib, "nvrtcCreateProgram", api->CreateProgram, &missing);
      resolve(lib, "nvrtcDestroyProgram", api->DestroyProgram, &missing);
      resolve(lib, "nvrtcCompileProgram", api->CompileProgram, &missing);
      resolve(lib, "nvrtcGetPTXSize", api->GetPTXSize, &missing);
      resolve(lib, "nvrtcGetPTX", api->GetPTX, &missing);
      resolve(lib, "nvrtcGetProgramLogSize", api->GetProgramLogSize, &missing);
      resolve(lib, "nvrtcGetProgramLog", api->GetProgramLog, &missing);
      api->GetCUBINSize = reinterpret_cast<decltype(api->GetCUBINSize)>(dlsym(lib, "nvrtcGetCUBINSize"));
      api->GetCUBIN = reinterpret_cast<decltype(api->GetCUBIN)>(dlsym(lib, "nvrtcGetCUBIN"));
      if (!missing.empty()) {
        tried += "\n  " + c + ": opened but lacks " + missing;
        delete api;
        dlclose(lib);
        continue;
      }
      auto* n = new Nvrtc();
      n->api_ = api;
      char path[4096] = {0};
      n->path_ = c;
      if (dlinfo(lib, RTLD_DI_ORIGIN, path) == 0 && c.find('/') == std::string::npos)
        n->path_ = std::string(path) + "/" + c;
      api->Version(&n->major_, &n->minor_);
      instance = n;  // the library stays open for the process
      return;
    }
    reason = "NVRTC (libnvrtc.so of the CUDA toolkit) was not found; tried:" + tried +
             "\n  set OAR_NVRTC_LIBRARY to the file or CUDA_HOME to the toolkit";
  });
  if (!instance && why_not) *why_not = reason;
  return instance;
}

PtxResult Nvrtc::compile(const std::string& source, const std::string& name,
                         const std::string& arch,
                         const std::vector<std::string>& extra_options) const {
  PtxResult result;
  nvrtcProgram prog = nullptr;
  if (nvrtcResult rc = api_->CreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
      rc != 0) {
    result.error = "NVRTC could not create the program " + name + ": " + api_->GetErrorString(rc);
    return result;
  }
  // --fmad=false: as -ffp-contract=off for the CPU kernels (ToolchainConfig):
  // a value a kernel computes in two loops must be the same bits in both.
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "-std=c++17",
                                      "--device-as-default-execution-space", "--fmad=false"};
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  nvrtcResult rc = api_->CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  if (api_->GetProgramLogSize(prog, &log_size) == 0 && log_size > 1) {
    result.log.resize(log_size);
    api_->GetProgramLog(prog, result.log.data());
    result.log.resize(log_size - 1);  // drop the terminating NUL
  }
  if (rc != 0) {
    result.error = "NVRTC failed to compile " + name + " for " + arch + " (" +
                   api_->GetErrorString(rc) + "):\n" + result.log;
  } else if (arch.rfind("sm_", 0) == 0) {
    size_t size = 0;
    if (!api_->GetCUBINSize || !api_->GetCUBIN || api_->GetCUBINSize(prog, &size) != 0) {
      result.error = "NVRTC " + std::to_string(major_) + "." + std::to_string(minor_) + " gives no CUBIN for " + arch;
    } else {
      result.ptx.resize(size);
      api_->GetCUBIN(prog, result.ptx.data());
      result.ok = true;
    }
  } else {
    size_t ptx_size = 0;
    api_->GetPTXSize(prog, &ptx_size);
    result.ptx.resize(ptx_size);
    api_->GetPTX(prog, result.ptx.data());
    while (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
    result.ok = true;
  }
  api_->DestroyProgram(&prog);
  return result;
}

std::string find_ptxas(std::string* why_not) {
  std::vector<fs::path> candidates;
  if (const char* v = std::getenv("OAR_PTXAS"); v && *v) candidates.emplace_back(v);
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty()) candidates.push_back(fs::path(dir) / "ptxas");
  }
  for (const auto& home : cuda_homes()) candidates.push_back(home / "bin" / "ptxas");
  for (const auto& c : candidates)
    if (access(c.c_str(), X_OK) == 0 && fs::is_regular_file(c)) return c.string();
  if (why_not)
    *why_not = "ptxas (of the CUDA toolkit) was not found in OAR_PTXAS, PATH or the CUDA homes "
               "(/usr/local/cuda*/bin, $CUDA_HOME/bin)";
  return {};
}

PtxasResult run_ptxas(const std::string& ptx, const std::string& arch, int timeout_s) {
  PtxasResult result;
  std::string why;
  const std::string ptxas = find_ptxas(&why);
  if (ptxas.empty()) {
    result.error = why;
    return result;
  }
  std::error_code ec;
  fs::path tmp_root = fs::temp_directory_path(ec);
  std::string templ = (tmp_root / "oar-ptxas-XXXXXX").string();
  if (!mkdtemp(templ.data())) {
    result.error = "ptxas: could not create a temporary directory under " + tmp_root.string();
    return result;
  }
  const fs::path dir = templ;
  const fs::path in = dir / "kernel.ptx", out = dir / "kernel.cubin", log = dir / "ptxas.log";
  std::ofstream(in, std::ios::binary) << ptx;
  const std::string arch_arg = "-arch=" + arch;
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execl(ptxas.c_str(), ptxas.c_str(), arch_arg.c_str(), "-v", in.c_str(), "-o", out.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  bool timed_out = false;
  if (pid < 0) {
    result.error = "ptxas: fork failed";
  } else {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::ifstream f(log);
    result.log.assign(std::istreambuf_iterator<char>(f), {});
    if (timed_out)
      result.error = "ptxas " + arch_arg + " did not finish within " + std::to_string(timeout_s) + " s";
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      result.error = "ptxas " + arch_arg + " rejected the PTX (exit status " +
                     std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "):\n" + result.log;
    else
      result.ok = true;
  }
  fs::remove_all(dir, ec);
  return result;
}

}  // namespace oar::compiler
