// `kiln verify`: where in the pipeline a model's result goes wrong. The model runs on the same
// inputs through every stage, each against the interpreter on the graph as loaded ("traced"):
//
//   graph stages  functional, decomposed, simplified   the interpreter on the stage's graph
//   loops         the loop IR as lowered               the loop evaluator (codegen/loop_evaluator.h)
//   scheduled     the loop IR after inlining, fusion   the loop evaluator
//   TARGET        the compiled code (cpu, cuda)        the compile driver's CompiledModel
//
// A stage diverges when an output is past the tolerance (compiler/tensor_comparison.h) or when
// the stage fails to run. When the first divergent stage comes after "simplified", the first
// node of the simplified graph whose value diverges is found by bisection over truncated graphs
// (each returns one node's value) and named with the kernel that computes it. With a repro
// folder, compiler/minify.h shrinks the graph to the smallest one that still diverges.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/tensor_comparison.h"
#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::compiler {

struct VerifyOptions {
  std::string target = "cpu";  // the code target of the last stage ("" or "none": no compiled stage)
  Tolerance tolerance;
  bool freeze = false;  // constant-fold parameters, as `kiln run --freeze`
};

struct StageVerdict {
  std::string stage;
  std::string problem;  // "" when every output agrees with the interpreter
  double max_abs_err = 0;
  double milliseconds = 0;
  bool ok() const { return problem.empty(); }
};

// Where in the simplified graph a code stage goes wrong.
struct DivergentNode {
  std::string node;         // the first node whose value diverges ("%relu_1")
  std::string op;           // its op
  std::string source;       // its source info ("model.py:12 fc1"), when known
  std::string kernel;       // the kernel that computes it at the divergent stage, when it has one
  std::string problem;      // the comparison of its value
};

struct VerifyReport {
  std::vector<StageVerdict> stages;  // in pipeline order, up to the first that diverges
  std::optional<size_t> first_divergent;
  std::optional<DivergentNode> node;
  bool ok() const { return !first_divergent.has_value(); }
};

// The stages `verify_model` checks, in order, for `target`.
std::vector<std::string> verify_stages(const std::string& target);

VerifyReport verify_model(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                          const VerifyOptions& options);

// Runs `graph` through the code stage `stage` ("loops", "scheduled" or a target) and compares
// every user output with the interpreter's; the stage's verdict. Used by the minifier as its
// test of a candidate graph.
StageVerdict check_code_stage(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                              const std::string& stage, const VerifyOptions& options);
// The same for the graph stage `stage` (the pipeline up to it, then the interpreter).
StageVerdict check_graph_stage(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                               const std::string& stage, const VerifyOptions& options);

}  // namespace kiln::compiler
