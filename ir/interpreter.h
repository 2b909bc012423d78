// The reference interpreter: runs a Graph node by node with the reference kernels
// (ir/reference_kernels.h). It is the oracle every backend is checked against, so it does
// the obvious thing at every step:
//  - binds the symbolic dims of the placeholders from the input tensors (bind_symbols) and
//    checks every input's dtype, rank and sizes against its placeholder, and each symbol
//    against its range in the graph signature;
//  - reads get_attr nodes from graph.parameters();
//  - runs call_function nodes in order; each kernel derives its result's dtype and shape
//    from the actual inputs, and the interpreter checks them against the node's meta
//    evaluated under the bindings (a mismatch is an InternalError naming the node: it
//    catches bugs in shape rules and kernels alike);
//  - frees each intermediate value after its last use;
//  - returns the output node's values in order (an output that is an input or a parameter
//    is returned as that very tensor).
// In-place ops mutate the tensors they are given, so a graph that mutates an input mutates
// the caller's tensor, as in PyTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::ir {

class OpCall;

// Binds every symbol of the placeholders' shapes from `inputs` (by placeholder name) and
// checks each input against its placeholder: dtype, rank, constant sizes, and compound
// sizes (s0*2) once the plain symbols are bound. Throws kiln::Error on a missing or unknown
// input, a mismatch ("input 'x': expected f32[s0, 784], got f32[3, 785]: dim 1 is 785,
// expected 784"), or two inputs that disagree on a symbol.
std::map<std::string, int64_t> bind_symbols(const Graph& graph, const std::map<std::string, Tensor>& inputs);
// The same with the graph's placeholders found once (Graph::placeholders walks every node: a
// caller that binds at every call of a large graph keeps the list).
std::map<std::string, int64_t> bind_symbols(const Graph& graph, const std::vector<Node*>& placeholders,
                                            const std::map<std::string, Tensor>& inputs);

// The steps of Interpreter::run that other executors of a graph (the VM's eager mode,
// compiler/eager_executor.h) share, so that they check and report exactly as the oracle does.

// The tensor of get_attr `node`: its parameter in `graph`, checked against the node's meta
// under `bindings`. Throws kiln::Error naming the node when it is missing or mistyped.
Tensor parameter_value(const Graph& graph, const Node& node, const std::map<std::string, int64_t>& bindings);

// The runtime tensors of every tensor parameter of `call`, as KernelCall takes them, with
// `value_of` answering the value(s) of each node the call reads.
std::vector<std::vector<Tensor>> tensor_arguments(
    const OpCall& call, const std::function<const std::vector<Tensor>&(const Node*)>& value_of);

// Runs the reference kernel of `call`'s node on `arguments`. A kernel error is rethrown
// prefixed with the node ("node %div (div): ..."), keeping its kind (kiln::Error or
// InternalError); with `check_meta`, the results are checked against the node's meta under
// `bindings` (see InterpreterOptions::check_meta).
std::vector<Tensor> run_reference_kernel(const OpCall& call, const std::vector<std::vector<Tensor>>& arguments,
                                         const std::map<std::string, int64_t>& bindings, bool check_meta = true);

struct InterpreterOptions {
  // Keep a copy of every node's value(s), taken right after the node ran (later in-place
  // ops do not change it); read them with Interpreter::recorded(). Off by default.
  bool record_values = false;
  // Check each call's results against the node's meta (dtype and shape).
  bool check_meta = true;
};

class Interpreter {
 public:
  explicit Interpreter(InterpreterOptions options = {}) : options_(options) {}

  // Runs the graph; inputs by placeholder name; returns the outputs in the output node's order.
  std::vector<Tensor> run(const Graph& graph, const std::map<std::string, Tensor>& inputs);

  // The symbol bindings of the last run.
  const std::map<std::string, int64_t>& bindings() const { return bindings_; }
  // With record_values: every node's value(s) of the last run, by node name.
  const std::map<std::string, std::vector<Tensor>>& recorded() const { return recorded_; }

 private:
  InterpreterOptions options_;
  std::map<std::string, int64_t> bindings_;
  std::map<std::string, std::vector<Tensor>> recorded_;
};

// Runs `graph` once with default options.
std::vector<Tensor> interpret(const Graph& graph, const std::map<std::string, Tensor>& inputs);

}  // namespace kiln::ir
