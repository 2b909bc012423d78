// Every committed fuzz input, replayed in the normal test suites: the seed corpora
// (tests/fuzz/corpus/<target>/, minimized with libFuzzer's -merge) and the inputs that once
// broke the contract (tests/fuzz/regressions/<target>/), each through its target and the
// contract of fuzz_target.h. A regression input must still be refused or read: it must not
// crash, leak or raise an internal error.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/fuzz/fuzz_target.h"
#include "tests/support/test_paths.h"

namespace kiln::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs_in(const fs::path& folder) {
  std::vector<fs::path> files;
  if (fs::is_directory(folder))
    for (const fs::directory_entry& entry : fs::directory_iterator(folder))
      if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string contents_of(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class CorpusReplayTest : public ::testing::TestWithParam<FuzzTarget> {};

TEST_P(CorpusReplayTest, EveryCommittedInputKeepsTheContract) {
  const FuzzTarget& target = GetParam();
  fs::path root = fs::path(KILN_SOURCE_DIR) / "tests" / "fuzz";
  std::vector<fs::path> corpus = inputs_in(root / "corpus" / target.name);
  EXPECT_FALSE(corpus.empty()) << "no seed corpus in " << (root / "corpus" / target.name);
  std::vector<fs::path> files = corpus;
  for (const fs::path& file : inputs_in(root / "regressions" / target.name)) files.push_back(file);
  size_t refused = 0;
  for (const fs::path& file : files) {
    FuzzVerdict verdict = check_fuzz_input(target, contents_of(file));
    EXPECT_EQ(verdict.bug, "") << file;
    refused += verdict.user_error;
  }
  // A seed corpus that the target refuses entirely would test the readers' first check only.
  EXPECT_LT(refused, files.size()) << "every input of " << target.name << " is refused";
}

INSTANTIATE_TEST_SUITE_P(Targets, CorpusReplayTest, ::testing::ValuesIn(fuzz_targets()),
                         [](const ::testing::TestParamInfo<FuzzTarget>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace kiln::fuzz
