// BinAllocator: rounding, best fit across bins, split, merge, shrink, limits and poisoning.
#include "runtime/vm/bin_allocator.h"

#include <gtest/gtest.h>

#include <cstring>

namespace kiln::vm {
namespace {

std::shared_ptr<BinAllocator> make_allocator(size_t limit, size_t min_chunk,
                                             std::optional<uint8_t> poison = std::nullopt) {
  BinAllocatorOptions options;
  options.min_chunk_bytes = min_chunk;
  options.poison_byte = poison;
  return std::make_shared<BinAllocator>(std::make_shared<CpuMemoryBackend>(limit), options);
}

TEST(BinAllocator, RoundsUpTo512AndReusesAFreedPiece) {
  auto allocator = make_allocator(SIZE_MAX, 4096);
  void* a = allocator->allocate(100);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(allocator->stats().in_use_bytes, 512u);
  allocator->deallocate(a);
  EXPECT_EQ(allocator->stats().in_use_bytes, 0u);
  void* b = allocator->allocate(300);
  EXPECT_EQ(b, a);  // the whole chunk merged back; its first piece serves again
  EXPECT_EQ(allocator->stats().backend_allocations, 1u);
  allocator->deallocate(b);
}

TEST(BinAllocator, SplitsAChunkIntoAdjacentPieces) {
  auto allocator = make_allocator(SIZE_MAX, 4096);
  char* a = static_cast<char*>(allocator->allocate(1000));  // 1024
  char* b = static_cast<char*>(allocator->allocate(1024));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(b, a + 1024);
  BinAllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.reserved_bytes, 4096u);
  EXPECT_EQ(stats.in_use_bytes, 2048u);
  EXPECT_EQ(stats.chunks, 1u);
  allocator->deallocate(a);
  allocator->deallocate(b);
}

TEST(BinAllocator, MergesFreeNeighboursAndShrinksWhollyFreeChunks) {
  auto allocator = make_allocator(SIZE_MAX, 3072);
  void* a = allocator->allocate(1024);
  void* b = allocator->allocate(1024);
  void* c = allocator->allocate(1024);
  allocator->deallocate(a);
  allocator->deallocate(c);
  EXPECT_EQ(allocator->shrink(), 0u);  // b still splits the chunk
  // With a and c free but not adjacent, 2048 bytes do not fit in the chunk.
  void* big = allocator->allocate(2048);
  EXPECT_EQ(allocator->stats().chunks, 2u);
  allocator->deallocate(big);  // merges with the free rest of its chunk
  EXPECT_EQ(allocator->shrink(), 3072u);  // the second chunk only
  allocator->deallocate(b);  // merges with both neighbours: the first chunk is whole again
  void* whole = allocator->allocate(3072);
  EXPECT_EQ(whole, a);
  allocator->deallocate(whole);
  EXPECT_EQ(allocator->shrink(), 3072u);
  BinAllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.reserved_bytes, 0u);
  EXPECT_EQ(stats.chunks, 0u);
  EXPECT_EQ(stats.chunks_returned, 2u);
}

TEST(BinAllocator, PicksTheSmallestFreePieceThatFits) {
  auto allocator = make_allocator(SIZE_MAX, 8192);
  char* a = static_cast<char*>(allocator->allocate(1024));
  void* b = allocator->allocate(512);
  char* c = static_cast<char*>(allocator->allocate(2048));
  void* d = allocator->allocate(512);  // keeps c apart from the chunk's free tail
  allocator->deallocate(a);
  allocator->deallocate(c);
  // Free now: a (1024), c (2048), and the tail (4096).
  EXPECT_EQ(allocator->allocate(1000), a);
  EXPECT_EQ(allocator->allocate(1500), c);
  for (void* p : {static_cast<void*>(a), b, static_cast<void*>(c), d}) allocator->deallocate(p);
}

TEST(BinAllocator, RefusesPastTheLimitAndFallsBackToAnExactChunk) {
  auto allocator = make_allocator(4096, size_t(1) << 20);
  void* a = allocator->allocate(1000);  // a 1 MiB chunk is refused; a 1024-byte one is not
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(allocator->stats().reserved_bytes, 1024u);
  void* b = allocator->allocate(3072);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(allocator->allocate(512), nullptr);  // 4096 reserved: the limit
  allocator->deallocate(a);
  void* c = allocator->allocate(512);  // reuses a's piece without asking the backend
  EXPECT_EQ(c, a);
  allocator->deallocate(b);
  allocator->deallocate(c);
  EXPECT_EQ(allocator->backend().reserved(), 4096u);
  allocator->shrink();
  EXPECT_EQ(allocator->backend().reserved(), 0u);
}

TEST(BinAllocator, PoisonsFreedPieces) {
  auto allocator = make_allocator(SIZE_MAX, 4096, uint8_t{0xAB});
  auto* a = static_cast<unsigned char*>(allocator->allocate(512));
  auto* keep = static_cast<unsigned char*>(allocator->allocate(512));
  std::memset(a, 0x11, 512);
  allocator->deallocate(a);
  // The chunk is still held, so reading the freed piece is reading our own memory.
  for (int i = 0; i < 512; ++i) ASSERT_EQ(a[i], 0xAB) << "byte " << i;
  allocator->deallocate(keep);
}

}  // namespace
}  // namespace kiln::vm
