// The minifier of `kiln verify --minify`. See compiler/minify.h.
#include "compiler/minify.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "compiler/backend_common.h"
#include "compiler/graph_formats.h"
#include "compiler/graph_stages.h"
#include "compiler/subgraphs.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "kiln/error.h"
#include "kiln/npy.h"
#include "kiln/safetensors.h"
#include "runtime/atomic_file.h"

namespace kiln::compiler {

namespace {

namespace fs = std::filesystem;

bool raises(const StageVerdict& verdict) { return verdict.problem.rfind("it fails", 0) == 0 || verdict.problem.rfind("its passes fail", 0) == 0; }

class Minifier {
 public:
  Minifier(const MinifyOptions& options, bool wrong_value) : options_(options), wrong_value_(wrong_value) {}

  // The stage's verdict on a candidate, when the candidate fails as the original did.
  std::optional<StageVerdict> fails(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
    ++tests_;
    StageVerdict verdict;
    try {
      verdict = is_graph_stage(options_.stage) ? check_graph_stage(graph, inputs, options_.stage, options_.verify)
                                                     : check_code_stage(graph, inputs, options_.stage, options_.verify);
    } catch (const Error&) {
      return std::nullopt;  // the interpreter rejects the candidate itself
    }
    if (verdict.ok() || raises(verdict) == wrong_value_) return std::nullopt;
    return verdict;
  }
  bool out_of_tests() const { return tests_ >= options_.max_tests; }
  int tests() const { return tests_; }

 private:
  const MinifyOptions& options_;
  bool wrong_value_;
  int tests_ = 0;
};

// Every node's value on `inputs`, as the interpreter computes it.
std::map<std::string, std::vector<Tensor>> recorded_values(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  ir::InterpreterOptions interpreter_options;
  interpreter_options.record_values = true;
  ir::Interpreter interpreter(interpreter_options);
  ir::Graph copy = isolated_copy(graph);
  interpreter.run(copy, copied_inputs(inputs));
  return interpreter.recorded();
}

// The computed nodes a cut may replace: not the returned ones (cutting those leaves nothing to
// diverge).
std::vector<std::string> cuttable(const ir::Graph& graph) {
  std::set<const ir::Node*> returned;
  for (const ir::Node* node : graph.outputs()) returned.insert(node);
  std::vector<std::string> names;
  for (const ir::Node* node : computed_nodes(graph))
    if (!returned.count(node)) names.push_back(node->name());
  return names;
}

struct Current {
  ir::Graph graph;
  std::map<std::string, Tensor> inputs;
  StageVerdict verdict;
};

// Tries cutting `cut` from `current`; keeps the result when it still fails.
bool try_cut(Current& current, const std::set<std::string>& cut, Minifier& minifier) {
  if (cut.empty() || minifier.out_of_tests()) return false;
  std::map<std::string, Tensor> inputs = current.inputs;
  ir::Graph candidate = cut_graph(current.graph, cut, recorded_values(current.graph, current.inputs), inputs);
  std::optional<StageVerdict> verdict = minifier.fails(candidate, inputs);
  if (!verdict) return false;
  current = {std::move(candidate), std::move(inputs), *verdict};
  return true;
}

// Zeller's ddmin over the cuttable nodes: try keeping only one chunk (cutting the rest), then
// cutting one chunk; on success start over on the smaller graph, else split finer.
void delta_debug(Current& current, Minifier& minifier) {
  size_t parts = 2;
  while (!minifier.out_of_tests()) {
    std::vector<std::string> nodes = cuttable(current.graph);
    if (nodes.empty()) return;
    parts = std::min(parts, nodes.size());
    std::vector<std::set<std::string>> chunks(parts);
    for (size_t i = 0; i < nodes.size(); ++i) chunks[i * parts / nodes.size()].insert(nodes[i]);
    bool progress = false;
    for (size_t c = 0; c < chunks.size() && !progress; ++c) {
      std::set<std::string> complement;
      for (const std::string& node : nodes)
        if (!chunks[c].count(node)) complement.insert(node);
      progress = (parts > 2 && try_cut(current, complement, minifier)) || try_cut(current, chunks[c], minifier);
    }
    if (progress) {
      parts = std::max<size_t>(2, parts - 1);
      continue;
    }
    if (parts >= nodes.size()) return;  // no single node can go
    parts = std::min(parts * 2, nodes.size());
  }
}

// Keeps one output when that still fails.
void fewer_outputs(Current& current, Minifier& minifier) {
  std::vector<ir::Node*> outputs = current.graph.outputs();
  if (outputs.size() < 2) return;
  std::vector<const ir::Node*> order = computed_nodes(current.graph);
  for (const ir::Node* output : outputs) {
    auto at = std::find(order.begin(), order.end(), output);
    if (at == order.end() || minifier.out_of_tests()) continue;
    ir::Graph candidate = prefix_graph(current.graph, order, size_t(at - order.begin()), /*only_last=*/true);
    std::map<std::string, Tensor> inputs = inputs_of(candidate, current.inputs);
    if (std::optional<StageVerdict> verdict = minifier.fails(candidate, inputs)) {
      current = {std::move(candidate), std::move(inputs), *verdict};
      return;
    }
  }
}

// `inputs` with every dim that `graph`'s placeholders give as `symbol` cut to its first `size`
// elements (the graph is unchanged: a symbol's binding shrinks).
std::map<std::string, Tensor> with_symbol_size(const ir::Graph& graph, const ir::SymInt& symbol, int64_t size,
                                               std::map<std::string, Tensor> inputs) {
  for (const ir::Node* placeholder : graph.placeholders()) {
    auto input = inputs.find(placeholder->target());
    if (input == inputs.end() || !placeholder->has_single_value()) continue;
    const ir::SymShape& shape = placeholder->value().shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == symbol) input->second = input->second.slice(int64_t(d), 0, size).contiguous();
  }
  return inputs;
}

// A copy of `graph` whose placeholder `name` has static dim `dim` of `size`, every node's meta
// inferred again by its op's shape rule; std::nullopt when an op no longer accepts its arguments
// (a reshape to the old element count, a matmul whose inner sizes now differ).
std::optional<ir::Graph> with_static_size(const ir::Graph& graph, const std::string& name, size_t dim, int64_t size) {
  ir::Graph copy = isolated_copy(graph);
  try {
    for (ir::Node* node : copy.node_list()) {
      if (node->op() == ir::OpKind::placeholder && node->target() == name) {
        const ir::TensorMeta& meta = node->value();
        ir::SymShape shape = meta.shape;
        shape[dim] = ir::SymInt(size);
        node->meta.values[0] = ir::TensorMeta::contiguous(meta.dtype, shape, meta.device);
      } else if (node->op() == ir::OpKind::call_function) {
        node->meta = ir::infer_meta(*node);
      }
    }
  } catch (const Error&) {
    return std::nullopt;
  } catch (const InternalError&) {  // a rule's own check on arguments typed for the old size
    return std::nullopt;
  }
  return copy;
}

// Halves input dims (down to 1) while the candidate still fails the same way: a symbol's dims
// by binding it smaller, a static dim by a copy of the graph typed for the smaller input. Every
// input is cut from its start.
void smaller_sizes(Current& current, Minifier& minifier) {
  for (bool progress = true; progress && !minifier.out_of_tests();) {
    progress = false;
    for (const ir::Node* placeholder : current.graph.placeholders()) {
      auto input = current.inputs.find(placeholder->target());
      if (input == current.inputs.end() || !placeholder->has_single_value()) continue;
      const ir::SymShape shape = placeholder->value().shape;
      for (size_t d = 0; d < shape.size() && !progress && !minifier.out_of_tests(); ++d) {
        int64_t size = input->second.sizes()[d];
        if (size <= 1) continue;
        int64_t smaller = size / 2;
        std::optional<ir::Graph> candidate;
        std::map<std::string, Tensor> inputs;
        if (shape[d].is_symbol()) {
          candidate = isolated_copy(current.graph);
          inputs = with_symbol_size(current.graph, shape[d], smaller, current.inputs);
        } else if (shape[d].is_constant()) {
          candidate = with_static_size(current.graph, placeholder->target(), d, smaller);
          inputs = current.inputs;
          inputs[placeholder->target()] = input->second.slice(int64_t(d), 0, smaller).contiguous();
        }
        if (!candidate) continue;
        if (std::optional<StageVerdict> verdict = minifier.fails(*candidate, inputs)) {
          current = {std::move(*candidate), std::move(inputs), *verdict};
          progress = true;  // the placeholders changed: start over
        }
      }
      if (progress) break;
    }
  }
}

std::string shell_quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

MinifiedRepro minify(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs, const MinifyOptions& options) {
  StageVerdict original = is_graph_stage(options.stage) ? check_graph_stage(graph, inputs, options.stage, options.verify)
                                                             : check_code_stage(graph, inputs, options.stage, options.verify);
  if (original.ok()) fail("--minify: stage ", options.stage, " agrees with the interpreter on this graph: nothing to minify");
  Minifier minifier(options, !raises(original));
  Current current{isolated_copy(graph), inputs, original};
  if (options.start) {
    std::vector<const ir::Node*> order = computed_nodes(current.graph);
    auto at = std::find_if(order.begin(), order.end(), [&](const ir::Node* node) { return node->name() == *options.start; });
    if (at != order.end()) {
      for (bool only_last : {true, false}) {
        ir::Graph candidate = prefix_graph(current.graph, order, size_t(at - order.begin()), only_last);
        std::map<std::string, Tensor> candidate_inputs = inputs_of(candidate, current.inputs);
        if (std::optional<StageVerdict> verdict = minifier.fails(candidate, candidate_inputs)) {
          current = {std::move(candidate), std::move(candidate_inputs), *verdict};
          break;
        }
      }
    }
  }
  fewer_outputs(current, minifier);
  delta_debug(current, minifier);
  smaller_sizes(current, minifier);
  MinifiedRepro repro{std::move(current.graph), std::move(current.inputs), current.verdict, minifier.tests(), 0};
  repro.original_nodes = computed_nodes(graph).size();
  return repro;
}

MinifiedRepro minify_divergence(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                                const MinifyOptions& options) {
  if (is_graph_stage(options.stage)) return minify(isolated_copy(graph), inputs, options);
  return minify(simplified_graph(graph, options.verify.freeze), inputs, options);
}

void check_repro_directory(const fs::path& directory, bool overwrite) {
  if (fs::exists(directory) && !fs::is_directory(directory)) fail("--minify ", directory.string(), " is a file");
  if (fs::exists(directory) && !fs::is_empty(directory) && !overwrite)
    fail("--minify directory ", directory.string(), " exists and is not empty (pass --force to overwrite its files)");
}

void write_repro(const fs::path& directory, const MinifiedRepro& repro, const MinifyOptions& options,
                 const std::string& model_path, bool overwrite) {
  check_repro_directory(directory, overwrite);
  fs::create_directories(directory / "inputs");
  write_file_atomically((directory / "repro.kiln").string(), render_graph(repro.graph, GraphFormat::text));
  if (!repro.graph.parameters().empty()) {
    std::map<std::string, Tensor> weights(repro.graph.parameters().begin(), repro.graph.parameters().end());
    write_safetensors((directory / "repro.safetensors").string(), weights);
  }
  std::ostringstream command;
  command << "exec \"${KILN:-kiln}\" verify repro.kiln --target " << (options.verify.target.empty() ? "none" : options.verify.target)
          << " --rtol " << options.verify.tolerance.rtol << " --atol " << options.verify.tolerance.atol;
  if (options.verify.freeze) command << " --freeze";
  for (const auto& [name, value] : repro.inputs) {
    write_npy((directory / "inputs" / (name + ".npy")).string(), value);
    command << " \\\n  --input " << shell_quoted(name + "=inputs/" + name + ".npy");
  }
  std::ostringstream script;
  script << "#!/bin/sh\n"
         << "# Made by kiln verify --minify from " << model_path << ": " << computed_nodes(repro.graph).size() << " of "
         << repro.original_nodes << " nodes left after " << repro.tests << " tests.\n"
         << "# Stage " << options.stage << " disagrees with the interpreter: " << repro.verdict.problem << "\n"
         << "# Set KILN to the kiln binary to use another than the one on PATH.\n"
         << "cd \"$(dirname \"$0\")\"\n"
         << command.str() << "\n";
  fs::path script_path = directory / "repro.sh";
  write_file_atomically(script_path.string(), script.str());
  fs::permissions(script_path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
}

}  // namespace kiln::compiler
