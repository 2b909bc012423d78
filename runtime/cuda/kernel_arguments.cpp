// Kernel argument packing. See runtime/cuda/kernel_arguments.h.
#include "runtime/cuda/kernel_arguments.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::cuda {

void KernelArguments::add_bytes(const void* value, size_t size, size_t alignment) {
  KILN_CHECK(alignment > 0 && alignment <= alignof(std::max_align_t) && (alignment & (alignment - 1)) == 0,
             "kernel parameter alignment ", alignment);
  auto fits = [&](const Block& b) { return ((b.used + alignment - 1) & ~(alignment - 1)) + size <= b.capacity; };
  if (blocks_.empty() || !fits(blocks_.back())) {
    Block block;
    block.capacity = std::max<size_t>(256, size);
    size_t units = (block.capacity + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
    block.storage = std::make_unique<std::max_align_t[]>(units);
    block.capacity = units * sizeof(std::max_align_t);
    blocks_.push_back(std::move(block));
  }
  Block& block = blocks_.back();
  size_t offset = (block.used + alignment - 1) & ~(alignment - 1);
  std::memcpy(reinterpret_cast<char*>(block.storage.get()) + offset, value, size);
  block.used = offset + size;
  offsets_.emplace_back(blocks_.size() - 1, offset);
}

void** KernelArguments::pointers() {
  pointers_.clear();
  for (auto [block, offset] : offsets_) {
    pointers_.push_back(reinterpret_cast<char*>(blocks_[block].storage.get()) + offset);
  }
  return pointers_.data();
}

}  // namespace kiln::cuda
