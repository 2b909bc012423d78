// The aligned CPU allocator.
#include "runtime/allocator.h"

#include <cstdlib>

#include "runtime/error.h"

namespace kiln {

void* cpu_allocate(size_t nbytes) {
  size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  if (rounded == 0) rounded = kCpuAlignment;
  void* pointer = std::aligned_alloc(kCpuAlignment, rounded);
  if (pointer == nullptr) fail("out of memory: could not allocate ", nbytes, " bytes on cpu");
  return pointer;
}

void cpu_free(void* pointer) noexcept { std::free(pointer); }

}  // namespace kiln
