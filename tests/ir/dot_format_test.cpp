// Tests for ir/dot_format: one box per node with its name, target and type, one edge per
// input, distinct styles per node kind, escaped labels; rendered with `dot` when installed.
#include "ir/dot_format.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/ir/format_test_graphs.h"

namespace kiln::ir {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t found = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++found;
  return found;
}

TEST(DotFormat, OneBoxPerNodeAndOneEdgePerInput) {
  std::string dot = graph_to_dot(format_test::mlp_graph());
  EXPECT_EQ(dot.rfind("digraph \"kiln\" {\n", 0), 0u);
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  EXPECT_EQ(count(dot, "[label=\"%"), 5u);  // x, fc1_weight, t, matmul, sum
  EXPECT_EQ(count(dot, "[label=\"output\""), 1u);
  // Edges: weight->t, x->matmul, t->matmul, matmul->sum, matmul->output, sum->output.
  EXPECT_EQ(count(dot, " -> "), 6u);
  EXPECT_NE(dot.find("n0 [label=\"%x\\nplaceholder x\\nf32[s0, 16]\", shape=box, style=\"rounded,filled\""),
            std::string::npos)
      << dot;
  EXPECT_NE(dot.find("n3 [label=\"%matmul\\nmatmul\\nf32[s0, 8]\", shape=box];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n1 -> n2;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 -> n3 [label=\"0\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n2 -> n3 [label=\"1\"];"), std::string::npos) << dot;
}

TEST(DotFormat, KindsAreStyledDifferently) {
  std::string dot = graph_to_dot(format_test::mlp_graph());
  EXPECT_EQ(count(dot, "#cfe2ff"), 1u);  // placeholder
  EXPECT_EQ(count(dot, "#e9ecef"), 1u);  // get_attr
  EXPECT_EQ(count(dot, "#d1e7dd"), 1u);  // output
}

TEST(DotFormat, LabelsAreEscaped) {
  std::string dot = graph_to_dot(format_test::all_arguments_graph(), {.graph_name = "a \"b\""});
  EXPECT_EQ(dot.rfind("digraph \"a \\\"b\\\"\" {", 0), 0u) << dot;
  EXPECT_NE(dot.find("get_attr layers[0] \\\"w\\\"\\nf32[4]"), std::string::npos) << dot;
}

TEST(DotFormat, RendersWithGraphvizWhenInstalled) {
  if (std::system("command -v dot > /dev/null 2>&1") != 0) GTEST_SKIP() << "graphviz is not installed";
  format_test::TempDir dir;
  std::string path = dir.write("g.dot", graph_to_dot(format_test::all_arguments_graph()));
  std::string command = "dot -Tsvg '" + path + "' -o '" + dir.file("g.svg") + "' 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0);
  EXPECT_TRUE(std::filesystem::exists(dir.file("g.svg")));
}

}  // namespace
}  // namespace kiln::ir
