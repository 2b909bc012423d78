// The conformance runner's parts, without ONNX's node data: the allowlist's format, ONNX's
// tolerances, the verdict against the allowlist, results files and the per-op report.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "runtime/error.h"
#include "tests/onnx_conformance/conformance_report.h"
#include "tests/onnx_conformance/onnx_tolerance.h"

namespace kiln::conformance {
namespace {

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ConformanceAllowlist, EntriesNeedAReasonAndAppearOnce) {
  Allowlist allowlist = parse_allowlist("# comment\n\ntest_a  # too slow\n  test_b # why # more\n", "list.txt");
  EXPECT_EQ(allowlist, (Allowlist{{"test_a", "too slow"}, {"test_b", "why # more"}}));
  EXPECT_EQ(error_of([] { parse_allowlist("test_a\n", "list.txt"); }),
            "list.txt:1: case 'test_a' has no reason (write `case_name  # reason`)");
  EXPECT_EQ(error_of([] { parse_allowlist("test_a # x\ntest_a # y\n", "list.txt"); }),
            "list.txt:2: case 'test_a' is listed twice");
  EXPECT_EQ(error_of([] { parse_allowlist("test_a test_b # x\n", "list.txt"); }),
            "list.txt:1: 'test_a test_b' is not one case name (write `case_name  # reason`)");
}

TEST(ConformanceAllowlist, TheCommittedListParses) {
  Allowlist allowlist = read_allowlist(fs::path(KILN_SOURCE_DIR) / "tests" / "onnx_conformance" / "allowlist.txt");
  for (const auto& [name, reason] : allowlist) EXPECT_EQ(name.rfind("test_", 0), 0u) << name;
}

Tensor floats(std::vector<float> values) {
  Tensor tensor = Tensor::empty({int64_t(values.size())}, DType::f32);
  for (size_t i = 0; i < values.size(); ++i) tensor.data<float>()[i] = values[i];
  return tensor;
}

TEST(OnnxTolerance, RelativeAndAbsoluteToleranceAsNumpyAllclose) {
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(difference_at_onnx_tolerance(floats({1000, 0, nan, inf}), floats({1000.99f, 5e-8f, nan, inf})), "");
  EXPECT_NE(difference_at_onnx_tolerance(floats({1000}), floats({1001.01f})), "");
  EXPECT_NE(difference_at_onnx_tolerance(floats({0}), floats({2e-7f})), "");
  EXPECT_NE(difference_at_onnx_tolerance(floats({nan}), floats({0})), "");
  EXPECT_NE(difference_at_onnx_tolerance(floats({inf}), floats({-inf})), "");
  EXPECT_EQ(difference_at_onnx_tolerance(floats({1, 2}), floats({1})), "sizes [1], expected [2]");
  Tensor ints = Tensor::empty({1}, DType::i64);
  ints.data<int64_t>()[0] = 1;
  EXPECT_EQ(difference_at_onnx_tolerance(floats({1}), ints), "dtype i64, expected f32");
}

std::vector<CaseResult> sample_results() {
  return {{"test_add", "Add", {CaseStatus::passed, "", {"axes", "pads"}}},
          {"test_add_bcast", "Add", {CaseStatus::failed, "cpu: output 0: element 1 is 2, expected 3", {}}},
          {"test_relu", "Relu", {CaseStatus::failed, "interpreter: boom", {}}},
          {"test_lstm", "LSTM", {CaseStatus::unsupported, "LSTM", {}}},
          {"test_old", "Abs", {CaseStatus::not_applicable, "opset 6", {}}}};
}

TEST(ConformanceVerdict, UnlistedFailuresListedPassesAndStaleEntriesFail) {
  Allowlist allowlist = {{"test_add_bcast", "known"}, {"test_add", "stale: passes"}, {"test_lstm", "not run"}};
  std::vector<std::string> shard = allowlist_violations(sample_results(), allowlist, false);
  ASSERT_EQ(shard.size(), 2u);
  EXPECT_EQ(shard[0], "test_add passes now: take it off the allowlist");
  EXPECT_EQ(shard[1], "test_relu (Relu) fails: interpreter: boom");
  std::vector<std::string> whole = allowlist_violations(sample_results(), allowlist, true);
  ASSERT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole[2].rfind("test_lstm is allowlisted but is not a run case", 0), 0u) << whole[2];
}

TEST(ConformanceReport, ResultsRoundTripAndTheReportCountsByOp) {
  fs::path path = fs::path(KILN_BINARY_DIR) / "onnx_conformance_runner_test.tsv";
  std::vector<CaseResult> results = sample_results();
  results[2].outcome.detail = "line one\nline\ttwo";
  write_results(path, results);
  std::vector<CaseResult> read = read_results(path);
  ASSERT_EQ(read.size(), results.size());
  EXPECT_EQ(read[2].outcome.detail, "line one line two");
  EXPECT_EQ(read[3].outcome.status, CaseStatus::unsupported);
  EXPECT_EQ(read[0].outcome.import_time_inputs, (std::vector<std::string>{"axes", "pads"}));

  std::string report = conformance_report(read, {{"test_add_bcast", "known"}});
  EXPECT_NE(report.find("total: 1/3 cases of supported ops pass (33.3%), 1 allowlisted failures, 1 unexpected failures; 1 of them ran with inputs"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("  LSTM (1): test_lstm\n"), std::string::npos) << report;
  EXPECT_NE(report.find("1 cases are at opsets outside 11..21"), std::string::npos) << report;
}

}  // namespace
}  // namespace kiln::conformance
