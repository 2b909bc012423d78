// Every header under include/kiln/ includes only Kiln's public headers (<kiln/...> or
// "kiln/...", which must exist under include/kiln/) and the C++ standard library's, so an app
// compiles against an installed Kiln with -I at the prefix alone (issue 13 item 7, issue 15
// item 5). A failure names the file and line of each offending #include.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_paths.h"

namespace {

namespace fs = std::filesystem;

const fs::path kInclude = fs::path(KILN_SOURCE_DIR) / "include";

// The C++20 standard library's headers, and the C headers it offers as <cname>.
const std::set<std::string>& standard_headers() {
  static const std::set<std::string> headers = {
      "algorithm", "any", "array", "atomic", "barrier", "bit", "bitset", "cassert", "cctype", "cerrno",
      "cfenv", "cfloat", "charconv", "chrono", "cinttypes", "climits", "clocale", "cmath", "codecvt",
      "compare", "complex", "concepts", "condition_variable", "coroutine", "csetjmp", "csignal",
      "cstdarg", "cstddef", "cstdint", "cstdio", "cstdlib", "cstring", "ctime", "cuchar", "cwchar",
      "cwctype", "deque", "exception", "execution", "filesystem", "format", "forward_list", "fstream",
      "functional", "future", "initializer_list", "iomanip", "ios", "iosfwd", "iostream", "istream",
      "iterator", "latch", "limits", "list", "locale", "map", "memory", "memory_resource", "mutex",
      "new", "numbers", "numeric", "optional", "ostream", "queue", "random", "ranges", "ratio",
      "regex", "scoped_allocator", "semaphore", "set", "shared_mutex", "source_location", "span",
      "sstream", "stack", "stdexcept", "stop_token", "streambuf", "string", "string_view",
      "syncstream", "system_error", "thread", "tuple", "type_traits", "typeindex", "typeinfo",
      "unordered_map", "unordered_set", "utility", "valarray", "variant", "vector", "version"};
  return headers;
}

// What is wrong with one #include's target, or "" when it is allowed.
std::string problem(const std::string& opening, const std::string& name) {
  if (name.rfind("kiln/", 0) == 0) {
    if (!fs::exists(kInclude / name)) return "includes " + name + ", which is not a header under include/kiln/";
    return "";
  }
  if (opening == "<" && standard_headers().count(name)) return "";
  return "includes " + opening + name + (opening == "<" ? ">" : "\"") +
         ", which is neither a Kiln public header (kiln/...) nor a standard header";
}

std::vector<std::string> violations_in(const fs::path& file) {
  static const std::regex include_line(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  std::vector<std::string> found;
  std::ifstream in(file);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::smatch match;
    if (!std::regex_search(line, match, include_line)) {
      if (line.find("#include") != std::string::npos && line.find("//") == std::string::npos)
        found.push_back(fs::relative(file, KILN_SOURCE_DIR).string() + ":" + std::to_string(number) +
                        ": an #include this test cannot read: " + line);
      continue;
    }
    std::string why = problem(match[1], match[2]);
    if (!why.empty()) found.push_back(fs::relative(file, KILN_SOURCE_DIR).string() + ":" + std::to_string(number) + ": " + why);
  }
  return found;
}

TEST(PublicHeaders, IncludeOnlyKilnPublicHeadersAndTheStandardLibrary) {
  ASSERT_TRUE(fs::is_directory(kInclude / "kiln")) << kInclude;
  std::vector<std::string> violations;
  size_t headers = 0;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(kInclude / "kiln")) {
    if (!entry.is_regular_file()) continue;
    ++headers;
    for (std::string& violation : violations_in(entry.path())) violations.push_back(std::move(violation));
  }
  EXPECT_GE(headers, 20u);
  std::ostringstream report;
  for (const std::string& violation : violations) report << violation << "\n";
  EXPECT_TRUE(violations.empty()) << report.str();
}

// The check itself: an internal header, a third-party header and a missing public one are
// each reported with their file and line.
TEST(PublicHeaders, ReportsTheFileAndLineOfEachOffendingInclude) {
  fs::path dir = fs::temp_directory_path() / ("kiln_public_headers_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path file = dir / "bad.h";
  std::ofstream(file) << "#pragma once\n#include <vector>\n#include \"ir/graph.h\"\n#include <nlohmann/json.hpp>\n"
                         "#include <kiln/tensor.h>\n#include \"kiln/no_such_header.h\"\n";
  std::vector<std::string> found = violations_in(file);
  fs::remove_all(dir);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_NE(found[0].find("bad.h:3: includes \"ir/graph.h\""), std::string::npos) << found[0];
  EXPECT_NE(found[1].find("bad.h:4: includes <nlohmann/json.hpp>"), std::string::npos) << found[1];
  EXPECT_NE(found[2].find("bad.h:6: includes kiln/no_such_header.h"), std::string::npos) << found[2];
}

}  // namespace
