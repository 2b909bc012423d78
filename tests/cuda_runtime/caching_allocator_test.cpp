// The caching device allocator's logic on a fake device: rounding and segment sizes, reuse on the
// same stream, splitting and merging, cross-stream reuse only after the other stream's event,
// the out-of-memory retry, empty_cache and the stats.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "runtime/cuda/caching_allocator.h"
#include "kiln/error.h"
#include "runtime/vm/errors.h"

namespace kiln::cuda {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

// A device with `limit` bytes: hands out addresses 1 GiB apart (so neighbours of different
// segments are never adjacent), and events that finish when the test says.
class FakeDevice final : public DeviceMemoryBackend {
 public:
  explicit FakeDevice(size_t limit = SIZE_MAX) : limit_(limit) {}
  DevicePointer allocate(size_t bytes) override {
    if (in_use_ + bytes > limit_) return 0;
    DevicePointer pointer = next_;
    next_ += uint64_t(1) << 30;
    live_[pointer] = bytes;
    in_use_ += bytes;
    ++allocations;
    return pointer;
  }
  void free(DevicePointer pointer) override {
    auto it = live_.find(pointer);
    ASSERT_NE(it, live_.end()) << "freed a pointer the device did not hand out";
    in_use_ -= it->second;
    live_.erase(it);
  }
  uint64_t record_event(StreamId stream) override {
    recorded_streams.push_back(stream);
    pending_.insert(next_token_);
    return next_token_++;
  }
  bool event_done(uint64_t token) override { return pending_.count(token) == 0; }
  void synchronize() override { pending_.clear(); }

  void finish_all_events() { pending_.clear(); }
  size_t in_use() const { return in_use_; }
  size_t live_segments() const { return live_.size(); }

  int allocations = 0;
  std::vector<StreamId> recorded_streams;

 private:
  size_t limit_;
  size_t in_use_ = 0;
  DevicePointer next_ = uint64_t(1) << 32;
  std::map<DevicePointer, size_t> live_;
  std::set<uint64_t> pending_;
  uint64_t next_token_ = 1;
};

constexpr StreamId kStreamA = 0x1000, kStreamB = 0x2000;

TEST(CachingAllocator, RoundsRequestsAndSizesSegments) {
  EXPECT_EQ(CachingDeviceAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingDeviceAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingDeviceAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingDeviceAllocator::segment_size(512), 2 * MiB);
  EXPECT_EQ(CachingDeviceAllocator::segment_size(1 * MiB), 2 * MiB);
  EXPECT_EQ(CachingDeviceAllocator::segment_size(1 * MiB + 512), 20 * MiB);
  EXPECT_EQ(CachingDeviceAllocator::segment_size(10 * MiB), 10 * MiB);
  EXPECT_EQ(CachingDeviceAllocator::segment_size(11 * MiB + 512), 12 * MiB);
}

TEST(CachingAllocator, SmallBlocksAreCutFromOneSegmentAndReusedOnTheirStream) {
  auto device = std::make_shared<FakeDevice>();
  CachingDeviceAllocator allocator(device);
  DevicePointer first = allocator.allocate(1000, kStreamA);
  DevicePointer second = allocator.allocate(3 * KiB, kStreamA);
  EXPECT_EQ(second, first + 1 * KiB);  // split from the same 2 MiB segment
  EXPECT_EQ(device->allocations, 1);
  allocator.free(first);
  EXPECT_EQ(allocator.allocate(700, kStreamA), first);  // the freed 1 KiB block, reused
  CachingAllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.cache_hits, 2u);  // the second request and the reuse were cut from cached blocks
  EXPECT_EQ(stats.segment_allocations, 1u);
  EXPECT_EQ(stats.allocated_bytes, 4 * KiB);
  EXPECT_EQ(stats.reserved_bytes, 2 * MiB);
}

TEST(CachingAllocator, AnotherStreamGetsItsOwnSegment) {
  auto device = std::make_shared<FakeDevice>();
  CachingDeviceAllocator allocator(device);
  DevicePointer on_a = allocator.allocate(4 * KiB, kStreamA);
  allocator.free(on_a);
  DevicePointer on_b = allocator.allocate(4 * KiB, kStreamB);
  EXPECT_NE(on_b, on_a);
  EXPECT_EQ(device->allocations, 2);
}

TEST(CachingAllocator, FreedNeighboursMergeBackIntoTheWholeSegment) {
  auto device = std::make_shared<FakeDevice>();
  CachingDeviceAllocator allocator(device);
  DevicePointer a = allocator.allocate(256 * KiB, kStreamA);
  DevicePointer b = allocator.allocate(256 * KiB, kStreamA);
  DevicePointer c = allocator.allocate(256 * KiB, kStreamA);
  allocator.free(a);
  allocator.free(c);
  allocator.free(b);  // merges with both
  EXPECT_EQ(allocator.allocate(1 * MiB, kStreamA), a);  // the largest small request fits the merged block
  EXPECT_EQ(device->allocations, 1);
}

TEST(CachingAllocator, LargeRequestsUseLargeSegmentsAndSplitOnlyPastOneMebibyte) {
  auto device = std::make_shared<FakeDevice>();
  CachingDeviceAllocator allocator(device);
  DevicePointer five = allocator.allocate(5 * MiB, kStreamA);
  DevicePointer rest = allocator.allocate(14 * MiB, kStreamA);  // from the 15 MiB left of the 20 MiB segment
  EXPECT_EQ(rest, five + 5 * MiB);
  EXPECT_EQ(device->allocations, 1);
  EXPECT_EQ(allocator.stats().allocated_bytes, 20 * MiB);  // the last 1 MiB was not worth a split
  // 1 MiB is left: not worth a split, so an 18.5 MiB request after freeing the 14 MiB block
  // cannot fit and takes a new segment of its own size.
  allocator.free(rest);
  DevicePointer big = allocator.allocate(18 * MiB + 512 * KiB, kStreamA);
  EXPECT_NE(big, rest);
  EXPECT_EQ(device->allocations, 2);
  EXPECT_EQ(allocator.stats().reserved_bytes, 20 * MiB + 20 * MiB);
}

TEST(CachingAllocator, ABlockUsedByAnotherStreamWaitsForItsEvent) {
  auto device = std::make_shared<FakeDevice>();
  CachingDeviceAllocator allocator(device);
  DevicePointer shared = allocator.allocate(64 * KiB, kStreamA);
  allocator.record_stream(shared, kStreamB);
  allocator.record_stream(shared, kStreamA);  // its own stream: nothing to wait for
  allocator.free(shared);
  EXPECT_EQ(device->recorded_streams, std::vector<StreamId>{kStreamB});
  EXPECT_EQ(allocator.stats().blocks_waiting_for_streams, 1u);
  DevicePointer meanwhile = allocator.allocate(64 * KiB, kStreamA);
  EXPECT_NE(meanwhile, shared);  // stream B may still read it
  device->finish_all_events();
  EXPECT_EQ(allocator.allocate(64 * KiB, kStreamA), shared);
  EXPECT_EQ(allocator.stats().blocks_waiting_for_streams, 0u);
}

TEST(CachingAllocator, OutOfMemoryFreesTheCacheAndRetriesOnce) {
  auto device = std::make_shared<FakeDevice>(21 * MiB);
  CachingDeviceAllocator allocator(device);
  allocator.free(allocator.allocate(4 * KiB, kStreamA));  // 2 MiB cached
  DevicePointer large = allocator.allocate(5 * MiB, kStreamA);  // needs 20 MiB: only after the cache is freed
  EXPECT_NE(large, 0u);
  CachingAllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.out_of_memory_retries, 1u);
  EXPECT_EQ(stats.segment_frees, 1u);
  EXPECT_EQ(device->in_use(), 20 * MiB);
}

TEST(CachingAllocator, OutOfMemoryAfterTheRetryIsAnError) {
  auto device = std::make_shared<FakeDevice>(8 * MiB);
  CachingDeviceAllocator allocator(device);
  DevicePointer held = allocator.allocate(512 * KiB, kStreamA);
  try {
    allocator.allocate(5 * MiB, kStreamA);
    FAIL() << "allocated past the device's memory";
  } catch (const OutOfMemory& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("CUDA out of memory: cannot allocate 5.00 MiB (a segment of 20.00 MiB)", 0), 0u) << message;
    EXPECT_NE(message.find("0.50 MiB allocated by Kiln"), std::string::npos) << message;
    EXPECT_EQ(e.requested_bytes(), 5 * MiB);
  }
  EXPECT_EQ(allocator.stats().out_of_memory_failures, 1u);
  allocator.free(held);  // still usable
}

TEST(CachingAllocator, EmptyCacheReturnsOnlyWholeFreeSegments) {
  auto device = std::make_shared<FakeDevice>();
  CachingDeviceAllocator allocator(device);
  DevicePointer kept = allocator.allocate(4 * KiB, kStreamA);
  allocator.free(allocator.allocate(4 * KiB, kStreamB));
  allocator.free(allocator.allocate(30 * MiB, kStreamA));
  EXPECT_EQ(allocator.empty_cache(), 2 * MiB + 30 * MiB);
  EXPECT_EQ(device->live_segments(), 1u);  // stream A's small segment still holds `kept`
  CachingAllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes, 2 * MiB);
  EXPECT_EQ(stats.peak_reserved_bytes, 2 * MiB + 2 * MiB + 30 * MiB);
  EXPECT_EQ(stats.peak_allocated_bytes, 4 * KiB + 30 * MiB);
  allocator.free(kept);
}

TEST(CachingAllocator, TheDestructorReturnsEverySegment) {
  auto device = std::make_shared<FakeDevice>();
  {
    CachingDeviceAllocator allocator(device);
    allocator.allocate(4 * KiB, kStreamA);
    allocator.allocate(4 * KiB, kStreamA);
    DevicePointer waiting = allocator.allocate(12 * MiB, kStreamA);
    allocator.record_stream(waiting, kStreamB);
    allocator.free(waiting);
  }
  EXPECT_EQ(device->live_segments(), 0u);
}

TEST(CachingAllocator, FreeingAForeignPointerIsAnInternalError) {
  CachingDeviceAllocator allocator(std::make_shared<FakeDevice>());
  EXPECT_THROW(allocator.free(0x1234), InternalError);
}

}  // namespace
}  // namespace kiln::cuda
