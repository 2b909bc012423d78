// The graph IR's stages as the tools run them (`kiln dump --stage`, `kiln opt --passes`): the
// default pipeline's stages and the table of passes (passes/pass_manager.h), run on a model in
// place. The tools reach the passes only through here (and compiler/training_stages.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace kiln::compiler {

struct GraphStep {
  std::string name;
  std::string summary;  // one line
};

// The pipeline's stages in order, "traced" (the graph as loaded) first.
std::vector<GraphStep> graph_stages();
bool is_graph_stage(std::string_view name);
// Every pass `run_graph_passes` knows, in a fixed order.
std::vector<GraphStep> graph_passes();

struct GraphRunOptions {
  bool verbose = false;  // print each pass's time and the IR after it (to stderr)
  bool freeze = false;   // constant folding may fold parameters
  // Run the verifier after each pass; default: in debug builds and when KILN_VERIFY=1.
  std::optional<bool> verify;
};

// Runs the default pipeline on `graph` up to and including `stage`; `each` (optional) sees the
// graph at every stage reached, "traced" included. Throws kiln::Error for an unknown stage.
void run_graph_stages(ir::Graph& graph, std::string_view stage, const GraphRunOptions& options,
                      const std::function<void(std::string_view stage, const ir::Graph& graph)>& each = nullptr);
// Runs the named passes in order. Every name is checked before any pass runs (kiln::Error
// naming the unknown one and listing the known ones).
void run_graph_passes(ir::Graph& graph, const std::vector<std::string>& names, const GraphRunOptions& options);

}  // namespace kiln::compiler
