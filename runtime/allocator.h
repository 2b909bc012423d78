// CPU memory for tensors: 64-byte aligned (one cache line, one AVX-512 vector), zero-size safe.
//
// Large blocks (1 MiB and up) are cached, as PyTorch's caching allocators do: a freed large
// block is kept (up to a bound) and handed out again for a request of the same rounded size,
// so a model run in a loop does not page-fault fresh memory on every call (a first touch of a
// 4 KiB page costs ~20 us in a VM: 300 ms per 64 MiB). Large blocks are 2 MiB aligned and
// advised for transparent huge pages.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {

inline constexpr size_t kCpuAlignment = 64;

// Returns memory aligned to kCpuAlignment, or throws kiln::Error("out of memory ...") naming the
// size. A request of 0 bytes returns a valid, unique, non-null pointer.
void* cpu_allocate(size_t nbytes);
void cpu_free(void* pointer) noexcept;

struct CpuCacheStats {
  size_t cached_bytes = 0;  // freed large blocks kept for reuse
  size_t live_bytes = 0;    // large blocks in use
  uint64_t hits = 0;        // large requests served from the cache
  uint64_t misses = 0;
};
CpuCacheStats cpu_cache_stats();
// Frees every cached block (the VM calls this before retrying after out-of-memory).
void cpu_empty_cache() noexcept;
// The most bytes the cache keeps (default 2 GiB, or $KILN_CPU_CACHE_BYTES); 0 disables caching.
void set_cpu_cache_limit(size_t bytes);

}  // namespace kiln
