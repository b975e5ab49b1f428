// Caching allocator of one device: freed blocks are kept for reuse, so a
// steady-state training step does not call the plugin's malloc.
// Note [Stream-ordered reuse]: every kernel of a device runs on the
// device's one compute stream, so a block freed by the host may be handed to
// a later kernel at once: the stream orders the old readers before it. Only
// returning a block to the plugin (empty_cache) needs a device synchronize.
// Kernel scratch memory (ABI 1.1) comes from here too (Note [Kernel scratch
// memory] in host_api.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

#include "oar/plugin_api.h"
#include "oar/runtime.h"

namespace oar {

struct DeviceBackend;

class CachingAllocator {
 public:
  CachingAllocator(DeviceBackend& backend, int device) : backend_(backend), device_(device) {}
  /// A block of at least `bytes`; throws oar::Error(out_of_memory) with the
  /// plugin's sentence and the allocator's numbers when the device is full.
  void* allocate(uint64_t bytes);
  /// Returns a block to the cache; false when `ptr` is not a live block of
  /// this allocator (nothing changes then).
  bool release(void* ptr);
  AllocatorStats stats();
  void reset_peak();
  /// Gives every cached block back to the plugin.
  void empty_cache();
  /// After the plugin shut down: never call it again.
  void detach() { detached_ = true; }

 private:
  void empty_cache_locked();
  DeviceBackend& backend_;
  int device_;
  std::mutex mutex_;
  std::multimap<uint64_t, void*> free_blocks_;       // size -> block
  struct Block {
    uint64_t size;
    bool cached;  // in free_blocks_, not held
  };
  std::unordered_map<void*, Block> blocks_;  // every live or cached block
  AllocatorStats stats_;
  bool detached_ = false;
};

}  // namespace oar
