// Differential tests of the copy and creation lowerings (codegen/lowering_copies.cpp,
// codegen/lowering_creation.cpp) against the interpreter: cat (dims, promotion, empty
// legacy inputs, views as inputs, symbolic sizes), pad in every mode over 1-3 dims with
// values, gather and index_select (on views and non-affine layouts, with the indirect load
// in the body), full, full_like, arange, iota, rand and randn.
#include <gtest/gtest.h>

#include "tests/codegen/lowering_test_support.h"

namespace kiln::codegen::testing {
namespace {

TEST(LoweringCopies, Cat) {
  struct Case {
    std::vector<std::string> inputs;
    std::string args;
  };
  const Case cases[] = {
      {{"a: f32[3, 2]", "b: f32[3, 5]", "c: f32[3, 1]"}, "[%a, %b, %c], 1"},
      {{"a: f32[3, 2]", "b: f32[3, 5]", "c: f32[3, 1]"}, "[%a, %b, %c], -1"},
      {{"a: f32[2, 4]", "b: f32[1, 4]"}, "[%a, %b]"},
      {{"a: f32[2, 4]", "b: i64[1, 4]"}, "[%a, %b]"},
      {{"a: i32[2, 4]", "b: bool[1, 4]", "c: f16[3, 4]"}, "[%a, %b, %c]"},
      {{"a: f32[2, 4]", "b: f32[0]"}, "[%a, %b]"},
      {{"a: f32[2, 4]"}, "[%a, %a, %a], 1"},
      {{"a: f32[s0, 3]", "b: f32[s1, 3]"}, "[%a, %b]"},
  };
  for (const Case& c : cases) {
    std::string text = graph_text(c.inputs, {op_line("y", "cat", c.args)}, "y");
    ir::Graph graph = parse(text);
    Inputs inputs = test_support::random_inputs(graph, 5, {{"s0", 3}, {"s1", 1}});
    EXPECT_EQ(check_lowering(graph, inputs), "") << c.args;
  }
  std::string views = graph_text({"a: f32[4, 3]"},
                                 {op_line("t", "transpose", "%a, 0, 1"), op_line("s", "slice", "%t, 1, 1, 3"),
                                  op_line("y", "cat", "[%s, %t], 1")},
                                 "y");
  EXPECT_EQ(check_lowering(views, {{"a", random_tensor({4, 3}, DType::f32, 1)}}), "");
}

TEST(LoweringCopies, PadInEveryMode) {
  struct Case {
    std::string shape, pads;
  };
  const Case cases[] = {{"[2, 5]", "[2, 3]"},     {"[3, 5]", "[1, 1]"},       {"[2, 3, 5]", "[2, 0, 1, 2]"},
                        {"[2, 3, 4]", "[1, 2, 2, 1]"}, {"[2, 3, 4, 5]", "[1, 1, 2, 2, 1, 0]"}, {"[1, 4]", "[3, 3]"}};
  int checked = 0;
  for (const Case& c : cases)
    for (const char* mode : {"constant", "reflect", "replicate", "circular"}) {
      std::string args = "%x, " + c.pads + ", \"" + mode + "\"";
      std::string text = graph_text({"x: f32" + c.shape}, {op_line("y", "pad", args)}, "y");
      ir::Graph graph;
      try {
        graph = parse(text);
      } catch (const Error&) {
        continue;
      }
      Inputs inputs = test_support::random_inputs(graph, 2);
      std::string problem;
      try {
        problem = check_lowering(graph, inputs);
      } catch (const Error&) {
        continue;  // the interpreter rejects the padding (reflect wider than the input)
      }
      EXPECT_EQ(problem, "") << c.shape << " " << c.pads << " " << mode;
      ++checked;
    }
  EXPECT_EQ(checked, 24);
  for (const char* args : {"%x, [1, 2], \"constant\", 2.5", "%x, [-1, 2], \"constant\", -1.0", "%x, [2, 2, 1, 1]"}) {
    std::string text = graph_text({"x: i64[3, 5]"}, {op_line("y", "pad", args)}, "y");
    EXPECT_EQ(check_lowering(text, {{"x", random_tensor({3, 5}, DType::i64, 3)}}), "") << args;
  }
}

TEST(LoweringCopies, PadOfASymbolicDim) {
  for (const char* mode : {"constant", "reflect", "replicate", "circular"}) {
    std::string text =
        graph_text({"x: f32[2, s0]"}, {op_line("y", "pad", std::string("%x, [1, 1], \"") + mode + "\"")}, "y");
    for (int64_t size : {2, 3, 17})
      EXPECT_EQ(check_lowering(text, {{"x", random_tensor({2, size}, DType::f32, 7)}}), "") << mode << " " << size;
  }
}

TEST(LoweringCopies, GatherAndIndexSelect) {
  Tensor gather_index = random_tensor({3, 2}, DType::i64, 4, 0, 3);  // into a dim of size 4
  struct Case {
    std::vector<std::string> lines;
    Inputs extra;
  };
  const std::vector<std::string> sources[] = {
      {op_line("s", "clone", "%x")},
      {op_line("s", "transpose", "%x, 0, 1"), op_line("s2", "transpose", "%s, 0, 1")},
      {op_line("t", "transpose", "%x, 0, 1"), op_line("r", "reshape", "%t, [4, 3]"), op_line("s", "transpose", "%r, 0, 1")},
  };
  for (const std::vector<std::string>& source : sources) {
    std::vector<std::string> lines = source;
    std::string self = source.back().substr(1, source.back().find(' ') - 1);
    lines.push_back(op_line("g", "gather", "%" + self + ", 1, %i"));
    lines.push_back(op_line("h", "index_select", "%" + self + ", 1, %j"));
    lines.push_back(op_line("k", "index_select", "%" + self + ", 0, %z"));
    std::string text = graph_text({"x: f32[3, 4]", "i: i64[3, 2]", "j: i32[5]", "z: i64[]"}, lines, "g, h, k");
    Inputs inputs = {{"x", random_tensor({3, 4}, DType::f32, 1)},
                     {"i", gather_index},
                     {"j", random_tensor({5}, DType::i32, 2, 0, 3)},
                     {"z", Tensor::scalar(2, DType::i64)}};
    EXPECT_EQ(check_lowering(text, inputs), "") << source.back();
  }
}

TEST(LoweringCopies, GatherLoadsIndirectly) {
  ir::Graph graph = parse(graph_text({"x: f32[3, 4]", "i: i64[3, 2]"}, {op_line("g", "gather", "%x, 1, %i")}, "g"));
  LoopProgram program = lower(graph);
  ASSERT_EQ(program.nodes.size(), 1u);
  EXPECT_EQ(print_expr(program, program.nodes[0].body), "x[4*x0 + indirect(i[2*x0 + x1], size=4)]");
}

TEST(LoweringCreation, FullArangeIotaAndRandom) {
  const std::string lines[] = {
      op_line("y", "full", "[3, 4], 1.5"),
      op_line("y", "full", "[2, 3], 7", "dtype: i32"),
      op_line("y", "full", "[2], True"),
      op_line("y", "full", "[5], 0.1", "dtype: f16"),
      op_line("y", "full_like", "%x, 2"),
      op_line("y", "full_like", "%x, 2.5", "dtype: i64"),
      op_line("y", "arange", "0, 10"),
      op_line("y", "arange", "1, 10, 3"),
      op_line("y", "arange", "10, -7, -3"),
      op_line("y", "arange", "0.1, 2.0, 0.3"),
      op_line("y", "arange", "0, 5", "dtype: f32"),
      op_line("y", "arange", "-1.5, 3, 0.5", "dtype: i32"),
      op_line("y", "iota", "6", "start: 3, step: -2"),
      op_line("y", "iota", "5", "start: 250, step: 3, dtype: u8"),
      op_line("y", "rand", "[3, 17]", "seed: 42, offset: 3"),
      op_line("y", "randn", "[17]", "seed: 7"),
      op_line("y", "rand", "[4, 5]", "seed: 1, dtype: f64"),
      op_line("y", "randn", "[2, 3, 4]", "seed: 9, offset: 100, dtype: f16"),
  };
  for (const std::string& line : lines) {
    std::string text = graph_text({"x: f32[3, 4]"}, {line}, "y");
    EXPECT_EQ(check_lowering(text, {{"x", random_tensor({3, 4}, DType::f32, 1)}}), "") << line;
  }
}

TEST(LoweringCreation, FullLikeReadsNoParameter) {
  ir::Graph graph = parse(graph_text({"x: f32[3]"}, {"%w : f32[3, 4] = get_attr[target=w]", op_line("y", "full_like", "%w, 2.0"),
                                                       op_line("z", "add", "%x, 1")},
                                     "y, z"),
                          {{"w", random_tensor({3, 4}, DType::f32, 1)}});
  LoopProgram program = lower(graph);
  EXPECT_TRUE(program.parameters.empty()) << print_loop_program(program);
  EXPECT_EQ(check_lowering(graph, {{"x", random_tensor({3}, DType::f32, 2)}}), "");
}

TEST(LoweringCreation, RandomWithSymbolicSize) {
  std::string text = graph_text({"x: f32[s0, 3]"}, {op_line("r", "rand", "[s0, 3]", "seed: 5"), op_line("y", "add", "%x, %r")}, "y");
  for (int64_t batch : {1, 3, 17})
    EXPECT_EQ(check_lowering(text, {{"x", random_tensor({batch, 3}, DType::f32, 1)}}), "") << batch;
}

}  // namespace
}  // namespace kiln::codegen::testing
