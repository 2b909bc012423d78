// FLOP count of a graph's matrix products and convolutions (see flop_count.h).
#include "passes/flop_count.h"

#include "passes/decompose.h"

namespace kiln::passes {

namespace {

// The shape of `meta` under `symbols`; nothing when a dim has a symbol they do not bind.
std::optional<std::vector<double>> dims_of(const ir::TensorMeta& meta, const std::map<std::string, int64_t>& symbols) {
  std::vector<double> dims;
  for (const ir::SymInt& dim : meta.shape) {
    for (const std::string& symbol : dim.free_symbols())
      if (!symbols.count(symbol)) return std::nullopt;
    dims.push_back(double(dim.evaluate(symbols)));
  }
  return dims;
}

double product(const std::vector<double>& dims, size_t begin = 0) {
  double result = 1;
  for (size_t i = begin; i < dims.size(); ++i) result *= dims[i];
  return result;
}

}  // namespace

std::optional<double> product_flops(const ir::Node& node, const std::map<std::string, int64_t>& symbols) {
  const std::string& op = node.target();
  const bool matmul = op == "matmul" || op == "bmm";
  const bool convolution = op == "convolution" || op == "deform_conv2d";
  if (node.op() != ir::OpKind::call_function || (!matmul && !convolution)) return 0.0;
  std::optional<std::vector<double>> out = dims_of(node.value(), symbols);
  std::optional<std::vector<double>> first = dims_of(node.args().at(0).node()->value(), symbols);
  std::optional<std::vector<double>> second = dims_of(node.args().at(1).node()->value(), symbols);
  if (!out || !first || !second) return std::nullopt;
  if (matmul) {
    // K is the left operand's last dim (a 1-d left operand is a row of K).
    const double k = first->empty() ? 1.0 : first->back();
    return 2 * product(*out) * k;
  }
  // convolution(input, weight, ...) and deform_conv2d(input, weight, offset, ...): weight is
  // [out_channels, in_channels / groups, taps...], or [in_channels, out_channels / groups, taps...]
  // when transposed (convolution's seventh argument).
  const bool transposed = op == "convolution" && node.args().size() > 6 && node.args()[6].is_bool() &&
                          node.args()[6].boolean();
  const double per_element = product(*second, 1);  // one group's channels on the other side, times the taps
  return 2 * (transposed ? product(*first) : product(*out)) * per_element;
}

std::optional<FlopCount> count_flops(const ir::Graph& decomposed, const std::map<std::string, int64_t>& symbols) {
  FlopCount count;
  for (const ir::Node* node : decomposed.nodes()) {
    std::optional<double> flops = product_flops(*node, symbols);
    if (!flops) return std::nullopt;
    if (*flops == 0) continue;
    count.total += *flops;
    count.by_op[node->target()] += *flops;
  }
  return count;
}

std::optional<FlopCount> count_model_flops(const ir::Graph& graph, const std::map<std::string, int64_t>& symbols) {
  ir::Graph decomposed = graph.clone();
  decompose(decomposed);
  return count_flops(decomposed, symbols);
}

}  // namespace kiln::passes
