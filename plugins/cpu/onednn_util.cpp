// oneDNN engine, streams, scratchpads (Note [Scratchpads]) and the plan
// cache (Note [Cached plans]).
#include "onednn_util.h"

#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

#include "cpu_common.h"

namespace oar_cpu {

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& onednn_stream() {
  apply_num_threads_to_this_thread();
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

dnnl::primitive_attr onednn_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {

/// The calling thread's scratchpad, grown to the largest request so far.
struct ThreadScratchpad {
  void* data = nullptr;  // owned
  size_t bytes = 0;
  ThreadScratchpad() = default;
  ThreadScratchpad(const ThreadScratchpad&) = delete;
  ThreadScratchpad& operator=(const ThreadScratchpad&) = delete;
  ~ThreadScratchpad() { std::free(data); }
  void* reserve(size_t want) {
    if (want <= bytes) return data;
    const size_t rounded = (want + 4095) / 4096 * 4096;
    void* fresh = std::aligned_alloc(64, rounded);
    if (fresh == nullptr) throw std::bad_alloc();
    std::free(data);
    data = fresh;
    bytes = rounded;
    return data;
  }
};

}  // namespace

void execute_primitive(const dnnl::primitive& primitive, std::unordered_map<int, dnnl::memory> args) {
  const_dnnl_primitive_desc_t pd = primitive.get_primitive_desc();
  const_dnnl_primitive_attr_t attr = nullptr;
  dnnl_scratchpad_mode_t mode = dnnl_scratchpad_mode_library;
  if (dnnl_primitive_desc_get_attr(pd, &attr) != dnnl_success ||
      dnnl_primitive_attr_get_scratchpad_mode(attr, &mode) != dnnl_success || mode != dnnl_scratchpad_mode_user) {
    throw std::logic_error(
        "cpu plugin: a oneDNN primitive was made without onednn_attr() (user scratchpad mode); it would share "
        "a scratchpad between threads (Note [Scratchpads])");
  }
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (md != nullptr && dnnl_memory_desc_get_size(md) > 0) {
    thread_local ThreadScratchpad scratchpad;
    dnnl::memory::desc desc(*md);
    args.insert_or_assign(DNNL_ARG_SCRATCHPAD,
                          dnnl::memory(desc, onednn_engine(), scratchpad.reserve(dnnl_memory_desc_get_size(md))));
  }
  primitive.execute(onednn_stream(), args);
}

void Plan::add_arg(int arg, const dnnl::memory::desc& user_md, bool output) {
  Slot s{arg, output, user_md, true, {}, {}};
  dnnl::memory::desc prim_md = query_(arg);
  if (prim_md != user_md) {
    s.direct = false;
    s.inner = dnnl::memory(prim_md, onednn_engine());
    auto& eng = onednn_engine();
    s.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, prim_md, eng, user_md, onednn_attr()))
                       : dnnl::reorder(dnnl::reorder::primitive_desc(eng, user_md, eng, prim_md, onednn_attr()));
  }
  slots_.push_back(std::move(s));
}

void Plan::add_internal(int arg, const dnnl::memory::desc& md) {
  internal_.emplace_back(arg, dnnl::memory(md, onednn_engine()));
}

void Plan::run(const std::vector<void*>& user_ptrs) {
  std::lock_guard<std::mutex> lock(mutex_);
  dnnl::stream& stream = onednn_stream();
  std::unordered_map<int, dnnl::memory> args;
  std::vector<std::pair<size_t, dnnl::memory>> outputs_to_reorder;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    dnnl::memory user(s.user_md, onednn_engine(), user_ptrs[i]);
    if (s.direct) {
      args.emplace(s.arg, user);
    } else {
      args.emplace(s.arg, s.inner);
      if (s.output) {
        outputs_to_reorder.emplace_back(i, user);
      } else {
        execute_primitive(s.reorder, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, s.inner}});
      }
    }
  }
  for (auto& [arg, mem] : internal_) args.emplace(arg, mem);
  execute_primitive(primitive_, std::move(args));
  for (auto& [i, user] : outputs_to_reorder) {
    execute_primitive(slots_[i].reorder, {{DNNL_ARG_FROM, slots_[i].inner}, {DNNL_ARG_TO, user}});
  }
  stream.wait();
}

std::shared_ptr<Plan> cached_plan(const std::string& key, const std::function<std::shared_ptr<Plan>()>& make) {
  static std::mutex mutex;
  static auto* cache = new std::unordered_map<std::string, std::shared_ptr<Plan>>();  // lives with the process
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  std::shared_ptr<Plan> plan;
  try {
    plan = make();
  } catch (const dnnl::error&) {
    plan = nullptr;  // unimplemented on this machine: remembered
  }
  std::lock_guard<std::mutex> lock(mutex);
  return cache->emplace(key, plan).first->second;
}

std::string dims_key(const dnnl::memory::dims& dims) {
  std::string key;
  for (auto d : dims) key += std::to_string(d) + ",";
  return key + ";";
}

}  // namespace oar_cpu
