// KernelArguments: the argument array cuLaunchKernel takes (one pointer per kernel parameter,
// each pointing at that parameter's value), packed from C++ values. Each value is copied into
// storage owned by this object, at its own alignment, so the array stays valid however the
// caller's temporaries end. Needs no GPU.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace kiln::cuda {

class KernelArguments {
 public:
  KernelArguments() = default;
  KernelArguments(const KernelArguments&) = delete;
  KernelArguments& operator=(const KernelArguments&) = delete;

  // Appends one parameter: a device pointer (CUdeviceptr), an integer size, a float, or any
  // trivially copyable struct the kernel takes by value.
  template <typename T>
  KernelArguments& add(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "a kernel parameter is copied bytewise");
    add_bytes(&value, sizeof(T), alignof(T));
    return *this;
  }
  void add_bytes(const void* value, size_t size, size_t alignment);

  size_t size() const { return offsets_.size(); }
  // The array for cuLaunchKernel's kernelParams: pointers into this object's storage.
  void** pointers();

 private:
  // Values live in 16-byte-aligned blocks, never moved once written (pointers() stays valid
  // while more are added to later blocks).
  struct Block {
    std::unique_ptr<std::max_align_t[]> storage;
    size_t capacity = 0;
    size_t used = 0;
  };
  std::vector<Block> blocks_;
  std::vector<std::pair<size_t, size_t>> offsets_;  // (block, byte offset) of each parameter
  std::vector<void*> pointers_;
};

}  // namespace kiln::cuda
