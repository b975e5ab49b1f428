// The on-disk cache of compiled kernels and compile_cpu (toolchain.h).
//
// Note [Compiler cache]
// ~~~~~~~~~~~~~~~~~~~~~
// An entry is <dir>/<key>.so with a sidecar <key>.meta: a few text lines
// holding the .so's size and checksum (FNV-1a 64) and the full key text
// (target, compiler command and `--version` output, flags, symbol, source),
// of which <key> is a 128-bit hash. Writers never expose a partial file:
// the compiler writes <key>.so.tmp.<pid>.<n>, the writer loads that file
// (by that unique name), checksums it, writes <key>.meta.tmp.<pid>.<n>, and
// renames the .so, then the .meta, into place (rename is atomic within a
// directory). Readers check <key>.so's size and checksum against the .meta
// and its key text against their own, then dlopen it; what a concurrent
// writer can rename in between is another complete build of the same key.
// (Not /proc/self/fd/<n>: glibc matches dlopen names first, and a reused fd
// number would hand back another key's library.) Anything that does not
// check out (missing or garbled .meta, truncated or corrupt .so, another
// key text: a hash collision) is a miss: the entry is compiled again and
// replaced, never loaded. Two processes compiling one key both succeed;
// the later renames win, and a reader that meets one's .so with the
// other's .meta (compiles are not bit-reproducible) recompiles rather
// than load it. Within a process one mutex per key keeps threads from
// compiling the same kernel twice. Temporary files of processes killed
// mid-compile are removed by the next process that uses the directory
// (sweep_stale_temporaries: only those of pids that no longer exist).
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "toolchain_internal.h"

namespace oar::compiler {

namespace {

std::atomic<int64_t> g_compiles{0}, g_hits{0}, g_rejected{0}, g_failures{0};

constexpr const char* kMetaMagic = "oar-compiler-cache 1";

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// mkdir -p; returns "" or the reason.
std::string make_dirs(const std::string& dir) {
  if (dir.empty()) return "the directory name is empty";
  std::string path;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return path + ": " + std::strerror(errno);
  }
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (access(dir.c_str(), W_OK) != 0) return dir + " is not writable: " + std::strerror(errno);
  return "";
}

struct Meta {
  int64_t size = -1;
  std::string checksum;
  std::string key_text;
};

std::optional<Meta> parse_meta(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  Meta m;
  if (!std::getline(in, line) || line != kMetaMagic) return std::nullopt;
  if (!std::getline(in, line) || line.rfind("size ", 0) != 0) return std::nullopt;
  try {
    m.size = std::stoll(line.substr(5));
  } catch (...) {
    return std::nullopt;
  }
  if (!std::getline(in, line) || line.rfind("checksum ", 0) != 0) return std::nullopt;
  m.checksum = line.substr(9);
  if (!std::getline(in, line) || line.rfind("key ", 0) != 0) return std::nullopt;
  size_t length = 0;
  try {
    length = static_cast<size_t>(std::stoull(line.substr(4)));
  } catch (...) {
    return std::nullopt;
  }
  std::string rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (rest.size() != length) return std::nullopt;
  m.key_text = std::move(rest);
  return m;
}

std::string meta_text(int64_t size, const std::string& checksum, const std::string& key_text) {
  return std::string(kMetaMagic) + "\nsize " + std::to_string(size) + "\nchecksum " + checksum + "\nkey " +
         std::to_string(key_text.size()) + "\n" + key_text;
}

bool write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  return static_cast<bool>(out);
}

// An open file's bytes (the whole file), or nullopt.
std::optional<std::string> read_fd(int fd) {
  struct stat st{};
  if (fstat(fd, &st) != 0) return std::nullopt;
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    done += static_cast<size_t>(n);
  }
  return bytes;
}

struct Loaded {
  std::shared_ptr<void> handle;
  void* symbol = nullptr;
  std::string error;
};

// dlopen of `path` with `symbol` resolved. Callers pass a name no other
// library of this process had (a fresh temporary file) or the cache path of
// this key: glibc hands back an already loaded library of the same name.
Loaded load_path(const std::string& path, const std::string& symbol) {
  Loaded out;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    out.error = std::string("dlopen failed: ") + (e ? e : "unknown error");
    return out;
  }
  out.handle = std::shared_ptr<void>(h, [](void* p) { dlclose(p); });
  dlerror();
  out.symbol = dlsym(h, symbol.c_str());
  if (!out.symbol) out.error = "the library has no symbol '" + symbol + "'";
  return out;
}

// Removes the temporary files (<name>.tmp.<pid>.<n>) that processes killed
// mid-compile left in `dir`, once per directory and process. Only files of
// pids that no longer exist go (a live process may still be writing).
void sweep_stale_temporaries(const std::string& dir) {
  static std::mutex mutex;
  static auto* swept = new std::set<std::string>;
  {
    std::lock_guard lock(mutex);
    if (!swept->insert(dir).second) return;
  }
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    size_t at = name.find(".tmp.");
    if (at == std::string::npos) continue;
    long pid = std::strtol(name.c_str() + at + 5, nullptr, 10);
    if (pid <= 0 || pid == static_cast<long>(getpid())) continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back(dir + "/" + name);
  }
  closedir(d);
  for (const std::string& path : stale) unlink(path.c_str());
  if (!stale.empty()) log("removed " + std::to_string(stale.size()) + " temporary files of ended processes in " + dir);
}

std::mutex& key_mutex(const std::string& key) {
  static std::mutex guard;
  static std::map<std::string, std::unique_ptr<std::mutex>>* mutexes = new std::map<std::string, std::unique_ptr<std::mutex>>;
  std::lock_guard lock(guard);
  auto& m = (*mutexes)[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

// The symbol is not part of it: the source defines it.
std::string key_text_of(const std::string& source, const ToolchainConfig& config, const std::string& version) {
  std::string flags;
  for (const std::string& f : config.flags) flags += (flags.empty() ? "" : " ") + f;
  return "target cpu\ncompiler " + config.cxx + "\nversion " + version + "\nflags " + flags + "\nsource " + std::to_string(source.size()) + "\n" + source;
}

}  // namespace

uint64_t fnv1a64(const void* data, size_t size, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex_hash128(const std::string& text) {
  uint64_t a = fnv1a64(text.data(), text.size());
  uint64_t b = fnv1a64(text.data(), text.size(), 0x84222325cbf29ce4ull ^ (text.size() * 0x9e3779b97f4a7c15ull));
  return hex64(a) + hex64(b);
}

std::string cpu_cache_key(const std::string& source, const ToolchainConfig& config) {
  std::string err = make_dirs(config.cache_dir);
  if (!err.empty()) throw CompileError(ErrorCode::unsupported, "the compiler cache directory cannot be used: " + err);
  return hex_hash128(key_text_of(source, config, compiler_version(config.cxx, config.cache_dir)));
}

ToolchainStats toolchain_stats() { return {g_compiles.load(), g_hits.load(), g_rejected.load(), g_failures.load()}; }

CompiledLibrary compile_cpu(const std::string& source, const std::string& symbol) {
  return compile_cpu(source, symbol, toolchain_from_env());
}

CompiledLibrary compile_cpu(const std::string& source, const std::string& symbol, const ToolchainConfig& config) {
  const std::string& dir = config.cache_dir;
  std::string err = make_dirs(dir);
  if (!err.empty()) {
    ++g_failures;
    throw CompileError(ErrorCode::unsupported, "the compiler cache directory cannot be used: " + err +
                                                   " (set OAR_COMPILER_CACHE_DIR)");
  }
  std::string version;
  try {
    version = compiler_version(config.cxx, dir);
  } catch (const CompileError&) {
    ++g_failures;
    throw;
  }
  sweep_stale_temporaries(dir);
  const std::string key_text = key_text_of(source, config, version);
  const std::string key = hex_hash128(key_text);
  const std::string so_path = dir + "/" + key + ".so", meta_path = dir + "/" + key + ".meta";
  std::lock_guard key_lock(key_mutex(key));

  CompiledLibrary lib;
  lib.key_ = key;
  lib.path_ = so_path;

  // A hit: the .meta checks out against the bytes we load.
  std::string meta_bytes = read_file(meta_path);
  if (!meta_bytes.empty()) {
    std::optional<Meta> meta = parse_meta(meta_bytes);
    int fd = open(so_path.c_str(), O_RDONLY | O_CLOEXEC);
    std::string problem;
    if (!meta) problem = "its .meta is garbled or truncated";
    else if (meta->key_text != key_text) problem = "its .meta was written for another key text (a hash collision)";
    else if (fd < 0) problem = "its .so is missing";
    if (problem.empty()) {
      std::optional<std::string> bytes = read_fd(fd);
      if (!bytes) problem = "its .so cannot be read";
      else if (static_cast<int64_t>(bytes->size()) != meta->size)
        problem = "its .so has " + std::to_string(bytes->size()) + " bytes but " + std::to_string(meta->size) +
                  " were written (truncated)";
      else if (hex64(fnv1a64(bytes->data(), bytes->size())) != meta->checksum)
        problem = "its .so does not match the checksum written with it (corrupt)";
    }
    if (fd >= 0) close(fd);
    if (problem.empty()) {
      Loaded loaded = load_path(so_path, symbol);
      if (loaded.error.empty()) {
        ++g_hits;
        lib.handle_ = loaded.handle;
        lib.symbol_ = loaded.symbol;
        lib.cache_hit_ = true;
        log("cache hit " + key + " (" + symbol + ")");
        return lib;
      }
      problem = loaded.error;
    }
    ++g_rejected;
    log("cache entry " + so_path + " is not used: " + problem + "; compiling it again");
  } else {
    log("cache miss " + key + " (" + symbol + ")");
  }

  // A miss: compile into temporary files, load, then publish by renames.
  const std::string tag = ".tmp." + std::to_string(getpid()) + "." + unique_suffix();
  const std::string src_tmp = dir + "/" + key + tag + ".cpp", so_tmp = dir + "/" + key + ".so" + tag,
                    meta_tmp = dir + "/" + key + ".meta" + tag, log_tmp = dir + "/" + key + ".log" + tag;
  auto cleanup = [&] {
    unlink(src_tmp.c_str());
    unlink(so_tmp.c_str());
    unlink(meta_tmp.c_str());
    unlink(log_tmp.c_str());
  };
  if (!write_file(src_tmp, source)) {
    cleanup();
    ++g_failures;
    throw CompileError(ErrorCode::unsupported, "cannot write " + src_tmp + ": " + std::strerror(errno));
  }
  std::vector<std::string> argv = split_command(config.cxx);
  argv.insert(argv.end(), config.flags.begin(), config.flags.end());
  argv.insert(argv.end(), {"-o", so_tmp, src_tmp});
  ChildResult r = run_child(argv, log_tmp, config.timeout_seconds);
  if (!r.started || r.timed_out || !r.exited || r.status != 0) {
    cleanup();
    ++g_failures;
    throw CompileError(r.timed_out ? ErrorCode::timeout : ErrorCode::unsupported,
                       describe_failure("the C++ compiler `" + config.cxx + "`", r, config.timeout_seconds));
  }
  int fd = open(so_tmp.c_str(), O_RDONLY | O_CLOEXEC);
  std::optional<std::string> bytes = fd >= 0 ? read_fd(fd) : std::nullopt;
  if (fd >= 0) close(fd);
  Loaded loaded;
  if (bytes) loaded = load_path(so_tmp, symbol);  // before the rename: what we checksum is what runs
  if (!bytes || !loaded.error.empty()) {
    cleanup();
    ++g_failures;
    throw CompileError(ErrorCode::internal, "the compiled library " + so_tmp + " cannot be loaded: " +
                                                (bytes ? loaded.error : std::string("it cannot be read")));
  }
  std::string checksum = hex64(fnv1a64(bytes->data(), bytes->size()));
  bool published = write_file(meta_tmp, meta_text(static_cast<int64_t>(bytes->size()), checksum, key_text)) &&
                   std::rename(so_tmp.c_str(), so_path.c_str()) == 0 &&
                   std::rename(meta_tmp.c_str(), meta_path.c_str()) == 0;
  if (!published) log("cannot store " + so_path + " in the cache: " + std::strerror(errno));
  if (config.keep_source) std::rename(src_tmp.c_str(), (dir + "/" + key + ".cpp").c_str());
  cleanup();
  ++g_compiles;
  lib.handle_ = loaded.handle;
  lib.symbol_ = loaded.symbol;
  lib.compile_seconds_ = r.seconds;
  log("compiled " + symbol + " in " + std::to_string(r.seconds) + " s -> " + so_path);
  return lib;
}

}  // namespace oar::compiler
