// PyTorch's OpInfo samples, exported with torch.export, through Kiln (the runner:
// pt2_case_run.h). The cases are split into kShards shards that ctest runs in parallel; each
// writes its results into the build tree. Pt2ConformanceSummary, which ctest runs after every
// shard (a fixture: tests/pt2_conformance/CMakeLists.txt), prints the report and gives the
// verdict: it fails when a shard did not run, when a case of a supported program fails and is
// not in allowlist.txt (a failure where PyTorch's own run of the exported program misses eager
// too is reported apart, as diverging), when an allowlisted case passes or is not a case, and when the table
// covers less than 90% of the Core ATen opset.
#include <gtest/gtest.h>

#include <iostream>
#include <map>

#include "frontends/pt2/pt2_importer.h"
#include "tests/pt2_conformance/pt2_report.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::pt2_conformance {
namespace {

constexpr int kShards = 8;

fs::path results_folder() { return fs::path(KILN_BINARY_DIR) / "pt2_conformance"; }
fs::path shard_results(int shard) { return results_folder() / ("shard_" + std::to_string(shard) + ".tsv"); }
Allowlist committed_allowlist() {
  return read_allowlist(fs::path(KILN_SOURCE_DIR) / "tests" / "pt2_conformance" / "allowlist.txt");
}

// The OpInfo data, or a skip (a failure when scripts/test required it).
std::optional<fs::path> opinfo_folder() {
  std::optional<fs::path> folder = pt2_test_data("opinfo");
  if (!folder && pt2_test_data_required()) ADD_FAILURE() << missing_pt2_test_data("opinfo");
  return folder;
}

class Pt2ConformanceShard : public ::testing::TestWithParam<int> {};

TEST_P(Pt2ConformanceShard, RunsItsCases) {
  int shard = GetParam();
  std::optional<fs::path> folder = opinfo_folder();
  if (!folder) GTEST_SKIP() << missing_pt2_test_data("opinfo");
  fs::create_directories(results_folder());
  fs::remove(shard_results(shard));
  committed_allowlist();  // fails here, early, when it does not parse
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(results_folder() / "compile-cache");  // shared by the shards and runs
  OpInfoData data = read_opinfo_data(*folder);
  // Whole OpInfo entries go to shards (their cases compile together), round robin.
  std::map<std::string, std::vector<const OpInfoCase*>> by_op;
  for (const OpInfoCase& test_case : data.cases) by_op[test_case.op].push_back(&test_case);
  std::vector<CaseResult> results;
  size_t k = 0;
  for (const auto& [op, cases] : by_op) {
    if (k++ % kShards != size_t(shard)) continue;
    std::vector<CaseOutcome> outcomes = run_opinfo_cases(cases, options);
    for (size_t i = 0; i < cases.size(); ++i) results.push_back({cases[i]->name, op, cases[i]->targets, outcomes[i]});
  }
  write_results(shard_results(shard), results);
}

INSTANTIATE_TEST_SUITE_P(OpInfo, Pt2ConformanceShard, ::testing::Range(0, kShards));

TEST(Pt2ConformanceSummary, EveryCaseRanAndOnlyAllowlistedCasesFail) {
  std::optional<fs::path> folder = opinfo_folder();
  if (!folder) GTEST_SKIP() << missing_pt2_test_data("opinfo");
  OpInfoData data = read_opinfo_data(*folder);
  std::vector<CaseResult> results;
  for (int shard = 0; shard < kShards; ++shard) {
    ASSERT_TRUE(fs::exists(shard_results(shard)))
        << "shard " << shard << " wrote no results (" << shard_results(shard)
        << "): it did not run or did not finish; ctest runs every shard before this summary";
    for (CaseResult& result : read_results(shard_results(shard))) results.push_back(std::move(result));
  }
  EXPECT_EQ(results.size(), data.cases.size()) << "the shards' results are not of the cases there";
  Allowlist allowlist = committed_allowlist();
  std::vector<std::string> supported = frontends::supported_aten_targets();
  std::cout << conformance_report(results, data.skips, data.core_aten_ops, supported, allowlist);
  for (const std::string& violation : allowlist_violations(results, allowlist)) ADD_FAILURE() << violation;
  EXPECT_GE(core_aten_coverage(data.core_aten_ops, supported), 0.90) << "the ATen table covers less than 90% of Core ATen";
}

}  // namespace
}  // namespace kiln::pt2_conformance
