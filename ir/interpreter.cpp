// The reference interpreter (see interpreter.h): input binding and checking, the node loop,
// result checks against the nodes' meta, and freeing values after their last use.
#include "ir/interpreter.h"

#include <new>
#include <unordered_map>

#include "ir/op_registry.h"
#include "ir/reference_kernels.h"
#include "kiln/error.h"

namespace kiln::ir {

namespace {

std::string type_string(const Tensor& tensor) {
  return std::string(dtype_name(tensor.dtype())) + sizes_to_string(tensor.sizes());
}

// Where a symbol got its value: which input and dim.
struct SymbolSource {
  std::string input;
  size_t dim;
  int64_t value;
};

}  // namespace

std::map<std::string, int64_t> bind_symbols(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  return bind_symbols(graph, graph.placeholders(), inputs);
}

std::map<std::string, int64_t> bind_symbols(const Graph& graph, const std::vector<Node*>& placeholders,
                                            const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, const Node*> by_name;
  for (const Node* placeholder : placeholders) by_name[placeholder->target()] = placeholder;
  for (const auto& [name, tensor] : inputs) {
    if (by_name.count(name)) continue;
    std::string known;
    for (const Node* placeholder : placeholders) known += (known.empty() ? "" : ", ") + placeholder->target();
    fail("unknown input '", name, "'; the graph's inputs are: ", known.empty() ? "(none)" : known);
  }

  std::map<std::string, SymbolSource> sources;
  std::map<std::string, int64_t> bindings;
  // First pass: dtype, rank, constant dims, and plain symbols.
  for (const Node* placeholder : placeholders) {
    const std::string& name = placeholder->target();
    const TensorMeta& meta = placeholder->value();
    auto found = inputs.find(name);
    if (found == inputs.end()) fail("missing input '", name, "' (expected ", meta.type_string(), ")");
    const Tensor& tensor = found->second;
    if (!tensor.defined()) fail("input '", name, "' is an undefined tensor (expected ", meta.type_string(), ")");
    std::string header = "input '" + name + "': expected " + meta.type_string() + ", got " + type_string(tensor) + ": ";
    if (tensor.dtype() != meta.dtype)
      fail(header, "dtype is ", dtype_name(tensor.dtype()), ", expected ", dtype_name(meta.dtype));
    if (tensor.dim() != meta.rank()) fail(header, "rank is ", tensor.dim(), ", expected ", meta.rank());
    for (size_t d = 0; d < meta.shape.size(); ++d) {
      const SymInt& expected = meta.shape[d];
      int64_t actual = tensor.sizes()[d];
      if (std::optional<int64_t> constant = expected.maybe_constant()) {
        if (actual != *constant) fail(header, "dim ", d, " is ", actual, ", expected ", *constant);
        continue;
      }
      if (!expected.is_symbol()) continue;  // compound: checked below
      std::string symbol = expected.free_symbols().at(0);
      auto bound = sources.find(symbol);
      if (bound == sources.end()) {
        sources[symbol] = {name, d, actual};
        bindings[symbol] = actual;
      } else if (bound->second.value != actual) {
        const SymbolSource& first = bound->second;
        if (first.input == name)
          fail(header, "dims ", first.dim, " and ", d, " are both ", symbol, " but are ", first.value, " and ", actual);
        fail("inputs '", first.input, "' and '", name, "' disagree on ", symbol, ": '", first.input, "' dim ",
             first.dim, " is ", first.value, ", '", name, "' dim ", d, " is ", actual);
      }
    }
  }
  // Second pass: compound dims (2*s0, s0 + s1) must evaluate to the actual size.
  for (const Node* placeholder : placeholders) {
    const std::string& name = placeholder->target();
    const TensorMeta& meta = placeholder->value();
    const Tensor& tensor = inputs.at(name);
    for (size_t d = 0; d < meta.shape.size(); ++d) {
      const SymInt& expected = meta.shape[d];
      if (expected.is_constant() || expected.is_symbol()) continue;
      std::string header = "input '" + name + "': expected " + meta.type_string() + ", got " + type_string(tensor) + ": ";
      for (const std::string& symbol : expected.free_symbols())
        if (!bindings.count(symbol))
          fail(header, "dim ", d, " is ", expected.to_string(), ", but no input binds ", symbol,
               " as a plain dim");
      int64_t value = expected.evaluate(bindings);
      if (value != tensor.sizes()[d])
        fail(header, "dim ", d, " is ", tensor.sizes()[d], ", expected ", expected.to_string(), " = ", value);
    }
  }
  // Third pass: each symbol within the range the graph is valid for (its signature's).
  for (const auto& [symbol, range] : graph.signature().symbol_ranges()) {
    auto bound = sources.find(symbol);
    if (bound == sources.end() || range.contains(bound->second.value)) continue;
    fail("input '", bound->second.input, "': dim ", bound->second.dim, " is ", bound->second.value, ", outside the range ",
         range.to_string(), " of ", symbol, " that the graph is valid for");
  }
  return bindings;
}

namespace {

// The results must match the node's meta, and only views and in-place ops may alias inputs.
void check_results(const OpCall& call, const std::vector<std::vector<Tensor>>& arguments,
                   const std::vector<Tensor>& results, const std::map<std::string, int64_t>& bindings) {
  const NodeMeta& meta = call.node()->meta;
  if (results.size() != meta.values.size())
    throw InternalError(call.prefix() + "the reference kernel produced " + std::to_string(results.size()) +
                        " values but the node's meta has " + std::to_string(meta.values.size()) + " (" +
                        meta.type_string() + ")");
  for (size_t i = 0; i < results.size(); ++i) {
    const TensorMeta& expected = meta.values[i];
    Sizes shape;
    try {
      shape = expected.evaluate_shape(bindings);
    } catch (const Error& error) {
      throw InternalError(call.prefix() + "cannot evaluate the meta " + expected.type_string() + ": " + error.what());
    }
    if (results[i].dtype() != expected.dtype || results[i].sizes() != shape)
      throw InternalError(call.prefix() + "the reference kernel computed " + type_string(results[i]) +
                          (results.size() > 1 ? " for value " + std::to_string(i) : std::string()) +
                          " but the node's meta says " + expected.type_string() + " = " +
                          std::string(dtype_name(expected.dtype)) + sizes_to_string(shape));
  }
  const OpInfo& op = call.op();
  if (op.is_view || op.is_inplace() || op.has_tag("mutation") || op.name() == "getitem") return;
  for (const Tensor& result : results)
    for (const std::vector<Tensor>& tensors : arguments)
      for (const Tensor& input : tensors)
        if (input.defined() && result.defined() && result.numel() > 0 && result.shares_storage_with(input))
          throw InternalError(call.prefix() + "the reference kernel of a non-view op returned a tensor sharing "
                              "storage with an input");
}

}  // namespace

Tensor parameter_value(const Graph& graph, const Node& node, const std::map<std::string, int64_t>& bindings) {
  const Tensor* value = graph.parameter(node.target());
  if (!value) fail(describe(node), ": no parameter named '", node.target(), "' in the graph");
  if (node.has_single_value()) {
    const TensorMeta& meta = node.value();
    Sizes expected = meta.evaluate_shape(bindings);
    if (value->dtype() != meta.dtype || value->sizes() != expected)
      fail(describe(node), ": parameter '", node.target(), "' is ", type_string(*value), ", but the node expects ",
           meta.type_string());
  }
  return *value;
}

std::vector<std::vector<Tensor>> tensor_arguments(
    const OpCall& call, const std::function<const std::vector<Tensor>&(const Node*)>& value_of) {
  auto single_value = [&](const Node* input) -> const Tensor& {
    const std::vector<Tensor>& values = value_of(input);
    KILN_CHECK(values.size() == 1, describe(*call.node()), " reads ", describe(*input), " as one tensor, but it holds ",
               values.size());
    return values[0];
  };
  const std::vector<Param>& params = call.op().schema.params;
  std::vector<std::vector<Tensor>> tensors(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const Argument& value = call.arg(i);
    switch (params[i].type) {
      case ParamType::tensor:
      case ParamType::optional_tensor:
      case ParamType::tensor_or_scalar:
        if (value.is_node()) tensors[i].push_back(single_value(value.node()));
        break;
      case ParamType::tensor_list:
      case ParamType::optional_tensor_list:
        if (value.is_node()) {
          tensors[i] = value_of(value.node());
        } else if (value.is_list()) {
          for (const Argument& item : value.list())
            tensors[i].push_back(item.is_node() ? single_value(item.node()) : Tensor());
        }
        break;
      default: break;
    }
  }
  return tensors;
}

std::vector<Tensor> run_reference_kernel(const OpCall& call, const std::vector<std::vector<Tensor>>& arguments,
                                         const std::map<std::string, int64_t>& bindings, bool check_meta) {
  KILN_CHECK(call.node() != nullptr, "run_reference_kernel needs a call bound to a node");
  const Node& node = *call.node();
  const ReferenceKernel* kernel = find_reference_kernel(node.target());
  if (!kernel) fail(describe(node), ": no reference kernel for op '", node.target(), "'");
  std::vector<Tensor> results;
  try {
    results = (*kernel)(KernelCall(call, arguments, bindings));
  } catch (const InternalError& error) {
    throw InternalError(call.prefix() + error.what());
  } catch (const Error& error) {
    std::string message = error.what();
    if (message.rfind(call.prefix(), 0) == 0) throw;
    throw Error(call.prefix() + message);
  } catch (const std::bad_alloc&) {
    // A kernel's own scratch memory (std::vector): the user's too-large value, as when a
    // tensor's storage cannot be allocated (runtime/allocator.h).
    std::string shapes;
    for (const std::vector<Tensor>& tensors : arguments)
      for (const Tensor& tensor : tensors)
        if (tensor.defined())
          shapes += (shapes.empty() ? "" : ", ") + std::string(dtype_name(tensor.dtype())) + sizes_to_string(tensor.sizes());
    fail(call.prefix(), "out of memory: the kernel could not allocate its working memory (inputs ", shapes, ")");
  }
  if (check_meta) check_results(call, arguments, results, bindings);
  return results;
}

namespace {

// One run's state: the live values and when each dies.
class Run {
 public:
  Run(const Graph& graph, const std::map<std::string, Tensor>& inputs, const std::map<std::string, int64_t>& bindings,
      const InterpreterOptions& options, std::map<std::string, std::vector<Tensor>>& recorded)
      : graph_(graph), inputs_(inputs), bindings_(bindings), options_(options), recorded_(recorded) {}

  std::vector<Tensor> execute() {
    std::vector<Node*> nodes = graph_.node_list();
    std::unordered_map<const Node*, size_t> last_use;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const Node* input : nodes[i]->input_nodes()) last_use[input] = i;

    std::vector<Tensor> outputs;
    bool returned = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node* node = nodes[i];
      switch (node->op()) {
        case OpKind::placeholder: values_[node] = {inputs_.at(node->target())}; break;
        case OpKind::get_attr: values_[node] = {parameter_value(graph_, *node, bindings_)}; break;
        case OpKind::call_function: values_[node] = call(*node); break;
        case OpKind::output:
          for (const Argument& value : node->args()) collect(value, outputs);
          returned = true;
          break;
      }
      if (options_.record_values && node->op() != OpKind::output) {
        std::vector<Tensor>& copies = recorded_[node->name()];
        for (const Tensor& tensor : values_[node]) copies.push_back(tensor.defined() ? tensor.clone() : tensor);
      }
      for (const Node* input : node->input_nodes())
        if (last_use[input] == i) values_.erase(input);
      if (!last_use.count(node)) values_.erase(node);  // nobody reads it
    }
    if (!returned) fail("the graph has no output node");
    return outputs;
  }

 private:
  const std::vector<Tensor>& value_of(const Node* node) const {
    auto found = values_.find(node);
    KILN_CHECK(found != values_.end(), "the value of ", describe(*node), " is not available (freed or never computed)");
    return found->second;
  }

  void collect(const Argument& value, std::vector<Tensor>& out) const {
    if (value.is_node()) {
      for (const Tensor& tensor : value_of(value.node())) out.push_back(tensor);
    } else if (value.is_list()) {
      for (const Argument& item : value.list()) collect(item, out);
    } else {
      KILN_CHECK(value.is_none(), "output value ", value.to_string(), " is not a node");
      out.emplace_back();
    }
  }

  std::vector<Tensor> call(const Node& node) {
    OpCall call = OpCall::of(node);
    std::vector<std::vector<Tensor>> arguments =
        tensor_arguments(call, [this](const Node* input) -> const std::vector<Tensor>& { return value_of(input); });
    return run_reference_kernel(call, arguments, bindings_, options_.check_meta);
  }

  const Graph& graph_;
  const std::map<std::string, Tensor>& inputs_;
  const std::map<std::string, int64_t>& bindings_;
  const InterpreterOptions& options_;
  std::map<std::string, std::vector<Tensor>>& recorded_;
  std::unordered_map<const Node*, std::vector<Tensor>> values_;
};

}  // namespace

std::vector<Tensor> Interpreter::run(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  recorded_.clear();
  bindings_ = bind_symbols(graph, inputs);
  return Run(graph, inputs, bindings_, options_, recorded_).execute();
}

std::vector<Tensor> interpret(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  return Interpreter().run(graph, inputs);
}

}  // namespace kiln::ir
