// The caching allocator each stream allocates from (OneFlow's BinAllocator), and the device
// memory behind it.
//
// BinAllocator takes memory from a MemoryBackend in chunks and cuts chunks into pieces. A freed
// piece merges with its free neighbours and waits in a bin for reuse; bin k holds free pieces
// of [512 B * 2^k, 512 B * 2^(k+1)). A request is rounded up to a multiple of 512 B and served
// by the smallest free piece that fits, split when the rest is at least 512 B. shrink() hands
// every wholly free chunk back to the backend. allocate() never throws: it returns nullptr when
// the backend refuses, and the VM decides what to do (release, drain, shrink, retry, report).
// Thread-safe: the scheduler allocates, and whichever thread drops a buffer's memory frees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "kiln/device.h"

namespace kiln::vm {

// Raw memory of one device, shared by every stream on it. `limit` caps the bytes it hands out
// at once; tests inject a small limit to force out-of-memory. Thread-safe.
class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  virtual Device device() const = 0;
  // Returns nullptr when the request would pass the limit or the device has no memory left.
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* pointer, size_t nbytes) = 0;
  virtual size_t limit() const = 0;
  virtual size_t reserved() const = 0;  // bytes handed out and not yet given back
};

// Host memory, 64-byte aligned (runtime/allocator.h).
class CpuMemoryBackend final : public MemoryBackend {
 public:
  explicit CpuMemoryBackend(size_t limit = SIZE_MAX) : limit_(limit) {}
  Device device() const override { return Device::cpu(); }
  void* allocate(size_t nbytes) override;
  void deallocate(void* pointer, size_t nbytes) override;
  size_t limit() const override { return limit_; }
  size_t reserved() const override;

 private:
  size_t limit_;
  mutable std::mutex mutex_;
  size_t reserved_ = 0;
};

struct BinAllocatorOptions {
  // The smallest chunk asked of the backend; bigger chunks mean fewer backend calls. When the
  // backend refuses a chunk bigger than the request, the allocator asks for the request alone.
  size_t min_chunk_bytes = size_t(1) << 20;
  // When set, every freed piece is filled with this byte, so a reader that runs after its
  // buffer was released reads garbage that tests recognise.
  std::optional<uint8_t> poison_byte;
};

struct BinAllocatorStats {
  size_t reserved_bytes = 0;  // held from the backend, in chunks
  size_t in_use_bytes = 0;    // in pieces handed out
  size_t chunks = 0;
  size_t pieces_in_use = 0;
  uint64_t allocations = 0;
  uint64_t backend_allocations = 0;
  uint64_t chunks_returned = 0;  // by shrink()
};

class BinAllocator : public std::enable_shared_from_this<BinAllocator> {
 public:
  static constexpr size_t kMinPieceBytes = 512;

  explicit BinAllocator(std::shared_ptr<MemoryBackend> backend, BinAllocatorOptions options = {});
  ~BinAllocator();
  BinAllocator(const BinAllocator&) = delete;
  BinAllocator& operator=(const BinAllocator&) = delete;

  // Memory for `nbytes` (at least 1), aligned to 64 bytes, or nullptr when out of memory.
  void* allocate(size_t nbytes);
  // `pointer` must come from allocate() of this allocator.
  void deallocate(void* pointer);
  // Returns every wholly free chunk to the backend; answers the bytes returned.
  size_t shrink();

  BinAllocatorStats stats() const;
  MemoryBackend& backend() const { return *backend_; }

 private:
  struct Chunk;
  struct Piece {
    char* data;
    size_t size;
    Chunk* chunk;
    Piece* prev;  // neighbours in address order within the chunk
    Piece* next;
    bool free;
  };
  struct Chunk {
    char* data;
    size_t size;
    Piece* first;  // the piece at `data`; merging never deletes it
  };
  // Orders free pieces by size, then address; also compares against a bare size.
  struct BySize {
    using is_transparent = void;
    bool operator()(const Piece* a, const Piece* b) const {
      return a->size != b->size ? a->size < b->size : a->data < b->data;
    }
    bool operator()(const Piece* a, size_t size) const { return a->size < size; }
    bool operator()(size_t size, const Piece* b) const { return size < b->size; }
  };

  static size_t bin_of(size_t size);
  Piece* take_free_piece(size_t size);  // removed from its bin, or nullptr
  Piece* grow(size_t size);             // a new chunk's single piece, not in a bin
  void insert_free(Piece* piece);
  void erase_free(Piece* piece);

  std::shared_ptr<MemoryBackend> backend_;
  BinAllocatorOptions options_;
  mutable std::mutex mutex_;
  std::vector<std::set<Piece*, BySize>> bins_;
  std::unordered_map<const void*, Piece*> in_use_;
  std::list<Chunk> chunks_;
  BinAllocatorStats stats_;
};

}  // namespace kiln::vm
