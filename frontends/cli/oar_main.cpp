// The `oar` command: `oar devices` lists plugins and devices, `oar ops`
// shows which ops each device runs natively and which run decomposed;
// `oar ops --markdown` prints (or checks, or rewrites) the op table of
// docs/kernels.md from the registry.
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "oar/oar.h"
#include "oar/plugin_api.h"

namespace {

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

int list_devices() {
  oar::Runtime& rt = oar::Runtime::global();
  std::cout << "Plugins loaded:\n";
  if (rt.plugins().empty()) std::cout << "  (none)\n";
  for (const auto& p : rt.plugins()) {
    std::cout << "  " << p.path << "\n    name " << p.name << ", ABI " << p.abi_major << "." << p.abi_minor << ", "
              << p.num_kernels << " kernels\n";
    for (const auto& type : p.device_types) {
      int count = rt.device_count(type);
      std::cout << "    device type '" << type << "': " << count << (count == 1 ? " device\n" : " devices\n");
      for (int i = 0; i < count; ++i) {
        oar::DeviceInfo info = rt.device_info({type, i});
        std::cout << "      " << info.device.str() << "  " << info.name << "  [" << info.isa << "]  memory "
                  << human_bytes(info.total_memory) << " total, " << human_bytes(info.free_memory) << " free, "
                  << info.compute_units << " compute units"
                  << ((info.flags & OAR_DEVICE_HOST_ADDRESSABLE) ? ", host-addressable" : "") << "\n";
      }
    }
  }
  std::cout << "Plugins skipped:\n";
  if (rt.skipped().empty()) std::cout << "  (none)\n";
  for (const auto& s : rt.skipped()) std::cout << "  " << s.path << "\n    reason: " << s.reason << "\n";
  std::string default_device;
  try {
    default_device = rt.default_device().str();
  } catch (const oar::Error& e) {
    default_device = std::string("none (") + e.what() + ")";
  }
  std::cout << "Default device: " << default_device << "\n";
  return 0;
}

// Who provides each kernel: one line per plugin with its ops; an op that
// another plugin also provides names the one it is tried before.
void print_providers(const oar::Runtime& rt, const std::string& type) {
  auto kernels = rt.kernel_providers(type);
  std::vector<std::string> providers;
  for (const auto& k : kernels) {
    if (std::find(providers.begin(), providers.end(), k.plugin_path) == providers.end()) providers.push_back(k.plugin_path);
  }
  std::stable_partition(providers.begin(), providers.end(), [&](const std::string& p) {
    return std::any_of(kernels.begin(), kernels.end(), [&](const auto& k) { return k.plugin_path == p && k.owner; });
  });
  std::cout << "  kernel providers (an op with several is tried in the order shown):\n";
  for (const auto& provider : providers) {
    std::string ops, last;
    bool owner = false;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const auto& k = kernels[i];
      if (k.plugin_path != provider || k.op == last) continue;
      last = k.op;
      owner = owner || k.owner;
      std::string detail;
      if (!k.owner || k.priority != 0) detail = "priority " + std::to_string(k.priority);
      // The other providers of this op, tried after this one.
      std::string before;
      for (size_t j = i + 1; j < kernels.size() && kernels[j].op == k.op; ++j) {
        if (kernels[j].plugin_path != provider && before.find(kernels[j].plugin_path) == std::string::npos)
          before += (before.empty() ? "" : ", ") + kernels[j].plugin_path;
      }
      if (!before.empty()) detail += (detail.empty() ? "" : "; ") + std::string("overrides ") + before;
      std::string item = k.op + (detail.empty() ? "" : " (" + detail + ")");
      ops += (ops.empty() ? "" : " ") + item;
    }
    std::cout << "    " << provider << (owner ? " (owner)" : "") << ": " << ops << "\n";
  }
}

int list_ops(const std::string& only_type) {
  oar::Runtime& rt = oar::Runtime::global();
  std::vector<std::string> types;
  for (const auto& t : rt.device_types()) {
    if (only_type.empty() || t == only_type) types.push_back(t);
  }
  if (types.empty() && only_type.empty()) {
    std::cout << "No device types are registered (see `oar devices`).\n";
    return 0;
  }
  if (types.empty()) {
    std::cerr << "oar ops: device type '" << only_type << "' is not registered; registered types:";
    for (const auto& t : rt.device_types()) std::cerr << " " << t;
    std::cerr << "\n";
    return 2;
  }
  for (const auto& type : types) {
    auto native = rt.kernel_ops(type);
    auto has = [&](const std::string& op) { return std::find(native.begin(), native.end(), op) != native.end(); };
    std::string nat, dec, missing;
    for (const oar::OpDef* op : oar::OpRegistry::instance().all()) {
      if (op->kind == oar::OpKind::view) continue;
      std::string& list = has(op->name) ? nat : (op->kind == oar::OpKind::composite ? dec : missing);
      list += (list.empty() ? "" : " ") + op->name;
    }
    std::cout << "Device type '" << type << "':\n  native kernels: " << (nat.empty() ? "(none)" : nat)
              << "\n  runs decomposed: " << (dec.empty() ? "(none)" : dec)
              << "\n  missing (primitive without kernel): " << (missing.empty() ? "(none)" : missing) << "\n";
    print_providers(rt, type);
  }
  return 0;
}

// The generated table sits between these lines of docs/kernels.md.
constexpr const char* kTableBegin = "<!-- BEGIN op table: generated by `oar ops --markdown --write docs/kernels.md` -->\n";
constexpr const char* kTableEnd = "<!-- END op table -->\n";

// mode "": print; "check": exit 1 naming the file when its table differs;
// "write": replace the table in the file.
int op_table(const std::string& mode, const std::string& path) {
  const std::string table = oar::op_table_markdown();
  if (mode.empty()) {
    std::cout << table;
    return 0;
  }
  std::ifstream in(path);
  if (!in) {
    std::cerr << "oar ops: cannot read '" << path << "'\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string doc = text.str();
  size_t begin = doc.find(kTableBegin), end = doc.find(kTableEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    std::cerr << "oar ops: '" << path << "' has no generated op table (the line " << kTableBegin
              << "followed by the table and " << kTableEnd << ")";
    return 2;
  }
  begin += std::strlen(kTableBegin);
  if (mode == "check") {
    if (doc.compare(begin, end - begin, table) == 0) return 0;
    std::cerr << "oar ops: the op table in '" << path << "' differs from the registry's; run `oar ops --markdown "
              << "--write " << path << "` and commit the result. The registry's table:\n" << table;
    return 1;
  }
  doc.replace(begin, end - begin, table);
  std::ofstream out(path);
  out << doc;
  return out ? 0 : 2;
}

void usage() {
  std::cout << "usage: oar <command>\n"
               "  devices             list plugins found (and skipped) and their devices\n"
               "  ops [--device T]    ops each device type runs natively, decomposed, or lacks\n"
               "  ops --markdown [--check FILE | --write FILE]\n"
               "                      the op table of docs/kernels.md from the registry\n"
               "Environment: OAR_PLUGIN_PATH (':'-separated dirs or files), OAR_DEVICE=type[:index],\n"
               "             OAR_LOG_LEVEL=debug|info|warning|error,\n"
               "             OAR_PLUGIN_PROBE=0|1 (probe plugins in a child process first; default 1),\n"
               "             OAR_PLUGIN_PROBE_TIMEOUT=seconds (default 10), OAR_PLUGIN_PROBE_CACHE=file\n";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "devices") return list_devices();
    if (cmd == "ops") {
      std::string type, table_mode, table_path;
      bool markdown = false;
      for (int i = 2; i < argc; ++i) {
        if (std::strcmp(argv[i], "--markdown") == 0) markdown = true;
        else if ((std::strcmp(argv[i], "--check") == 0 || std::strcmp(argv[i], "--write") == 0) && i + 1 < argc) {
          table_mode = argv[i] + 2;
          table_path = argv[++i];
        } else if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) type = argv[++i];
        else if (std::strncmp(argv[i], "--device=", 9) == 0) type = argv[i] + 9;
        else {
          std::cerr << "oar ops: unknown argument '" << argv[i] << "'\n";
          return 2;
        }
      }
      if (markdown || !table_mode.empty()) return op_table(table_mode, table_path);
      return list_ops(type);
    }
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      usage();
      return 0;
    }
    usage();
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "oar: " << e.what() << "\n";
    return 1;
  }
}
