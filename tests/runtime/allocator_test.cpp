// Tests of the CPU allocator (runtime/allocator.h): alignment, zero-size requests, and the cache
// of large blocks (a freed block comes back for the same size, the limit bounds it, emptying it).
#include "runtime/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>

namespace kiln {
namespace {

TEST(CpuAllocator, AlignedAndZeroSizeSafe) {
  std::set<void*> seen;
  for (size_t size : {size_t(0), size_t(1), size_t(63), size_t(65), size_t(4096), size_t(3) << 20}) {
    void* p = cpu_allocate(size);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kCpuAlignment, 0u) << size;
    EXPECT_TRUE(seen.insert(p).second) << "two live blocks share an address";
    std::memset(p, 0xab, size);
  }
  for (void* p : seen) cpu_free(p);
  cpu_free(nullptr);
}

TEST(CpuAllocator, LargeBlocksAreReusedFromTheCache) {
  set_cpu_cache_limit(size_t(1) << 30);
  cpu_empty_cache();
  CpuCacheStats before = cpu_cache_stats();
  const size_t size = size_t(8) << 20;
  void* first = cpu_allocate(size);
  std::memset(first, 1, size);
  cpu_free(first);
  EXPECT_GE(cpu_cache_stats().cached_bytes, size);
  void* second = cpu_allocate(size - 100);  // rounds to the same block size
  EXPECT_EQ(second, first);
  EXPECT_EQ(cpu_cache_stats().hits, before.hits + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second) % (size_t(2) << 20), 0u) << "large blocks are 2 MiB aligned";
  cpu_free(second);
  cpu_empty_cache();
  EXPECT_EQ(cpu_cache_stats().cached_bytes, 0u);
}

TEST(CpuAllocator, LimitZeroDisablesTheCache) {
  set_cpu_cache_limit(0);
  void* p = cpu_allocate(size_t(4) << 20);
  cpu_free(p);
  EXPECT_EQ(cpu_cache_stats().cached_bytes, 0u);
  set_cpu_cache_limit(size_t(2) << 30);
}

}  // namespace
}  // namespace kiln
