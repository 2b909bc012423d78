// kiln::trace: runs a module (or a function of Vars) once on placeholders and returns the
// recorded graph (kiln::Graph, kiln/graph.h), as torch.fx's symbolic_trace / torch.export do
// for PyTorch:
//  - one placeholder per input, typed by the example tensor's dtype and shape (or by a given
//    kiln::TensorType, whose dims may be symbols for dynamic shapes);
//  - one get_attr node per parameter and buffer read, named by its module path
//    ("fc1.weight"), its tensor stored with graph.set_parameter (shared with the module, not
//    copied: running a graph that mutates a buffer updates the module's buffer, as PyTorch does)
//    and its kind in the graph signature (ir/graph_signature.h): PARAMETER, or BUFFER for what
//    the module registered with register_buffer;
//  - the recorded ops in call order, each with ir::SourceInfo: the C++ file and line of the
//    user's call and the path of the module whose forward ran it;
//  - an output node returning forward's results.
// The module's mode decides what is recorded (train(): dropout nodes, batch statistics and
// in-place updates of BatchNorm's buffers; eval(): none of these). In-place methods record
// in-place ops; passes::functionalize turns them into values, and mutated buffers into
// extra outputs (BUFFER_MUTATION in the graph signature, named "<name>_mutated") that the
// backends copy back into the buffers.
// Code that needs a traced value (Var::item(), `if (var)`) is an error unless
// TraceOptions::on_value supplies it (kiln::compile(fn) breaks the graph there instead).
// The graph passes ir::verify.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/nn/module.h"
#include "kiln/tensor.h"
#include "kiln/tensor_type.h"
#include "kiln/var.h"

namespace kiln {

namespace ir {
class Graph;
class Node;
}  // namespace ir

// Supplies the value of a traced Var while tracing (Var::item(), a Var used as a bool): `graph`
// is the graph recorded so far, `value` the node whose value is wanted, `where` the user's source
// location ("model.cpp:12"). The graph types are Kiln's own: a user's provider can only answer
// by `where`. (kiln::compile(fn) breaks the graph there through its own hook instead.)
using ValueProvider = std::function<double(const ir::Graph& graph, const ir::Node& value, const std::string& where)>;

struct TraceOptions {
  // Placeholder names, one per input; default "x" for one input, else "x0", "x1", ...
  std::vector<std::string> input_names{};
  // Unset: code that needs a traced value is an error naming its line.
  ValueProvider on_value{};
};

using TracedFunction = std::function<std::vector<Var>(const std::vector<Var>& inputs)>;

Graph trace(nn::Module& module, const std::vector<Tensor>& example_inputs, const TraceOptions& options = {});
Graph trace(nn::Module& module, const std::vector<TensorType>& input_types, const TraceOptions& options = {});
Graph trace(const TracedFunction& function, const std::vector<TensorType>& input_types,
            const TraceOptions& options = {});

}  // namespace kiln
