// The modules inside each folder of ir/ include each other without cycles
// (tests/support/include_cycles.h), and the check itself finds a cycle when there is one.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/include_cycles.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

TEST(IncludeStructure, NoCyclesInsideTheFoldersOfIr) {
  EXPECT_EQ(test_support::include_cycles(KILN_SOURCE_DIR, "ir"), std::vector<std::string>{});
}

TEST(IncludeStructure, TheCheckFindsACycleThroughACpp) {
  fs::path root = fs::temp_directory_path() / ("kiln_include_cycles_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "lib" / "inner");
  auto write = [&](const std::string& path, const std::string& text) { std::ofstream(root / path) << text; };
  write("lib/graph.h", "#pragma once\n");
  write("lib/graph.cpp", "#include \"lib/graph.h\"\n#include \"lib/registry.h\"\n");
  write("lib/registry.h", "#pragma once\n#include <map>\n#include \"lib/graph.h\"\n");
  write("lib/leaf.h", "#include \"lib/graph.h\"\n");
  write("lib/inner/a.h", "#include \"lib/inner/b.h\"\n");
  write("lib/inner/b.cpp", "#include \"lib/inner/b.h\"\n");
  std::vector<std::string> cycles = test_support::include_cycles(root, "lib");
  fs::remove_all(root);
  EXPECT_EQ(cycles, (std::vector<std::string>{"lib/graph -> lib/registry -> lib/graph"}));
}

}  // namespace
}  // namespace kiln
