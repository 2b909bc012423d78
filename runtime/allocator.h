// CPU memory for tensors: 64-byte aligned (one cache line, one AVX-512 vector), zero-size safe.
#pragma once

#include <cstddef>

namespace kiln {

inline constexpr size_t kCpuAlignment = 64;

// Returns memory aligned to kCpuAlignment, or throws kiln::Error("out of memory ...") naming the
// size. A request of 0 bytes returns a valid, unique, non-null pointer.
void* cpu_allocate(size_t nbytes);
void cpu_free(void* pointer) noexcept;

}  // namespace kiln
