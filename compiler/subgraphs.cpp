// Cut pieces of graphs for verify and the minifier. See compiler/subgraphs.h.
#include "compiler/subgraphs.h"

#include <algorithm>

#include "ir/graph_signature.h"
#include "kiln/error.h"
#include "passes/dead_code_elimination.h"

namespace kiln::compiler {

namespace {

// Every output becomes a user output; the rest of the signature stays.
void reset_output_specs(ir::Graph& graph) {
  ir::GraphSignature fresh;
  for (const auto& [target, kind] : graph.signature().attribute_kinds()) fresh.set_attribute_kind(target, kind);
  for (const auto& [symbol, range] : graph.signature().symbol_ranges()) fresh.set_symbol_range(symbol, range);
  graph.signature() = fresh;
}

void replace_outputs(ir::Graph& graph, const std::vector<ir::Node*>& values) {
  if (ir::Node* output = graph.output_node()) graph.erase(output);
  std::vector<ir::Argument> returned;
  for (ir::Node* value : values) returned.emplace_back(value);
  graph.create_output(std::move(returned));
  reset_output_specs(graph);
}

void add_symbols(const ir::SymInt& size, std::set<std::string>& symbols) {
  for (std::string& symbol : size.free_symbols()) symbols.insert(std::move(symbol));
}

void add_symbols(const ir::Argument& argument, std::set<std::string>& symbols) {
  if (argument.is_symint()) add_symbols(argument.symint(), symbols);
  if (argument.is_list())
    for (const ir::Argument& item : argument.list()) add_symbols(item, symbols);
}

// The size symbols the graph uses beyond the placeholders' plain dims (in the other nodes'
// types and arguments, and in placeholders' compound dims such as s0*s1): a placeholder that
// binds one (as a plain dim) stays even when nothing reads its values.
std::set<std::string> symbols_used_beyond_placeholders(const ir::Graph& graph) {
  std::set<std::string> symbols;
  for (const ir::Node* node : graph.nodes()) {
    if (node->op() == ir::OpKind::placeholder) {
      for (const ir::SymInt& size : node->value().shape)
        if (!size.is_symbol()) add_symbols(size, symbols);
      continue;
    }
    for (const ir::TensorMeta& value : node->meta.values)
      for (const ir::SymInt& size : value.shape) add_symbols(size, symbols);
    for (const ir::Argument& argument : node->args()) add_symbols(argument, symbols);
    for (const auto& [key, argument] : node->kwargs()) add_symbols(argument, symbols);
  }
  return symbols;
}

// Whether `placeholder` binds a symbol of `needed` (which it then takes off the list), or
// receives a mutation output.
bool still_needed(const ir::Graph& graph, const ir::Node& placeholder, std::set<std::string>& needed) {
  for (const auto& [position, spec] : graph.signature().mutations())
    if (spec.kind == ir::OutputKind::user_input_mutation && spec.target == placeholder.target()) return true;
  std::set<std::string> bound;  // plain dims only: a dim s0*s1 binds neither symbol
  for (const ir::SymInt& size : placeholder.value().shape)
    if (size.is_symbol()) add_symbols(size, bound);
  bool binds = false;
  for (const std::string& symbol : bound)
    if (needed.erase(symbol)) binds = true;  // one placeholder binds it; later ones may go
  return binds;
}

// Removes placeholders nothing reads (with their inputs) unless they bind a size symbol other
// nodes use or receive a mutation, and parameters no get_attr reads.
void remove_unused(ir::Graph& graph, std::map<std::string, Tensor>* inputs) {
  passes::eliminate_dead_code(graph);
  std::set<std::string> needed = symbols_used_beyond_placeholders(graph);
  for (const ir::Node* placeholder : graph.placeholders())  // bound by an input that stays anyway
    if (!placeholder->users().empty())
      for (const ir::SymInt& size : placeholder->value().shape)
        if (size.is_symbol()) needed.erase(size.free_symbols().front());
  for (ir::Node* placeholder : graph.placeholders()) {
    if (!placeholder->users().empty() || still_needed(graph, *placeholder, needed)) continue;
    if (inputs) inputs->erase(placeholder->target());
    graph.erase(placeholder);
  }
  std::set<std::string> read;
  for (const ir::Node* node : graph.nodes())
    if (node->op() == ir::OpKind::get_attr) read.insert(node->target());
  std::vector<std::string> unused;
  for (const auto& [name, value] : graph.parameters())
    if (!read.count(name)) unused.push_back(name);
  for (const std::string& name : unused) graph.remove_parameter(name);
}

std::string free_name(const ir::Graph& graph, const std::string& base) {
  std::string name = base;
  for (int i = 1; graph.find(name) != nullptr; ++i) name = base + "_" + std::to_string(i);
  return name;
}

}  // namespace

ir::Graph isolated_copy(const ir::Graph& graph) {
  ir::Graph copy = graph.clone();
  for (const auto& [name, value] : graph.parameters()) copy.set_parameter(name, value.clone());
  return copy;
}

std::map<std::string, Tensor> copied_inputs(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> copies;
  for (const auto& [name, value] : inputs) copies.emplace(name, value.clone());
  return copies;
}

std::map<std::string, Tensor> inputs_of(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> kept;
  for (const ir::Node* placeholder : graph.placeholders()) {
    auto found = inputs.find(placeholder->target());
    if (found != inputs.end()) kept.insert(*found);
  }
  return kept;
}

std::vector<Tensor> user_outputs(const ir::Graph& graph, std::vector<Tensor> outputs) {
  std::vector<Tensor> kept;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!graph.signature().output(i).is_mutation()) kept.push_back(std::move(outputs[i]));
  return kept;
}

std::vector<std::string> user_output_names(const ir::Graph& graph) {
  std::vector<std::string> names = graph.output_names(), kept;
  for (size_t i = 0; i < names.size(); ++i)
    if (!graph.signature().output(i).is_mutation()) kept.push_back(names[i]);
  return kept;
}

std::vector<const ir::Node*> computed_nodes(const ir::Graph& graph) {
  std::vector<const ir::Node*> nodes;
  for (const ir::Node* node : graph.nodes())
    if (node->op() == ir::OpKind::call_function && node->has_single_value()) nodes.push_back(node);
  return nodes;
}

ir::Graph prefix_graph(const ir::Graph& graph, const std::vector<const ir::Node*>& order, size_t k, bool only_last) {
  KILN_CHECK(k < order.size(), "prefix_graph: node ", k, " of ", order.size());
  ir::Graph copy = graph.clone();
  std::set<const ir::Node*> prefix;  // of the original graph
  for (const ir::Node* node : graph.nodes()) {
    prefix.insert(node);
    if (node == order[k]) break;
  }
  std::vector<ir::Node*> returned;
  if (!only_last) {
    for (const ir::Node* node : order) {
      if (!prefix.count(node) || node == order[k]) continue;
      bool read_later = false;
      for (const ir::Node* user : node->users()) read_later = read_later || !prefix.count(user);
      if (read_later) returned.push_back(copy.find(node->name()));
    }
  }
  returned.push_back(copy.find(order[k]->name()));
  replace_outputs(copy, returned);
  remove_unused(copy, nullptr);
  return copy;
}

ir::Graph cut_graph(const ir::Graph& graph, const std::set<std::string>& cut,
                    const std::map<std::string, std::vector<Tensor>>& values, std::map<std::string, Tensor>& inputs) {
  ir::Graph copy = graph.clone();
  ir::Node* first = *copy.nodes().begin();
  for (const std::string& name : cut) {
    ir::Node* node = copy.find(name);
    KILN_CHECK(node != nullptr && node->has_single_value(), "cut_graph: no single-valued node ", name);
    auto value = values.find(name);
    KILN_CHECK(value != values.end() && value->second.size() == 1, "cut_graph: no recorded value of ", name);
    const ir::TensorMeta& meta = node->value();
    std::string input = free_name(copy, name + "_in");
    ir::Node* placeholder;
    {
      auto guard = copy.inserting_before(first);
      placeholder = copy.create_placeholder(input, ir::TensorMeta::contiguous(meta.dtype, meta.shape, meta.device));
    }
    node->replace_all_uses_with(placeholder);
    inputs[placeholder->target()] = value->second[0].contiguous();
  }
  remove_unused(copy, &inputs);
  return copy;
}

StagedGraph split_in_stages(const ir::Graph& graph, const std::vector<const ir::Node*>& stage_ends) {
  KILN_CHECK(graph.signature().mutations().empty(), "split_in_stages: the graph mutates its inputs");
  std::map<const ir::Node*, size_t> stage_of;  // call_function nodes only
  std::vector<const ir::Node*> computed;       // the same, in node order (what the stages follow)
  size_t stage = 0;
  for (const ir::Node* node : graph.nodes()) {
    if (node->op() != ir::OpKind::call_function) continue;
    computed.push_back(node);
    const std::vector<ir::Node*> reads = node->input_nodes();
    const ir::Node* read = node->target() == "getitem" && !reads.empty() ? reads.front() : nullptr;
    auto producer = read ? stage_of.find(read) : stage_of.end();
    stage_of[node] = producer != stage_of.end() ? producer->second : stage;
    if (stage < stage_ends.size() && node == stage_ends[stage]) ++stage;
  }
  KILN_CHECK(stage >= stage_ends.size(), "split_in_stages: the ends are not call_function nodes of the graph in order");
  const size_t count = stage_ends.size() + 1;
  const std::vector<ir::Node*> outputs = graph.outputs();
  StagedGraph staged;
  staged.output_stage.assign(outputs.size(), 0);
  for (size_t k = 0; k < count; ++k) {
    GraphStage piece{graph.clone(), {}, {}};
    ir::Graph& copy = piece.graph;
    ir::Node* first = *copy.nodes().begin();
    // The values of earlier stages this one reads become its inputs.
    for (const ir::Node* node : computed) {
      if (stage_of.at(node) >= k) continue;
      bool read_here = false;
      for (const ir::Node* user : node->users()) {
        auto user_stage = stage_of.find(user);
        read_here = read_here || (user_stage != stage_of.end() && user_stage->second == k);
      }
      if (!read_here) continue;
      KILN_CHECK(node->has_single_value(), "split_in_stages: stage ", k, " reads the tuple of ", node->name(),
                 " computed by an earlier stage");
      const ir::TensorMeta& meta = node->value();
      ir::Node* placeholder;
      {
        auto guard = copy.inserting_before(first);
        placeholder = copy.create_placeholder(free_name(copy, node->name() + "_in"),
                                              ir::TensorMeta::contiguous(meta.dtype, meta.shape, meta.device));
      }
      copy.find(node->name())->replace_all_uses_with(placeholder);
      piece.carried[placeholder->target()] = node->name();
    }
    // What it returns: the original outputs it computes, and its values later stages read.
    std::vector<ir::Node*> returned;
    auto give = [&](const ir::Node* node) {
      if (std::find(piece.returns.begin(), piece.returns.end(), node->name()) != piece.returns.end()) return;
      piece.returns.push_back(node->name());
      returned.push_back(copy.find(node->name()));
    };
    for (size_t i = 0; i < outputs.size(); ++i) {
      auto at = stage_of.find(outputs[i]);
      if (at != stage_of.end() ? at->second != k : k != 0) continue;
      give(outputs[i]);
      staged.output_stage[i] = staged.stages.size();
    }
    for (const ir::Node* node : computed) {
      if (stage_of.at(node) != k) continue;
      for (const ir::Node* user : node->users()) {
        auto user_stage = stage_of.find(user);
        if (user_stage != stage_of.end() && user_stage->second > k) {
          give(node);
          break;
        }
      }
    }
    if (returned.empty()) continue;  // no node of its own is needed
    replace_outputs(copy, returned);
    remove_unused(copy, nullptr);
    staged.stages.push_back(std::move(piece));
  }
  return staged;
}

}  // namespace kiln::compiler
