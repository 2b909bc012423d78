// XXH64, from its specification (see checksum.h).
#include "runtime/checksum.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "kiln/error.h"

namespace kiln {

namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

uint64_t read64(const unsigned char* bytes) {
  uint64_t value;
  std::memcpy(&value, bytes, 8);
  if constexpr (std::endian::native == std::endian::big) value = __builtin_bswap64(value);
  return value;
}

uint32_t read32(const unsigned char* bytes) {
  uint32_t value;
  std::memcpy(&value, bytes, 4);
  if constexpr (std::endian::native == std::endian::big) value = __builtin_bswap32(value);
  return value;
}

uint64_t xxh_round(uint64_t accumulator, uint64_t lane) {
  accumulator += lane * kPrime2;
  accumulator = std::rotl(accumulator, 31);
  return accumulator * kPrime1;
}

uint64_t merge(uint64_t accumulator, uint64_t lane) {
  accumulator ^= xxh_round(0, lane);
  return accumulator * kPrime1 + kPrime4;
}

void fold_stripe(uint64_t lanes[4], const unsigned char* stripe) {
  for (int i = 0; i < 4; ++i) lanes[i] = xxh_round(lanes[i], read64(stripe + 8 * i));
}

}  // namespace

Checksum64::Checksum64(uint64_t seed)
    : seed_(seed), lanes_{seed + kPrime1 + kPrime2, seed + kPrime2, seed, seed - kPrime1} {}

void Checksum64::update(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  total_size_ += size;
  if (pending_size_ > 0) {
    size_t take = std::min(size, sizeof(pending_) - pending_size_);
    std::memcpy(pending_ + pending_size_, bytes, take);
    pending_size_ += take;
    bytes += take;
    size -= take;
    if (pending_size_ < sizeof(pending_)) return;
    fold_stripe(lanes_, pending_);
    pending_size_ = 0;
  }
  for (; size >= 32; bytes += 32, size -= 32) fold_stripe(lanes_, bytes);
  std::memcpy(pending_, bytes, size);
  pending_size_ = size;
}

uint64_t Checksum64::digest() const {
  uint64_t accumulator;
  if (total_size_ >= 32) {
    accumulator = std::rotl(lanes_[0], 1) + std::rotl(lanes_[1], 7) + std::rotl(lanes_[2], 12) + std::rotl(lanes_[3], 18);
    for (uint64_t lane : lanes_) accumulator = merge(accumulator, lane);
  } else {
    accumulator = seed_ + kPrime5;
  }
  accumulator += total_size_;
  const unsigned char* bytes = pending_;
  size_t size = pending_size_;
  for (; size >= 8; bytes += 8, size -= 8) {
    accumulator ^= xxh_round(0, read64(bytes));
    accumulator = std::rotl(accumulator, 27) * kPrime1 + kPrime4;
  }
  if (size >= 4) {
    accumulator ^= uint64_t(read32(bytes)) * kPrime1;
    accumulator = std::rotl(accumulator, 23) * kPrime2 + kPrime3;
    bytes += 4;
    size -= 4;
  }
  for (; size > 0; ++bytes, --size) {
    accumulator ^= uint64_t(*bytes) * kPrime5;
    accumulator = std::rotl(accumulator, 11) * kPrime1;
  }
  accumulator ^= accumulator >> 33;
  accumulator *= kPrime2;
  accumulator ^= accumulator >> 29;
  accumulator *= kPrime3;
  accumulator ^= accumulator >> 32;
  return accumulator;
}

uint64_t checksum64(std::string_view bytes) {
  Checksum64 checksum;
  checksum.update(bytes.data(), bytes.size());
  return checksum.digest();
}

uint64_t checksum_file(const std::filesystem::path& path, uint64_t* size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot read ", path.string(), ": ", std::strerror(errno));
  Checksum64 checksum;
  std::vector<unsigned char> buffer(1 << 20);
  uint64_t total = 0;
  for (;;) {
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int saved = errno;
      ::close(fd);
      fail("cannot read ", path.string(), ": ", std::strerror(saved));
    }
    if (got == 0) break;
    checksum.update(buffer.data(), size_t(got));
    total += uint64_t(got);
  }
  ::close(fd);
  if (size != nullptr) *size = total;
  return checksum.digest();
}

std::string checksum_hex(uint64_t digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, digest >>= 4) text[size_t(i)] = kDigits[digest & 0xf];
  return text;
}

}  // namespace kiln
