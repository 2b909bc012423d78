// The on-disk compile cache: entries, verification, publishing, per-key locks, LRU eviction.
#include "runtime/compile_cache.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/checksum.h"
#include "kiln/error.h"

namespace kiln {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kEntryFormat = "kiln-cache-entry";
constexpr int kEntryVersion = 1;
constexpr const char* kEntryFile = "entry.json";
constexpr const char* kLastUsedFile = "last_used";
constexpr auto kStaleAge = std::chrono::hours(1);
constexpr uint64_t kMaxEntryJsonBytes = 1 << 20;

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

void ensure_directory(const fs::path& path) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error) fail("cannot create cache directory ", path.string(), ": ", error.message());
}

// Sets the modification time of `path` to now, creating the file when missing. Best effort:
// the entry may be going away under another process's eviction.
void touch(const fs::path& path) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const struct timespec times[2] = {now, now};
  if (utimensat(AT_FDCWD, path.c_str(), times, 0) == 0) return;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  futimens(fd, times);
  ::close(fd);
}

// Regular files under `root`, as relative generic paths; false when something else (a link, a
// device) is there or the walk fails.
bool list_files(const fs::path& root, std::set<std::string>& files) {
  std::error_code error;
  fs::recursive_directory_iterator walk(root, error), end;
  for (; !error && walk != end; walk.increment(error)) {
    fs::file_status status = walk->symlink_status(error);
    if (error) return false;
    if (fs::is_directory(status)) continue;
    if (!fs::is_regular_file(status)) return false;
    files.insert(walk->path().lexically_relative(root).generic_string());
  }
  return !error;
}

uint64_t directory_bytes(const fs::path& root) {
  uint64_t total = 0;
  std::error_code error;
  for (fs::recursive_directory_iterator walk(root, error), end; !error && walk != end; walk.increment(error)) {
    std::error_code size_error;
    if (walk->is_regular_file(size_error)) {
      uint64_t size = walk->file_size(size_error);
      if (!size_error) total += size;
    }
  }
  return total;
}

std::string read_small_file(const fs::path& path, std::string& why) {
  std::error_code error;
  uint64_t size = fs::file_size(path, error);
  if (error) {
    why = path.filename().string() + ": " + error.message();
    return {};
  }
  if (size > kMaxEntryJsonBytes) {
    why = path.filename().string() + " is too large (" + std::to_string(size) + " bytes)";
    return {};
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) why = "cannot read " + path.filename().string();
  return text.str();
}

// Why an entry cannot be trusted (its files disagree with its entry.json, or entry.json is
// missing or malformed); std::nullopt when it verifies.
std::optional<std::string> find_damage(const fs::path& entry) {
  std::string why;
  std::string text = read_small_file(entry / kEntryFile, why);
  if (!why.empty()) return why;
  json manifest = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object()) return "entry.json is not valid JSON";
  if (manifest.value("format", json()) != kEntryFormat || manifest.value("version", json()) != kEntryVersion ||
      manifest.value("checksum", json()) != "xxh64" || !manifest.contains("files") || !manifest["files"].is_array())
    return "entry.json is not a kiln-cache-entry version 1 listing";

  std::set<std::string> listed;
  for (const json& file : manifest["files"]) {
    if (!file.is_object() || !file.contains("path") || !file["path"].is_string() || !file.contains("bytes") ||
        !file["bytes"].is_number_unsigned() || !file.contains("xxh64") || !file["xxh64"].is_string())
      return "entry.json lists a malformed file record";
    const std::string& written = file["path"].get_ref<const std::string&>();
    fs::path relative = fs::path(written).lexically_normal();
    std::string name = relative.generic_string();
    if (relative.empty() || relative.is_absolute() || name.starts_with("..") || name == kEntryFile ||
        name == kLastUsedFile || !listed.insert(name).second)
      return "entry.json lists a bad path '" + written + "'";
    uint64_t size = 0, digest = 0;
    try {
      digest = checksum_file(entry / relative, &size);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    const uint64_t expected_size = file["bytes"].get<uint64_t>();
    const std::string& expected_digest = file["xxh64"].get_ref<const std::string&>();
    if (size != expected_size)
      return name + " has " + std::to_string(size) + " bytes, entry.json says " + std::to_string(expected_size);
    if (checksum_hex(digest) != expected_digest)
      return name + " fails its checksum (" + checksum_hex(digest) + ", entry.json says " + expected_digest + ")";
  }
  std::set<std::string> present;
  if (!list_files(entry, present)) return "the entry holds something other than files and folders";
  present.erase(kEntryFile);
  present.erase(kLastUsedFile);
  for (const std::string& name : present)
    if (!listed.count(name)) return "file " + name + " is not listed in entry.json";
  return std::nullopt;
}

// Writes entry.json into `staging` listing every file there.
void write_entry_json(const fs::path& staging) {
  std::set<std::string> files;
  if (!list_files(staging, files)) fail("cannot publish ", staging.string(), ": it holds something other than files");
  files.erase(kEntryFile);
  files.erase(kLastUsedFile);
  json listing = json::array();
  for (const std::string& name : files) {
    uint64_t size = 0;
    uint64_t digest = checksum_file(staging / name, &size);
    listing.push_back({{"path", name}, {"bytes", size}, {"xxh64", checksum_hex(digest)}});
  }
  json manifest = {{"format", kEntryFormat}, {"version", kEntryVersion}, {"checksum", "xxh64"}, {"files", listing}};
  fs::path path = staging / kEntryFile;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << manifest.dump(1) << "\n";
  out.close();
  if (!out) fail("cannot write ", path.string(), " (disk full?)");
}

// The last use of an entry: last_used's mtime, else entry.json's, else the folder's.
fs::file_time_type last_use(const fs::path& entry) {
  std::error_code error;
  for (const char* name : {kLastUsedFile, kEntryFile}) {
    fs::file_time_type time = fs::last_write_time(entry / name, error);
    if (!error) return time;
  }
  fs::file_time_type time = fs::last_write_time(entry, error);
  return error ? fs::file_time_type::min() : time;
}

std::vector<std::string> entry_keys(const fs::path& entries) {
  std::vector<std::string> keys;
  std::error_code error;
  for (fs::directory_iterator walk(entries, error), end; !error && walk != end; walk.increment(error)) {
    std::string name = walk->path().filename().string();
    if (is_valid_cache_key(name)) keys.push_back(name);
  }
  return keys;
}

std::string lock_holder(const fs::path& path) {
  std::ifstream in(path);
  std::string pid;
  in >> pid;
  return pid.empty() ? std::string("unknown") : pid;
}

}  // namespace

bool is_valid_cache_key(std::string_view key) {
  if (key.size() < 16 || key.size() > 64) return false;
  return std::all_of(key.begin(), key.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 19) return std::nullopt;
  uint64_t value = std::stoull(std::string(text.substr(0, digits)));
  std::string suffix(text.substr(digits));
  std::transform(suffix.begin(), suffix.end(), suffix.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  int shift = 0;
  if (suffix.empty() || suffix == "b") shift = 0;
  else if (suffix == "k" || suffix == "kib" || suffix == "kb") shift = 10;
  else if (suffix == "m" || suffix == "mib" || suffix == "mb") shift = 20;
  else if (suffix == "g" || suffix == "gib" || suffix == "gb") shift = 30;
  else return std::nullopt;
  if (shift > 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

// ------------------------------------------------------------------ CacheLock

CacheLock::~CacheLock() { release(); }

CacheLock::CacheLock(CacheLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

CacheLock& CacheLock::operator=(CacheLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

void CacheLock::release() noexcept {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
  fd_ = -1;
}

// ------------------------------------------------------------------ CompileCache

CompileCache::CompileCache(std::optional<fs::path> directory, std::optional<uint64_t> max_bytes)
    : directory_(directory ? fs::absolute(*directory) : default_directory()),
      max_bytes_(max_bytes ? *max_bytes : default_max_bytes()) {}

fs::path CompileCache::default_directory() {
  if (const char* explicit_dir = env("KILN_CACHE_DIR")) return fs::absolute(explicit_dir);
  if (const char* xdg = env("XDG_CACHE_HOME"); xdg != nullptr && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "kiln";
  const char* home = env("HOME");
  if (home == nullptr) {
    if (const struct passwd* user = getpwuid(getuid()); user != nullptr && user->pw_dir != nullptr) home = user->pw_dir;
  }
  if (home == nullptr)
    fail("cannot choose a compile cache directory: none of KILN_CACHE_DIR, XDG_CACHE_HOME, HOME is set");
  return fs::path(home) / ".cache" / "kiln";
}

uint64_t CompileCache::default_max_bytes() {
  const char* text = env("KILN_CACHE_MAX_BYTES");
  if (text == nullptr) return kDefaultMaxBytes;
  std::optional<uint64_t> parsed = parse_byte_size(text);
  if (!parsed)
    fail("environment variable KILN_CACHE_MAX_BYTES='", text,
         "' is not a size (a number of bytes, optionally with K, M or G: 1073741824, 512M, 2G)");
  return *parsed;
}

std::optional<fs::path> CompileCache::lookup(const std::string& key) {
  KILN_CHECK(is_valid_cache_key(key), "bad compile cache key '", key, "'");
  fs::path entry = entry_dir(key);
  std::error_code error;
  if (!fs::is_directory(entry, error)) {
    ++misses_;
    return std::nullopt;
  }
  if (std::optional<std::string> damage = find_damage(entry)) {
    remove_damaged(key, *damage);
    ++misses_;
    return std::nullopt;
  }
  touch(entry / kLastUsedFile);
  ++hits_;
  return entry;
}

fs::path CompileCache::make_staging_directory() {
  ensure_directory(tmp_dir());
  std::string pattern = (tmp_dir() / "stage-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    fail("cannot create a staging directory in ", tmp_dir().string(), ": ", std::strerror(errno));
  return pattern;
}

void CompileCache::record_damage(const std::string& key, const std::string& damage) {
  ++damaged_;
  std::lock_guard<std::mutex> guard(last_damage_mutex_);
  last_damage_ = key + ": " + damage;
}

void CompileCache::remove_damaged(const std::string& key, const std::string& damage) {
  record_damage(key, damage);
  // Only under the key's lock, and only if still damaged: a builder may have replaced it since
  // we looked. When the lock is held (by a builder, which replaces the entry when it publishes,
  // or by a loader), or cannot be taken at all (a read-only cache), the entry is left as is.
  std::optional<CacheLock> held;
  try {
    held = try_lock(key);
  } catch (const Error&) {
    return;
  }
  if (held && find_damage(entry_dir(key))) discard(entry_dir(key));
}

bool CompileCache::discard(const fs::path& path) {
  std::error_code error;
  ensure_directory(tmp_dir());
  std::string trash = (tmp_dir() / "trash-XXXXXX").string();
  if (mkdtemp(trash.data()) == nullptr) {
    // Cannot move it aside: delete in place (a reader may then see a partial entry, which fails
    // verification like any damage).
    return fs::remove_all(path, error) > 0;
  }
  // rename() replaces the empty trash folder atomically.
  bool moved = ::rename(path.c_str(), trash.c_str()) == 0;
  fs::remove_all(trash, error);
  return moved;
}

fs::path CompileCache::publish(const std::string& key, const fs::path& staging) {
  KILN_CHECK(is_valid_cache_key(key), "bad compile cache key '", key, "'");
  KILN_CHECK(fs::absolute(staging).lexically_normal().parent_path() == tmp_dir().lexically_normal(),
             "publish: ", staging.string(), " is not a staging directory of ", directory_.string());
  write_entry_json(staging);
  touch(staging / kLastUsedFile);
  ensure_directory(entries_dir());
  fs::path entry = entry_dir(key);
  constexpr int kAttempts = 4;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (::rename(staging.c_str(), entry.c_str()) == 0) break;
    if (errno != EEXIST && errno != ENOTEMPTY)
      fail("cannot publish compile cache entry ", entry.string(), ": ", std::strerror(errno));
    // Another process published this key first: keep theirs unless it is damaged.
    std::optional<std::string> damage = find_damage(entry);
    if (!damage) {
      std::error_code error;
      fs::remove_all(staging, error);
      touch(entry / kLastUsedFile);
      break;
    }
    discard(entry);
    record_damage(key, *damage);
    if (attempt + 1 == kAttempts)
      fail("cannot publish compile cache entry ", entry.string(), ": it keeps being replaced by damaged copies (",
           *damage, ")");
  }
  evict_to_fit(key);
  remove_stale_tmp(std::chrono::duration_cast<std::chrono::seconds>(kStaleAge));
  return entry;
}

CacheEntry CompileCache::get_or_build(const std::string& key, const std::function<void(const fs::path&)>& build,
                                      const std::function<bool(const fs::path&)>& usable) {
  auto accepted = [&](const std::optional<fs::path>& entry) { return entry && (!usable || usable(*entry)); };
  if (std::optional<fs::path> hit = lookup(key); accepted(hit)) return {*hit, true};
  CacheLock held = lock(key);
  std::optional<fs::path> hit = lookup(key);  // another process may have built it while we waited
  if (accepted(hit)) return {*hit, true};
  if (hit) discard(*hit);  // it verifies but is not what the caller needs: replaced below
  fs::path staging = make_staging_directory();
  try {
    build(staging);
  } catch (...) {
    std::error_code error;
    fs::remove_all(staging, error);
    throw;
  }
  return {publish(key, staging), false};
}

std::optional<CacheLock> CompileCache::acquire(const std::string& key, bool wait,
                                               std::optional<std::chrono::milliseconds> timeout) {
  KILN_CHECK(is_valid_cache_key(key), "bad compile cache key '", key, "'");
  ensure_directory(locks_dir());
  const fs::path path = lock_path(key);
  const auto deadline = std::chrono::steady_clock::now() + timeout.value_or(std::chrono::milliseconds(0));
  for (;;) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) fail("cannot open the compile cache lock ", path.string(), ": ", std::strerror(errno));
    bool locked = false;
    for (;;) {
      const bool blocking = wait && !timeout;
      if (::flock(fd, blocking ? LOCK_EX : LOCK_EX | LOCK_NB) == 0) {
        locked = true;
        break;
      }
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) {
        int saved = errno;
        ::close(fd);
        fail("cannot lock ", path.string(), ": ", std::strerror(saved));
      }
      if (!wait) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        ::close(fd);
        fail("timed out after ", timeout->count(), " ms waiting for the compile cache lock ", path.string(),
             " (held by process ", lock_holder(path), ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!locked) {
      ::close(fd);
      return std::nullopt;
    }
    // The file may have been unlinked (by eviction or clear, which hold the lock when they
    // unlink it) between our open and our flock: then we locked a dead inode; start over.
    struct stat held, current;
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &current) == 0 && held.st_ino == current.st_ino &&
        held.st_dev == current.st_dev) {
      std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
        // The pid is only for messages; a failed write changes nothing.
      }
      return CacheLock(fd, path);
    }
    ::close(fd);
  }
}

CacheLock CompileCache::lock(const std::string& key, std::optional<std::chrono::milliseconds> timeout) {
  return std::move(*acquire(key, /*wait=*/true, timeout));
}

std::optional<CacheLock> CompileCache::try_lock(const std::string& key) {
  return acquire(key, /*wait=*/false, std::nullopt);
}

int64_t CompileCache::evict_to_fit(const std::string& keep) {
  struct Candidate {
    fs::file_time_type last_use;
    std::string key;
    uint64_t bytes;
  };
  std::vector<Candidate> candidates;
  uint64_t total = 0;
  for (const std::string& key : entry_keys(entries_dir())) {
    uint64_t bytes = directory_bytes(entry_dir(key));
    total += bytes;
    if (key != keep) candidates.push_back({last_use(entry_dir(key)), key, bytes});
  }
  if (total <= max_bytes_) return 0;
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.last_use != b.last_use ? a.last_use < b.last_use : a.key < b.key;
  });
  int64_t evicted = 0;
  for (const Candidate& candidate : candidates) {
    if (total <= max_bytes_) break;
    std::optional<CacheLock> held = try_lock(candidate.key);
    if (!held) continue;  // being built or loaded by someone: leave it
    if (discard(entry_dir(candidate.key))) {
      total -= std::min(total, candidate.bytes);
      ++evicted;
    }
    std::error_code error;
    fs::remove(lock_path(candidate.key), error);  // while holding it (see acquire)
  }
  evicted_ += evicted;
  return evicted;
}

void CompileCache::remove_stale_tmp(std::chrono::seconds min_age) {
  std::error_code error;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator walk(tmp_dir(), error), end; !error && walk != end; walk.increment(error)) {
    std::error_code item_error;
    fs::file_time_type modified = fs::last_write_time(walk->path(), item_error);
    if (item_error || now - modified < min_age) continue;
    fs::remove_all(walk->path(), item_error);
  }
}

std::string CompileCache::last_damage() const {
  std::lock_guard<std::mutex> guard(last_damage_mutex_);
  return last_damage_;
}

CacheStats CompileCache::stats() const {
  CacheStats stats;
  stats.directory = directory_;
  stats.max_bytes = max_bytes_;
  for (const std::string& key : entry_keys(entries_dir())) {
    ++stats.entries;
    stats.total_bytes += directory_bytes(entry_dir(key));
  }
  stats.hits = hits_;
  stats.misses = misses_;
  stats.damaged = damaged_;
  stats.evicted = evicted_;
  std::lock_guard<std::mutex> guard(last_damage_mutex_);
  stats.last_damage = last_damage_;
  return stats;
}

CacheClearResult CompileCache::clear() {
  CacheClearResult result;
  for (const std::string& key : entry_keys(entries_dir())) {
    std::optional<CacheLock> held = try_lock(key);
    if (!held) {
      ++result.busy_entries;
      continue;
    }
    uint64_t bytes = directory_bytes(entry_dir(key));
    if (discard(entry_dir(key))) {
      ++result.removed_entries;
      result.removed_bytes += bytes;
    }
    std::error_code error;
    fs::remove(lock_path(key), error);
  }
  // Lock files of keys that never got an entry (failed builds).
  std::vector<std::string> lock_keys;
  std::error_code error;
  for (fs::directory_iterator walk(locks_dir(), error), end; !error && walk != end; walk.increment(error)) {
    std::string key = walk->path().stem().string();
    if (walk->path().extension() == ".lock" && is_valid_cache_key(key)) lock_keys.push_back(key);
  }
  for (const std::string& key : lock_keys) {
    if (std::optional<CacheLock> held = try_lock(key)) {
      std::error_code remove_error;
      fs::remove(lock_path(key), remove_error);
    }
  }
  remove_stale_tmp(std::chrono::duration_cast<std::chrono::seconds>(kStaleAge));
  return result;
}

}  // namespace kiln
