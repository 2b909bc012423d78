// Tests for runtime/compile_cache: misses and hits, entry.json contents checked against
// independently computed sizes and checksums, every kind of damage (a flipped byte, a truncated
// or missing file, a deleted or garbled entry.json, an unlisted file) is a miss that removes the
// entry, concurrent processes (fork) racing on one key build once and all end with a valid
// entry, a crashed lock holder does not block others, LRU eviction order under a small bound,
// stats and clear, bad keys, and the directory and size settings from the environment.
#include "runtime/compile_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "runtime/checksum.h"
#include "kiln/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string key_of(int n) {
  std::ostringstream key;
  key << std::hex << std::setw(16) << std::setfill('0') << (0x1000 + n);
  return key.str();
}

using Files = std::map<std::string, std::string>;

// Sets an environment variable for the lifetime of the object, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kiln_cache_test_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static fs::path publish(CompileCache& cache, const std::string& key, const Files& files) {
    fs::path staging = cache.make_staging_directory();
    for (const auto& [name, contents] : files) write_text(staging / name, contents);
    return cache.publish(key, staging);
  }
  static Files module_files(const std::string& tag) {
    return {{"module.so", "binary " + tag + std::string(1000, 'b')}, {"manifest.json", "{\"tag\": \"" + tag + "\"}"}};
  }
  fs::path entry(const std::string& key) const { return dir_ / "entries" / key; }

  fs::path dir_;
};

TEST_F(CompileCacheTest, MissThenHitAfterPublish) {
  CompileCache cache(dir_);
  const std::string key = key_of(1);
  EXPECT_EQ(cache.lookup(key), std::nullopt);
  fs::path published = publish(cache, key, {{"module.so", "abc"}, {"src/module.cpp", "int x;"}});
  EXPECT_EQ(published, entry(key));
  std::optional<fs::path> hit = cache.lookup(key);
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, entry(key));
  EXPECT_EQ(read_text(*hit / "module.so"), "abc");
  EXPECT_EQ(read_text(*hit / "src" / "module.cpp"), "int x;");
  CacheStats stats = cache.stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 1);
  EXPECT_EQ(stats.damaged, 0);
  EXPECT_EQ(stats.entries, 1);
  // Nothing left behind in tmp/.
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
}

TEST_F(CompileCacheTest, EntryJsonListsEveryFileWithSizeAndChecksum) {
  CompileCache cache(dir_);
  publish(cache, key_of(2), {{"module.so", "abc"}, {"src/module.cpp", "int x;"}});
  nlohmann::json listing = nlohmann::json::parse(read_text(entry(key_of(2)) / "entry.json"));
  EXPECT_EQ(listing["format"], "kiln-cache-entry");
  EXPECT_EQ(listing["version"], 1);
  EXPECT_EQ(listing["checksum"], "xxh64");
  ASSERT_EQ(listing["files"].size(), 2u);
  EXPECT_EQ(listing["files"][0]["path"], "module.so");
  EXPECT_EQ(listing["files"][0]["bytes"], 3);
  EXPECT_EQ(listing["files"][0]["xxh64"], "44bc2cf5ad770999");  // XXH64("abc"), from libxxhash
  EXPECT_EQ(listing["files"][1]["path"], "src/module.cpp");
  EXPECT_EQ(listing["files"][1]["bytes"], 6);
  EXPECT_EQ(listing["files"][1]["xxh64"], checksum_hex(checksum64("int x;")));
}

// Each way an entry can be damaged: lookup misses, removes the entry and says why.
TEST_F(CompileCacheTest, DamagedEntryIsAMissAndIsRemoved) {
  struct Damage {
    const char* name;
    std::function<void(const fs::path&)> apply;
    const char* reason;
  };
  const std::vector<Damage> damages = {
      {"flipped byte",
       [](const fs::path& e) {
         std::string bytes = read_text(e / "module.so");
         bytes[500] = char(bytes[500] ^ 0x10);
         write_text(e / "module.so", bytes);
       },
       "module.so fails its checksum"},
      {"truncated file", [](const fs::path& e) { fs::resize_file(e / "module.so", 100); },
       "module.so has 100 bytes, entry.json says"},
      {"missing file", [](const fs::path& e) { fs::remove(e / "manifest.json"); }, "cannot read"},
      {"deleted entry.json", [](const fs::path& e) { fs::remove(e / "entry.json"); }, "entry.json"},
      {"garbled entry.json", [](const fs::path& e) { write_text(e / "entry.json", "{\"files\": [1, "); },
       "entry.json is not valid JSON"},
      {"wrong entry.json", [](const fs::path& e) { write_text(e / "entry.json", "{\"files\": []}"); },
       "not a kiln-cache-entry"},
      {"unlisted file", [](const fs::path& e) { write_text(e / "extra.so", "x"); },
       "file extra.so is not listed in entry.json"},
      {"empty entry folder",
       [](const fs::path& e) {
         fs::remove_all(e);
         fs::create_directories(e);
       },
       "entry.json"},
  };
  int count = 0;
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.name);
    CompileCache cache(dir_);
    const std::string key = key_of(100 + count++);
    publish(cache, key, module_files("v1"));
    ASSERT_TRUE(cache.lookup(key));
    damage.apply(entry(key));
    EXPECT_EQ(cache.lookup(key), std::nullopt);
    EXPECT_FALSE(fs::exists(entry(key)));
    CacheStats stats = cache.stats();
    EXPECT_EQ(stats.damaged, 1);
    EXPECT_THAT(stats.last_damage, HasSubstr(key + ": "));
    EXPECT_THAT(stats.last_damage, HasSubstr(damage.reason));
    // Rebuilt: publishing again gives a good entry.
    publish(cache, key, module_files("v2"));
    ASSERT_TRUE(cache.lookup(key));
    EXPECT_EQ(read_text(entry(key) / "manifest.json"), "{\"tag\": \"v2\"}");
  }
}

// The builder's own lookup under the lock: a miss, and the damaged entry is replaced at publish.
TEST_F(CompileCacheTest, DamagedEntryUnderTheLockIsReplacedByThePublish) {
  CompileCache cache(dir_);
  const std::string key = key_of(140);
  publish(cache, key, module_files("v1"));
  fs::resize_file(entry(key) / "module.so", 10);
  CacheLock lock = cache.lock(key);
  EXPECT_EQ(cache.lookup(key), std::nullopt);
  EXPECT_EQ(cache.stats().damaged, 1);
  EXPECT_TRUE(fs::exists(entry(key))) << "left for the lock holder to replace";
  publish(cache, key, module_files("v2"));
  EXPECT_EQ(cache.stats().damaged, 2);  // seen again by publish, then replaced
  ASSERT_TRUE(cache.lookup(key));
  EXPECT_EQ(read_text(entry(key) / "manifest.json"), "{\"tag\": \"v2\"}");
}

TEST_F(CompileCacheTest, PublishKeepsAnEarlierValidEntryAndBothSucceed) {
  CompileCache first(dir_), second(dir_);
  const std::string key = key_of(3);
  fs::path staging = second.make_staging_directory();  // a second builder, started before the first published
  write_text(staging / "module.so", "ours");
  publish(first, key, {{"module.so", "theirs"}});
  EXPECT_EQ(second.publish(key, staging), entry(key));
  EXPECT_EQ(read_text(entry(key) / "module.so"), "theirs");
  EXPECT_FALSE(fs::exists(staging));
  EXPECT_TRUE(second.lookup(key));
}

TEST_F(CompileCacheTest, PublishReplacesADamagedEarlierEntry) {
  CompileCache cache(dir_);
  const std::string key = key_of(4);
  publish(cache, key, {{"module.so", "old contents"}});
  write_text(entry(key) / "module.so", "old contentz");
  publish(cache, key, {{"module.so", "new contents"}});
  EXPECT_EQ(read_text(entry(key) / "module.so"), "new contents");
  EXPECT_EQ(cache.stats().damaged, 1);
  EXPECT_TRUE(cache.lookup(key));
}

// Processes racing to build one key: the lock makes exactly one build; everyone gets the entry.
TEST_F(CompileCacheTest, RacingProcessesBuildOnceAndAllSucceed) {
  const std::string key = key_of(5);
  const fs::path builds = dir_.string() + "_builds.txt";
  fs::remove(builds);
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        CompileCache cache(dir_);
        CacheEntry got = cache.get_or_build(key, [&](const fs::path& staging) {
          int fd = ::open(builds.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
          std::string line = std::to_string(::getpid()) + "\n";
          if (::write(fd, line.data(), line.size()) != ssize_t(line.size())) status = 3;
          ::close(fd);
          std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a slow compile
          write_text(staging / "module.so", std::string(100000, 'm'));
          write_text(staging / "manifest.json", "{}");
        });
        if (got.directory != dir_ / "entries" / key || read_text(got.directory / "module.so") != std::string(100000, 'm'))
          status = 1;
      } catch (...) {
        status = 2;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  std::string lines = read_text(builds);
  fs::remove(builds);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 1) << lines;
  CompileCache cache(dir_);
  EXPECT_TRUE(cache.lookup(key));
}

TEST_F(CompileCacheTest, GetOrBuildBuildsOnceThenHits) {
  CompileCache cache(dir_);
  int builds = 0;
  auto build = [&](const fs::path& staging) {
    ++builds;
    EXPECT_EQ(staging.parent_path(), dir_ / "tmp");
    write_text(staging / "module.so", "built");
  };
  CacheEntry first = cache.get_or_build(key_of(20), build);
  EXPECT_FALSE(first.hit);
  EXPECT_EQ(first.directory, entry(key_of(20)));
  EXPECT_EQ(read_text(first.directory / "module.so"), "built");
  CacheEntry second = cache.get_or_build(key_of(20), build);
  EXPECT_TRUE(second.hit);
  EXPECT_EQ(second.directory, first.directory);
  EXPECT_EQ(builds, 1);
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
}

TEST_F(CompileCacheTest, GetOrBuildPublishesNothingWhenTheBuildThrows) {
  CompileCache cache(dir_);
  EXPECT_THROW(cache.get_or_build(key_of(21),
                                  [&](const fs::path& staging) {
                                    write_text(staging / "module.so", "half written");
                                    fail("the compiler failed");
                                  }),
               Error);
  EXPECT_FALSE(fs::exists(entry(key_of(21))));
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
  // The lock was released: the next build runs.
  EXPECT_FALSE(cache.get_or_build(key_of(21), [](const fs::path& staging) { write_text(staging / "a", "b"); }).hit);
}

TEST_F(CompileCacheTest, GetOrBuildReplacesAnEntryTheCallerCannotUse) {
  CompileCache cache(dir_);
  publish(cache, key_of(22), {{"device.ptx", "old layout"}});
  auto has_cubin = [](const fs::path& found) { return fs::exists(found / "device.cubin"); };
  CacheEntry got = cache.get_or_build(key_of(22), [](const fs::path& staging) { write_text(staging / "device.cubin", "new"); },
                                      has_cubin);
  EXPECT_FALSE(got.hit);
  EXPECT_EQ(read_text(got.directory / "device.cubin"), "new");
  EXPECT_FALSE(fs::exists(got.directory / "device.ptx"));
  EXPECT_TRUE(cache.get_or_build(key_of(22), [](const fs::path&) { FAIL() << "built again"; }, has_cubin).hit);
}

// Without the lock, processes that all build and publish at once still all succeed.
TEST_F(CompileCacheTest, RacingPublishersWithoutTheLockAllSucceed) {
  const std::string key = key_of(6);
  const fs::path go = dir_.string() + "_go";
  fs::remove(go);
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        CompileCache cache(dir_);
        fs::path staging = cache.make_staging_directory();
        write_text(staging / "module.so", std::string(200000, 'p'));
        while (!fs::exists(go)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        fs::path published = cache.publish(key, staging);
        if (read_text(published / "module.so") != std::string(200000, 'p') || !cache.lookup(key)) status = 1;
      } catch (...) {
        status = 2;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  write_text(go, "");
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  fs::remove(go);
  CompileCache cache(dir_);
  EXPECT_TRUE(cache.lookup(key));
  EXPECT_EQ(cache.stats().damaged, 0);
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));  // every loser's staging folder is gone
}

TEST_F(CompileCacheTest, ACrashedLockHolderDoesNotBlockOthers) {
  const std::string key = key_of(7);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    CompileCache cache(dir_);
    CacheLock lock = cache.lock(key);
    if (::write(ready[1], "x", 1) != 1) ::_exit(1);
    for (;;) pause();  // killed while holding the lock
  }
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  CompileCache cache(dir_);
  EXPECT_FALSE(cache.try_lock(key));
  try {
    cache.lock(key, std::chrono::milliseconds(50));
    ADD_FAILURE() << "expected a timeout";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("timed out after 50 ms waiting for the compile cache lock"));
    EXPECT_THAT(error.what(), HasSubstr("(held by process " + std::to_string(holder) + ")"));
  }
  ::kill(holder, SIGKILL);
  int status = 0;
  waitpid(holder, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  auto start = std::chrono::steady_clock::now();
  CacheLock lock = cache.lock(key, std::chrono::seconds(10));
  EXPECT_TRUE(lock.held());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(CompileCacheTest, LockIsExclusiveWithinAProcessAndReleasedByDestructor) {
  CompileCache cache(dir_);
  const std::string key = key_of(8);
  {
    CacheLock lock = cache.lock(key);
    EXPECT_TRUE(lock.held());
    EXPECT_EQ(lock.path(), dir_ / "locks" / (key + ".lock"));
    EXPECT_FALSE(cache.try_lock(key));
    EXPECT_TRUE(cache.try_lock(key_of(9)));  // other keys are independent
  }
  std::optional<CacheLock> again = cache.try_lock(key);
  ASSERT_TRUE(again);
  again->release();
  EXPECT_FALSE(again->held());
  EXPECT_TRUE(cache.try_lock(key));
}

TEST_F(CompileCacheTest, EvictsLeastRecentlyUsedEntriesToFitTheBound) {
  CompileCache cache(dir_);
  publish(cache, key_of(10), module_files("a"));
  const uint64_t entry_bytes = cache.stats().total_bytes;
  cache.set_max_bytes(3 * entry_bytes + entry_bytes / 2);  // room for three entries
  publish(cache, key_of(11), module_files("b"));
  publish(cache, key_of(12), module_files("c"));
  ASSERT_TRUE(cache.lookup(key_of(10)));  // a is now the most recently used
  publish(cache, key_of(13), module_files("d"));
  EXPECT_TRUE(fs::exists(entry(key_of(10))));
  EXPECT_FALSE(fs::exists(entry(key_of(11)))) << "b was the least recently used";
  EXPECT_TRUE(fs::exists(entry(key_of(12))));
  EXPECT_TRUE(fs::exists(entry(key_of(13))));
  publish(cache, key_of(14), module_files("e"));
  EXPECT_FALSE(fs::exists(entry(key_of(12)))) << "c was next";
  CacheStats stats = cache.stats();
  EXPECT_EQ(stats.entries, 3);
  EXPECT_EQ(stats.evicted, 2);
  EXPECT_LE(stats.total_bytes, cache.max_bytes());
}

TEST_F(CompileCacheTest, EvictionSkipsLockedEntriesAndNeverTheNewOne) {
  CompileCache cache(dir_);
  publish(cache, key_of(20), module_files("a"));
  publish(cache, key_of(21), module_files("b"));
  const uint64_t entry_bytes = cache.stats().total_bytes / 2;
  {
    CacheLock busy = cache.lock(key_of(20));  // oldest, but in use
    cache.set_max_bytes(2 * entry_bytes + entry_bytes / 2);
    publish(cache, key_of(22), module_files("c"));
    EXPECT_TRUE(fs::exists(entry(key_of(20))));
    EXPECT_FALSE(fs::exists(entry(key_of(21))));
  }
  cache.set_max_bytes(1);  // smaller than any entry: all but the new one go
  publish(cache, key_of(23), module_files("d"));
  EXPECT_EQ(cache.stats().entries, 1);
  EXPECT_TRUE(cache.lookup(key_of(23)));
}

TEST_F(CompileCacheTest, StatsAndClear) {
  CompileCache cache(dir_, 12345);
  CacheStats empty = cache.stats();
  EXPECT_EQ(empty.entries, 0);
  EXPECT_EQ(empty.total_bytes, 0u);
  EXPECT_EQ(empty.max_bytes, 12345u);
  EXPECT_EQ(empty.directory, dir_);
  uint64_t expected_bytes = 0;
  for (int i = 0; i < 3; ++i) {
    Files files = {{"module.so", std::string(100 + i, 'x')}};
    publish(cache, key_of(30 + i), files);
    expected_bytes += 100 + i + fs::file_size(entry(key_of(30 + i)) / "entry.json");
  }
  CacheStats stats = cache.stats();
  EXPECT_EQ(stats.entries, 3);
  EXPECT_EQ(stats.total_bytes, expected_bytes);

  const uint64_t busy_bytes = 101 + fs::file_size(entry(key_of(31)) / "entry.json");
  std::optional<CacheLock> busy = cache.try_lock(key_of(31));
  CacheClearResult cleared = cache.clear();
  EXPECT_EQ(cleared.removed_entries, 2);
  EXPECT_EQ(cleared.removed_bytes, expected_bytes - busy_bytes);
  EXPECT_EQ(cleared.busy_entries, 1);
  EXPECT_TRUE(fs::exists(entry(key_of(31))));
  busy.reset();
  cleared = cache.clear();
  EXPECT_EQ(cleared.removed_entries, 1);
  EXPECT_EQ(cleared.removed_bytes, busy_bytes);
  EXPECT_EQ(cleared.busy_entries, 0);
  EXPECT_EQ(cache.stats().entries, 0);
  EXPECT_EQ(cache.stats().total_bytes, 0u);
  EXPECT_TRUE(fs::is_empty(dir_ / "locks"));
  EXPECT_TRUE(fs::is_empty(dir_ / "entries"));
}

TEST_F(CompileCacheTest, BadKeysAreInternalErrors) {
  CompileCache cache(dir_);
  for (const char* key : {"", "abc", "0123456789ABCDEF", "0123456789abcdeg", "../../etc/passwd0000",
                          "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0"}) {
    SCOPED_TRACE(key);
    EXPECT_FALSE(is_valid_cache_key(key));
    EXPECT_THROW(cache.lookup(key), InternalError);
    EXPECT_THROW(cache.lock(key), InternalError);
  }
  EXPECT_TRUE(is_valid_cache_key("0123456789abcdef"));
  EXPECT_TRUE(is_valid_cache_key(std::string(64, 'f')));
}

TEST_F(CompileCacheTest, StagingMustComeFromTheCache) {
  CompileCache cache(dir_);
  fs::path elsewhere = dir_.string() + "_elsewhere";
  write_text(elsewhere / "module.so", "x");
  EXPECT_THROW(cache.publish(key_of(40), elsewhere), InternalError);
  fs::remove_all(elsewhere);
}

TEST_F(CompileCacheTest, StaleTemporaryFoldersAreCleaned) {
  CompileCache cache(dir_);
  fs::path old_stage = cache.make_staging_directory();
  fs::path fresh_stage = cache.make_staging_directory();
  write_text(old_stage / "module.so", "crashed build");
  fs::last_write_time(old_stage, fs::file_time_type::clock::now() - std::chrono::hours(2));
  publish(cache, key_of(41), {{"module.so", "x"}});
  EXPECT_FALSE(fs::exists(old_stage));
  EXPECT_TRUE(fs::exists(fresh_stage));
}

TEST(CompileCacheSettings, DirectoryFromEnvironment) {
  ScopedEnv kiln("KILN_CACHE_DIR", "/tmp/kiln-explicit");
  ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(CompileCache::default_directory(), "/tmp/kiln-explicit");
  EXPECT_EQ(CompileCache(fs::path("/tmp/given")).directory(), "/tmp/given");
  {
    ScopedEnv unset("KILN_CACHE_DIR", "");
    EXPECT_EQ(CompileCache::default_directory(), "/tmp/xdg/kiln");
    ScopedEnv relative_xdg("XDG_CACHE_HOME", "relative/cache");  // not absolute: ignored, per the XDG spec
    EXPECT_EQ(CompileCache::default_directory(), "/home/someone/.cache/kiln");
    ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(CompileCache::default_directory(), "/home/someone/.cache/kiln");
  }
  ScopedEnv relative("KILN_CACHE_DIR", "relative/dir");
  EXPECT_EQ(CompileCache::default_directory(), fs::current_path() / "relative/dir");
}

TEST(CompileCacheSettings, MaxBytesFromEnvironment) {
  {
    ScopedEnv unset("KILN_CACHE_MAX_BYTES", nullptr);
    EXPECT_EQ(CompileCache::default_max_bytes(), uint64_t(1) << 30);
  }
  {
    ScopedEnv set("KILN_CACHE_MAX_BYTES", "512M");
    EXPECT_EQ(CompileCache::default_max_bytes(), uint64_t(512) << 20);
    EXPECT_EQ(CompileCache(fs::path("/tmp/x")).max_bytes(), uint64_t(512) << 20);
    EXPECT_EQ(CompileCache(fs::path("/tmp/x"), 7).max_bytes(), 7u);
  }
  ScopedEnv bad("KILN_CACHE_MAX_BYTES", "lots");
  try {
    CompileCache::default_max_bytes();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("environment variable KILN_CACHE_MAX_BYTES='lots' is not a size"));
  }
}

TEST(CompileCacheSettings, ParseByteSize) {
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("1073741824"), uint64_t(1) << 30);
  EXPECT_EQ(parse_byte_size("10k"), 10240u);
  EXPECT_EQ(parse_byte_size("3MiB"), uint64_t(3) << 20);
  EXPECT_EQ(parse_byte_size("2G"), uint64_t(2) << 30);
  EXPECT_EQ(parse_byte_size("2gb"), uint64_t(2) << 30);
  for (const char* bad : {"", "G", "-1", "1.5G", "1T", "12 M", "99999999999999999999", "17179869184G"})
    EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
}

}  // namespace
}  // namespace kiln
