// Tests of `kiln cache stats|clear` through the real executable: the printed location, entry
// count, size and limit (from --dir, KILN_CACHE_DIR and KILN_CACHE_MAX_BYTES), clearing, and
// the one-line errors for a bad size variable and a missing subcommand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "cli_runner.h"
#include "runtime/compile_cache.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class CacheCommand : public cli_test::KilnCliTest {
 protected:
  // The cache the tests fill and name (by --dir or KILN_CACHE_DIR), apart from the private
  // cache every run is given by default.
  void SetUp() override {
    KilnCliTest::SetUp();
    cache_dir_ = dir_ / "entries";
  }

  // Publishes an entry with one file of `bytes` bytes; returns the entry's total size on disk.
  uint64_t add_entry(const std::string& key, size_t bytes) {
    CompileCache cache(cache_dir_);
    fs::path staging = cache.make_staging_directory();
    std::ofstream(staging / "module.so") << std::string(bytes, 'm');
    fs::path entry = cache.publish(key, staging);
    return bytes + fs::file_size(entry / "entry.json");
  }

  fs::path cache_dir_;
};

TEST_F(CacheCommand, StatsPrintsLocationEntriesSizeAndLimit) {
  uint64_t total = add_entry("00000000000000a1", 100) + add_entry("00000000000000a2", 200);
  CliResult result = kiln("cache stats --dir " + cache_dir_.string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "location: " + cache_dir_.string() + "\n" +
                            "entries:  2\n" +
                            "size:     " + std::to_string(total) + " bytes\n" +
                            "limit:    1.0 GiB (1073741824 bytes)\n");
  EXPECT_EQ(result.err, "");
}

// `--help` of `kiln cache` mentions --dir; `kiln cache --dir X stats` was refused.
TEST_F(CacheCommand, TheDirectoryMayComeBeforeTheSubcommand) {
  add_entry("00000000000000c1", 100);
  for (const std::string& command : {"cache --dir " + cache_dir_.string() + " stats",
                                     "cache --dir " + cache_dir_.string() + " clear"}) {
    CliResult result = kiln(command);
    EXPECT_EQ(result.status, 0) << command << ": " << result.err;
    EXPECT_THAT(result.out, HasSubstr(cache_dir_.string())) << command;
  }
  EXPECT_THAT(kiln("cache stats --dir " + cache_dir_.string()).out, HasSubstr("entries:  0\n"));
}

TEST_F(CacheCommand, StatsReadsTheEnvironment) {
  const uint64_t total = add_entry("00000000000000b1", 3000);
  std::ostringstream size;
  size << std::fixed << std::setprecision(1) << double(total) / 1024 << " KiB (" << total << " bytes)";
  CliResult result = kiln("cache stats", "KILN_CACHE_DIR=" + cache_dir_.string() + " KILN_CACHE_MAX_BYTES=512M");
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("location: " + cache_dir_.string() + "\n"));
  EXPECT_THAT(result.out, HasSubstr("entries:  1\n"));
  EXPECT_THAT(result.out, HasSubstr("size:     " + size.str() + "\n"));
  EXPECT_THAT(result.out, HasSubstr("limit:    512.0 MiB (536870912 bytes)\n"));
}

TEST_F(CacheCommand, StatsOfAnEmptyOrMissingCache) {
  CliResult result = kiln("cache stats --dir " + (dir_ / "never_created").string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("entries:  0\n"));
  EXPECT_THAT(result.out, HasSubstr("size:     0 bytes\n"));
}

TEST_F(CacheCommand, ClearRemovesEveryEntry) {
  uint64_t total = add_entry("00000000000000c1", 10) + add_entry("00000000000000c2", 20) +
                   add_entry("00000000000000c3", 30);
  CliResult cleared = kiln("cache clear --dir " + cache_dir_.string());
  EXPECT_EQ(cleared.status, 0) << cleared.err;
  EXPECT_EQ(cleared.out, "removed 3 entries (" + std::to_string(total) + " bytes) from " + cache_dir_.string() + "\n");
  EXPECT_TRUE(fs::is_empty(cache_dir_ / "entries"));
  CliResult stats = kiln("cache stats --dir " + cache_dir_.string());
  EXPECT_THAT(stats.out, HasSubstr("entries:  0\n"));
}

TEST_F(CacheCommand, BadSizeVariableIsAUserError) {
  CliResult result = kiln("cache stats --dir " + cache_dir_.string(), "KILN_CACHE_MAX_BYTES=lots");
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, StartsWith("kiln: error: environment variable KILN_CACHE_MAX_BYTES='lots' is not a size"));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

TEST_F(CacheCommand, SubcommandIsRequired) {
  CliResult result = kiln("cache");
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, StartsWith("kiln: error: "));
  CliResult unknown = kiln("cache stats --bogus");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_THAT(unknown.err, HasSubstr("--bogus"));
}

}  // namespace
}  // namespace kiln
