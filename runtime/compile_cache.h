// CompileCache: the on-disk cache of compiled artifacts (DESIGN.md, "Runtime"). Entries are
// content-addressed by a key (a hex digest of the final graph, options, ISA and Kiln's version,
// computed by the compiler), published atomically, verified by checksum on every lookup (a
// damaged or partial entry is removed and reported as a miss, never trusted), safe when several
// processes build and read at once, and bounded in size with least-recently-used eviction.
//
// Where: the directory given, else $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
// ~/.cache/kiln. Layout under it:
//   entries/<key>/             one entry: the artifact's files (any names, subfolders allowed),
//   entries/<key>/entry.json     {"format": "kiln-cache-entry", "version": 1, "checksum": "xxh64",
//                                 "files": [{"path": "module.so", "bytes": 16072,
//                                            "xxh64": "<16 hex digits>"}, ...]}
//                                every file but entry.json and last_used, with its size and
//                                XXH64 checksum (runtime/checksum.h); a file not listed is damage;
//   entries/<key>/last_used      empty; its modification time is the entry's last use (LRU);
//   locks/<key>.lock           the per-key build lock (flock; released by the kernel when its
//                                holder dies, so a crashed build never blocks the next one);
//   tmp/stage-XXXXXX           staging directories being filled by builds;
//   tmp/trash-XXXXXX           entries on their way out (moved here atomically, then deleted).
// tmp/ holds both so that every rename stays on one filesystem; leftovers older than an hour
// (from crashed processes) are deleted by later publishes and by clear().
//
// A build, as get_or_build runs it for every target (compiler/compile_driver.cpp):
//   if (auto hit = lookup(key)) return *hit;
//   CacheLock lock = this->lock(key);             // one builder per key across processes
//   if (auto hit = lookup(key)) return *hit;       // built while we waited
//   std::filesystem::path staging = make_staging_directory();
//   build(staging);                               // write the artifact's files into staging
//   return publish(key, staging);                 // still holding the lock
// Eviction and clear() skip any entry whose lock is held, so loading an entry while holding its
// lock protects it from being deleted by another process mid-load.
//
// Writes are not fsync'ed: after a power loss an entry may be renamed into place with lost
// contents, which the checksums catch (it is then rebuilt).
//
// Keys are 16 to 64 lowercase hex digits; any other key is an internal error (KILN_CHECK).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

bool is_valid_cache_key(std::string_view key);

// Parses a byte count: digits with an optional K, M or G suffix (powers of 1024, "KiB"/"K"
// spellings, any case); std::nullopt for anything else.
std::optional<uint64_t> parse_byte_size(std::string_view text);

struct CacheStats {
  std::filesystem::path directory;
  int64_t entries = 0;
  uint64_t total_bytes = 0;  // every file of every entry
  uint64_t max_bytes = 0;
  // What this CompileCache object saw (not persisted): lookups that verified, lookups that
  // found nothing, entries found damaged and removed, entries evicted to honour max_bytes.
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t damaged = 0;
  int64_t evicted = 0;
  std::string last_damage;  // "<key>: <what was wrong>" for the last damaged entry seen, if any
};

struct CacheClearResult {
  int64_t removed_entries = 0;
  uint64_t removed_bytes = 0;
  int64_t busy_entries = 0;  // skipped: another process held their lock (a build or load in flight)
};

// An exclusive per-key lock (flock on locks/<key>.lock). Released by the destructor, by
// release(), or by the kernel when the process dies. The descriptor is close-on-exec, so child
// processes (the C++ compiler) do not inherit it.
class CacheLock {
 public:
  CacheLock() = default;
  ~CacheLock();
  CacheLock(CacheLock&& other) noexcept;
  CacheLock& operator=(CacheLock&& other) noexcept;
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

  bool held() const { return fd_ >= 0; }
  const std::filesystem::path& path() const { return path_; }
  void release() noexcept;

 private:
  friend class CompileCache;
  CacheLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

// What get_or_build found or made.
struct CacheEntry {
  std::filesystem::path directory;
  bool hit = false;  // found in the cache (built earlier, here or by another process), not built now
};

class CompileCache {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t(1) << 30;

  // `directory`: else default_directory(). `max_bytes`: else default_max_bytes(). Nothing is
  // created on disk until the first write.
  explicit CompileCache(std::optional<std::filesystem::path> directory = std::nullopt,
                        std::optional<uint64_t> max_bytes = std::nullopt);

  // $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln (when absolute), else $HOME/.cache/kiln (HOME
  // from the password database when unset); empty variables count as unset.
  static std::filesystem::path default_directory();
  // $KILN_CACHE_MAX_BYTES (parse_byte_size; a bad value is a kiln::Error naming the variable),
  // else kDefaultMaxBytes.
  static uint64_t default_max_bytes();

  const std::filesystem::path& directory() const { return directory_; }
  uint64_t max_bytes() const { return max_bytes_; }
  void set_max_bytes(uint64_t max_bytes) { max_bytes_ = max_bytes; }

  // The entry's directory when `key` is cached and every file verifies (and records the use);
  // std::nullopt otherwise. A damaged or partial entry is counted in stats().damaged and
  // removed, unless its lock is held (then whoever holds it replaces it when publishing).
  std::optional<std::filesystem::path> lookup(const std::string& key);

  // A new, empty directory under tmp/ to build an entry in. If the build fails, remove it
  // (or leave it: it is deleted once an hour old).
  std::filesystem::path make_staging_directory();

  // Makes `staging` (from make_staging_directory) the entry of `key`: lists and checksums its
  // files into entry.json and renames it into place. If another process published `key` first,
  // its entry is kept when it verifies (ours is discarded) and replaced when it is damaged;
  // either way this returns the entry's directory. Afterwards evicts least-recently-used
  // entries (never `key`, never one whose lock is held) until the total is within max_bytes.
  std::filesystem::path publish(const std::string& key, const std::filesystem::path& staging);

  // The entry of `key`, built by `build` when the cache does not hold a usable one: the
  // sequence in the header comment. `build` writes the artifact's files into the staging
  // directory it is given; if it throws, the staging directory is removed and nothing is
  // published. `usable` (optional) may reject an entry that verifies but lacks what the caller
  // needs (one written by another layout of the same key): it is then rebuilt and replaced.
  CacheEntry get_or_build(const std::string& key, const std::function<void(const std::filesystem::path&)>& build,
                          const std::function<bool(const std::filesystem::path&)>& usable = {});

  // Blocks until this process holds `key`'s build lock, or throws kiln::Error naming the lock
  // file (and the holder's pid) once `timeout` passes.
  CacheLock lock(const std::string& key,
                 std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // The lock if it is free now; std::nullopt when another holder has it.
  std::optional<CacheLock> try_lock(const std::string& key);

  CacheStats stats() const;
  // "<key>: <what was wrong>" for the last damaged entry this object found (and removed or
  // left to be replaced), "" if none: cheap, unlike stats().
  std::string last_damage() const;
  // Removes every entry whose lock is free, leftover lock files and stale tmp/ folders.
  CacheClearResult clear();

  // Evicts least-recently-used entries until the total is within max_bytes; `keep` is never
  // evicted. Returns how many were evicted. (publish calls it.)
  int64_t evict_to_fit(const std::string& keep = "");

 private:
  std::filesystem::path entries_dir() const { return directory_ / "entries"; }
  std::filesystem::path locks_dir() const { return directory_ / "locks"; }
  std::filesystem::path tmp_dir() const { return directory_ / "tmp"; }
  std::filesystem::path entry_dir(const std::string& key) const { return entries_dir() / key; }
  std::filesystem::path lock_path(const std::string& key) const { return locks_dir() / (key + ".lock"); }
  std::optional<CacheLock> acquire(const std::string& key, bool wait,
                                   std::optional<std::chrono::milliseconds> timeout);
  // Moves `path` into tmp/ atomically, then deletes it. False when it was already gone.
  bool discard(const std::filesystem::path& path);
  void record_damage(const std::string& key, const std::string& damage);
  // Counts a damaged entry and removes it (see the .cpp for when it is left in place).
  void remove_damaged(const std::string& key, const std::string& damage);
  void remove_stale_tmp(std::chrono::seconds min_age);

  std::filesystem::path directory_;
  uint64_t max_bytes_;
  std::atomic<int64_t> hits_{0}, misses_{0}, damaged_{0}, evicted_{0};
  mutable std::mutex last_damage_mutex_;
  std::string last_damage_;
};

}  // namespace kiln
