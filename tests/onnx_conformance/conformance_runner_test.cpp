// The conformance runner's parts, without ONNX's node data: the allowlist's format, ONNX's
// tolerances, the verdict against the allowlist, results files and the per-op report.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "tests/onnx_conformance/conformance_report.h"
#include "tests/onnx_conformance/onnx_tolerance.h"
#include "tests/support/test_paths.h"

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
  return {{"test_add", "Add", true, {CaseStatus::passed, FailureClass::none, true, true, "", {"axes", "pads"}}},
          {"test_add_bcast", "Add", true,
           {CaseStatus::failed, FailureClass::cpu, true, false, "cpu: output 'y': element 1 is 2, expected 3", {}}},
          {"test_relu", "Relu", true, {CaseStatus::failed, FailureClass::interpreter, false, false, "interpreter: boom", {}}},
          {"test_lstm", "LSTM", false, {CaseStatus::failed, FailureClass::unsupported_op, false, false, "LSTM", {}}},
          {"test_old", "Abs", false, {CaseStatus::failed, FailureClass::opset, false, false, "import: opset 6", {}}}};
}

TEST(ConformanceVerdict, UnlistedFailuresListedPassesAndStaleEntriesFail) {
  Allowlist allowlist = {{"test_add_bcast", "known"}, {"test_add", "stale: passes"}, {"test_lstm", "no LSTM"},
                         {"test_old", "opset 6"}, {"test_gone", "no such case"}};
  std::vector<std::string> shard = allowlist_violations(sample_results(), allowlist, false);
  ASSERT_EQ(shard.size(), 2u);
  EXPECT_EQ(shard[0], "test_add passes now: take it off the allowlist");
  EXPECT_EQ(shard[1], "test_relu (Relu) fails [interpreter]: interpreter: boom");
  std::vector<std::string> whole = allowlist_violations(sample_results(), allowlist, true);
  ASSERT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole[2], "test_gone is allowlisted but is not a case: take it off the allowlist");
}

TEST(ConformanceReport, ResultsRoundTripAndTheReportCountsEveryCase) {
  fs::path path = fs::path(KILN_BINARY_DIR) / "onnx_conformance_runner_test.tsv";
  std::vector<CaseResult> results = sample_results();
  results[2].outcome.detail = "line one\nline\ttwo";
  write_results(path, results);
  std::vector<CaseResult> read = read_results(path);
  ASSERT_EQ(read.size(), results.size());
  EXPECT_EQ(read[2].outcome.detail, "line one line two");
  EXPECT_EQ(read[1].outcome.failure, FailureClass::cpu);
  EXPECT_TRUE(read[1].outcome.interpreter_passed);
  EXPECT_FALSE(read[1].outcome.cpu_passed);
  EXPECT_FALSE(read[3].in_scope);
  EXPECT_EQ(read[0].outcome.specialized_inputs, (std::vector<std::string>{"axes", "pads"}));

  std::string report = conformance_report(read, {{"test_add_bcast", "known"}});
  EXPECT_NE(report.find("  interpreter:              2/5 (40.0%)\n"), std::string::npos) << report;
  EXPECT_NE(report.find("  CPU backend:              1/5 (20.0%)\n"), std::string::npos) << report;
  EXPECT_NE(report.find("  both (a case passes):     1/5 (20.0%)\n"), std::string::npos) << report;
  EXPECT_NE(report.find("1 passing cases ran specialized on the values of shape-deciding inputs; 3 unexpected failures, "
                        "1 allowlisted"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("  unsupported_op (1): an op the importer does not convert\n    LSTM (1): test_lstm\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("    test_relu: line one line two\n"), std::string::npos) << report;
  EXPECT_NE(report.find("today's view (cases of ops the importer converts, at opsets 11..21, with Kiln's dtypes): 1/3 pass"),
            std::string::npos)
      << report;
}

TEST(ConformanceReport, AMalformedResultsLineIsNamed) {
  fs::path path = fs::path(KILN_BINARY_DIR) / "onnx_conformance_runner_bad.tsv";
  write_file_atomically(path.string(), "test_a\tAdd\tpassed\tnone\t1\t2\t1\t\t\n");
  EXPECT_EQ(error_of([&] { read_results(path); }), path.string() + ":1: not a conformance result line");
}

}  // namespace
}  // namespace kiln::conformance
