// The loop-IR op table (codegen/loop_ops.h) is consistent with everything that reads it: rows
// in enumerator order with unique names; every C and CUDA spelling is a function the generated
// code defines (a kop_ op of the shared layer, or a function of both preludes); every row whose
// graph op lowers by the table lowers that graph op to a Pointwise node applying the loop op;
// the evaluator has a scalar function for the kinds of argument lowering gives it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "codegen/c_like/c_ops.h"
#include "codegen/cpp/prelude.h"
#include "codegen/cuda/cuda_texts.h"
#include "codegen/loop_ops.h"
#include "codegen/lowering.h"
#include "ir/op_registry.h"

namespace kiln::codegen {
namespace {

// Whether `text` defines a function named `name` (its name followed by "(" after a type).
bool defines(std::string_view text, std::string_view name) {
  std::string call = std::string(name) + "(";
  for (size_t at = text.find(call); at != std::string_view::npos; at = text.find(call, at + 1)) {
    // A definition: the name follows a return type (a space), and the line ends in "{" or "{ ...".
    if (at == 0 || text[at - 1] != ' ') continue;
    size_t line_end = text.find('\n', at);
    std::string_view line = text.substr(at, line_end - at);
    if (line.find('{') != std::string_view::npos && line.find(';') > line.find('{')) return true;
  }
  return false;
}

TEST(LoopOpTable, RowsAreInEnumeratorOrderWithUniqueNames) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < loop_ops().size(); ++i) {
    const LoopOpInfo& info = loop_ops()[i];
    EXPECT_EQ(size_t(info.op), i + 1) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << "two rows named " << info.name;
    EXPECT_EQ(find_loop_op(info.name), info.op) << info.name;
    EXPECT_TRUE(info.arity == 1 || info.arity == 2) << info.name;
    EXPECT_TRUE(info.infix.empty() || info.arity == 2) << info.name << ": only binary ops print infix";
    EXPECT_TRUE(info.on_float || info.on_int) << info.name << " has no evaluator function";
    EXPECT_FALSE(info.c_spelling.empty()) << info.name;
  }
  EXPECT_FALSE(find_loop_op("no_such_op").has_value());
}

TEST(LoopOpTable, EverySpellingIsAFunctionOfTheGeneratedCode) {
  std::string_view ops = c_ops_text();
  std::string_view cpp = cpp_prelude();
  std::string_view cuda = cuda::cuda_prelude();
  for (const LoopOpInfo& info : loop_ops()) {
    EXPECT_TRUE(defines(ops, info.c_spelling) || defines(cpp, info.c_spelling))
        << info.name << ": generated C++ calls " << info.c_spelling
        << ", which neither the op layer nor the prelude defines";
    std::string_view cuda_spelling = info.cuda_spelling.empty() ? info.c_spelling : info.cuda_spelling;
    EXPECT_TRUE(defines(ops, cuda_spelling) || defines(cuda, cuda_spelling))
        << info.name << ": generated CUDA calls " << cuda_spelling
        << ", which neither the op layer nor the CUDA prelude defines";
  }
}

// The expression tree of every Pointwise node applies `op`.
bool applies(const LoopProgram& program, LoopOp op) {
  bool found = false;
  for (const LoopNode& node : program.nodes) {
    if (node.kind != NodeKind::Pointwise) continue;
    visit(node.body, [&](const ExprNode& e) {
      found = found || ((e.kind == ExprKind::Unary || e.kind == ExprKind::Binary) && e.op == op);
    });
  }
  return found;
}

TEST(LoopOpTable, GraphOpsLowerOntoTheirRows) {
  int checked = 0;
  for (const LoopOpInfo& info : loop_ops()) {
    if (info.lowering == GraphLowering::none) continue;
    ASSERT_NE(ir::OpRegistry::global().find(std::string(info.name)), nullptr)
        << info.name << ": the table lowers a graph op of this name, and the registry has none";
    bool logical = info.lowering == GraphLowering::truth_unary || info.lowering == GraphLowering::truth_binary;
    bool integral = info.name.starts_with("bitwise_");  // integer (and bool) ops
    DType dtype = logical ? DType::boolean : integral ? DType::i32 : DType::f32;
    ir::Graph graph;
    std::vector<ir::Argument> args;
    for (int i = 0; i < info.arity; ++i)
      args.emplace_back(
          graph.create_placeholder("a" + std::to_string(i), ir::TensorMeta::contiguous(dtype, {ir::SymInt(5)})));
    graph.create_output({graph.create_call(std::string(info.name), args)});
    LoopProgram program = lower(graph);
    EXPECT_TRUE(applies(program, info.op)) << info.name << " does not lower to a Pointwise node applying it";
    ++checked;
  }
  EXPECT_GE(checked, 39);
}

}  // namespace
}  // namespace kiln::codegen
