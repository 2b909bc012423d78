// The IR's text form: exactly torch.fx's `print(gm.graph)`, with Kiln's tensor type in the
// slot FX keeps for a type. ir/parser.h reads it back (print(parse(print(g))) == print(g)).
//
//   graph():
//       %x : f32[s0, 784] [num_users=1] = placeholder[target=x]
//       %fc1_weight : f32[512, 784] [num_users=1] = get_attr[target=fc1.weight]
//       %t : f32[784, 512] [num_users=1] = call_function[target=transpose](args = (%fc1_weight, 0, 1), kwargs = {})
//       %mm : f32[s0, 512] [num_users=1] = call_function[target=matmul](args = (%x, %t), kwargs = {})
//       %sum_1 : f32[s0] [num_users=1] = call_function[target=sum](args = (%mm, [1]), kwargs = {keepdim: True})
//       return (mm, sum_1)
//
// Types: `f32[2, 3]`; a tuple `(f32[2], i64[2])` (one element: `(f32[2],)`); strides, when
// written, follow in braces: `f32[3, 4]{1, 3}`; a device other than the CPU follows an '@':
// `f32[3, 4]@cuda:0`. Strides are written for a value that is not contiguous when it is a
// placeholder (they are part of the graph's input contract) or when show_strides asks.
// A node without meta prints FX's bare form `%x : [num_users=1] = ...`.
//
// Arguments print as Python would inside FX: %node, 3, 1.5 (float_repr), True/False/None,
// "text" (double quotes, backslash escapes), [1, 2], symbolic ints as SymInt::to_string()
// (s0 + 1), dtypes as f32, devices as cpu / cuda:0. kwargs print as {name: value, ...}.
// A target that is not a plain name (spaces, brackets, quotes) prints as a quoted string.
//
// The graph signature (ir/graph_signature.h) follows the return line as torch.export prints
// it, one spec per placeholder, get_attr target and returned value (ir/signature_specs.h),
// and is left out when every spec is the default (user inputs, parameters, user outputs):
//
//       return (mul, x_mutated, bn_running_mean_mutated)
//
//   Graph signature:
//       # inputs
//       x: USER_INPUT
//       bn_running_mean: BUFFER target=bn.running_mean
//
//       # outputs
//       mul: USER_OUTPUT
//       x_mutated: USER_INPUT_MUTATION target=x
//       bn_running_mean_mutated: BUFFER_MUTATION target=bn.running_mean
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln::ir {

struct PrintOptions {
  bool show_source = false;   // append "  # <SourceInfo::to_string()>" to nodes that have one
  bool show_strides = false;  // write the strides of every non-contiguous value
};

std::string print_graph(const Graph& graph, const PrintOptions& options = {});

// The pieces of the text form, for other formats and messages.
// "f32[2, 3]", with "{strides}" when `with_strides` and "@device" when not on the CPU.
std::string format_tensor_type(const TensorMeta& meta, bool with_strides = false);
// A node's type: one tensor type, or a parenthesized tuple of them.
std::string format_node_type(const NodeMeta& meta, bool with_strides = false);
// An argument as Python writes it; `bare_nodes` drops the '%' (as in the return line) except
// from a node named None, True or False.
std::string format_argument(const Argument& argument, bool bare_nodes = false);
// A string literal in double quotes with backslash escapes (\" \\ \n \t \r \xNN).
std::string quote_string(const std::string& text);

}  // namespace kiln::ir
