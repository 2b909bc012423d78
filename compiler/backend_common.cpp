// What every code target shares. See compiler/backend_common.h.
#include "compiler/backend_common.h"

#include <sched.h>

#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "passes/pass_manager.h"
#include "kiln/error.h"

namespace kiln::compiler {

int64_t available_cpus() {
  cpu_set_t cpus;
  return sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? int64_t(CPU_COUNT(&cpus)) : 1;
}

ir::Graph simplified_graph(const ir::Graph& graph, bool freeze) {
  ir::Graph simplified = graph.clone();
  passes::RunOptions run_options;
  run_options.pass_options.freeze = freeze;
  passes::run_pipeline(simplified, "simplified", run_options);
  return simplified;
}

std::vector<Tensor> run_fallback_node(const ir::Graph& graph, const std::string& node_name,
                                      const std::vector<Tensor>& arguments,
                                      const std::map<std::string, int64_t>& bindings) {
  const ir::Node* node = graph.find(node_name);
  KILN_CHECK(node != nullptr, "fallback node ", node_name, " is not in the graph");
  ir::OpCall call = ir::OpCall::of(*node);
  size_t next = 0;
  std::vector<std::vector<Tensor>> holder;
  holder.reserve(arguments.size());
  auto value_of = [&](const ir::Node*) -> const std::vector<Tensor>& {
    KILN_CHECK(next < arguments.size(), "fallback ", node_name, ": fewer tensors than arguments");
    holder.push_back({arguments[next++]});
    return holder.back();
  };
  return ir::run_reference_kernel(call, ir::tensor_arguments(call, value_of), bindings);
}

}  // namespace kiln::compiler
