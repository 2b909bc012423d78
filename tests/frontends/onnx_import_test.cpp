// What the ONNX importer makes of a model beyond its numbers: node names and op types in
// each node's SourceInfo, initializers as named parameters, static shape arithmetic folded
// away, dim_param dims as symbols (sanitized, shared, unique) with shape arithmetic on them
// kept symbolic, dim_params that an op needs equal made one symbol, a slice that an op needs at
// a dynamic size cut there, the op table, and .onnx through frontends::load_model.
#include <gmock/gmock.h>

#include <fstream>
#include <set>

#include "frontends/model_loader.h"
#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_symbols.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "tests/frontends/onnx_test_support.h"
#include "tests/support/test_paths.h"

namespace kiln::frontends::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsSupersetOf;

std::multiset<std::string> call_targets(const ir::Graph& graph) {
  std::multiset<std::string> targets;
  for (ir::Node* node : graph.nodes())
    if (node->op() == ir::OpKind::call_function) targets.insert(node->target());
  return targets;
}

ir::Node* only_call(const ir::Graph& graph, const std::string& target) {
  ir::Node* found = nullptr;
  for (ir::Node* node : graph.nodes()) {
    if (node->op() != ir::OpKind::call_function || node->target() != target) continue;
    EXPECT_EQ(found, nullptr) << "more than one " << target;
    found = node;
  }
  EXPECT_NE(found, nullptr) << "no " << target;
  return found;
}

TEST(OnnxImport, EachNodeRecordsTheOnnxNodeAndOpType) {
  ir::Graph graph = import_onnx((kOnnxData / "ops" / "conv_groups_asymmetric_pads" / "model.onnx").string());
  // Asymmetric pads become an explicit pad before the convolution; both come from the Conv.
  for (const char* target : {"pad", "convolution"}) {
    ir::Node* node = only_call(graph, target);
    EXPECT_EQ(node->source.file, "model.onnx");
    EXPECT_EQ(node->source.onnx_node, "conv_groups_asymmetric_pads_node");
    EXPECT_EQ(node->source.onnx_op, "Conv");
  }
  EXPECT_EQ(graph.output_names(), std::vector<std::string>{"y0"});
}

TEST(OnnxImport, InitializersBecomeParametersOfTheirNames) {
  ir::Graph graph = import_onnx((kOnnxData / "models" / "mlp" / "model.onnx").string());
  std::vector<std::string> names;
  for (const auto& [name, tensor] : graph.parameters()) names.push_back(name);
  EXPECT_THAT(names, IsSupersetOf({"fc1.bias", "fc2.bias", "fc3.bias"}));
  ASSERT_NE(graph.parameter("fc1.bias"), nullptr);
  EXPECT_EQ(graph.parameter("fc1.bias")->sizes(), (Sizes{128}));
  // Every initializer is a PARAMETER of the graph signature (none a buffer or a constant).
  EXPECT_TRUE(graph.signature().is_default());
  // torch exports Linear as Gemm(transB=1): Kiln's linear, reading the weight as stored.
  EXPECT_EQ(call_targets(graph), (std::multiset<std::string>{"linear", "linear", "linear", "relu", "relu", "log_softmax"}));
}

TEST(OnnxImport, GraphInputsWithAnInitializerAreParameters) {
  ir::Graph graph = import_onnx((kOnnxData / "ops" / "initializer_as_input" / "model.onnx").string());
  ASSERT_EQ(graph.placeholders().size(), 1u);
  EXPECT_EQ(graph.placeholders()[0]->target(), "x");
  ASSERT_NE(graph.parameter("w"), nullptr);
  EXPECT_EQ(graph.parameter("w")->sizes(), (Sizes{4}));
}

TEST(OnnxImport, StaticShapeArithmeticIsFolded) {
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape, and Constant -> Mul.
  ir::Graph graph = import_onnx((kOnnxData / "ops" / "shape_chain_folded" / "model.onnx").string());
  EXPECT_EQ(call_targets(graph), (std::multiset<std::string>{"reshape", "mul"}));
  EXPECT_TRUE(graph.parameters().empty());
  ir::Node* reshape = only_call(graph, "reshape");
  EXPECT_EQ(reshape->args()[1].int_list(), (std::vector<int64_t>{2, -1}));
  // The scale is a literal of the multiplication, not a parameter.
  EXPECT_TRUE(only_call(graph, "mul")->args()[1].is_float());
}

TEST(OnnxImport, ConstantsAreFoldedAcrossNodes) {
  // The GPT block's position embedding reads positions from a constant Range: folded.
  ir::Graph graph = import_onnx((kOnnxData / "models" / "gpt_block" / "model.onnx").string());
  std::multiset<std::string> targets = call_targets(graph);
  EXPECT_EQ(targets.count("arange"), 0u);
  EXPECT_EQ(targets.count("index_select"), 1u);  // only the token lookup, which reads the input
  EXPECT_EQ(targets.count("softmax"), 1u);
  EXPECT_EQ(targets.count("layer_norm"), 3u);
}

TEST(OnnxImport, DimParamsBecomeSymbols) {
  fs::path folder = kOnnxData / "dynamic" / "mlp_dynamic_batch";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  std::vector<ir::Node*> inputs = graph.placeholders();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0]->value().type_string(), "f32[batch, 64]");
  EXPECT_EQ(graph.outputs()[0]->value().type_string(), "f32[batch, 10]");
  // The recorded run (batch 3) and another size.
  expect_outputs_match(read_numbered(folder, "output"), ir::interpret(graph, case_inputs(graph, folder)), "batch 3");
  Tensor five = Tensor::full({5, 64}, 0.25, DType::f32);
  std::vector<Tensor> outputs = ir::interpret(graph, {{"x", five}});
  EXPECT_EQ(outputs[0].sizes(), (Sizes{5, 10}));
}

TEST(OnnxImport, ShapeArithmeticOnSymbolsStaysSymbolic) {
  fs::path folder = kOnnxData / "dynamic" / "symbolic_reshape";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  // Shape/Gather/Unsqueeze/Concat computed on the symbol: the reshape reads [rows, -1].
  EXPECT_EQ(call_targets(graph), (std::multiset<std::string>{"reshape", "relu"}));
  ir::Node* reshape = only_call(graph, "reshape");
  EXPECT_EQ(reshape->args()[1].to_string(), "[rows, -1]");
  EXPECT_EQ(reshape->value().type_string(), "f32[rows, 20]");
  expect_outputs_match(read_numbered(folder, "output"), ir::interpret(graph, case_inputs(graph, folder)), "rows 3");
}

TEST(OnnxImport, GptBlockWithADynamicBatchRunsAtAnyBatch) {
  // Its attention reshapes to [batch, 12, 4, 8] from Shape/Gather/Concat of the input.
  fs::path folder = kOnnxData / "dynamic" / "gpt_block_dynamic";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  EXPECT_EQ(graph.outputs()[0]->value().type_string(), "f32[batch, 12, 96]");
  std::multiset<std::string> targets = call_targets(graph);
  for (const char* materialized : {"full", "sum", "cat"}) EXPECT_EQ(targets.count(materialized), 0u) << materialized;
  expect_outputs_match(read_numbered(folder, "output"), ir::interpret(graph, case_inputs(graph, folder)), "batch 2");
  // Batch 3: the recorded two sequences, then the first again, give the recorded logits.
  Tensor ids = read_numbered(folder, "input")[0];
  Tensor three = Tensor::empty({3, 12}, DType::i64);
  for (int64_t row = 0; row < 3; ++row)
    for (int64_t column = 0; column < 12; ++column) {
      std::vector<int64_t> from = {row % 2, column}, to = {row, column};
      three.set_int(to, ids.item_int(from));
    }
  Tensor logits = ir::interpret(graph, {{"ids", three}})[0];
  Tensor expected = read_numbered(folder, "output")[0];
  ASSERT_EQ(logits.sizes(), (Sizes{3, 12, 96}));
  EXPECT_EQ(difference_from_reference(expected, logits.slice(0, 0, 2).contiguous()), "");
  EXPECT_EQ(difference_from_reference(expected.slice(0, 0, 1).contiguous(), logits.slice(0, 2, 3).contiguous()), "");
}

// An error's message, or "no error".
template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const kiln::Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(OnnxImport, DimParamsThatAnAddNeedsEqualBecomeOneSymbolAndOneMeetingAFixedSizeBecomesIt) {
  // x [batch_x, 4] + y [batch_y, 4]; z [rows, 4] + a [5, 4] initializer.
  fs::path folder = kOnnxData / "dynamic" / "batch_names_and_a_size";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  std::vector<ir::Node*> inputs = graph.placeholders();
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0]->value().type_string(), inputs[1]->value().type_string());
  EXPECT_TRUE(inputs[0]->value().shape[0].is_symbol()) << inputs[0]->value().type_string();
  EXPECT_EQ(inputs[2]->value().type_string(), "f32[5, 4]");
  expect_outputs_match(read_numbered(folder, "output"), ir::interpret(graph, case_inputs(graph, folder)), "batch 3");
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  expect_outputs_match(read_numbered(folder, "output"), model.run(case_inputs(graph, folder)), "batch 3, cpu");
  // Batches that differ are the caller's error, named, as ONNX Runtime's Add refuses them.
  std::map<std::string, Tensor> unequal = case_inputs(graph, folder);
  unequal.at("y") = Tensor::full({2, 4}, 1.0, DType::f32);
  std::string message = error_of([&] { model.run(unequal); });
  EXPECT_NE(message.find("inputs 'x' and 'y' disagree on"), std::string::npos) << message;
  unequal = case_inputs(graph, folder);
  unequal.at("z") = Tensor::full({4, 4}, 1.0, DType::f32);
  message = error_of([&] { ir::interpret(graph, unequal); });
  EXPECT_NE(message.find("'z'"), std::string::npos) << message;
}

TEST(OnnxImport, ACachesLengthPlusOneMeetsTheValuesLength) {
  // keys = cat(past [past_batch, past, 8], k [k_batch, 1, 8]) along 1; softmax(q keys^T) v,
  // v [v_batch, total, 8]: the batches are one symbol, and past is total - 1.
  fs::path folder = kOnnxData / "dynamic" / "kv_cache_names";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  std::vector<ir::Node*> inputs = graph.placeholders();
  ASSERT_EQ(inputs.size(), 4u);
  std::string batch = inputs[3]->value().shape[0].to_string();
  EXPECT_EQ(inputs[2]->value().type_string(), "f32[" + batch + ", total - 1, 8]");
  EXPECT_EQ(inputs[3]->value().type_string(), "f32[" + batch + ", total, 8]");
  expect_outputs_match(read_numbered(folder, "output"), ir::interpret(graph, case_inputs(graph, folder)), "past 5");
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  expect_outputs_match(read_numbered(folder, "output"), model.run(case_inputs(graph, folder)), "past 5, cpu");
  std::map<std::string, Tensor> longer = case_inputs(graph, folder);
  longer.at("v") = Tensor::full({2, 7, 8}, 0.5, DType::f32);
  std::string message = error_of([&] { model.run(longer); });
  EXPECT_NE(message.find("input 'past': expected f32[" + batch + ", total - 1, 8], got f32[2, 5, 8]"), std::string::npos)
      << message;
}

TEST(OnnxImport, AReshapeThatBakesTheBatchInFixesTheBatch) {
  // x [n, 4, 6] reshaped to [2, 24]: n is 2 (ONNX Runtime too runs it at batch 2 only).
  fs::path folder = kOnnxData / "dynamic" / "baked_batch";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  EXPECT_EQ(graph.placeholders()[0]->value().type_string(), "f32[2, 4, 6]");
  expect_outputs_match(read_numbered(folder, "output"), ir::interpret(graph, case_inputs(graph, folder)), "batch 2");
  std::string message = error_of([&] { ir::interpret(graph, {{"x", Tensor::full({3, 4, 6}, 1.0, DType::f32)}}); });
  EXPECT_NE(message.find("'x'"), std::string::npos) << message;
}

TEST(OnnxImport, AMaskBufferSlicedAtADynamicSizeTakesThatSize) {
  // where(mask[:seq, :seq], scores [batch, seq, seq], -inf) with mask a buffer of 8 x 8 (a GPT's
  // causal mask): the slice has min(seq, 8) rows, which the Where needs to be seq. The import cuts
  // it at seq, and seq's range is [0, 8]: ONNX Runtime's values at seq 5, and an error naming the
  // input past the buffer (seq 9), where PyTorch's broadcast fails too.
  fs::path folder = kOnnxData / "dynamic" / "sliced_mask";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  ASSERT_EQ(graph.placeholders().size(), 1u);
  EXPECT_EQ(graph.placeholders()[0]->value().type_string(), "f32[batch, seq, seq]");
  EXPECT_EQ(graph.signature().symbol_ranges().at("seq").to_string(), "[0, 8]");
  expect_outputs_match(read_numbered(folder, "output"), ir::interpret(graph, case_inputs(graph, folder)), "seq 5");
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  expect_outputs_match(read_numbered(folder, "output"), model.run(case_inputs(graph, folder)), "seq 5, cpu");
  const Tensor longer = Tensor::full({1, 9, 9}, 0.5, DType::f32);
  const std::string past = "input 'scores': dim 1 is 9, outside the range [0, 8] of seq";
  std::string message = error_of([&] { model.run({{"scores", longer}}); });
  EXPECT_NE(message.find(past), std::string::npos) << message;
  message = error_of([&] { ir::interpret(graph, {{"scores", longer}}); });
  EXPECT_NE(message.find(past), std::string::npos) << message;
}

TEST(OnnxImport, SizesAreMadeEqualByOneSymbolsValueOrStayTheModelsError) {
  // A symbol against 2 * itself, or against 1 + 1 * itself: no value of one symbol helps.
  EXPECT_EQ(ir::equating_substitution(ir::SymInt::symbol("n"), ir::SymInt::symbol("n") * 2), std::nullopt);
  EXPECT_EQ(ir::equating_substitution(ir::SymInt::symbol("n") + 1, ir::SymInt::symbol("n")), std::nullopt);
  EXPECT_EQ(ir::equating_substitution(ir::SymInt::symbol("n"), ir::SymInt(1)), std::nullopt);  // a size-1 dim broadcasts
  EXPECT_EQ(ir::equating_substitution(ir::SymInt::symbol("a") * ir::SymInt::symbol("b"), ir::SymInt(6)), std::nullopt);
  auto solved = ir::equating_substitution(ir::SymInt::symbol("past") + 1, ir::SymInt::symbol("total"));
  ASSERT_TRUE(solved.has_value());
  EXPECT_EQ(solved->first, "past");
  EXPECT_EQ(solved->second.to_string(), "total - 1");
  solved = ir::equating_substitution(ir::SymInt::symbol("rows"), ir::SymInt(5));
  ASSERT_TRUE(solved.has_value());
  EXPECT_EQ(solved->first + " = " + solved->second.to_string(), "rows = 5");
  // A reshape whose target bakes a size in (an exporter's trace): 64*n*s elements against
  // [12, 4*n, 16]: s is 12 whatever n is (n = 0, the other solution, is no size).
  ir::SymInt n = ir::SymInt::symbol("n"), s = ir::SymInt::symbol("s");
  solved = ir::equating_substitution(n * s * 64, n * 768);
  ASSERT_TRUE(solved.has_value());
  EXPECT_EQ(solved->first + " = " + solved->second.to_string(), "s = 12");
  // A product against a product of others: no one symbol decides it.
  EXPECT_EQ(ir::equating_substitution(n * s, ir::SymInt::symbol("u") * 12), std::nullopt);
  EXPECT_EQ(ir::equating_substitution(n * 3, ir::SymInt(8)), std::nullopt);  // 8 / 3 is no size
}

TEST(OnnxImport, ShapeArithmeticOnSymbolsRunsOnTheCpuBackend) {
  fs::path folder = kOnnxData / "dynamic" / "symbolic_reshape";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  expect_outputs_match(read_numbered(folder, "output"), model.run(case_inputs(graph, folder)), "rows 3");
  Tensor seven = Tensor::full({7, 4, 5}, -0.5, DType::f32);
  EXPECT_EQ(model.run({{"x", seven}})[0].sizes(), (Sizes{7, 20}));
}

// The C++ code generator declares each symbol as a local variable of the generated code under
// its own name, so a symbol named like one of its locals ("batch", which batched GEMMs use)
// does not compile. Enable when codegen keeps symbol names apart from its own.
TEST(OnnxImport, DynamicBatchNamedBatchRunsOnTheCpuBackend) {
  fs::path folder = kOnnxData / "dynamic" / "mlp_dynamic_batch";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  expect_outputs_match(read_numbered(folder, "output"), model.run(case_inputs(graph, folder)), "batch 3");
}

TEST(OnnxSymbols, DimParamsAreSanitized) {
  EXPECT_EQ(sanitize_symbol_name("batch"), "batch");
  EXPECT_EQ(sanitize_symbol_name("batch size"), "batch_size");
  EXPECT_EQ(sanitize_symbol_name("seq-len.0"), "seq_len_0");
  EXPECT_EQ(sanitize_symbol_name("2d"), "d2d");
  EXPECT_EQ(sanitize_symbol_name(""), "dim");
  // Kiln's reserved names: the loop variables of generated code and max/min.
  EXPECT_EQ(sanitize_symbol_name("x0"), "x0_");
  EXPECT_EQ(sanitize_symbol_name("r12"), "r12_");
  EXPECT_EQ(sanitize_symbol_name("max"), "max_");
  EXPECT_EQ(sanitize_symbol_name("min"), "min_");
  EXPECT_EQ(sanitize_symbol_name("x"), "x");
  EXPECT_EQ(sanitize_symbol_name("x0y"), "x0y");
}

TEST(OnnxSymbols, OneDimParamIsOneSymbolAndDistinctParamsStayDistinct) {
  OnnxSymbols symbols;
  EXPECT_EQ(symbols.for_dim_param("a-b").to_string(), "a_b");
  EXPECT_EQ(symbols.for_dim_param("a_b").to_string(), "a_b_2");
  EXPECT_EQ(symbols.for_dim_param("a-b").to_string(), "a_b");
  EXPECT_EQ(symbols.for_unnamed_dim("x", 0).to_string(), "x_dim0");
  EXPECT_EQ(symbols.for_unnamed_dim("x", 0).to_string(), "x_dim0_2");
}

TEST(OnnxImport, TheOpTableCoversTheRequiredOps) {
  std::vector<std::string> ops = supported_onnx_ops();
  std::vector<std::string> required = {
      "Abs", "Add", "And", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast", "CastLike", "Ceil", "Clip",
      "Concat", "Constant", "ConstantOfShape", "Conv", "ConvTranspose", "Cos", "CumSum", "Div", "Dropout", "Elu", "Equal",
      "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "Gelu", "Gemm", "GlobalAveragePool",
      "GlobalMaxPool", "Greater", "GreaterOrEqual", "GroupNormalization", "HardSigmoid", "HardSwish", "Identity",
      "InstanceNormalization", "IsNaN", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax",
      "MatMul", "Max", "MaxPool", "Mean", "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pad", "Pow", "PRelu", "Range",
      "Reciprocal", "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
      "ReduceSumSquare", "Relu", "Reshape", "Round", "ScatterElements", "Selu", "Shape", "Sigmoid", "Sign", "Sin", "Size",
      "Slice", "Softmax", "Softplus", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "Tile", "Transpose", "Trilu",
      "Unsqueeze", "Where", "Xor"};
  EXPECT_THAT(ops, IsSupersetOf(required));
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
}

TEST(OnnxImport, EverySupportedOpIsUsedByATestCase) {
  // covered_ops.txt lists the op types of every committed case (ops/, models/, dynamic/).
  std::ifstream file(kOnnxData / "covered_ops.txt");
  std::set<std::string> covered;
  for (std::string op; std::getline(file, op);) covered.insert(op);
  ASSERT_FALSE(covered.empty());
  std::vector<std::string> missing;
  for (const std::string& op : supported_onnx_ops())
    if (!covered.count(op)) missing.push_back(op);
  EXPECT_THAT(missing, ElementsAre()) << "supported ops without a test case";
}

TEST(OnnxImport, OutputsKeepTheirOnnxNames) {
  // Identity's output is its input: a copy carries the output's name. A computed value is
  // renamed after the output it is.
  ir::Graph identity = import_onnx((kOnnxData / "ops" / "identity" / "model.onnx").string());
  EXPECT_EQ(identity.output_names(), std::vector<std::string>{"y0"});
  EXPECT_EQ(call_targets(identity), (std::multiset<std::string>{"clone"}));
  ir::Graph clip = import_onnx((kOnnxData / "ops" / "clip" / "model.onnx").string());
  EXPECT_EQ(clip.output_names(), std::vector<std::string>{"y0"});
  EXPECT_EQ(only_call(clip, "clamp")->name(), "y0");
}

TEST(OnnxImport, OldOpsetsGoThroughOnnxsVersionConverter) {
  // A Relu model at opset 10, converted to opset 11; each node's source says so.
  ir::Graph graph = import_onnx((kOnnxData / "bad" / "opset_10.onnx").string());
  ir::Node* relu = only_call(graph, "relu");
  EXPECT_EQ(relu->source.file, "opset_10.onnx (opset 10, converted to 11 by ONNX's version converter)");
  Tensor x = Tensor::from_vector({2}, std::vector<double>{-1, 2}, DType::f32);
  Tensor y = ir::interpret(graph, {{"x", x}})[0];
  EXPECT_EQ(y.flat_double(0), 0);
  EXPECT_EQ(y.flat_double(1), 2);
}

TEST(OnnxImport, LoadModelDispatchesOnTheExtension) {
  ir::Graph onnx_graph = load_model((kOnnxData / "ops" / "relu" / "model.onnx").string());
  EXPECT_EQ(call_targets(onnx_graph), (std::multiset<std::string>{"relu"}));
  ir::Graph kiln_graph = load_model((fs::path(KILN_SOURCE_DIR) / "samples" / "models" / "mlp.kiln").string());
  EXPECT_FALSE(call_targets(kiln_graph).empty());
}

}  // namespace
}  // namespace kiln::frontends::testing
