// CachingDeviceAllocator: device memory for tensors, cached like PyTorch's
// CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp), so a model run in a loop calls the
// driver's cuMemAlloc/cuMemFree (slow, and synchronizing) only while its peak grows.
//
// - Sizes: a request is rounded up to a multiple of 512 B. Requests up to 1 MiB come from the
//   small pool, cut from 2 MiB segments; larger ones from the large pool, cut from 20 MiB
//   segments when under 10 MiB, else from a segment of the request rounded up to 2 MiB.
// - Reuse: a free block is reused for the smallest fitting request on the same stream (the
//   stream orders the old use before the new one, so no synchronization is needed). A block
//   bigger than the request is split when the rest is at least 512 B (small pool) or over
//   1 MiB (large pool); a freed block merges with free neighbours of its segment.
// - Streams: a block used by another stream than its own (record_stream) is reusable only after
//   that stream's work up to the free has finished: free() records an event on each such
//   stream, and the block waits until every event is done.
// - Out of memory: the allocator frees its cached segments and retries once, then throws
//   kiln::OutOfMemory naming the request and what is allocated and cached.
// - empty_cache() returns every wholly free segment to the device.
//
// The device is a DeviceMemoryBackend, injected, so the logic is tested without a GPU;
// runtime/cuda/driver_memory_backend.h is the real one. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace kiln::cuda {

using StreamId = uintptr_t;   // a CUstream's value; 0 is the legacy default stream
using DevicePointer = uint64_t;  // a CUdeviceptr

class DeviceMemoryBackend {
 public:
  virtual ~DeviceMemoryBackend() = default;
  // `bytes` of device memory, or 0 when the device has too little left.
  virtual DevicePointer allocate(size_t bytes) = 0;
  virtual void free(DevicePointer pointer) = 0;
  // Marks the end of the work queued on `stream` so far; answers a token for event_done.
  virtual uint64_t record_event(StreamId stream) = 0;
  // Whether the work before event `token` has finished; a finished token is released.
  virtual bool event_done(uint64_t token) = 0;
  // Waits until every event recorded so far is done.
  virtual void synchronize() = 0;
};

struct CachingAllocatorStats {
  size_t allocated_bytes = 0;       // in blocks handed out (rounded sizes)
  size_t reserved_bytes = 0;        // in segments held from the device
  size_t peak_allocated_bytes = 0;
  size_t peak_reserved_bytes = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t cache_hits = 0;          // allocations served by a cached block
  uint64_t segment_allocations = 0; // device allocations
  uint64_t segment_frees = 0;       // device frees (empty_cache, out-of-memory retries)
  uint64_t out_of_memory_retries = 0;
  uint64_t out_of_memory_failures = 0;
  size_t segments = 0;
  size_t blocks_waiting_for_streams = 0;
};

class CachingDeviceAllocator {
 public:
  static constexpr size_t kMinBlockBytes = 512;
  static constexpr size_t kSmallRequestBytes = size_t(1) << 20;
  static constexpr size_t kSmallSegmentBytes = size_t(2) << 20;
  static constexpr size_t kLargeSegmentBytes = size_t(20) << 20;
  static constexpr size_t kMinLargeAllocationBytes = size_t(10) << 20;
  static constexpr size_t kLargeRoundingBytes = size_t(2) << 20;

  explicit CachingDeviceAllocator(std::shared_ptr<DeviceMemoryBackend> backend);
  ~CachingDeviceAllocator();  // returns every segment to the backend (after synchronizing)
  CachingDeviceAllocator(const CachingDeviceAllocator&) = delete;
  CachingDeviceAllocator& operator=(const CachingDeviceAllocator&) = delete;

  // At least `bytes` (0 allowed) of device memory for use on `stream`.
  DevicePointer allocate(size_t bytes, StreamId stream);
  // Gives back a pointer from allocate(); reusable on its stream at once, elsewhere once the
  // streams recorded by record_stream have passed this point.
  void free(DevicePointer pointer);
  // Tells the allocator that `stream` (not the block's own) uses `pointer`.
  void record_stream(DevicePointer pointer, StreamId stream);
  // Returns every wholly free segment to the device; answers the bytes returned.
  size_t empty_cache();

  CachingAllocatorStats stats() const;
  static size_t round_size(size_t bytes);
  static size_t segment_size(size_t rounded_bytes);

 private:
  struct Block {
    DevicePointer pointer = 0;
    size_t size = 0;
    StreamId stream = 0;
    bool small = false;
    bool allocated = false;
    int pending_events = 0;
    Block* prev = nullptr;  // neighbours in the same segment, by address
    Block* next = nullptr;
    std::set<StreamId> other_streams;
  };
  struct ByStreamSizeAddress {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, ByStreamSizeAddress>;

  Pool& pool_of(bool small) { return small ? small_pool_ : large_pool_; }
  Block* find_cached(size_t size, StreamId stream, bool small);
  Block* allocate_segment(size_t size, StreamId stream, bool small);
  void split(Block* block, size_t size);
  void release_to_pool(Block* block);  // merges with free neighbours
  void process_events();
  size_t free_cached_segments();
  void update_peaks();

  std::shared_ptr<DeviceMemoryBackend> backend_;
  mutable std::mutex mutex_;
  Pool small_pool_, large_pool_;
  std::unordered_map<DevicePointer, Block*> allocated_;
  std::deque<std::pair<uint64_t, Block*>> pending_events_;  // (token, block), in record order
  CachingAllocatorStats stats_;
};

}  // namespace kiln::cuda
