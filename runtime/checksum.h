// Checksum64: the 64-bit checksum that guards files in the compile cache (runtime/compile_cache.h).
// The algorithm is XXH64 (Yann Collet's xxHash, 64-bit variant, seed 0) exactly as its
// specification (xxhash.com, doc/xxhash_spec.md) defines it, written here from that text: four
// 64-bit lanes over 32-byte stripes, each lane `acc = rotl(acc + word * P2, 31) * P1`, then the
// lanes merged, the length added, the last < 32 bytes folded in 8-, 4- and 1-byte steps, and a
// final avalanche. It runs at memory speed and detects any change of a single byte; it is not a
// cryptographic hash (it guards against damage, not against an attacker).
// Digests print as 16 lowercase hex digits ("ef46db3751d8e999" for no bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace kiln {

// Incremental XXH64: update() any number of times with any split; digest() does not reset.
class Checksum64 {
 public:
  explicit Checksum64(uint64_t seed = 0);
  void update(const void* data, size_t size);
  uint64_t digest() const;

 private:
  uint64_t seed_;
  uint64_t lanes_[4];
  uint64_t total_size_ = 0;
  unsigned char pending_[32];  // bytes of a stripe not yet folded into the lanes
  size_t pending_size_ = 0;
};

uint64_t checksum64(std::string_view bytes);
// Checksum of a file's contents, read in blocks; throws kiln::Error naming the path when it
// cannot be read. When `size` is non-null it receives the number of bytes read.
uint64_t checksum_file(const std::filesystem::path& path, uint64_t* size = nullptr);
std::string checksum_hex(uint64_t digest);  // 16 lowercase hex digits

}  // namespace kiln
