// oneDNN plumbing shared by the CPU plugin's primitive kernels (matmul,
// conv, pool, softmax, layer_norm): the engine, a per-thread stream,
// Note [Scratchpads] — every primitive runs with the calling thread's own
// scratchpad — and Note [Cached plans] — a primitive plus the reorders
// between the caller's plain layout and the layouts the primitive chose,
// cached by problem key.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace oar_cpu {

/// The process's CPU engine.
dnnl::engine& onednn_engine();
/// The calling thread's stream on it (also applies g_num_threads).
dnnl::stream& onednn_stream();

/// Note [Scratchpads]: a primitive created in oneDNN's default ("library")
/// scratchpad mode keeps a pointer to a scratchpad shared by every
/// primitive created on the same thread (Debian's oneDNN is built with
/// DNNL_ENABLE_CONCURRENT_EXEC off), and even with that option on, one
/// primitive has one scratchpad. This plugin caches primitives and runs
/// them from whichever thread calls: two threads then wrote their partial
/// sums into the same buffer, and 4 threads of matmul + backward were wrong
/// about once in 1300 iterations (tests/unit/test_concurrency_stress.cpp).
/// So every primitive descriptor is made with onednn_attr() (user
/// scratchpad mode) and every primitive runs through execute_primitive(),
/// which hands it the calling thread's scratchpad and refuses a primitive
/// made without onednn_attr().
///
/// The attributes of every primitive descriptor of this plugin.
dnnl::primitive_attr onednn_attr();
/// Runs `primitive` on the calling thread's stream with the calling
/// thread's scratchpad added to `args` (does not wait for the stream).
/// Throws std::logic_error for a primitive not made with onednn_attr().
void execute_primitive(const dnnl::primitive& primitive, std::unordered_map<int, dnnl::memory> args);

/// Note [Cached plans]: one primitive with its arguments. Each argument has
/// the caller's (plain) memory descriptor and the primitive's; when they
/// differ the plan owns a buffer in the primitive's layout and a reorder
/// (inputs are reordered in before, outputs out after the primitive runs).
/// A plan runs under its own mutex since its buffers are shared.
class Plan {
 public:
  Plan(dnnl::primitive primitive, std::function<dnnl::memory::desc(int)> query) : primitive_(std::move(primitive)), query_(std::move(query)) {}
  /// Adds argument `arg` (DNNL_ARG_*) with the caller's layout.
  void add_arg(int arg, const dnnl::memory::desc& user_md, bool output);
  /// Adds an argument the plan owns (workspace): never seen by the caller.
  void add_internal(int arg, const dnnl::memory::desc& md);
  /// Runs the primitive on the caller's pointers, one per add_arg in order.
  void run(const std::vector<void*>& user_ptrs);

 private:
  struct Slot {
    int arg;
    bool output;
    dnnl::memory::desc user_md;
    bool direct;             // the primitive takes the caller's layout
    dnnl::memory inner;      // primitive-layout buffer (not direct)
    dnnl::primitive reorder; // user -> inner (inputs) or inner -> user (outputs)
  };
  dnnl::primitive primitive_;
  std::function<dnnl::memory::desc(int)> query_;  // the primitive's md of an arg
  std::vector<Slot> slots_;
  std::vector<std::pair<int, dnnl::memory>> internal_;
  std::mutex mutex_;
};

/// The plan cached under `key`, built by `make` on first use. `make`
/// returns null when oneDNN has no implementation (remembered too).
std::shared_ptr<Plan> cached_plan(const std::string& key, const std::function<std::shared_ptr<Plan>()>& make);

/// "d1,d2,...;" for a dims vector (cache keys).
std::string dims_key(const dnnl::memory::dims& dims);

}  // namespace oar_cpu
