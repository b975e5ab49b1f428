/// \file toolchain.h
/// Compiling generated C++ into a shared object and loading it, through an
/// on-disk cache (Note [Compiler cache] in compiler/src/cache.cpp, Note
/// [Compiling in a child] in compiler/src/toolchain.cpp).
///
/// Environment:
///  - OAR_COMPILER_CXX      the compiler (default `c++`)
///  - OAR_COMPILER_TIMEOUT  seconds one compile may take (default 120; may be fractional)
///  - OAR_COMPILER_CACHE_DIR  the cache (default $XDG_CACHE_HOME/oar/compiler
///                          or ~/.cache/oar/compiler)
///  - OAR_COMPILER_KEEP_SOURCE=1  keeps <key>.cpp beside <key>.so
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oar/error.h"

namespace oar::compiler {

/// How generated code is compiled; toolchain_from_env() reads the environment.
struct ToolchainConfig {
  std::string cxx = "c++";  ///< the compiler command (looked up on PATH)
  /// Flags: no -ffast-math (results must match the uncompiled program).
  /// -fno-math-errno: sqrtf inlines (errno is never read). -fno-trapping-math:
  /// no kernel reads the floating-point exception flags, and without it GCC
  /// may not evaluate both sides of a `?:` on floats (a compare or a multiply
  /// could raise a flag the branch would not have), so on machines without
  /// AVX-512 masking oar_expf and every select stayed scalar: softmax
  /// [4096, 768] took 12.9 ms instead of 2.8 at 2 threads on a Zen 3. Values
  /// are unchanged; only the exception flags, which nothing reads, may differ.
  /// -ffp-contract=off: every op rounds as the IR (and the uncompiled
  /// program) says, and a value recomputed in two loops of a kernel is the
  /// same bits in both. With contraction GCC fused t * w + b into an FMA in
  /// one loop and not in the next: the transformer block's loss kernel stored
  /// layer_norm's output 1 ulp away from the value its row max was taken of,
  /// so max's VJP (x == max) found no maximum, divided by a count of 0 and
  /// the second training step's gradients were NaN. The prelude's explicit
  /// __builtin_fmaf calls are FMAs either way.
  std::vector<std::string> flags = {"-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=c++17",
                                    "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off"};
  double timeout_seconds = 120;  ///< a compile running longer is killed
  std::string cache_dir;         ///< where <key>.so, <key>.meta (and <key>.cpp) live
  bool keep_source = false;      ///< keep <key>.cpp beside the binary
};

/// The configuration the environment gives (see the file comment).
ToolchainConfig toolchain_from_env();

/// A shared object loaded with dlopen (closed when the last copy goes).
class CompiledLibrary {
 public:
  CompiledLibrary() = default;
  /// The address of the symbol it was compiled for.
  void* symbol() const { return symbol_; }
  /// The cache key (hex) and the path of the .so in the cache.
  const std::string& key() const { return key_; }
  const std::string& path() const { return path_; }
  /// True when it came from the cache without compiling.
  bool cache_hit() const { return cache_hit_; }
  /// Seconds the compile took (0 for a cache hit).
  double compile_seconds() const { return compile_seconds_; }

 private:
  friend CompiledLibrary compile_cpu(const std::string&, const std::string&, const ToolchainConfig&);
  std::shared_ptr<void> handle_;  // dlclose'd by its deleter
  void* symbol_ = nullptr;
  std::string key_, path_;
  bool cache_hit_ = false;
  double compile_seconds_ = 0;
};

/// What went wrong in a compile (the message is a sentence; for a failed
/// compile it ends with the first lines of the compiler's stderr).
class CompileError : public Error {
 public:
  using Error::Error;
};

/// Loads <cache>/<key>.so when a checked entry exists (Note [Compiler
/// cache]), else compiles `source` with the system compiler in a child
/// process under the timeout, stores it atomically and loads it; returns the
/// library with `symbol` resolved. Throws CompileError naming the reason
/// (compiler missing or failing, timeout, symbol missing, cache unusable).
/// Thread-safe; concurrent processes share the cache safely.
CompiledLibrary compile_cpu(const std::string& source, const std::string& symbol, const ToolchainConfig& config);
/// The same with toolchain_from_env().
CompiledLibrary compile_cpu(const std::string& source, const std::string& symbol);

/// The cache key of `source` for the cpu target under `config`: a hash of
/// the source, the target, the compiler's `--version` output and the flags
/// (hex, 32 digits). Throws CompileError when the compiler cannot say its version.
std::string cpu_cache_key(const std::string& source, const ToolchainConfig& config);

/// Counts of this process (for tests and the log).
struct ToolchainStats {
  int64_t compiles = 0;      ///< child compiles that produced a library
  int64_t cache_hits = 0;    ///< loads of a checked cache entry
  int64_t rejected = 0;      ///< cache entries found corrupt or truncated (then recompiled)
  int64_t failures = 0;      ///< compiles that failed or timed out
};
ToolchainStats toolchain_stats();

/// A stable 64-bit hash (FNV-1a) of bytes, for keys and checksums.
uint64_t fnv1a64(const void* data, size_t size, uint64_t seed = 0xcbf29ce484222325ull);
/// 32 hex digits: two independent 64-bit hashes of `text`.
std::string hex_hash128(const std::string& text);

}  // namespace oar::compiler
