// Workspace: one block of scratch memory that a compiled model's run carves its intermediate
// buffers from (at offsets fixed by the memory plan), kept across runs and grown when a run
// needs more. 64-byte aligned; blocks of 2 MiB and more are 2 MiB aligned and advised as
// transparent huge pages (madvise MADV_HUGEPAGE), which cuts TLB misses on large plans.
#pragma once

#include <cstddef>

namespace kiln {

class Workspace {
 public:
  static constexpr size_t kHugePageBytes = size_t(2) << 20;

  Workspace() = default;
  ~Workspace();
  Workspace(Workspace&& other) noexcept;
  Workspace& operator=(Workspace&& other) noexcept;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // At least `bytes` bytes, 64-byte aligned, never null (also for 0). Growing drops the old
  // contents; otherwise the same block is returned. Throws kiln::Error when out of memory.
  void* reserve(size_t bytes);
  size_t capacity() const { return capacity_; }

 private:
  void release() noexcept;

  void* data_ = nullptr;
  size_t capacity_ = 0;
  bool huge_ = false;  // from aligned_alloc (huge-page sized), else from cpu_allocate
};

}  // namespace kiln
