// The graph IR's stages for the tools. See compiler/graph_stages.h.
#include "compiler/graph_stages.h"

#include "passes/pass_manager.h"

namespace kiln::compiler {

namespace {

passes::RunOptions run_options(const GraphRunOptions& options) {
  passes::RunOptions run;
  run.verbose = options.verbose;
  run.verify_each = options.verify.value_or(passes::RunOptions::default_verify_each());
  run.pass_options.freeze = options.freeze;
  return run;
}

}  // namespace

std::vector<GraphStep> graph_stages() {
  std::vector<GraphStep> stages;
  for (const passes::Stage& stage : passes::pipeline_stages()) stages.push_back({std::string(stage.name), std::string(stage.summary)});
  return stages;
}

bool is_graph_stage(std::string_view name) {
  for (const passes::Stage& stage : passes::pipeline_stages())
    if (stage.name == name) return true;
  return false;
}

std::vector<GraphStep> graph_passes() {
  std::vector<GraphStep> list;
  for (const passes::PassInfo& pass : passes::all_passes()) list.push_back({std::string(pass.name), std::string(pass.summary)});
  return list;
}

void run_graph_stages(ir::Graph& graph, std::string_view stage, const GraphRunOptions& options,
                      const std::function<void(std::string_view stage, const ir::Graph& graph)>& each) {
  passes::RunOptions run = run_options(options);
  if (!each) {
    passes::run_pipeline(graph, stage, run);
    return;
  }
  passes::run_pipeline(graph, stage, run, [&](const passes::Stage& reached, const ir::Graph& at) { each(reached.name, at); });
}

void run_graph_passes(ir::Graph& graph, const std::vector<std::string>& names, const GraphRunOptions& options) {
  std::vector<std::string_view> list(names.begin(), names.end());
  for (std::string_view name : list) passes::find_pass(name);  // unknown names fail before anything runs
  passes::run_passes(graph, list, run_options(options));
}

}  // namespace kiln::compiler
