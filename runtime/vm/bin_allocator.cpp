// BinAllocator: bins, split, merge, shrink. CpuMemoryBackend: aligned host memory under a limit.
#include "runtime/vm/bin_allocator.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "runtime/allocator.h"
#include "kiln/error.h"

namespace kiln::vm {

namespace {

constexpr size_t kBinCount = 48;  // 512 B * 2^47 is far past any real memory

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

void* CpuMemoryBackend::allocate(size_t nbytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (nbytes > limit_ - reserved_) return nullptr;
    reserved_ += nbytes;
  }
  try {
    return cpu_allocate(nbytes);
  } catch (const Error&) {  // the host itself is out of memory
    std::lock_guard<std::mutex> lock(mutex_);
    reserved_ -= nbytes;
    return nullptr;
  }
}

void CpuMemoryBackend::deallocate(void* pointer, size_t nbytes) {
  cpu_free(pointer);
  std::lock_guard<std::mutex> lock(mutex_);
  reserved_ -= nbytes;
}

size_t CpuMemoryBackend::reserved() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

BinAllocator::BinAllocator(std::shared_ptr<MemoryBackend> backend, BinAllocatorOptions options)
    : backend_(std::move(backend)), options_(options), bins_(kBinCount) {
  KILN_CHECK(backend_ != nullptr);
}

BinAllocator::~BinAllocator() {
  // Pieces still in use belong to Storages that hold this allocator alive, so none are left.
  for (Chunk& chunk : chunks_) {
    for (Piece* piece = chunk.first; piece != nullptr;) {
      Piece* next = piece->next;
      delete piece;
      piece = next;
    }
    backend_->deallocate(chunk.data, chunk.size);
  }
}

size_t BinAllocator::bin_of(size_t size) {
  const size_t bin = size_t(std::bit_width(size / kMinPieceBytes)) - 1;
  return bin < kBinCount ? bin : kBinCount - 1;
}

void BinAllocator::insert_free(Piece* piece) {
  piece->free = true;
  bins_[bin_of(piece->size)].insert(piece);
}

void BinAllocator::erase_free(Piece* piece) { bins_[bin_of(piece->size)].erase(piece); }

BinAllocator::Piece* BinAllocator::take_free_piece(size_t size) {
  for (size_t bin = bin_of(size); bin < kBinCount; ++bin) {
    auto& pieces = bins_[bin];
    auto found = pieces.lower_bound(size);  // the smallest free piece of at least `size`
    if (found == pieces.end()) continue;
    Piece* piece = *found;
    pieces.erase(found);
    return piece;
  }
  return nullptr;
}

BinAllocator::Piece* BinAllocator::grow(size_t size) {
  size_t chunk_size = std::max(size, round_up(options_.min_chunk_bytes, kMinPieceBytes));
  void* data = backend_->allocate(chunk_size);
  if (data == nullptr && chunk_size > size) {
    chunk_size = size;
    data = backend_->allocate(chunk_size);
  }
  if (data == nullptr) return nullptr;
  ++stats_.backend_allocations;
  stats_.reserved_bytes += chunk_size;
  ++stats_.chunks;
  Chunk& chunk = chunks_.emplace_back(Chunk{static_cast<char*>(data), chunk_size, nullptr});
  chunk.first = new Piece{chunk.data, chunk_size, &chunk, nullptr, nullptr, false};
  return chunk.first;
}

void* BinAllocator::allocate(size_t nbytes) {
  const size_t size = round_up(std::max<size_t>(nbytes, 1), kMinPieceBytes);
  std::lock_guard<std::mutex> lock(mutex_);
  Piece* piece = take_free_piece(size);
  if (piece == nullptr) piece = grow(size);
  if (piece == nullptr) return nullptr;
  if (piece->size - size >= kMinPieceBytes) {  // split off the rest as a free piece
    auto* rest = new Piece{piece->data + size, piece->size - size, piece->chunk, piece, piece->next, true};
    if (piece->next != nullptr) piece->next->prev = rest;
    piece->next = rest;
    piece->size = size;
    insert_free(rest);
  }
  piece->free = false;
  in_use_.emplace(piece->data, piece);
  stats_.in_use_bytes += piece->size;
  ++stats_.pieces_in_use;
  ++stats_.allocations;
  return piece->data;
}

void BinAllocator::deallocate(void* pointer) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = in_use_.find(pointer);
  KILN_CHECK(found != in_use_.end(), "freeing memory this allocator did not hand out");
  Piece* piece = found->second;
  in_use_.erase(found);
  stats_.in_use_bytes -= piece->size;
  --stats_.pieces_in_use;
  if (options_.poison_byte) std::memset(piece->data, *options_.poison_byte, piece->size);
  if (Piece* next = piece->next; next != nullptr && next->free) {  // absorb the next piece
    erase_free(next);
    piece->size += next->size;
    piece->next = next->next;
    if (next->next != nullptr) next->next->prev = piece;
    delete next;
  }
  if (Piece* prev = piece->prev; prev != nullptr && prev->free) {  // the previous absorbs it
    erase_free(prev);
    prev->size += piece->size;
    prev->next = piece->next;
    if (piece->next != nullptr) piece->next->prev = prev;
    delete piece;
    piece = prev;
  }
  insert_free(piece);
}

size_t BinAllocator::shrink() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t returned = 0;
  for (auto chunk = chunks_.begin(); chunk != chunks_.end();) {
    Piece* piece = chunk->first;
    if (!piece->free || piece->size != chunk->size) {
      ++chunk;
      continue;
    }
    erase_free(piece);
    delete piece;
    backend_->deallocate(chunk->data, chunk->size);
    returned += chunk->size;
    stats_.reserved_bytes -= chunk->size;
    --stats_.chunks;
    ++stats_.chunks_returned;
    chunk = chunks_.erase(chunk);
  }
  return returned;
}

BinAllocatorStats BinAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace kiln::vm
