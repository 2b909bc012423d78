// Tests of `kiln cache stats|clear` through the real executable: the printed location, entry
// count, size and limit (from --dir, KILN_CACHE_DIR and KILN_CACHE_MAX_BYTES), clearing, and
// the one-line errors for a bad size variable and a missing subcommand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "runtime/compile_cache.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_text(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class CacheCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    work_ = fs::temp_directory_path() / ("kiln_cache_cli_test_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(work_);
    fs::create_directories(work_);
    cache_dir_ = work_ / "cache";
  }
  void TearDown() override { fs::remove_all(work_); }

  // Runs `kiln ARGUMENTS` with the cache variables cleared, then `environment` set.
  Result kiln(const std::string& arguments, const std::string& environment = "") {
    fs::path out = work_ / "stdout.txt", err = work_ / "stderr.txt";
    std::string command = "env -u KILN_CACHE_DIR -u KILN_CACHE_MAX_BYTES " + environment + " " +
                          std::string(KILN_EXECUTABLE) + " " + arguments + " >" + out.string() + " 2>" + err.string();
    int raw = std::system(command.c_str());
    Result result;
    result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    result.out = read_text(out);
    result.err = read_text(err);
    return result;
  }

  // Publishes an entry with one file of `bytes` bytes; returns the entry's total size on disk.
  uint64_t add_entry(const std::string& key, size_t bytes) {
    CompileCache cache(cache_dir_);
    fs::path staging = cache.make_staging_directory();
    std::ofstream(staging / "module.so") << std::string(bytes, 'm');
    fs::path entry = cache.publish(key, staging);
    return bytes + fs::file_size(entry / "entry.json");
  }

  fs::path work_;
  fs::path cache_dir_;
};

TEST_F(CacheCommand, StatsPrintsLocationEntriesSizeAndLimit) {
  uint64_t total = add_entry("00000000000000a1", 100) + add_entry("00000000000000a2", 200);
  Result result = kiln("cache stats --dir " + cache_dir_.string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "location: " + cache_dir_.string() + "\n" +
                            "entries:  2\n" +
                            "size:     " + std::to_string(total) + " bytes\n" +
                            "limit:    1.0 GiB (1073741824 bytes)\n");
  EXPECT_EQ(result.err, "");
}

TEST_F(CacheCommand, StatsReadsTheEnvironment) {
  const uint64_t total = add_entry("00000000000000b1", 3000);
  std::ostringstream size;
  size << std::fixed << std::setprecision(1) << double(total) / 1024 << " KiB (" << total << " bytes)";
  Result result = kiln("cache stats", "KILN_CACHE_DIR=" + cache_dir_.string() + " KILN_CACHE_MAX_BYTES=512M");
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("location: " + cache_dir_.string() + "\n"));
  EXPECT_THAT(result.out, HasSubstr("entries:  1\n"));
  EXPECT_THAT(result.out, HasSubstr("size:     " + size.str() + "\n"));
  EXPECT_THAT(result.out, HasSubstr("limit:    512.0 MiB (536870912 bytes)\n"));
}

TEST_F(CacheCommand, StatsOfAnEmptyOrMissingCache) {
  Result result = kiln("cache stats --dir " + (work_ / "never_created").string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("entries:  0\n"));
  EXPECT_THAT(result.out, HasSubstr("size:     0 bytes\n"));
}

TEST_F(CacheCommand, ClearRemovesEveryEntry) {
  uint64_t total = add_entry("00000000000000c1", 10) + add_entry("00000000000000c2", 20) +
                   add_entry("00000000000000c3", 30);
  Result cleared = kiln("cache clear --dir " + cache_dir_.string());
  EXPECT_EQ(cleared.status, 0) << cleared.err;
  EXPECT_EQ(cleared.out, "removed 3 entries (" + std::to_string(total) + " bytes) from " + cache_dir_.string() + "\n");
  EXPECT_TRUE(fs::is_empty(cache_dir_ / "entries"));
  Result stats = kiln("cache stats --dir " + cache_dir_.string());
  EXPECT_THAT(stats.out, HasSubstr("entries:  0\n"));
}

TEST_F(CacheCommand, BadSizeVariableIsAUserError) {
  Result result = kiln("cache stats --dir " + cache_dir_.string(), "KILN_CACHE_MAX_BYTES=lots");
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, StartsWith("kiln: error: environment variable KILN_CACHE_MAX_BYTES='lots' is not a size"));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

TEST_F(CacheCommand, SubcommandIsRequired) {
  Result result = kiln("cache");
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, StartsWith("kiln: error: "));
  Result unknown = kiln("cache stats --bogus");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_THAT(unknown.err, HasSubstr("--bogus"));
}

}  // namespace
}  // namespace kiln
