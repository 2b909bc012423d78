// The aligned CPU allocator, with a cache of large blocks (see runtime/allocator.h).
#include "runtime/allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kiln/error.h"

namespace kiln {

namespace {

constexpr size_t kLargeBlock = size_t(1) << 20;   // cached from this size up
constexpr size_t kLargeGranule = size_t(1) << 16;  // large sizes round up to 64 KiB
constexpr size_t kHugePage = size_t(2) << 20;

size_t default_limit() {
  if (const char* text = std::getenv("KILN_CPU_CACHE_BYTES")) {
    char* end = nullptr;
    unsigned long long value = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0') return size_t(value);
  }
  return size_t(2) << 30;
}

struct LargeBlocks {
  std::mutex mutex;
  std::unordered_map<void*, size_t> live;       // block -> rounded size
  std::multimap<size_t, void*> free_by_size;    // cached blocks
  size_t cached_bytes = 0;
  size_t live_bytes = 0;
  size_t limit = default_limit();
  uint64_t hits = 0;
  uint64_t misses = 0;
};

LargeBlocks& large_blocks() {
  static LargeBlocks* blocks = new LargeBlocks();  // never destroyed: frees may come at exit
  return *blocks;
}

void* allocate_large(size_t rounded) {
  LargeBlocks& blocks = large_blocks();
  {
    std::lock_guard<std::mutex> lock(blocks.mutex);
    auto it = blocks.free_by_size.find(rounded);
    if (it != blocks.free_by_size.end()) {
      void* pointer = it->second;
      blocks.free_by_size.erase(it);
      blocks.cached_bytes -= rounded;
      blocks.live[pointer] = rounded;
      blocks.live_bytes += rounded;
      ++blocks.hits;
      return pointer;
    }
    ++blocks.misses;
  }
  void* pointer = std::aligned_alloc(kHugePage, (rounded + kHugePage - 1) / kHugePage * kHugePage);
  if (pointer == nullptr) {
    cpu_empty_cache();
    pointer = std::aligned_alloc(kHugePage, (rounded + kHugePage - 1) / kHugePage * kHugePage);
  }
  if (pointer == nullptr) return nullptr;
  madvise(pointer, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
  std::lock_guard<std::mutex> lock(blocks.mutex);
  blocks.live[pointer] = rounded;
  blocks.live_bytes += rounded;
  return pointer;
}

}  // namespace

void* cpu_allocate(size_t nbytes) {
  size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  if (rounded == 0) rounded = kCpuAlignment;
  void* pointer = nullptr;
  if (rounded >= kLargeBlock) {
    pointer = allocate_large((rounded + kLargeGranule - 1) / kLargeGranule * kLargeGranule);
  } else {
    pointer = std::aligned_alloc(kCpuAlignment, rounded);
  }
  if (pointer == nullptr) fail("out of memory: could not allocate ", nbytes, " bytes on cpu");
  return pointer;
}

void cpu_free(void* pointer) noexcept {
  if (pointer == nullptr) return;
  LargeBlocks& blocks = large_blocks();
  {
    std::lock_guard<std::mutex> lock(blocks.mutex);
    auto it = blocks.live.find(pointer);
    if (it != blocks.live.end()) {
      size_t size = it->second;
      blocks.live.erase(it);
      blocks.live_bytes -= size;
      if (blocks.cached_bytes + size <= blocks.limit) {
        blocks.free_by_size.emplace(size, pointer);
        blocks.cached_bytes += size;
        return;
      }
    }
  }
  std::free(pointer);
}

CpuCacheStats cpu_cache_stats() {
  LargeBlocks& blocks = large_blocks();
  std::lock_guard<std::mutex> lock(blocks.mutex);
  return {blocks.cached_bytes, blocks.live_bytes, blocks.hits, blocks.misses};
}

void cpu_empty_cache() noexcept {
  LargeBlocks& blocks = large_blocks();
  std::vector<void*> to_free;
  {
    std::lock_guard<std::mutex> lock(blocks.mutex);
    for (auto& [size, pointer] : blocks.free_by_size) to_free.push_back(pointer);
    blocks.free_by_size.clear();
    blocks.cached_bytes = 0;
  }
  for (void* pointer : to_free) std::free(pointer);
}

void set_cpu_cache_limit(size_t bytes) {
  LargeBlocks& blocks = large_blocks();
  {
    std::lock_guard<std::mutex> lock(blocks.mutex);
    blocks.limit = bytes;
  }
  if (bytes == 0) cpu_empty_cache();
}

}  // namespace kiln
