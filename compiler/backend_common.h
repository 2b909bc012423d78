// What every code target does alike around its generated code: the graph the driver lowers (a
// copy after the default pipeline: compiler/compile_driver.h) and a fallback node (one the
// generated code calls back for) run by its reference kernel (compiler/compiled_model.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::compiler {

// A copy of `graph` after the default pipeline up to "simplified" (functional, decomposed,
// simplified; passes/pass_manager.h), which is what a backend lowers; with `freeze`, the
// parameters are folded in as constants.
ir::Graph simplified_graph(const ir::Graph& graph, bool freeze);

// The CPUs this process may run on (its affinity mask; 1 where that cannot be read).
int64_t available_cpus();

// The results of graph node `node_name`'s reference kernel (ir/interpreter.h) on `arguments`,
// the tensors of its tensor arguments in order, with the symbols bound to `bindings`.
std::vector<Tensor> run_fallback_node(const ir::Graph& graph, const std::string& node_name,
                                      const std::vector<Tensor>& arguments,
                                      const std::map<std::string, int64_t>& bindings);

}  // namespace kiln::compiler
