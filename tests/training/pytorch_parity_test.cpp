// Traced models against PyTorch: an MLP, a CNN with BatchNorm (eval and training, where the
// running statistics are updated through in-place ops on the buffers) and an attention block
// with MultiheadAttention, built with kiln::nn, loaded with PyTorch's weights from
// tests/data/training/ (scripts/make_training_goldens.py), traced, and run through the
// reference interpreter and the CPU backend.
#include <gtest/gtest.h>

#include "frontends/module/trace_graph.h"
#include "compiler/compile_driver.h"
#include "ir/interpreter.h"
#include "kiln/kiln.h"
#include "passes/functionalize.h"
#include "tests/training/training_test_support.h"

namespace kiln::training_test {
namespace {

// Runs `graph` through the interpreter and the CPU backend and compares each output with
// PyTorch's golden `expected_names[i]`.
void expect_matches_pytorch(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                            const std::map<std::string, Tensor>& expected,
                            const std::vector<std::string>& expected_names) {
  std::vector<Tensor> interpreted = ir::interpret(graph, inputs);
  compiler::CompiledModel model = compiler::compile(graph, compile_options());
  std::vector<Tensor> compiled = model.run(inputs);
  ASSERT_GE(interpreted.size(), expected_names.size());
  ASSERT_EQ(compiled.size(), interpreted.size());
  for (size_t i = 0; i < expected_names.size(); ++i) {
    const Tensor& golden = expected.at(expected_names[i]);
    EXPECT_EQ(mismatch(golden, interpreted[i]), "") << "interpreter, " << expected_names[i];
    EXPECT_EQ(mismatch(golden, compiled[i]), "") << "CPU backend, " << expected_names[i];
  }
}

struct MLP : nn::Module {
  nn::Linear fc1{16, 32};
  nn::ReLU act;
  nn::Dropout drop{0.25};
  nn::Linear fc2{32, 8};
  MLP() : Module("MLP") {
    register_module("fc1", fc1);
    register_module("act", act);
    register_module("drop", drop);
    register_module("fc2", fc2);
  }
  Var forward(const Var& x) override { return fc2(drop(act(fc1(x)))); }
};

TEST(PyTorchParity, MLP) {
  MLP model;
  model.load_state_dict(data_path("mlp.weights.safetensors"));
  model.eval();
  std::map<std::string, Tensor> inputs = golden_entries("mlp", "input");
  ir::Graph graph = trace_graph(model, {inputs.at("x")});
  expect_matches_pytorch(graph, inputs, golden_entries("mlp", "expected"), {"y"});
}

TEST(PyTorchParity, MLPWithADynamicBatchDimension) {
  MLP model;
  model.load_state_dict(data_path("mlp.weights.safetensors"));
  model.eval();
  ir::Graph graph = trace_graph(model, std::vector<ir::TensorMeta>{ir::TensorMeta::contiguous(
                                     DType::f32, {ir::SymInt::symbol("batch"), 16})});
  EXPECT_EQ(graph.outputs().at(0)->value().type_string(), "f32[batch, 8]");
  std::map<std::string, Tensor> inputs = golden_entries("mlp", "input");
  expect_matches_pytorch(graph, inputs, golden_entries("mlp", "expected"), {"y"});
  // The same graph on the first two rows.
  std::vector<Tensor> rows = ir::interpret(graph, {{"x", inputs.at("x").slice(0, 0, 2)}});
  EXPECT_EQ(mismatch(golden_entries("mlp", "expected").at("y").slice(0, 0, 2), rows[0]), "");
}

nn::Sequential cnn() {
  return nn::Sequential(nn::Conv2d(3, 8, 3, 1, 1), nn::BatchNorm2d(8), nn::ReLU(),
                        nn::Conv2d(8, 4, 3, 2, 1, 1, 1, false), nn::BatchNorm2d(4), nn::SiLU(), nn::Flatten(),
                        nn::Linear(4 * 4 * 4, 5));
}

TEST(PyTorchParity, CnnWithBatchNormInEvalMode) {
  nn::Sequential model = cnn();
  model.load_state_dict(data_path("cnn.weights.safetensors"));
  model.eval();
  std::map<std::string, Tensor> inputs = golden_entries("cnn", "input");
  ir::Graph graph = trace_graph(model, {inputs.at("x")});
  for (ir::Node* node : graph.nodes()) EXPECT_NE(node->target().back(), '_') << "eval mode mutates nothing";
  expect_matches_pytorch(graph, inputs, golden_entries("cnn", "expected"), {"y_eval"});
}

void expect_running_statistics(const nn::Sequential& model, const std::map<std::string, Tensor>& expected,
                               const std::string& backend) {
  for (const auto& [name, value] : model.named_buffers()) {
    EXPECT_EQ(mismatch(expected.at(name), value, 1e-5, 1e-6), "") << backend << ", " << name;
  }
}

TEST(PyTorchParity, CnnWithBatchNormInTrainingModeUpdatesItsBuffers) {
  std::map<std::string, Tensor> inputs = golden_entries("cnn_train", "input");
  std::map<std::string, Tensor> expected = golden_entries("cnn_train", "expected");

  nn::Sequential model = cnn();
  model.load_state_dict(data_path("cnn.weights.safetensors"));
  ir::Graph graph = trace_graph(model, {inputs.at("x")});
  // Each BatchNorm2d: running_mean.mul_().add_(), running_var.mul_().add_(), num_batches_tracked.add_().
  int in_place = 0;
  for (ir::Node* node : graph.nodes()) in_place += node->target().back() == '_';
  EXPECT_EQ(in_place, 2 * 5);
  // The interpreter runs the graph as traced: the in-place ops write the module's buffers.
  std::vector<Tensor> interpreted = ir::interpret(graph, inputs);
  EXPECT_EQ(mismatch(expected.at("y_train"), interpreted[0]), "");
  expect_running_statistics(model, expected, "interpreter");

  // Functionalized: the mutated buffers become extra outputs, copied back by the caller.
  ir::Graph functional = graph.clone();
  passes::functionalize(functional);
  std::vector<std::string> copied;
  for (const auto& [output_index, spec] : functional.signature().mutations()) {
    EXPECT_EQ(spec.kind, ir::OutputKind::buffer_mutation) << spec.target;
    copied.push_back(spec.target);
  }
  EXPECT_EQ(copied, (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked",
                                              "4.running_mean", "4.running_var", "4.num_batches_tracked"}));

  // The CPU backend (which functionalizes) copies the new statistics back into the buffers.
  nn::Sequential fresh = cnn();
  fresh.load_state_dict(data_path("cnn.weights.safetensors"));
  ir::Graph traced = trace_graph(fresh, {inputs.at("x")});
  compiler::CompiledModel compiled = compiler::compile(traced, compile_options());
  std::vector<Tensor> outputs = compiled.run(inputs);
  EXPECT_EQ(mismatch(expected.at("y_train"), outputs[0]), "");
  expect_running_statistics(fresh, expected, "CPU backend");
}

struct AttentionBlock : nn::Module {
  nn::Embedding embed{20, 16};
  nn::LayerNorm ln1{{16}};
  nn::MultiheadAttention attn{16, 4, 0.0, true, /*batch_first=*/true};
  nn::LayerNorm ln2{{16}};
  nn::Linear fc1{16, 32};
  nn::GELU act;
  nn::Linear fc2{32, 16};
  nn::MultiheadAttentionOptions options;  // masks are taken from the inputs when set
  bool use_mask_inputs = true;
  AttentionBlock() : Module("AttentionBlock") {
    register_module("embed", embed);
    register_module("ln1", ln1);
    register_module("attn", attn);
    register_module("ln2", ln2);
    register_module("fc1", fc1);
    register_module("act", act);
    register_module("fc2", fc2);
  }
  std::vector<Var> forward_all(const std::vector<Var>& in) override {
    Var x = embed(in[0]);
    Var h = ln1(x);
    nn::MultiheadAttentionOptions call = options;
    call.key_padding_mask = in[2];
    if (use_mask_inputs) call.attn_mask = in[1];
    auto [attended, weights] = attn(h, h, h, call);
    x = x + attended;
    std::vector<Var> outputs{x + fc2(act(fc1(ln2(x))))};
    if (weights.defined()) outputs.push_back(weights);
    return outputs;
  }
};

std::vector<Tensor> attention_inputs(const std::map<std::string, Tensor>& inputs) {
  return {inputs.at("tokens"), inputs.at("attn_mask"), inputs.at("key_padding_mask")};
}

TEST(PyTorchParity, AttentionBlockWithMultiheadAttention) {
  AttentionBlock model;
  model.load_state_dict(data_path("attention.weights.safetensors"));
  model.eval();
  std::map<std::string, Tensor> golden = golden_entries("attention", "input");
  TraceOptions names{{"tokens", "attn_mask", "key_padding_mask"}};
  ir::Graph graph = trace_graph(model, attention_inputs(golden), names);
  bool out_proj_seen = false;
  for (ir::Node* node : graph.nodes()) out_proj_seen |= node->source.module_path == "attn.out_proj";
  EXPECT_TRUE(out_proj_seen);
  expect_matches_pytorch(graph, golden, golden_entries("attention", "expected"), {"y", "weights"});
}

TEST(PyTorchParity, AttentionBlockWithIsCausalAndWithoutWeights) {
  AttentionBlock model;
  model.load_state_dict(data_path("attention.weights.safetensors"));
  model.eval();
  model.use_mask_inputs = false;
  model.options.is_causal = true;
  model.options.need_weights = false;
  std::map<std::string, Tensor> golden = golden_entries("attention", "input");
  TraceOptions names{{"tokens", "attn_mask", "key_padding_mask"}};
  ir::Graph graph = trace_graph(model, attention_inputs(golden), names);
  int attention_nodes = 0;
  for (ir::Node* node : graph.nodes()) attention_nodes += node->target() == "scaled_dot_product_attention";
  EXPECT_EQ(attention_nodes, 1);
  std::map<std::string, Tensor> inputs = golden;
  expect_matches_pytorch(graph, inputs, golden_entries("attention", "expected"), {"y"});
}

}  // namespace
}  // namespace kiln::training_test
