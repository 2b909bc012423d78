// Pieces of a graph, cut for `kiln verify` (compiler/verify.h) and its minifier
// (compiler/minify.h): copies that runs cannot change, prefixes that return intermediate values,
// and graphs where some nodes become inputs fed with their values; and for data-parallel
// training (compiler/distributed/backward_stages.h), a graph cut into stages that run one after
// another. Every graph made here is a valid graph of its own (its signature's outputs are user
// outputs, dead nodes are removed).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::compiler {

// A clone whose parameters are copies too: an in-place op on a parameter (a traced graph's
// BatchNorm update) changes only the copy.
ir::Graph isolated_copy(const ir::Graph& graph);
// Fresh copies of the tensors (the interpreter and compiled models write mutated inputs back).
std::map<std::string, Tensor> copied_inputs(const std::map<std::string, Tensor>& inputs);

// The entries of `inputs` that `graph`'s placeholders read.
std::map<std::string, Tensor> inputs_of(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs);

// The outputs a caller sees: `outputs` (in the output node's order) less the mutation outputs
// of the graph's signature; and their names.
std::vector<Tensor> user_outputs(const ir::Graph& graph, std::vector<Tensor> outputs);
std::vector<std::string> user_output_names(const ir::Graph& graph);

// The call_function nodes that produce one tensor, in topological order: the nodes a verify
// can localize and a minifier can cut.
std::vector<const ir::Node*> computed_nodes(const ir::Graph& graph);

// A copy of `graph` that computes nodes order[0..k] only and returns node order[k]'s value and,
// unless `only_last`, every value of those nodes that a later node or the output reads.
ir::Graph prefix_graph(const ir::Graph& graph, const std::vector<const ir::Node*>& order, size_t k,
                       bool only_last = false);

// A copy of `graph` where each node named in `cut` is an input instead, fed with its value in
// `values` (recorded by the interpreter: ir::Interpreter's recorded()); what no output needs any
// more is removed (nodes, placeholders, parameters). `inputs` becomes the inputs of the copy.
ir::Graph cut_graph(const ir::Graph& graph, const std::set<std::string>& cut,
                    const std::map<std::string, std::vector<Tensor>>& values, std::map<std::string, Tensor>& inputs);

// One stage of a graph cut into stages (split_in_stages): its own graph, whose placeholders are
// the original graph's (same targets) or values an earlier stage computed (`carried`: the
// placeholder's target -> the original node's name); it returns the values named in `returns`
// (original node names, in its output order): the original outputs it computes and the values
// later stages read.
struct GraphStage {
  ir::Graph graph;
  std::map<std::string, std::string> carried;
  std::vector<std::string> returns;
};

// A graph cut into stages, and the stage (index in `stages`) that returns each of its outputs
// (the value named graph.outputs()[i]->name()).
struct StagedGraph {
  std::vector<GraphStage> stages;
  std::vector<size_t> output_stage;
};

// `graph` (functional: no mutation in its signature) cut into stages that, run in order, compute
// its outputs: the k-th cut computes the call_function nodes after stage_ends[k - 1] up to and
// including stage_ends[k] (nodes of `graph`, in its node order), the last one everything after
// the last end; a getitem stays with the node it reads, placeholders and parameters are read by
// every stage that needs them, an original output that is a placeholder or a parameter is
// returned by the first stage, and a cut that returns nothing is left out.
StagedGraph split_in_stages(const ir::Graph& graph, const std::vector<const ir::Node*>& stage_ends);

}  // namespace kiln::compiler
