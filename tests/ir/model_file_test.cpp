// Tests for ir/model_file: .kiln and .json models save and load with their safetensors
// weights beside them, nothing is overwritten unless asked, and each bad path gives its
// message (missing model, unknown extension, missing weights file, missing tensor).
#include "ir/model_file.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "kiln/safetensors.h"
#include "tests/ir/format_test_graphs.h"

namespace kiln::ir {
namespace {

using format_test::error_of;
using format_test::mlp_graph;
using format_test::TempDir;

TEST(ModelFile, WeightsPathHasTheSameStem) {
  EXPECT_EQ(weights_path_for("dir/model.kiln"), "dir/model.safetensors");
  EXPECT_EQ(weights_path_for("a.b.json"), "a.b.safetensors");
}

TEST(ModelFile, TextAndJsonRoundTripWithWeights) {
  for (const char* name : {"model.kiln", "model.json"}) {
    TempDir dir;
    Graph graph = mlp_graph();
    std::string path = dir.file(name);
    save_model(graph, path);
    ASSERT_TRUE(std::filesystem::exists(dir.file("model.safetensors"))) << name;
    Graph loaded = load_model(path);
    EXPECT_EQ(print_graph(loaded), print_graph(graph)) << name;
    const Tensor* weight = loaded.parameter("fc1.weight");
    ASSERT_NE(weight, nullptr);
    EXPECT_EQ(weight->sizes(), (Sizes{8, 16}));
    // fc1.weight[i] = 0.5 * i - 3 (see mlp_graph): element 37 is 15.5.
    EXPECT_EQ(weight->flat_double(37), 15.5);
  }
}

TEST(ModelFile, TheTextFileIsThePrintedGraph) {
  TempDir dir;
  save_model(mlp_graph(), dir.file("m.kiln"));
  EXPECT_EQ(format_test::read_text(dir.file("m.kiln")), format_test::read_text(format_test::golden_path("mlp.kiln")));
  SafetensorsContents weights = load_safetensors(dir.file("m.safetensors"));
  ASSERT_EQ(weights.tensors.size(), 1u);
  EXPECT_EQ(weights.tensors.at("fc1.weight").dtype(), DType::f32);
}

TEST(ModelFile, GraphsWithoutParametersWriteNoWeights) {
  TempDir dir;
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  graph.create_output({graph.create_call("relu", {x})});
  save_model(graph, dir.file("relu.kiln"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("relu.safetensors")));
  EXPECT_EQ(print_graph(load_model(dir.file("relu.kiln"))), print_graph(graph));
}

TEST(ModelFile, RefusesToOverwriteUnlessAsked) {
  TempDir dir;
  std::string path = dir.file("m.kiln");
  save_model(mlp_graph(), path);
  EXPECT_EQ(error_of([&] { save_model(mlp_graph(), path); }),
            "'" + path + "' already exists; refusing to overwrite it (ask for overwrite explicitly)");

  std::filesystem::remove(path);  // only the weights remain: still refused, and nothing written
  EXPECT_EQ(error_of([&] { save_model(mlp_graph(), path); }),
            "the weights file '" + dir.file("m.safetensors") +
                "' already exists; refusing to overwrite it (ask for overwrite explicitly)");
  EXPECT_FALSE(std::filesystem::exists(path));

  EXPECT_NO_THROW(save_model(mlp_graph(), path, /*overwrite=*/true));
  EXPECT_NO_THROW(save_model(mlp_graph(), path, /*overwrite=*/true));
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST(ModelFileErrors, MissingModel) {
  TempDir dir;
  std::string path = dir.file("absent.kiln");
  EXPECT_EQ(error_of([&] { load_model(path); }), "model file '" + path + "' does not exist");
}

TEST(ModelFileErrors, UnknownExtensionListsTheSupportedOnes) {
  TempDir dir;
  std::string path = dir.write("model.onnx", "not really");
  EXPECT_EQ(error_of([&] { load_model(path); }),
            "'" + path + "' has the extension '.onnx'; supported model files: .kiln (text IR), .json (JSON IR)");
  EXPECT_EQ(error_of([&] { save_model(mlp_graph(), dir.file("model")); }),
            "'" + dir.file("model") + "' has no extension; supported model files: .kiln (text IR), .json (JSON IR)");
}

TEST(ModelFileErrors, MissingWeightsFileIsNamed) {
  TempDir dir;
  std::string path = dir.write("m.kiln", format_test::read_text(format_test::golden_path("mlp.kiln")));
  EXPECT_EQ(error_of([&] { load_model(path); }),
            path + ":3:62: get_attr target 'fc1.weight' needs the weights file '" + dir.file("m.safetensors") +
                "', which does not exist");
}

TEST(ModelFileErrors, TensorMissingFromTheWeightsFile) {
  TempDir dir;
  std::string path = dir.file("m.json");
  save_model(mlp_graph(), path);
  write_safetensors(dir.file("m.safetensors"), {{"other", Tensor::zeros({1}, DType::f32)}});
  EXPECT_EQ(error_of([&] { load_model(path); }),
            path + ": nodes[1].target: get_attr target 'fc1.weight' is not in the weights file '" +
                dir.file("m.safetensors") + "'");
}

TEST(ModelFileErrors, BadJsonAndBadText) {
  TempDir dir;
  std::string json_path = dir.write("bad.json", "{\"format\": ");
  std::string message = error_of([&] { load_model(json_path); });
  EXPECT_EQ(message.rfind(json_path + ": bad JSON: ", 0), 0u) << message;
  std::string text_path = dir.write("bad.kiln", "graph():\n    return (nothing,)\n");
  EXPECT_EQ(error_of([&] { load_model(text_path); }),
            text_path + ":2:13: return value 'nothing' is not a defined node");
}

}  // namespace
}  // namespace kiln::ir
