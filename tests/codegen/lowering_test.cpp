// Tests of the lowering driver (codegen/lowering.cpp): program inputs, parameters (only
// those read), symbols and their sources, how graph outputs become Output buffers (a whole
// intermediate is turned into one, anything else is copied), the Fallback path (forced by
// LoweringOptions and for ops without a native lowering, with tuples, lists and non-affine
// inputs), and the user errors: a reserved symbol name, a symbol no input binds, a mutation.
#include <gtest/gtest.h>

#include "tests/codegen/lowering_test_support.h"

namespace kiln::codegen::testing {
namespace {

std::string error_of(const ir::Graph& graph) {
  try {
    lower(graph);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Lowering, InputsParametersAndSymbols) {
  ir::Graph graph = parse(graph_text({"a: f32[s1, 3]", "b: f32[s0, s1]"},
                                     {"%w : f32[3] = get_attr[target=w.weight]", "%unused : f32[2] = get_attr[target=u]",
                                      op_line("y", "mul", "%a, %w"), op_line("z", "sum", "%b, [0]")},
                                     "y, z"),
                          {{"w.weight", random_tensor({3}, DType::f32, 1)}, {"u", random_tensor({2}, DType::f32, 2)}});
  LoopProgram program = lower(graph);
  ASSERT_EQ(program.inputs.size(), 2u);
  EXPECT_EQ(program.buffer(program.inputs[0]).source, "a");
  EXPECT_EQ(program.buffer(program.inputs[1]).position, 1);
  ASSERT_EQ(program.parameters.size(), 1u);
  const Buffer& weight = program.buffer(program.parameters[0]);
  EXPECT_EQ(weight.kind, BufferKind::Parameter);
  EXPECT_EQ(weight.name, "w");
  EXPECT_EQ(weight.source, "w.weight");
  EXPECT_EQ(program.symbols, (std::vector<std::string>{"s1", "s0"}));
  ASSERT_EQ(program.symbol_sources.size(), 2u);
  EXPECT_EQ(program.symbol_sources[0].symbol, "s1");
  EXPECT_EQ(program.symbol_sources[0].input, 0);
  EXPECT_EQ(program.symbol_sources[0].dim, 0);
  EXPECT_EQ(program.symbol_sources[1].symbol, "s0");
  EXPECT_EQ(program.symbol_sources[1].input, 1);
  EXPECT_EQ(program.symbol_sources[1].dim, 0);
  EXPECT_EQ(check_lowering(graph, {{"a", random_tensor({4, 3}, DType::f32, 3)}, {"b", random_tensor({2, 4}, DType::f32, 4)}}),
            "");
}

TEST(Lowering, OutputsThatAreWholeIntermediatesAreNotCopied) {
  ir::Graph graph = parse(graph_text({"x: f32[2, 3]"},
                                     {op_line("e", "exp", "%x"), op_line("r", "reshape", "%e, [6]"),
                                      op_line("t", "transpose", "%e, 0, 1")},
                                     "r, e, t, x, e"));
  LoopProgram program = lower(graph);
  // exp (whose buffer becomes output 0, r), then copies for e (already an output), t, x and e again.
  EXPECT_EQ(node_kinds(program), (std::map<std::string, int>{{"Pointwise", 5}}));
  ASSERT_EQ(program.outputs.size(), 5u);
  const Buffer& first = program.buffer(program.outputs[0]);
  EXPECT_EQ(first.name, "e");
  EXPECT_EQ(first.source, "r");
  EXPECT_EQ(first.shape, (SymShape{6}));  // the buffer takes the output's shape
  for (size_t i = 1; i < 5; ++i) EXPECT_NE(program.outputs[i], program.outputs[0]) << i;
  for (int id : program.outputs) EXPECT_EQ(program.buffer(id).kind, BufferKind::Output);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(program.buffer(program.outputs[i]).position, int(i));
  const LoopNode& input_copy = program.nodes[size_t(program.writer(program.outputs[3]))];
  EXPECT_EQ(input_copy.origins, (std::vector<std::string>{"x"}));
  const LoopNode& transpose_copy = program.nodes[size_t(program.writer(program.outputs[2]))];
  EXPECT_EQ(transpose_copy.origins, (std::vector<std::string>{"t"}));
  EXPECT_EQ(check_lowering(graph, {{"x", random_tensor({2, 3}, DType::f32, 5)}}), "");
}

TEST(Lowering, ParameterOutputIsCopied) {
  ir::Graph graph = parse(graph_text({"x: f32[2]"}, {"%p : f32[2] = get_attr[target=p]"}, "p, x"),
                          {{"p", random_tensor({2}, DType::f32, 1)}});
  LoopProgram program = lower(graph);
  EXPECT_EQ(program.parameters.size(), 1u);
  EXPECT_EQ(check_lowering(graph, {{"x", random_tensor({2}, DType::f32, 2)}}), "");
}

TEST(Lowering, ForcedFallbacksMatchNativeResults) {
  std::string text = graph_text({"a: f32[3, 4]", "b: f32[4, 5]", "c: f32[3, 2]"},
                                {op_line("m", "matmul", "%a, %b"), op_line("d", "add", "%m, 1.5"),
                                 op_line("k", "cat", "[%d, %c, %c], 1"), op_line("s", "sum", "%k, [1]"),
                                 op_line("vm", "var_mean", "%k, [0]"), op_line("v", "getitem", "%vm, 0"),
                                 op_line("mean", "getitem", "%vm, 1"), op_line("y", "mul", "%v, %mean")},
                                "s, y, mean");
  ir::Graph graph = parse(text);
  Inputs inputs = test_support::random_inputs(graph, 3);
  std::map<std::string, int> native = node_kinds(lower(graph));
  EXPECT_EQ(native["Fallback"], 0);
  LoweringOptions options;
  options.force_fallback_ops = {"matmul", "add", "cat", "sum", "var_mean", "transpose"};
  LoopProgram program = lower(graph, options);
  EXPECT_EQ(node_kinds(program)["Fallback"], 5) << print_loop_program(program);
  // cat reads its list in order, one view per occurrence.
  for (const LoopNode& node : program.nodes)
    if (node.extern_call.graph_node == "k") {
      ASSERT_EQ(node.extern_call.inputs.size(), 3u);
      EXPECT_EQ(program.buffer(node.extern_call.inputs[1].buffer).name, "c");
      EXPECT_EQ(program.buffer(node.extern_call.inputs[2].buffer).name, "c");
    }
  EXPECT_EQ(check_lowering(graph, inputs, options), "");
}

TEST(Lowering, OpsWithoutANativeLoweringFallBack) {
  std::string text = graph_text(
      {"x: f32[3, 4]", "i: i64[3, 2]", "p: i64[2]", "v: f32[2, 4]"},
      {op_line("t", "transpose", "%x, 0, 1"), op_line("r", "reshape", "%t, [3, 4]"),
       op_line("c", "cumsum", "%r, 1"), op_line("s", "scatter", "%x, 1, %i, 2.0", "reduce: \"sum\""),
       op_line("q", "index_put", "%x, [%p], %v", "accumulate: True")},
      "c, s, q");
  ir::Graph graph = parse(text);
  LoopProgram program = lower(graph);
  EXPECT_EQ(node_kinds(program), (std::map<std::string, int>{{"Fallback", 3}, {"Pointwise", 1}}))
      << "the non-affine cumsum input is copied first\n"
      << print_loop_program(program);
  EXPECT_EQ(program.nodes[0].name, "c_input");
  Inputs inputs = {{"x", random_tensor({3, 4}, DType::f32, 1)},
                   {"i", tensor_of({3, 2}, {0, 3, 1, 2, 2, 1}, DType::i64)},
                   {"p", tensor_of({2}, {2, 0}, DType::i64)},
                   {"v", random_tensor({2, 4}, DType::f32, 2)}};
  EXPECT_EQ(check_lowering(graph, inputs), "");
}

TEST(Lowering, ReservedSymbolNamesAreRejected) {
  for (const char* name : {"x0", "r12", "x10"}) {
    ir::Graph graph = parse(graph_text({std::string("a: f32[") + name + ", 3]"}, {op_line("y", "relu", "%a")}, "y"));
    std::string message = error_of(graph);
    EXPECT_NE(message.find(std::string("'") + name + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("loop variable"), std::string::npos) << message;
  }
  // Names that only look similar are fine.
  ir::Graph fine = parse(graph_text({"a: f32[x, 3]", "b: f32[rx1]"}, {op_line("y", "relu", "%a")}, "y, b"));
  EXPECT_EQ(error_of(fine), "(no error)");
}

TEST(Lowering, UnboundSymbolsAreRejected) {
  ir::Graph compound = parse(graph_text({"a: f32[2*s0]"}, {op_line("y", "relu", "%a")}, "y"));
  std::string message = error_of(compound);
  EXPECT_NE(message.find("'s0'"), std::string::npos) << message;
  EXPECT_NE(message.find("not bound by any input"), std::string::npos) << message;
  // Built through the API: the text parser already refuses a symbol no input dim binds.
  ir::Graph created;
  ir::Node* a = created.create_placeholder("a", ir::TensorMeta::contiguous(DType::f32, {3}));
  ir::Node* y = created.create_call("full", {ir::Argument::sym_ints({ir::SymInt::symbol("s3")}), 1.0}, {}, "y");
  created.create_output({y, a});
  message = error_of(created);
  EXPECT_NE(message.find("'s3'"), std::string::npos) << message;
  EXPECT_NE(message.find("%y"), std::string::npos) << message;
}

TEST(Lowering, MutationIsRejected) {
  ir::Graph graph = parse(graph_text({"a: f32[3]"}, {op_line("c", "clone", "%a"), op_line("y", "add_", "%c, 1.0")}, "y"));
  std::string message = error_of(graph);
  EXPECT_NE(message.find("%y"), std::string::npos) << message;
  EXPECT_NE(message.find("functional"), std::string::npos) << message;
}

}  // namespace
}  // namespace kiln::codegen::testing
