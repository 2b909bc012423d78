// Golden files: the one compare-or-rewrite helper of every golden suite. A test compares the
// text it produced with a file under the source tree; with KILN_UPDATE_GOLDENS=1 in the
// environment it rewrites the file instead (review the diff before committing it). A missing
// golden file is written and the test fails, so a new golden is always looked at once.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/test_paths.h"

namespace kiln::test_support {

// Whether KILN_UPDATE_GOLDENS is set to a value other than "" or "0".
inline bool updating_goldens() {
  const char* value = std::getenv("KILN_UPDATE_GOLDENS");
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

inline std::string read_golden_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compares `actual` with the file at `path` (absolute, or relative to the source tree).
inline void expect_matches_golden(const std::string& actual, std::filesystem::path path) {
  if (path.is_relative()) path = std::filesystem::path(KILN_SOURCE_DIR) / path;
  bool missing = !std::filesystem::exists(path);
  if (updating_goldens() || missing) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    if (missing && !updating_goldens()) ADD_FAILURE() << "wrote the missing golden file " << path << "; review it";
    return;
  }
  EXPECT_EQ(actual, read_golden_file(path)) << "differs from the golden file " << path
                                            << " (KILN_UPDATE_GOLDENS=1 rewrites it; review the diff)";
}

}  // namespace kiln::test_support
