// `kiln verify`: every stage of the pipeline against the interpreter. See compiler/verify.h.
#include "compiler/verify.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "codegen/loop_evaluator.h"
#include "compiler/backend_common.h"
#include "compiler/compile_driver.h"
#include "compiler/graph_stages.h"
#include "compiler/subgraphs.h"
#include "compiler/target_registry.h"
#include "compiler/testing_fault_injection.h"
#include "ir/interpreter.h"
#include "kiln/error.h"

namespace kiln::compiler {

namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Compares the user outputs of a stage with the reference's; fills the verdict's problem and
// max error.
void compare_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& expected,
                     const std::vector<std::string>& names, const Tolerance& tolerance, StageVerdict& verdict) {
  if (got.size() != expected.size()) {
    verdict.problem = "it returns " + std::to_string(got.size()) + " outputs, the interpreter " +
                      std::to_string(expected.size());
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    TensorComparison comparison = compare_tensors(got[i], expected[i], tolerance);
    verdict.max_abs_err = std::max(verdict.max_abs_err, comparison.max_abs);
    std::string name = i < names.size() ? names[i] : "output " + std::to_string(i);
    std::string problem = comparison.problem(name, got[i], expected[i], tolerance);
    if (!problem.empty() && verdict.problem.empty()) verdict.problem = problem;
  }
}

// The interpreter's user outputs of `graph` (on copies: in-place ops of a traced graph write
// into inputs and parameters).
std::vector<Tensor> reference_outputs(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  ir::Graph copy = isolated_copy(graph);
  return user_outputs(copy, ir::interpret(copy, copied_inputs(inputs)));
}

// Runs `run` for the stage, compares with `expected`; an error while running is the verdict.
template <typename Run>
StageVerdict judge(const std::string& stage, const std::vector<Tensor>& expected, const std::vector<std::string>& names,
                   const Tolerance& tolerance, Run&& run) {
  StageVerdict verdict;
  verdict.stage = stage;
  Clock::time_point start = Clock::now();
  try {
    std::vector<Tensor> got = run();
    compare_outputs(got, expected, names, tolerance, verdict);
  } catch (const Error& error) {
    verdict.problem = std::string("it fails: ") + error.what();
  }
  verdict.milliseconds = milliseconds_since(start);
  return verdict;
}

// The user outputs of code stage `stage` on the simplified graph of `graph`.
std::vector<Tensor> run_code_stage(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                                   const std::string& stage, const VerifyOptions& options) {
  if (stage == "loops" || stage == "scheduled") {
    CodegenStageOptions stage_options;
    stage_options.freeze = options.freeze;
    CodegenPrograms programs = codegen_programs(graph, stage_options, options.target.empty() ? "cpu" : options.target);
    const codegen::LoopProgram& program = stage == "loops" ? programs.loops : programs.scheduled.program;
    return user_outputs(programs.graph, codegen::evaluate_loop_program(program, programs.graph, copied_inputs(inputs)));
  }
  CompileOptions compile_options;
  compile_options.target = stage;
  compile_options.freeze = options.freeze;
  return compile(graph, compile_options).run(copied_inputs(inputs));
}

// The kernel of the scheduled program that computes graph node `node`, when one does.
std::string kernel_of(const ir::Graph& graph, const std::string& node, const VerifyOptions& options,
                      const std::string& stage) {
  if (stage == "loops") return "";
  CodegenStageOptions stage_options;
  stage_options.freeze = options.freeze;
  codegen::ScheduledProgram scheduled = scheduled_program(graph, stage_options, options.target.empty() ? "cpu" : options.target);
  for (const codegen::Kernel& kernel : scheduled.kernels)
    if (std::find(kernel.origins.begin(), kernel.origins.end(), node) != kernel.origins.end()) return kernel.name;
  return "";
}

// The first node of the simplified graph whose value diverges at code stage `stage`: the
// smallest k whose prefix graph (nodes 0..k, returning every value a later node reads, and
// node k's) diverges. Its inputs are outputs of prefix k-1, which agrees, so node k itself
// computes a wrong value from right inputs. nullopt when even the whole prefix agrees (the
// divergence needs the fusion that returning intermediate values prevents).
std::optional<DivergentNode> find_divergent_node(const ir::Graph& simplified, const std::map<std::string, Tensor>& inputs,
                                                 const std::string& stage, const VerifyOptions& options) {
  std::vector<const ir::Node*> order = computed_nodes(simplified);
  if (order.empty()) return std::nullopt;
  auto diverges = [&](size_t k) { return !check_code_stage(prefix_graph(simplified, order, k), inputs, stage, options).ok(); };
  size_t lo = 0, hi = order.size() - 1;
  if (!diverges(hi)) return std::nullopt;
  while (lo < hi) {  // invariant: prefix hi diverges
    size_t mid = lo + (hi - lo) / 2;
    if (diverges(mid)) hi = mid;
    else lo = mid + 1;
  }
  const ir::Node& node = *order[hi];
  DivergentNode found;
  found.node = "%" + node.name();
  found.op = node.target();
  found.source = node.source.empty() ? "" : node.source.to_string();
  ir::Graph alone = prefix_graph(simplified, order, hi, /*only_last=*/true);
  found.problem = check_code_stage(alone, inputs, stage, options).problem;
  if (found.problem.empty()) found.problem = check_code_stage(prefix_graph(simplified, order, hi), inputs, stage, options).problem;
  found.kernel = kernel_of(alone, node.name(), options, stage);
  return found;
}

}  // namespace

std::vector<std::string> verify_stages(const std::string& target) {
  std::vector<std::string> stages;
  for (const GraphStep& stage : graph_stages())
    if (stage.name != "traced") stages.push_back(stage.name);
  stages.push_back("loops");
  stages.push_back("scheduled");
  if (!target.empty() && target != "none") stages.push_back(target);
  return stages;
}

StageVerdict check_graph_stage(const ir::Graph& graph, const std::map<std::string, Tensor>& all_inputs,
                               const std::string& stage, const VerifyOptions& options) {
  std::map<std::string, Tensor> inputs = inputs_of(graph, all_inputs);
  std::vector<Tensor> expected = reference_outputs(graph, inputs);
  return judge(stage, expected, user_output_names(graph), options.tolerance, [&] {
    ir::Graph staged = isolated_copy(graph);
    GraphRunOptions run_options;
    run_options.freeze = options.freeze;
    run_graph_stages(staged, stage, run_options);
    return user_outputs(staged, ir::interpret(staged, copied_inputs(inputs)));
  });
}

StageVerdict check_code_stage(const ir::Graph& graph, const std::map<std::string, Tensor>& all_inputs,
                              const std::string& stage, const VerifyOptions& options) {
  std::map<std::string, Tensor> inputs = inputs_of(graph, all_inputs);
  std::vector<Tensor> expected = reference_outputs(graph, inputs);
  return judge(stage, expected, user_output_names(graph), options.tolerance,
               [&] { return run_code_stage(graph, inputs, stage, options); });
}

VerifyReport verify_model(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs, const VerifyOptions& options) {
  if (!options.target.empty() && options.target != "none") find_code_target(options.target);  // a known code target
  check_testing_fault();
  VerifyReport report;
  std::vector<Tensor> expected = reference_outputs(graph, inputs);  // the user's errors (bad inputs) throw here
  std::vector<std::string> names = user_output_names(graph);

  // Every graph stage, from one run of the pipeline.
  ir::Graph staged = isolated_copy(graph);
  GraphRunOptions run_options;
  run_options.freeze = options.freeze;
  std::map<std::string, StageVerdict> graph_verdicts;
  std::string pipeline_error;
  try {
    run_graph_stages(staged, graph_stages().back().name, run_options,
                     [&](std::string_view stage, const ir::Graph& at) {
                       if (stage == "traced") return;
                       graph_verdicts[std::string(stage)] = judge(std::string(stage), expected, names, options.tolerance, [&] {
                         ir::Graph copy = isolated_copy(at);
                         return user_outputs(copy, ir::interpret(copy, copied_inputs(inputs)));
                       });
                     });
  } catch (const Error& error) {
    pipeline_error = error.what();
  }
  for (const std::string& stage : verify_stages(options.target)) {
    StageVerdict verdict;
    if (is_graph_stage(stage)) {
      auto found = graph_verdicts.find(stage);
      if (found != graph_verdicts.end()) verdict = found->second;
      else verdict = {stage, "its passes fail: " + pipeline_error, 0, 0};
    } else {
      verdict = judge(stage, expected, names, options.tolerance, [&] { return run_code_stage(graph, inputs, stage, options); });
    }
    report.stages.push_back(verdict);
    if (!verdict.ok()) {
      report.first_divergent = report.stages.size() - 1;
      if (!is_graph_stage(stage)) {
        try {
          report.node = find_divergent_node(simplified_graph(graph, options.freeze), inputs, stage, options);
        } catch (const Error&) {
          // A prefix graph the interpreter cannot run: the stage's verdict stands without a node.
        }
      }
      break;
    }
  }
  return report;
}

}  // namespace kiln::compiler
