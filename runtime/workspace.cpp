// The reusable, aligned scratch block of compiled runs.
#include "runtime/workspace.h"

#include <sys/mman.h>

#include <cstdlib>
#include <utility>

#include "runtime/allocator.h"
#include "kiln/error.h"

namespace kiln {

Workspace::~Workspace() { release(); }

Workspace::Workspace(Workspace&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      huge_(std::exchange(other.huge_, false)) {}

Workspace& Workspace::operator=(Workspace&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    huge_ = std::exchange(other.huge_, false);
  }
  return *this;
}

void Workspace::release() noexcept {
  if (huge_) std::free(data_);
  else cpu_free(data_);
  data_ = nullptr;
  huge_ = false;
  capacity_ = 0;
}

void* Workspace::reserve(size_t bytes) {
  if (data_ != nullptr && bytes <= capacity_) return data_;
  release();
  if (bytes >= kHugePageBytes) {
    size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* block = std::aligned_alloc(kHugePageBytes, rounded);
    if (block == nullptr) fail("out of memory: could not allocate a workspace of ", bytes, " bytes");
    // Advice only: kernels without transparent huge pages refuse it, which changes nothing.
    madvise(block, rounded, MADV_HUGEPAGE);
    data_ = block;
    capacity_ = rounded;
    huge_ = true;
  } else {
    data_ = cpu_allocate(bytes);
    capacity_ = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    if (capacity_ == 0) capacity_ = kCpuAlignment;
  }
  return data_;
}

}  // namespace kiln
