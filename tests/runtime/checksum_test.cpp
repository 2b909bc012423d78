// Tests for runtime/checksum: XXH64 digests equal the reference implementation's (published
// values, computed with Debian's libxxhash 0.8.1, and, where that library is installed, compared
// live on many lengths), incremental updates split anywhere agree with one-shot digests, every
// single-byte change is detected, and files are hashed like their contents.
#include "runtime/checksum.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "kiln/error.h"
#include "runtime/shared_library.h"

namespace kiln {
namespace {

std::string pattern_bytes() {
  std::string bytes;
  for (int repeat = 0; repeat < 4; ++repeat)
    for (int i = 0; i < 256; ++i) bytes += char(i);
  return bytes + "xyz";
}

// Values printed by libxxhash.so.0 (XXH64, seed 0) for these inputs.
TEST(Checksum, MatchesReferenceValues) {
  EXPECT_EQ(checksum_hex(checksum64("")), "ef46db3751d8e999");
  EXPECT_EQ(checksum_hex(checksum64("a")), "d24ec4f1a98c6e5b");
  EXPECT_EQ(checksum_hex(checksum64("abc")), "44bc2cf5ad770999");
  EXPECT_EQ(checksum_hex(checksum64("The quick brown fox jumps over the lazy dog")), "0b242d361fda71bc");
  EXPECT_EQ(checksum_hex(checksum64(pattern_bytes())), "e146cb31b65bc21a");
}

TEST(Checksum, MatchesLibxxhashOnEveryLengthWhenInstalled) {
  SharedLibrary library;
  try {
    library = SharedLibrary::open("libxxhash.so.0");
  } catch (const Error& error) {
    GTEST_SKIP() << "libxxhash is not installed: " << error.what();
  }
  using Xxh64 = unsigned long long (*)(const void*, size_t, unsigned long long);
  auto reference = library.function<Xxh64>("XXH64");
  std::mt19937_64 random(7);
  std::string bytes(5000, '\0');
  for (char& byte : bytes) byte = char(random());
  for (size_t length : {size_t(0), size_t(1), size_t(3), size_t(4), size_t(7), size_t(8), size_t(31), size_t(32),
                        size_t(33), size_t(63), size_t(64), size_t(100), size_t(1023), size_t(4999)}) {
    EXPECT_EQ(checksum64(std::string_view(bytes).substr(0, length)), reference(bytes.data(), length, 0)) << length;
  }
  for (size_t length = 0; length < 300; ++length)
    ASSERT_EQ(checksum64(std::string_view(bytes).substr(1, length)), reference(bytes.data() + 1, length, 0)) << length;
}

TEST(Checksum, IncrementalUpdatesAgreeWithOneShot) {
  std::string bytes = pattern_bytes();
  const uint64_t whole = checksum64(bytes);
  for (size_t first : {size_t(0), size_t(1), size_t(5), size_t(31), size_t(32), size_t(33), size_t(500), bytes.size()}) {
    for (size_t second : {size_t(0), size_t(3), size_t(32), size_t(64), size_t(77)}) {
      if (first + second > bytes.size()) continue;
      Checksum64 checksum;
      checksum.update(bytes.data(), first);
      checksum.update(bytes.data() + first, second);
      checksum.update(bytes.data() + first + second, bytes.size() - first - second);
      EXPECT_EQ(checksum.digest(), whole) << first << "+" << second;
    }
  }
  Checksum64 byte_by_byte;
  for (char byte : bytes) byte_by_byte.update(&byte, 1);
  EXPECT_EQ(byte_by_byte.digest(), whole);
}

TEST(Checksum, DetectsEverySingleByteChange) {
  std::string bytes = pattern_bytes().substr(0, 200);
  const uint64_t original = checksum64(bytes);
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string changed = bytes;
      changed[i] = char(changed[i] ^ (1 << bit));
      ASSERT_NE(checksum64(changed), original) << "byte " << i << " bit " << bit;
    }
  }
  EXPECT_NE(checksum64(bytes.substr(0, 199)), original);
}

TEST(Checksum, HashesFilesLikeTheirContents) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kiln_checksum_test_" + std::to_string(::getpid()));
  std::string bytes;
  std::mt19937 random(3);
  for (int i = 0; i < 3'000'000; ++i) bytes += char(random());  // more than one read block
  std::ofstream(path, std::ios::binary) << bytes;
  uint64_t size = 0;
  EXPECT_EQ(checksum_file(path, &size), checksum64(bytes));
  EXPECT_EQ(size, bytes.size());
  std::filesystem::remove(path);
  try {
    checksum_file(path);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
  }
}

TEST(Checksum, HexIsSixteenLowercaseDigits) {
  EXPECT_EQ(checksum_hex(0), "0000000000000000");
  EXPECT_EQ(checksum_hex(0xABCDEF0123456789ULL), "abcdef0123456789");
}

}  // namespace
}  // namespace kiln
