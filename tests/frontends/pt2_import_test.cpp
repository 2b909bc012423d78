// The .pt2 importer on the committed programs of tests/data/pt2/ (scripts/make_pt2_test_programs.py):
// each imports, runs on the archive's own sample inputs through the interpreter and the CPU
// backend, and matches eager PyTorch; buffer and input mutations (in-place BatchNorm statistics in
// the training IR, buffer-mutation outputs in the Core ATen IR, writes through views) reach the
// tensors they mutate; dynamic dims stay symbols with their ranges; nodes keep the user's source.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "compiler/compile_driver.h"
#include "frontends/model_loader.h"
#include "frontends/pt2/pt2_importer.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "passes/functionalize.h"
#include "runtime/artifact.h"
#include "runtime/cpu/cpu_artifact.h"
#include "tests/frontends/pt2_test_support.h"

namespace kiln::frontends {
namespace {

using testing::clones;
using testing::pt2_difference;
using testing::pt2_expected;
using testing::pt2_expected_count;
using testing::pt2_program;

void expect_outputs(const std::string& name, const std::vector<Tensor>& outputs, const std::string& runner) {
  ASSERT_EQ(outputs.size(), pt2_expected_count(name)) << name << " (" << runner << ")";
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_EQ(pt2_difference(pt2_expected(name, "expected_" + std::to_string(i)), outputs[i]), "")
        << name << " output " << i << " (" << runner << ")";
}

class Pt2Programs : public ::testing::TestWithParam<std::string> {};

TEST_P(Pt2Programs, MatchEagerPyTorchThroughTheInterpreterAndTheCpuBackend) {
  const std::string name = GetParam();
  ir::Graph graph = load_model(pt2_program(name));
  std::map<std::string, Tensor> inputs = read_pt2_sample_inputs(pt2_program(name));
  expect_outputs(name, ir::Interpreter().run(graph, clones(inputs)), "interpreter");
  ir::Graph fresh = import_pt2(pt2_program(name));  // the interpreter updated the first one's buffers
  expect_outputs(name, compiler::compile(fresh).run(clones(inputs), 1), "cpu");
}

INSTANTIATE_TEST_SUITE_P(Committed, Pt2Programs,
                         ::testing::Values("cnn_train", "cnn_train_core", "inplace_views", "dynamic_mlp", "attention", "mlp_loss",
                                           "core_backward"));

// BatchNorm in training mode: running_mean, running_var and num_batches_tracked are updated,
// from the in-place ops of the training IR and from the buffer-mutation outputs of Core ATen.
TEST(Pt2Import, BatchNormTrainingUpdatesItsBuffers) {
  for (const std::string name : {"cnn_train", "cnn_train_core"}) {
    ir::Graph graph = import_pt2(pt2_program(name));
    ir::Interpreter().run(graph, read_pt2_sample_inputs(pt2_program(name)));
    for (const std::string buffer : {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}) {
      std::string file = "after_" + buffer;
      std::replace(file.begin(), file.end(), '.', '_');
      ASSERT_NE(graph.parameter(buffer), nullptr) << name << " " << buffer;
      EXPECT_EQ(pt2_difference(pt2_expected(name, file), *graph.parameter(buffer)), "") << name << " " << buffer;
    }
    // Functionalized, both programs give the buffers' new values as BUFFER_MUTATION outputs.
    ir::Graph functional = import_pt2(pt2_program(name));
    passes::functionalize(functional);
    std::set<std::string> written;
    for (const auto& [position, spec] : functional.signature().mutations()) {
      EXPECT_EQ(spec.kind, ir::OutputKind::buffer_mutation) << name << " output " << position;
      written.insert(spec.target);
    }
    EXPECT_EQ(written, (std::set<std::string>{"bn.num_batches_tracked", "bn.running_mean", "bn.running_var"})) << name;
  }
}

TEST(Pt2Import, WritesThroughViewsReachTheMutatedUserInput) {
  std::map<std::string, Tensor> inputs = read_pt2_sample_inputs(pt2_program("inplace_views"));
  ir::Graph graph = import_pt2(pt2_program("inplace_views"));
  ir::Interpreter().run(graph, inputs);  // mutates inputs["y"], as PyTorch does
  EXPECT_EQ(pt2_difference(pt2_expected("inplace_views", "after_y"), inputs.at("y")), "");
}

TEST(Pt2Import, SignatureGivesPlaceholdersAndParameterReads) {
  ir::Graph graph = import_pt2(pt2_program("cnn_train"));
  std::vector<ir::Node*> placeholders = graph.placeholders();
  ASSERT_EQ(placeholders.size(), 1u);
  EXPECT_EQ(placeholders[0]->target(), "x");
  ir::Node* weight = graph.find("p_conv_weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->op(), ir::OpKind::get_attr);
  EXPECT_EQ(weight->target(), "conv.weight");
  ASSERT_NE(graph.parameter("lifted_tensor_0"), nullptr);  // a lifted constant
  ASSERT_NE(graph.parameter("offset"), nullptr);           // a registered buffer
  const ir::GraphSignature& signature = graph.signature();
  EXPECT_EQ(signature.attribute_kind("conv.weight"), ir::InputKind::parameter);
  EXPECT_EQ(signature.attribute_kind("offset"), ir::InputKind::buffer);
  EXPECT_EQ(signature.attribute_kind("bn.running_var"), ir::InputKind::buffer);
  EXPECT_EQ(signature.attribute_kind("lifted_tensor_0"), ir::InputKind::constant_tensor);
}

TEST(Pt2Import, DynamicDimsBecomeSymbolsAndDerivedSizesFollow) {
  ir::Graph graph = import_pt2(pt2_program("dynamic_mlp"));
  const ir::TensorMeta& x = graph.placeholders().at(0)->value();
  ASSERT_TRUE(x.shape[0].is_symbol()) << x.type_string();
  std::string symbol = x.shape[0].to_string();
  EXPECT_EQ(graph.outputs().at(0)->value().shape.at(0).to_string(), symbol);
  // A batch the export never saw: the interpreter and the CPU backend agree.
  Tensor input = Tensor::empty({7, 4, 8}, DType::f32);
  for (int64_t i = 0; i < input.numel(); ++i) input.data<float>()[i] = float((i * 37) % 11) / 11.0f - 0.5f;
  std::vector<Tensor> expected = ir::Interpreter().run(graph, {{"x", input}});
  std::vector<Tensor> actual = compiler::compile(graph).run({{"x", input}}, 1);
  ASSERT_EQ(expected.size(), actual.size());
  EXPECT_EQ(expected[0].sizes(), (Sizes{7, 3}));
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(pt2_difference(expected[i], actual[i]), "") << i;
  EXPECT_DOUBLE_EQ(expected[1].item(), 7.0);  // sum(full((2 * b,), 0.5))
}

// The message of the kiln::Error `body` throws ("(no error)" when it throws none).
std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// Dim("batch", min=2, max=64): the range is the graph signature's, and the interpreter, the
// compiled model (its host-side check) and the cpu artifact loaded by the runtime alone (its
// generated kiln_bind guard) all refuse a batch outside it.
TEST(Pt2Import, SymbolRangesAreCheckedByTheInterpreterAndTheCompiledGuards) {
  ir::Graph graph = import_pt2(pt2_program("dynamic_mlp"));
  std::string symbol = graph.placeholders().at(0)->value().shape[0].to_string();
  ASSERT_EQ(graph.signature().symbol_ranges().count(symbol), 1u);
  EXPECT_EQ(graph.signature().symbol_ranges().at(symbol), (ir::SymbolRange{2, 64}));
  compiler::CompiledModel model = compiler::compile(graph);
  CpuArtifact artifact = CpuArtifact::load(model.result().artifact_dir);
  std::vector<Tensor> parameters;
  for (const ArtifactParameter& parameter : artifact.parameters()) parameters.push_back(graph.parameters().at(parameter.name));
  for (int64_t batch : {1, 65}) {
    std::map<std::string, Tensor> inputs = {{"x", Tensor::zeros({batch, 4, 8}, DType::f32)}};
    std::string outside = "is " + std::to_string(batch) + ", outside the range [2, 64] of " + symbol;
    EXPECT_EQ(error_of([&] { ir::Interpreter().run(graph, inputs); }),
              "input 'x': dim 0 " + outside + " that the graph is valid for");
    EXPECT_EQ(error_of([&] { model.run(inputs, 1); }), "input 'x': dim 0 " + outside + " that the graph is valid for");
    try {
      artifact.run({inputs.at("x")}, parameters, {}, 1);
      ADD_FAILURE() << "the cpu artifact ran batch " << batch;
    } catch (const GuardError& error) {
      EXPECT_NE(std::string(error.what()).find("guard failed: input 'x' dim 0 " + outside + " that the model was compiled for"),
                std::string::npos)
          << error.what();
    }
  }
  EXPECT_EQ(model.run({{"x", Tensor::zeros({64, 4, 8}, DType::f32)}}, 1).at(0).sizes(), (Sizes{64, 3}));
  EXPECT_EQ(artifact.run({Tensor::zeros({2, 4, 8}, DType::f32)}, parameters, {}, 1).at(0).sizes(), (Sizes{2, 3}));
}

TEST(Pt2Import, NodesKeepTheUsersSourceLineAndModulePath) {
  ir::Graph graph = import_pt2(pt2_program("cnn_train"));
  bool found_conv = false, found_bn = false;
  for (ir::Node* node : graph.nodes()) {
    if (node->op() != ir::OpKind::call_function) continue;
    const ir::SourceInfo& source = node->source;
    EXPECT_FALSE(source.file.empty()) << describe(*node);
    if (node->target() == "convolution") {
      found_conv = true;
      EXPECT_NE(source.file.find("make_pt2_test_programs.py"), std::string::npos) << source.to_string();
      EXPECT_GT(source.line, 0);
      EXPECT_EQ(source.module_path, "conv");
    }
    if (node->target() == "batch_norm") {
      found_bn = true;
      EXPECT_EQ(source.module_path, "bn");
    }
  }
  EXPECT_TRUE(found_conv && found_bn);
}

TEST(Pt2Import, TheTableListsEachTargetOnce) {
  std::vector<std::string> targets = supported_aten_targets();
  EXPECT_TRUE(std::is_sorted(targets.begin(), targets.end()));
  EXPECT_EQ(std::adjacent_find(targets.begin(), targets.end()), targets.end());
  for (const char* target : {"aten.conv2d.default", "aten.add_.Tensor", "aten.batch_norm.default", "aten.view.default",
                             "aten._native_batch_norm_legit_functional.default", "aten.sym_size.int", "_operator.mul"})
    EXPECT_TRUE(std::binary_search(targets.begin(), targets.end(), target)) << target;
}

}  // namespace
}  // namespace kiln::frontends
