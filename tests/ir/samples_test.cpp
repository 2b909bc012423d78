// Every bundled sample model: loads, round-trips through the text and JSON forms, passes
// the verifier, and the reference interpreter matches PyTorch's outputs (golden .npy files
// written by scripts/make_sample_goldens.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/interpreter.h"
#include "ir/json_format.h"
#include "ir/model_file.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "kiln/npy.h"
#include "tests/support/test_paths.h"

namespace kiln::ir {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(KILN_SOURCE_DIR) / "samples" / "models";

class Sample : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path model_path() const { return kModels / (GetParam() + ".kiln"); }
  fs::path data_dir() const { return kModels / (GetParam() + "_data"); }
};

TEST_P(Sample, LoadsAndVerifies) {
  Graph graph = load_model(model_path().string());
  EXPECT_NO_THROW(verify(graph));
  EXPECT_FALSE(graph.placeholders().empty());
  EXPECT_FALSE(graph.outputs().empty());
}

TEST_P(Sample, FileIsInCanonicalPrintedForm) {
  std::ifstream file(model_path());
  std::stringstream text;
  text << file.rdbuf();
  Graph graph = load_model(model_path().string());
  EXPECT_EQ(print_graph(graph), text.str());
}

TEST_P(Sample, TextRoundTrip) {
  Graph graph = load_model(model_path().string());
  std::string printed = print_graph(graph);
  ParseOptions options;
  options.file_name = "roundtrip.kiln";
  options.parameters.insert(graph.parameters().begin(), graph.parameters().end());
  Graph reparsed = parse_graph(printed, options);
  EXPECT_EQ(print_graph(reparsed), printed);
}

TEST_P(Sample, JsonRoundTrip) {
  Graph graph = load_model(model_path().string());
  nlohmann::json json = graph_to_json(graph);
  EXPECT_EQ(json.at("version"), 2);
  Graph back = graph_from_json(json, "roundtrip.json", graph.parameters());
  EXPECT_EQ(print_graph(back), print_graph(graph));
  EXPECT_EQ(graph_to_json(back), json);
}

// |actual - expected| <= atol + rtol * |expected|, elementwise, as numpy.allclose.
void expect_allclose(const Tensor& actual, const Tensor& expected, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  double worst = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double a = actual.flat_double(i), e = expected.flat_double(i);
    double error = std::fabs(a - e);
    if (!(error <= atol + rtol * std::fabs(e))) ++bad;
    worst = std::max(worst, error);
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << expected.numel() << " elements differ; max abs error " << worst;
}

TEST_P(Sample, InterpreterMatchesPyTorch) {
  Graph graph = load_model(model_path().string());
  std::map<std::string, Tensor> inputs;
  for (Node* placeholder : graph.placeholders())
    inputs[placeholder->target()] = read_npy((data_dir() / "inputs" / (placeholder->target() + ".npy")).string());
  std::vector<Tensor> outputs = Interpreter().run(graph, inputs);
  std::vector<std::string> names = graph.output_names();
  ASSERT_EQ(outputs.size(), names.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor expected = read_npy((data_dir() / "expected" / (names[i] + ".npy")).string());
    EXPECT_EQ(outputs[i].dtype(), expected.dtype()) << names[i];
    expect_allclose(outputs[i], expected, 1e-4, 1e-5, GetParam() + " output " + names[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Sample, ::testing::Values("mlp", "cnn", "attention", "inplace", "classifier"));

}  // namespace
}  // namespace kiln::ir
