// Fuzz target: one compile-cache entry as a reader finds it on disk. The input is entry.json,
// then a NUL byte, then the contents of the entry's one artifact file (module.so). lookup()
// must answer a verified entry or a miss (a damaged entry is counted and removed), never
// throw, and say what was damaged in one printable line.
#include "runtime/atomic_file.h"
#include "runtime/compile_cache.h"
#include "runtime/message_text.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/targets/fuzz_targets.h"
#include "tests/fuzz/targets/scratch_directory.h"

namespace kiln::fuzz {

void fuzz_cache_entry(std::string_view input) {
  static const std::string key = "0123456789abcdef0123456789abcdef";
  std::filesystem::path directory = fresh_scratch_directory("cache");
  std::filesystem::path entry = directory / "entries" / key;
  std::filesystem::create_directories(entry);
  size_t split = input.find('\0');
  write_file_atomically((entry / "entry.json").string(), input.substr(0, split));
  if (split != std::string_view::npos) write_file_atomically((entry / "module.so").string(), input.substr(split + 1));

  CompileCache cache(directory);
  std::optional<std::filesystem::path> hit = cache.lookup(key);
  CacheStats stats = cache.stats();
  if (hit && (stats.damaged != 0 || stats.hits != 1)) throw FuzzPropertyFailure("a hit that counts as damaged");
  if (!hit && stats.damaged != 1) throw FuzzPropertyFailure("a miss on an entry that was present but not damaged");
  if (!hit && std::filesystem::exists(entry)) throw FuzzPropertyFailure("a damaged entry was left in place");
  if (!is_printable(stats.last_damage) || stats.last_damage.size() > kMaxMessageBytes)
    throw FuzzPropertyFailure("the damage is not said in one printable line: " + excerpt(stats.last_damage, 200));
}

}  // namespace kiln::fuzz
