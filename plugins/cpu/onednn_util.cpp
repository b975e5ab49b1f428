// oneDNN engine, streams and the plan cache (Note [Cached plans]).
#include "onednn_util.h"

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

void Plan::add_arg(int arg, const dnnl::memory::desc& user_md, bool output) {
  Slot s{arg, output, user_md, true, {}, {}};
  dnnl::memory::desc prim_md = query_(arg);
  if (prim_md != user_md) {
    s.direct = false;
    s.inner = dnnl::memory(prim_md, onednn_engine());
    auto& eng = onednn_engine();
    s.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, prim_md, eng, user_md))
                       : dnnl::reorder(dnnl::reorder::primitive_desc(eng, user_md, eng, prim_md));
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
        s.reorder.execute(stream, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, s.inner}});
      }
    }
  }
  for (auto& [arg, mem] : internal_) args.emplace(arg, mem);
  primitive_.execute(stream, args);
  for (auto& [i, user] : outputs_to_reorder) {
    slots_[i].reorder.execute(stream, {{DNNL_ARG_FROM, slots_[i].inner}, {DNNL_ARG_TO, user}});
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
