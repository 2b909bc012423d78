// Tests of the view lowerings (codegen/lowering_views.cpp) and of how graph values reach
// the program's outputs: views produce no node and fold into the index expressions of the
// loads that read them (checked on the index text), reshape stays affine when strides allow
// and uses floordiv/mod otherwise, and every view chain computes what the interpreter does.
#include <gtest/gtest.h>

#include "codegen/index_analysis.h"
#include "tests/codegen/lowering_test_support.h"

namespace kiln::codegen::testing {
namespace {

// The index text of the single load in a program's only node.
std::string load_index(const LoopProgram& program) {
  std::string text;
  visit(program.nodes.at(0).body, [&](const ExprNode& node) {
    if (node.kind == ExprKind::Load) text = node.index.to_string();
  });
  return text;
}

LoopProgram lowered(const std::string& text) { return lower(parse(text)); }

TEST(LoweringViews, ViewsFoldIntoLoads) {
  struct Case {
    std::vector<std::string> lines;
    std::string index;
  };
  const Case cases[] = {
      {{op_line("v", "transpose", "%x, 0, 1")}, "5*x0 + 20*x1 + x2"},
      {{op_line("v", "permute", "%x, [2, 0, 1]")}, "x0 + 20*x1 + 5*x2"},
      {{op_line("v", "slice", "%x, 2, 1, 5, 2")}, "20*x0 + 5*x1 + 2*x2 + 1"},
      {{op_line("v", "slice", "%x, 1, -2")}, "20*x0 + 5*x1 + x2 + 10"},
      {{op_line("v", "select", "%x, 1, -1")}, "20*x0 + x1 + 15"},
      {{op_line("v", "unsqueeze", "%x, 1")}, "20*x0 + 5*x2 + x3"},
      {{op_line("u", "unsqueeze", "%x, 0"), op_line("v", "squeeze", "%u, [0]")}, "20*x0 + 5*x1 + x2"},
      {{op_line("s", "slice", "%x, 1, 0, 1"), op_line("v", "expand", "%s, [2, 3, 6, 5]")}, "20*x1 + x3"},
      {{op_line("v", "reshape", "%x, [3, 20]")}, "20*x0 + x1"},
      {{op_line("t", "transpose", "%x, 1, 2"), op_line("v", "reshape", "%t, [3, 20]")},
       "20*x0 + x1//4 + 5*(x1 % 4)"},
      {{op_line("v", "as_strided", "%x, [2, 2], [7, 1], 3")}, "7*x0 + x1 + 3"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> lines = c.lines;
    lines.push_back(op_line("y", "clone", "%v"));
    std::string text = graph_text({"x: f32[3, 4, 5]"}, lines, "y");
    LoopProgram program = lowered(text);
    EXPECT_EQ(program.nodes.size(), 1u) << "views add no node";
    EXPECT_EQ(load_index(program), c.index) << c.lines.back();
    EXPECT_EQ(check_lowering(text, {{"x", random_tensor({3, 4, 5}, DType::f32, 3)}}), "") << c.lines.back();
  }
}

TEST(LoweringViews, ReshapeChainsMatchTheInterpreter) {
  const std::vector<std::string> chains[] = {
      {op_line("a", "reshape", "%x, [12, 5]"), op_line("v", "reshape", "%a, [5, 12]")},
      {op_line("a", "permute", "%x, [2, 1, 0]"), op_line("v", "reshape", "%a, [-1]")},
      {op_line("a", "permute", "%x, [1, 0, 2]"), op_line("v", "reshape", "%a, [2, 2, 15]")},
      {op_line("a", "transpose", "%x, 0, 2"), op_line("b", "reshape", "%a, [10, 6]"),
       op_line("c", "transpose", "%b, 0, 1"), op_line("v", "reshape", "%c, [3, 20]")},
      {op_line("a", "slice", "%x, 2, 0, 4"), op_line("v", "reshape", "%a, [3, 16]")},
      {op_line("a", "select", "%x, 0, 1"), op_line("b", "unsqueeze", "%a, 0"), op_line("v", "expand", "%b, [3, 4, 5]")},
      {op_line("a", "slice", "%x, 0, 0, 1"), op_line("b", "expand", "%a, [4, 4, 5]"),
       op_line("v", "reshape", "%b, [16, 5]")},
      {op_line("a", "reshape", "%x, [60]"), op_line("v", "slice", "%a, 0, 7, 50, 3")},
      {op_line("a", "transpose", "%x, 1, 2"), op_line("v", "view", "%a, [3, 5, 2, 2]")},
      {op_line("a", "as_strided", "%x, [3, 3], [1, 3]"), op_line("v", "transpose", "%a, 0, 1")},
      {op_line("a", "transpose", "%x, 0, 1"), op_line("v", "as_strided", "%a, [4, 3], [1, 4], 2")},
  };
  int checked = 0;
  for (const std::vector<std::string>& chain : chains) {
    std::vector<std::string> lines = chain;
    lines.push_back(op_line("y", "mul", "%v, 2.0"));
    std::string text = graph_text({"x: f32[3, 4, 5]"}, lines, "y");
    std::string problem;
    try {
      problem = check_lowering(text, {{"x", random_tensor({3, 4, 5}, DType::f32, 1)}});
    } catch (const Error& error) {
      continue;  // the shape rule rejects this view (view of a non-viewable layout)
    }
    EXPECT_EQ(problem, "") << chain.back();
    ++checked;
  }
  EXPECT_EQ(checked, int(std::size(chains)));
}

TEST(LoweringViews, SymbolicReshapeAndSlices) {
  std::string text = graph_text({"x: f32[s0, 6]"},
                                {op_line("a", "reshape", "%x, [-1, 2, 3]"), op_line("b", "transpose", "%a, 1, 2"),
                                 op_line("c", "reshape", "%b, [-1]"), op_line("d", "slice", "%c, 0, 1"),
                                 op_line("y", "neg", "%d")},
                                "y");
  for (int64_t batch : {1, 3, 17})
    EXPECT_EQ(check_lowering(text, {{"x", random_tensor({batch, 6}, DType::f32, batch)}}), "") << batch;
}

TEST(LoweringViews, AffineReshapeOfASliceKeepsStrides) {
  LoopProgram program = lowered(graph_text({"x: f32[4, 6]"},
                                           {op_line("a", "slice", "%x, 1, 0, 3"), op_line("b", "unsqueeze", "%a, 0"),
                                            op_line("c", "reshape", "%b, [2, 2, 3]"), op_line("y", "clone", "%c")},
                                           "y"));
  std::string index = load_index(program);
  EXPECT_EQ(index, "12*x0 + 6*x1 + x2");
  EXPECT_TRUE(affine_form(ir::parse_sym_int(index), loop_vars(3)));
}

}  // namespace
}  // namespace kiln::codegen::testing
