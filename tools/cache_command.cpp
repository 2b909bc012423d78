// `kiln cache [--dir D] stats [--dir D]` and `kiln cache [--dir D] clear [--dir D]`: what the on-disk compile cache
// (runtime/compile_cache.h) holds, where, and its size limit; and emptying it.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "runtime/compile_cache.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {

struct CacheOptions {
  std::string directory;  // empty: the default (KILN_CACHE_DIR, XDG_CACHE_HOME, ~/.cache)
};

// "1.5 MiB (1572864 bytes)"
std::string describe_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit + 1 < int(std::size(kUnits))) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes) + " bytes";
  char text[64];
  std::snprintf(text, sizeof(text), "%.1f %s (%llu bytes)", value, kUnits[unit], static_cast<unsigned long long>(bytes));
  return text;
}

CompileCache open_cache(const CacheOptions& options) {
  return options.directory.empty() ? CompileCache() : CompileCache(std::filesystem::path(options.directory));
}

int run_stats(const CacheOptions& options) {
  CacheStats stats = open_cache(options).stats();
  std::cout << "location: " << stats.directory.string() << "\n"
            << "entries:  " << stats.entries << "\n"
            << "size:     " << describe_bytes(stats.total_bytes) << "\n"
            << "limit:    " << describe_bytes(stats.max_bytes) << "\n";
  return 0;
}

int run_clear(const CacheOptions& options) {
  CompileCache cache = open_cache(options);
  CacheClearResult result = cache.clear();
  std::cout << "removed " << result.removed_entries << (result.removed_entries == 1 ? " entry" : " entries") << " ("
            << describe_bytes(result.removed_bytes) << ") from " << cache.directory().string() << "\n";
  if (result.busy_entries > 0)
    std::cout << "kept " << result.busy_entries << (result.busy_entries == 1 ? " entry" : " entries")
              << " in use by another process (building or loading); run again later to remove "
              << (result.busy_entries == 1 ? "it" : "them") << "\n";
  return 0;
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto options = std::make_shared<CacheOptions>();
  CLI::App* cache = app.add_subcommand("cache", "Show or empty the on-disk cache of compiled models.");
  cache->require_subcommand(1);
  cache->footer(
      "The cache lives in --dir, else $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln;\n"
      "its size limit is $KILN_CACHE_MAX_BYTES (e.g. 512M, 2G), 1 GiB by default.\n"
      "Examples:\n"
      "  kiln cache stats\n"
      "  kiln cache --dir /tmp/kiln-cache clear");
  const std::string dir_help = "Cache directory (default: $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln or ~/.cache/kiln)";
  // Before or after the subcommand: `kiln cache --dir D stats` as `kiln cache stats --dir D`.
  cache->add_option("--dir", options->directory, dir_help);
  CLI::App* stats = cache->add_subcommand("stats", "Print the cache's location, entry count, size and size limit.");
  stats->add_option("--dir", options->directory, dir_help);
  CLI::App* clear = cache->add_subcommand("clear", "Remove every cached compiled model.");
  clear->add_option("--dir", options->directory, dir_help);
  register_action(cache, [options, stats] {
    if (stats->parsed()) return run_stats(*options);
    return run_clear(*options);
  });
}

}  // namespace kiln::tools
