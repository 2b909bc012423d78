// The caching device allocator. See runtime/cuda/caching_allocator.h.
#include "runtime/cuda/caching_allocator.h"

#include <algorithm>
#include <tuple>
#include <unordered_set>

#include "kiln/error.h"
#include "runtime/vm/errors.h"

namespace kiln::cuda {

namespace {
size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

std::string mebibytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / double(1 << 20));
  return text;
}
}  // namespace

bool CachingDeviceAllocator::ByStreamSizeAddress::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->pointer) < std::tie(b->stream, b->size, b->pointer);
}

size_t CachingDeviceAllocator::round_size(size_t bytes) { return std::max(kMinBlockBytes, round_up(bytes, kMinBlockBytes)); }

size_t CachingDeviceAllocator::segment_size(size_t rounded_bytes) {
  if (rounded_bytes <= kSmallRequestBytes) return kSmallSegmentBytes;
  if (rounded_bytes < kMinLargeAllocationBytes) return kLargeSegmentBytes;
  return round_up(rounded_bytes, kLargeRoundingBytes);
}

CachingDeviceAllocator::CachingDeviceAllocator(std::shared_ptr<DeviceMemoryBackend> backend) : backend_(std::move(backend)) {
  KILN_CHECK(backend_ != nullptr, "a caching allocator needs a backend");
}

CachingDeviceAllocator::~CachingDeviceAllocator() {
  std::lock_guard lock(mutex_);
  backend_->synchronize();
  std::unordered_set<Block*> blocks(small_pool_.begin(), small_pool_.end());
  blocks.insert(large_pool_.begin(), large_pool_.end());
  for (auto& [pointer, block] : allocated_) blocks.insert(block);
  for (auto& [token, block] : pending_events_) {
    backend_->event_done(token);  // releases the token
    blocks.insert(block);
  }
  for (Block* block : blocks) {
    if (block->prev == nullptr) backend_->free(block->pointer);  // a segment's first block
  }
  for (Block* block : blocks) delete block;
}

CachingDeviceAllocator::Block* CachingDeviceAllocator::find_cached(size_t size, StreamId stream, bool small) {
  Pool& pool = pool_of(small);
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  pool.erase(it);
  return block;
}

CachingDeviceAllocator::Block* CachingDeviceAllocator::allocate_segment(size_t size, StreamId stream, bool small) {
  size_t bytes = segment_size(size);
  DevicePointer pointer = backend_->allocate(bytes);
  if (pointer == 0) {
    // Out of memory: wait for the streams, give every cached segment back, and try once more.
    ++stats_.out_of_memory_retries;
    backend_->synchronize();
    process_events();
    free_cached_segments();
    pointer = backend_->allocate(bytes);
  }
  if (pointer == 0) {
    ++stats_.out_of_memory_failures;
    throw OutOfMemory("CUDA out of memory: cannot allocate " + mebibytes(size) + " (a segment of " + mebibytes(bytes) + "); " +
                          mebibytes(stats_.allocated_bytes) + " allocated by Kiln, " +
                          mebibytes(stats_.reserved_bytes - stats_.allocated_bytes) + " more reserved in its cache",
                      size);
  }
  auto* block = new Block();
  block->pointer = pointer;
  block->size = bytes;
  block->stream = stream;
  block->small = small;
  stats_.reserved_bytes += bytes;
  ++stats_.segment_allocations;
  ++stats_.segments;
  return block;
}

void CachingDeviceAllocator::split(Block* block, size_t size) {
  size_t rest = block->size - size;
  bool worth_it = block->small ? rest >= kMinBlockBytes : rest > kSmallRequestBytes;
  if (!worth_it) return;
  auto* remainder = new Block();
  remainder->pointer = block->pointer + size;
  remainder->size = rest;
  remainder->stream = block->stream;
  remainder->small = block->small;
  remainder->prev = block;
  remainder->next = block->next;
  if (block->next != nullptr) block->next->prev = remainder;
  block->next = remainder;
  block->size = size;
  pool_of(remainder->small).insert(remainder);
}

DevicePointer CachingDeviceAllocator::allocate(size_t bytes, StreamId stream) {
  std::lock_guard lock(mutex_);
  process_events();
  size_t size = round_size(bytes);
  bool small = size <= kSmallRequestBytes;
  Block* block = find_cached(size, stream, small);
  if (block != nullptr) {
    ++stats_.cache_hits;
  } else {
    block = allocate_segment(size, stream, small);
  }
  split(block, size);
  block->allocated = true;
  allocated_[block->pointer] = block;
  stats_.allocated_bytes += block->size;
  ++stats_.allocations;
  update_peaks();
  return block->pointer;
}

void CachingDeviceAllocator::free(DevicePointer pointer) {
  std::lock_guard lock(mutex_);
  auto it = allocated_.find(pointer);
  KILN_CHECK(it != allocated_.end(), "freeing device pointer ", pointer, " that this allocator did not hand out");
  Block* block = it->second;
  allocated_.erase(it);
  block->allocated = false;
  stats_.allocated_bytes -= block->size;
  ++stats_.frees;
  if (block->other_streams.empty()) {
    release_to_pool(block);
    return;
  }
  for (StreamId other : block->other_streams) {
    pending_events_.emplace_back(backend_->record_event(other), block);
    ++block->pending_events;
  }
  block->other_streams.clear();
}

void CachingDeviceAllocator::record_stream(DevicePointer pointer, StreamId stream) {
  std::lock_guard lock(mutex_);
  auto it = allocated_.find(pointer);
  KILN_CHECK(it != allocated_.end(), "record_stream on device pointer ", pointer, " that is not allocated");
  if (stream != it->second->stream) it->second->other_streams.insert(stream);
}

void CachingDeviceAllocator::release_to_pool(Block* block) {
  Pool& pool = pool_of(block->small);
  auto is_free = [](const Block* b) { return b != nullptr && !b->allocated && b->pending_events == 0; };
  if (is_free(block->prev)) {
    Block* prev = block->prev;
    pool.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next != nullptr) block->next->prev = prev;
    delete block;
    block = prev;
  }
  if (is_free(block->next)) {
    Block* next = block->next;
    pool.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next != nullptr) next->next->prev = block;
    delete next;
  }
  pool.insert(block);
}

void CachingDeviceAllocator::process_events() {
  for (auto it = pending_events_.begin(); it != pending_events_.end();) {
    if (!backend_->event_done(it->first)) {
      ++it;
      continue;
    }
    Block* block = it->second;
    it = pending_events_.erase(it);
    if (--block->pending_events == 0) release_to_pool(block);
  }
}

size_t CachingDeviceAllocator::free_cached_segments() {
  size_t returned = 0;
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (block->prev != nullptr || block->next != nullptr) {
        ++it;
        continue;
      }
      it = pool->erase(it);
      backend_->free(block->pointer);
      returned += block->size;
      stats_.reserved_bytes -= block->size;
      ++stats_.segment_frees;
      --stats_.segments;
      delete block;
    }
  }
  return returned;
}

size_t CachingDeviceAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  backend_->synchronize();
  process_events();
  return free_cached_segments();
}

void CachingDeviceAllocator::update_peaks() {
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
}

CachingAllocatorStats CachingDeviceAllocator::stats() const {
  std::lock_guard lock(mutex_);
  CachingAllocatorStats stats = stats_;
  std::unordered_set<const Block*> waiting;
  for (const auto& [token, block] : pending_events_) waiting.insert(block);
  stats.blocks_waiting_for_streams = waiting.size();
  return stats;
}

}  // namespace kiln::cuda
