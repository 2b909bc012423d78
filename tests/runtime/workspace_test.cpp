// Tests for runtime/workspace: alignment (64 bytes; 2 MiB for huge blocks), reuse without
// reallocation when a run needs no more, growth, zero-byte requests, and that the whole
// capacity is usable memory.
#include "runtime/workspace.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace kiln {
namespace {

bool aligned(const void* pointer, size_t alignment) { return reinterpret_cast<uintptr_t>(pointer) % alignment == 0; }

TEST(Workspace, SmallBlocksAreCacheLineAlignedAndReused) {
  Workspace workspace;
  EXPECT_EQ(workspace.capacity(), 0u);
  void* first = workspace.reserve(100);
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(aligned(first, 64));
  EXPECT_EQ(workspace.capacity(), 128u);
  EXPECT_EQ(workspace.reserve(128), first);  // fits: same block
  EXPECT_EQ(workspace.reserve(1), first);
  void* grown = workspace.reserve(1000);
  EXPECT_TRUE(aligned(grown, 64));
  EXPECT_GE(workspace.capacity(), 1000u);
  std::memset(grown, 0xab, workspace.capacity());
}

TEST(Workspace, ZeroBytesGivesAValidPointer) {
  Workspace workspace;
  void* pointer = workspace.reserve(0);
  EXPECT_NE(pointer, nullptr);
  EXPECT_TRUE(aligned(pointer, 64));
}

TEST(Workspace, HugeBlocksAreHugePageAligned) {
  Workspace workspace;
  const size_t bytes = 5 * Workspace::kHugePageBytes + 123;
  void* block = workspace.reserve(bytes);
  EXPECT_TRUE(aligned(block, Workspace::kHugePageBytes));
  EXPECT_EQ(workspace.capacity(), 6 * Workspace::kHugePageBytes);
  std::memset(block, 1, workspace.capacity());
  EXPECT_EQ(workspace.reserve(bytes / 2), block);

  Workspace moved = std::move(workspace);
  EXPECT_EQ(workspace.capacity(), 0u);
  EXPECT_EQ(moved.reserve(100), block);
}

}  // namespace
}  // namespace kiln
