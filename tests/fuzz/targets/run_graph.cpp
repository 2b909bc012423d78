// Fuzz target: the `kiln run` path on small .kiln graphs: load (with fuzz_weights.h's
// parameters), inputs for every placeholder (each symbol bound to 2, values from fuzz_tensor),
// the reference interpreter, eager mode (the same kernels on the VM: the same values, bit for
// bit, and the same kind of error), and the CPU backend's pipeline up to its generated C++
// (passes, lowering, scheduling, emission; the system compiler is too slow for fuzzing).
// Graphs of more than kMaxNodes nodes, or with a value past kMaxValueBytes, are skipped, so
// that each input runs in milliseconds.
#include <cmath>
#include <cstring>

#include "compiler/compile_driver.h"
#include "compiler/eager_executor.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "kiln/error.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/fuzz_weights.h"
#include "tests/fuzz/targets/fuzz_targets.h"

namespace kiln::fuzz {

namespace {

constexpr size_t kMaxNodes = 48;
constexpr int64_t kMaxValueBytes = int64_t(1) << 20;

// Binds every symbol of the placeholders to 2; std::nullopt when a value of the graph is too
// large to run quickly (or its size cannot be evaluated).
std::optional<std::map<std::string, int64_t>> small_bindings(const ir::Graph& graph) {
  std::map<std::string, int64_t> bindings;
  for (ir::Node* node : graph.placeholders())
    for (const ir::SymInt& dim : node->value().shape)
      for (const std::string& symbol : dim.free_symbols()) bindings.emplace(symbol, 2);
  try {
    for (ir::Node* node : graph.nodes()) {
      for (const ir::TensorMeta& value : node->meta.values) {
        int64_t bytes = int64_t(dtype_size(value.dtype));
        for (const ir::SymInt& dim : value.shape) {
          int64_t size = dim.evaluate(bindings);
          if (size < 0) return std::nullopt;
          if (size > 0 && bytes > kMaxValueBytes / size) return std::nullopt;
          bytes *= size;
        }
      }
    }
  } catch (const Error&) {
    return std::nullopt;  // a size the bindings leave unbound, or negative
  }
  return bindings;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  if (std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0) return true;
  if (!is_floating(a.dtype())) return false;
  for (int64_t i = 0; i < x.numel(); ++i) {
    double p = x.flat_double(i), q = y.flat_double(i);
    if (!(p == q || (std::isnan(p) && std::isnan(q)))) return false;
  }
  return true;
}

std::map<std::string, Tensor> clones(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> copies;
  for (const auto& [name, tensor] : inputs) copies.emplace(name, tensor.clone());
  return copies;
}

}  // namespace

void fuzz_run_graph(std::string_view input) {
  ir::ParseOptions options;
  options.file_name = "fuzz.kiln";
  options.weights_file = "fuzz.safetensors";
  options.parameters = parameters_for_text(input);
  ir::Graph graph = ir::parse_graph(input, options);
  size_t nodes = 0;
  for (ir::Node* node : graph.nodes()) nodes += node != nullptr;
  if (nodes > kMaxNodes) return;
  std::optional<std::map<std::string, int64_t>> bindings = small_bindings(graph);
  if (!bindings) return;
  std::map<std::string, Tensor> inputs;
  uint64_t seed = 100;
  for (ir::Node* node : graph.placeholders())
    inputs.emplace(node->target(), fuzz_tensor(node->value().evaluate_shape(*bindings), node->value().dtype, ++seed));

  std::optional<std::vector<Tensor>> expected;
  std::string interpreter_error;
  try {
    expected = ir::Interpreter().run(graph, clones(inputs));
  } catch (const Error& error) {
    interpreter_error = error.what();
  }
  std::optional<std::vector<Tensor>> eager;
  std::string eager_error;
  try {
    eager = compiler::run_eager(graph, clones(inputs));
  } catch (const Error& error) {
    eager_error = error.what();
  }
  if (expected.has_value() != eager.has_value())
    throw FuzzPropertyFailure(expected ? "eager mode fails where the interpreter runs: " + eager_error
                                       : "eager mode runs where the interpreter fails: " + interpreter_error);
  if (expected) {
    if (expected->size() != eager->size()) throw FuzzPropertyFailure("eager mode returns another number of outputs");
    for (size_t i = 0; i < expected->size(); ++i)
      if (!same_bits((*expected)[i], (*eager)[i]))
        throw FuzzPropertyFailure("eager mode and the interpreter differ in output " + std::to_string(i));
  }
  std::string source = compiler::dump_codegen_stage(graph, "cpp");
  if (source.empty()) throw FuzzPropertyFailure("the CPU backend generated no source");
  if (!interpreter_error.empty()) throw Error(interpreter_error);
}

}  // namespace kiln::fuzz
