// Reads the IR's text form (ir/printer.h) back into a Graph, so that
// print(parse(print(g))) == print(g).
//
// Node metas are not taken from the text: every call_function node is rebuilt through
// Graph::create_call (binding against the op's schema and running its shape rule), and a
// written type must agree with the inferred one (dtype, shape, device, tuple arity):
//   model.kiln:7:10: type of %mm is written f32[3, 5] but infers f32[3, 4]
// Written strides ({...}) are kept as given. Placeholder types are the graph's input
// contract and are taken as written. get_attr nodes take their value (and so their type) from
// ParseOptions::parameters, which all become graph parameters; a written type must match.
// `[num_users=N]`, when written, must match the parsed graph. The type and num_users may be
// left out (FX's own form): `%y : [num_users=1] = ...` or `%y = call_function[...](...)`.
//
// A "Graph signature:" block after the return line (ir/printer.h) sets the graph signature:
// input specs may be left out (a placeholder is a USER_INPUT, a get_attr target a PARAMETER),
// output specs are all or none, one per returned value in order; each spec is checked against
// the graph (ir/signature_specs.h) and a wrong one is an error at its line, e.g.
//   model.kiln:14:5: graph signature: %x is a placeholder: its kind is USER_INPUT, not BUFFER
//
// Every node gets SourceInfo{file_name, line}. Comments (# to the end of the line) and blank
// lines are ignored. Every error is a kiln::Error "file:line:col: message", e.g.
//   expected ')', found end of file      unknown op 'foo'      %y used before it is defined
//   duplicate name %x (first defined at line 2)      node %mm (matmul): <binding/shape error>
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace kiln::ir {

struct ParseOptions {
  std::string file_name = "<string>";
  // The values of get_attr targets, by target name; every one becomes a graph parameter.
  // (The type of Graph::parameters(), so one graph's parameters can be handed over as is.)
  std::map<std::string, Tensor, std::less<>> parameters;
  // Where the parameters came from, for messages ("model.safetensors"); empty: none given.
  std::string weights_file;
  bool weights_file_missing = false;  // weights_file was expected but does not exist

  // Why a get_attr target has no value: names the target and the weights file.
  std::string missing_parameter_message(const std::string& target) const;
};

// Whether `name` can be written as a node name (%name) or keyword in the text form: 1 to 256
// letters, digits and '_'. Readers of other forms (ir/json_format.h) check their names with it,
// so that every graph they accept prints to text that reads back.
bool is_text_name(std::string_view name);
inline constexpr size_t kMaxTextNameLength = 256;

Graph parse_graph(std::string_view text, const std::string& file_name = "<string>");
Graph parse_graph(std::string_view text, const ParseOptions& options);
// With the values of the get_attr targets (e.g. another graph's parameters()).
Graph parse_graph(std::string_view text, const std::string& file_name,
                  const std::map<std::string, Tensor, std::less<>>& parameters);

}  // namespace kiln::ir
