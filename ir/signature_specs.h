// The graph signature (ir/graph_signature.h) against its graph: the specs listed the way the
// text and JSON forms write them (and torch.export prints them), the checks that a signature
// fits its graph (run by the verifier), and the builder the readers fill from written specs.
//
// Listing: one input spec per placeholder (USER_INPUT) and per get_attr target (its kind,
// named by the first get_attr node that reads it), in graph order, then one per buffer or
// constant that no get_attr reads (a buffer a copy_ overwrites without reading it), named
// after its target; one output spec per argument of the output node, named by the value
// returned there. A plain parameter no get_attr reads is not listed.
//
// A signature fits its graph when every attribute kind names a parameter of the graph, every
// output spec a position the output node has, and every mutation output a value of exactly
// the type of what it is copied back into: a placeholder whose target it names
// (USER_INPUT_MUTATION), or a parameter or buffer of that kind (PARAMETER_MUTATION,
// BUFFER_MUTATION; a constant is never written); no input is written back twice.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/graph_signature.h"

namespace kiln::ir {

struct InputSpec {
  InputKind kind = InputKind::user_input;
  // The placeholder, or the first get_attr node reading `target` (nullptr when none does).
  Node* node = nullptr;
  std::string target;  // the get_attr target; empty for a user input

  // How the text and JSON forms name it: the node's name, else the target with every
  // character other than [A-Za-z0-9_] replaced by '_'.
  std::string name() const;
};

struct ReturnedSpec {
  Argument value;  // what the output node returns at this position
  OutputSpec spec;
};

std::vector<InputSpec> input_specs(const Graph& graph);
std::vector<ReturnedSpec> output_specs(const Graph& graph);
// Whether every listed spec is the default one (USER_INPUT, PARAMETER, USER_OUTPUT); the
// text form then leaves the signature out.
bool signature_is_default(const Graph& graph);
// How a spec names its value: the node's name (as the return line writes it) or the
// argument's text.
std::string spec_name(const Argument& value);

// "" when the spec of output `index` fits the graph, else what is wrong with it.
std::string output_spec_problem(const Graph& graph, size_t index, const OutputSpec& spec);
// "" when the whole signature fits the graph, else the first problem found.
std::string signature_problem(const Graph& graph);

// Fills a graph's signature from written specs, inputs first, then every output in order;
// each call returns "" or what is wrong with that spec, for the reader to report where it was
// written (the spec is then not applied).
class SignatureBuilder {
 public:
  explicit SignatureBuilder(Graph& graph) : graph_(graph) {}
  // `target`: what "target=" said, empty when nothing.
  std::string add_input(std::string_view name, InputKind kind, const std::string& target);
  std::string add_output(std::string_view name, OutputSpec spec);
  // After the last spec: "" when the outputs were listed all or not at all.
  std::string finish() const;

 private:
  Graph& graph_;
  std::set<const Node*> listed_inputs_;
  std::set<std::string> listed_targets_;
  size_t outputs_ = 0;
};

}  // namespace kiln::ir
