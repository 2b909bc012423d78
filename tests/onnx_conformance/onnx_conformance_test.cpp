// ONNX's backend node tests through Kiln, as a user runs them (the runner: node_test_run.h).
// The cases are split into kNodeTestShards shards, each a test that ctest runs in parallel
// with the others; a shard runs its cases and writes their results into the build tree (it
// fails only when it cannot: no node data, an unreadable allowlist). NodeTestSummary, which
// ctest runs after every shard (a fixture: tests/onnx_conformance/CMakeLists.txt), prints the
// report and gives the verdict: it fails when a case did not run, when a case fails and is
// not in allowlist.txt, and when an allowlisted case passes or is no case at all. It also
// writes every failure in the allowlist's format (build/onnx_conformance/failures.txt), the
// class and detail as the reason, to start an allowlist entry from.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>

#include "runtime/atomic_file.h"
#include "tests/onnx_conformance/conformance_report.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::conformance {
namespace {

constexpr int kNodeTestShards = 8;

fs::path results_folder() { return fs::path(KILN_BINARY_DIR) / "onnx_conformance"; }
fs::path shard_results(int shard) { return results_folder() / ("shard_" + std::to_string(shard) + ".tsv"); }
Allowlist committed_allowlist() {
  return read_allowlist(fs::path(KILN_SOURCE_DIR) / "tests" / "onnx_conformance" / "allowlist.txt");
}

class NodeTestShard : public ::testing::TestWithParam<int> {};

TEST_P(NodeTestShard, RunsItsCases) {
  int shard = GetParam();
  std::optional<fs::path> folder = node_tests_folder();
  ASSERT_TRUE(folder) << missing_node_tests_message();
  fs::create_directories(results_folder());
  fs::remove(shard_results(shard));
  committed_allowlist();  // fails here, early, when it does not parse
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(results_folder() / "compile-cache");  // shared by the shards and runs

  std::vector<std::string> names = node_test_case_names(*folder);
  std::vector<CaseResult> results;
  for (size_t k = size_t(shard); k < names.size(); k += kNodeTestShards) {
    NodeTestCase test_case = read_node_test_case(*folder / names[k]);
    bool in_scope = opset_is_importable(test_case) && unsupported_parts(test_case).empty();
    results.push_back({names[k], test_case.tested_op, in_scope,
                       run_node_test_case(test_case, options, results_folder() / "specialized-models")});
  }
  write_results(shard_results(shard), results);
}

INSTANTIATE_TEST_SUITE_P(NodeTests, NodeTestShard, ::testing::Range(0, kNodeTestShards));

TEST(NodeTestSummary, EveryCaseRanAndOnlyAllowlistedCasesFail) {
  std::optional<fs::path> folder = node_tests_folder();
  ASSERT_TRUE(folder) << missing_node_tests_message();
  std::vector<CaseResult> results;
  for (int shard = 0; shard < kNodeTestShards; ++shard) {
    ASSERT_TRUE(fs::exists(shard_results(shard)))
        << "shard " << shard << " wrote no results (" << shard_results(shard)
        << "): it did not run or did not finish; ctest runs every shard before this summary";
    for (CaseResult& result : read_results(shard_results(shard))) results.push_back(std::move(result));
  }
  std::set<std::string> ran;
  for (const CaseResult& result : results) ran.insert(result.name);
  std::vector<std::string> names = node_test_case_names(*folder);
  EXPECT_EQ(ran, std::set<std::string>(names.begin(), names.end())) << "the shards' results are not of the cases there";

  Allowlist allowlist = committed_allowlist();
  std::cout << conformance_report(results, allowlist);
  std::ostringstream failures;
  for (const CaseResult& result : results) {
    if (result.outcome.status != CaseStatus::failed) continue;
    std::string detail = result.outcome.detail.substr(0, 300);
    std::replace(detail.begin(), detail.end(), '\n', ' ');
    failures << result.name << "  # [" << failure_class_name(result.outcome.failure) << "] " << detail << "\n";
  }
  write_file_atomically((results_folder() / "failures.txt").string(), failures.str());
  for (const std::string& violation : allowlist_violations(results, allowlist, /*whole_run=*/true))
    ADD_FAILURE() << violation;
}

}  // namespace
}  // namespace kiln::conformance
