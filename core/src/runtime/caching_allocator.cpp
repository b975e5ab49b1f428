// Caching allocator: best-fit reuse of freed blocks (Note [Stream-ordered
// reuse] in caching_allocator.h).
#include "runtime/caching_allocator.h"

#include "oar/profiler.h"
#include "runtime/runtime_state.h"

namespace oar {

namespace {
constexpr uint64_t kGranularity = 512;
constexpr uint64_t kAlignment = 64;

uint64_t round_size(uint64_t bytes) {
  if (bytes == 0) bytes = 1;
  return (bytes + kGranularity - 1) / kGranularity * kGranularity;
}
}  // namespace

void* CachingAllocator::allocate(uint64_t bytes) {
  profiler::note_allocation(bytes);  // Note [Trace recorder]
  uint64_t size = round_size(bytes);
  std::lock_guard lock(mutex_);
  // Best fit, but never hand out a block more than twice the request (plus a
  // granule) so small tensors do not pin big blocks.
  auto it = free_blocks_.lower_bound(size);
  if (it != free_blocks_.end() && it->first <= 2 * size + kGranularity) {
    void* ptr = it->second;
    uint64_t block = it->first;
    free_blocks_.erase(it);
    blocks_[ptr].cached = false;
    stats_.allocated += block;
    stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
    return ptr;
  }
  void* ptr = nullptr;
  host_clear_error();
  OarStatus status = backend_.api.malloc(backend_.api.impl, device_, size, kAlignment, &ptr);
  if (status == OAR_ERROR_OUT_OF_MEMORY && !free_blocks_.empty()) {
    empty_cache_locked();
    host_clear_error();
    status = backend_.api.malloc(backend_.api.impl, device_, size, kAlignment, &ptr);
  }
  if (status != OAR_OK) {
    PluginFailure failure = host_take_failure(status);
    const std::string& message = failure.message;
    throw Error(failure.code,
                backend_.type + ":" + std::to_string(device_) + ": cannot allocate " +
                    std::to_string(size) + " bytes (" + std::to_string(stats_.allocated) +
                    " bytes held by tensors, " + std::to_string(stats_.reserved) + " reserved)" +
                    (message.empty() ? std::string() : ": " + message));
  }
  blocks_[ptr] = {size, false};
  stats_.reserved += size;
  stats_.allocated += size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  ++stats_.num_device_mallocs;
  return ptr;
}

bool CachingAllocator::release(void* ptr) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(ptr);
  if (it == blocks_.end() || it->second.cached) return false;  // unknown, or freed twice
  it->second.cached = true;
  stats_.allocated -= it->second.size;
  free_blocks_.emplace(it->second.size, ptr);
  return true;
}

AllocatorStats CachingAllocator::stats() {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated = stats_.allocated;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  empty_cache_locked();
}

void CachingAllocator::empty_cache_locked() {
  if (detached_ || free_blocks_.empty()) return;
  // Pending kernels may still read blocks freed by the host (stream order).
  backend_.api.synchronize_device(backend_.api.impl, device_);
  for (auto& [size, ptr] : free_blocks_) {
    backend_.api.free(backend_.api.impl, device_, ptr);
    blocks_.erase(ptr);
    stats_.reserved -= size;
  }
  free_blocks_.clear();
}

}  // namespace oar
