// Value bounds, op by op: see passes/value_bounds.h.
#include "passes/value_bounds.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "ir/op_registry.h"

namespace kiln::passes {

namespace {

using ir::Argument;
using ir::Node;

constexpr double kUnknown = std::numeric_limits<double>::infinity();
// A frozen parameter's bound, computed the first time a rule reads it (a pass over its values).
constexpr double kNotYetRead = -1.0;

// The bound every value of `dtype` has by its type: integers never exceed their range and are
// never NaN; floating values have none (NaN and infinities).
double dtype_bound(DType dtype) {
  switch (dtype) {
    case DType::boolean: return 1.0;
    case DType::i8: return 128.0;
    case DType::u8: return 255.0;
    case DType::i16: return 32768.0;
    case DType::u16: return 65535.0;
    case DType::i32: return 0x1p31;
    case DType::u32: return 0x1p32;
    case DType::i64: return 0x1p63;
    case DType::u64: return 0x1p64;
    default: return kUnknown;
  }
}

bool bounded_float(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

// A static count of elements, or nothing.
std::optional<int64_t> static_numel(const ir::TensorMeta& meta) { return meta.numel().maybe_constant(); }

// max over the rows of `matrix` (contiguous, [rows, columns...] flattened to [rows, per_row]) of
// the sum of |x| along a row, or (by_columns) max over columns of the sum down a column, for a
// [rows, columns] matrix. Unknown when a value is not finite.
double largest_abs_sum(const Tensor& matrix, bool by_columns) {
  if (!bounded_float(matrix.dtype()) || matrix.dim() < 1 || matrix.numel() == 0) return kUnknown;
  const Tensor t = matrix.contiguous();
  const int64_t rows = t.size(0), per_row = t.numel() / rows;
  auto sums = [&](const auto* x) {
    std::vector<double> sum(size_t(by_columns ? per_row : rows), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < per_row; ++c) sum[size_t(by_columns ? c : r)] += std::fabs(double(x[r * per_row + c]));
    double largest = 0.0;
    for (double s : sum) {
      if (!std::isfinite(s)) return kUnknown;
      largest = std::max(largest, s);
    }
    return largest;
  };
  return t.dtype() == DType::f32 ? sums(t.data<float>()) : sums(t.data<double>());
}

double largest_abs(const Tensor& tensor) {
  if (!bounded_float(tensor.dtype()) && dtype_bound(tensor.dtype()) == kUnknown) return kUnknown;
  const Tensor t = tensor.contiguous();
  double largest = 0.0;
  auto scan = [&](const auto* x) {  // false at a NaN
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = std::fabs(double(x[i]));
      if (std::isnan(v)) return false;
      if (v > largest) largest = v;
    }
    return true;
  };
  switch (t.dtype()) {
    case DType::f32:
      if (!scan(t.data<float>())) return kUnknown;
      break;
    case DType::f64:
      if (!scan(t.data<double>())) return kUnknown;
      break;
    default: return dtype_bound(t.dtype());  // integers: their type's range is enough here
  }
  return std::isfinite(largest) ? largest : kUnknown;
}

// clamp(v, low, high) as PyTorch computes it (the max first, then the min).
double clamped(double v, double low, double high) { return std::min(std::max(v, low), high); }

}  // namespace

ValueBounds::ValueBounds(const ir::Graph& graph, bool frozen, double input_bound)
    : graph_(graph),
      frozen_(frozen),
      input_bound_(input_bound),
      scans_(std::make_shared<std::map<std::pair<const Tensor*, int>, double>>()) {
  compute();
}

ValueBounds ValueBounds::for_inputs_within(double input_bound) const { return ValueBounds(*this, input_bound); }

ValueBounds::ValueBounds(const ValueBounds& scans_of, double input_bound)
    : graph_(scans_of.graph_), frozen_(scans_of.frozen_), input_bound_(input_bound), scans_(scans_of.scans_) {
  compute();
}

double ValueBounds::scanned(const Tensor& value, int kind) const {
  const auto key = std::make_pair(&value, kind);
  auto found = scans_->find(key);
  if (found != scans_->end()) return found->second;
  const double result = kind == 0 ? largest_abs(value) : largest_abs_sum(value, /*by_columns=*/kind == 2);
  scans_->emplace(key, result);
  return result;
}

void ValueBounds::compute() {
  for (const Node* node : graph_.nodes()) {
    if (node->op() == ir::OpKind::output) continue;
    std::vector<double> bounds = rule(*node);
    for (size_t i = 0; i < bounds.size() && i < node->meta.values.size(); ++i) {
      if (bounds[i] == kNotYetRead) continue;
      const DType dtype = node->meta.values[i].dtype;
      // Integers and bools are never NaN: their type bounds them whatever their operands.
      if (!bounded_float(dtype)) bounds[i] = dtype_bound(dtype);
      else if (!(bounds[i] <= kLargestBound)) bounds[i] = kUnknown;
    }
    bounds_[node] = std::move(bounds);
  }
}

double ValueBounds::of(const Node& node, size_t index) const {
  auto found = bounds_.find(&node);
  if (found == bounds_.end() || index >= found->second.size()) return kUnknown;
  double bound = found->second[index];
  if (bound == kNotYetRead) {
    // A frozen parameter, read now (mutable cache: only the parameters some rule reads are scanned).
    const Tensor* value = frozen_value(&node);
    bound = value ? scanned(*value, 0) : kUnknown;
    if (!(bound <= kLargestBound)) bound = kUnknown;
    const_cast<std::vector<double>&>(found->second)[index] = bound;
  }
  return bound;
}

const Tensor* ValueBounds::frozen_value(const Node* node) const {
  if (!node || node->op() != ir::OpKind::get_attr) return nullptr;
  if (!frozen_ && graph_.signature().attribute_kind(node->target()) != ir::InputKind::constant_tensor) return nullptr;
  return graph_.parameter(node->target());
}

double ValueBounds::argument(const Argument& a) const {
  if (a.is_node()) return of(*a.node());
  if (a.is_none()) return 0.0;
  if (a.is_number()) {
    const double v = std::fabs(a.floating());
    return std::isfinite(v) ? v : kUnknown;
  }
  if (a.is_list()) {
    double largest = 0.0;
    for (const Argument& element : a.list()) largest = std::max(largest, argument(element));
    return largest;
  }
  return kUnknown;
}

std::string ValueBounds::unknown_reason(const Node& node) const {
  if (of(node) <= kLargestBound) return "";
  // Back along the first operand without a bound, to the value where unknown bounds begin.
  const Node* at = &node;
  for (;;) {
    const Node* unknown_input = nullptr;
    for (const Node* input : at->input_nodes()) {
      if (!(of(*input) <= kLargestBound)) {
        unknown_input = input;
        break;
      }
    }
    if (!unknown_input) break;
    at = unknown_input;
  }
  const std::string name = "%" + at->name();
  if (at->op() == ir::OpKind::placeholder)
    return name + " is a " + std::string(dtype_name(at->value().dtype)) + " input (only f32 and f64 inputs are checked)";
  if (at->op() == ir::OpKind::get_attr)
    return frozen_value(at) ? name + " holds a NaN, an infinity or a value past 1e30" : name + " is a parameter that is not frozen";
  const std::vector<double> raw = rule(*at);
  if (!raw.empty() && std::isfinite(raw[0])) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", raw[0]);
    return name + " (" + at->target() + ") may reach " + text + ", past 1e30";
  }
  return name + " (" + at->target() + ") has no bound rule for its operands";
}

std::vector<double> ValueBounds::rule(const Node& node) const {
  const size_t values = std::max<size_t>(node.meta.values.size(), 1);
  const std::vector<double> unknown(values, kUnknown);
  if (node.op() == ir::OpKind::placeholder) {
    const DType dtype = node.value().dtype;
    return {bounded_float(dtype) ? input_bound_ : dtype_bound(dtype)};
  }
  if (node.op() == ir::OpKind::get_attr) return {frozen_value(&node) ? kNotYetRead : kUnknown};
  if (node.op() != ir::OpKind::call_function) return unknown;
  const std::string& op = node.target();
  if (op == "getitem") {
    const Argument& source = node.args().at(0);
    if (!source.is_node() || !node.args().at(1).is_int()) return unknown;
    return {of(*source.node(), size_t(node.args()[1].integer()))};
  }
  if (!ir::OpRegistry::global().find(op)) return unknown;
  std::optional<ir::OpCall> bound_call;
  try {
    bound_call.emplace(ir::OpCall::of(node));
  } catch (const Error&) {
    return unknown;
  }
  const ir::OpCall& call = *bound_call;
  auto b = [&](size_t i) { return argument(call.arg(i)); };
  const double self = call.args().empty() ? kUnknown : b(0);
  // Ops whose every element is one of self's (or within |x|).
  static const std::set<std::string, std::less<>> within_self = {
      "relu",    "abs",     "neg",       "clone",  "reshape", "view",   "permute",    "transpose", "expand",
      "squeeze", "unsqueeze", "slice",   "select", "as_strided", "gather", "index_select", "mean", "amax",
      "amin",    "max_pool", "adaptive_max_pool", "adaptive_avg_pool", "cast"};
  if (within_self.count(op)) return {self};
  // Ops bounded by 1 where their operand is finite (NaN stays NaN).
  if (op == "sigmoid" || op == "tanh" || op == "erf" || op == "sin" || op == "cos" || op == "sign")
    return {self < kUnknown ? 1.0 : kUnknown};
  if (op == "floor" || op == "ceil" || op == "round") return {self + 1.0};
  if (op == "exp" || op == "expm1") return {self <= 69.0 ? std::exp(self) + 1.0 : kUnknown};
  if (op == "clamp") {
    if (self == kUnknown) return unknown;
    const double low = call.is_none(1) ? -self : call.arg(1).floating();
    const double high = call.is_none(2) ? self : call.arg(2).floating();
    if (std::isnan(low) || std::isnan(high)) return unknown;
    return {std::max(std::fabs(clamped(-self, low, high)), std::fabs(clamped(self, low, high)))};
  }
  if (op == "add" || op == "sub") return {self + std::fabs(call.arg(2).floating()) * b(1)};
  if (op == "mul") return {self * b(1)};
  if (op == "maximum" || op == "minimum") return {std::max(self, b(1))};
  if (op == "where") return {std::max(b(1), b(2))};
  if (op == "div") {
    // By a number or frozen values away from zero; floor and trunc move the quotient by under 1.
    double smallest = kUnknown;
    if (call.arg(1).is_number()) {
      smallest = std::fabs(call.arg(1).floating());
    } else if (const Tensor* divisor = call.arg(1).is_node() ? frozen_value(call.arg(1).node()) : nullptr) {
      if (bounded_float(divisor->dtype())) {
        const Tensor t = divisor->contiguous();
        for (int64_t i = 0; i < t.numel(); ++i) smallest = std::min(smallest, std::fabs(t.flat_double(i)));
      }
    }
    if (!(smallest > 0.0) || smallest == kUnknown) return unknown;
    return {self / smallest + (call.is_none(2) ? 0.0 : 1.0)};
  }
  if (op == "full" || op == "full_like") return {b(1)};  // (size or self, fill_value)
  if (op == "sum" || op == "cumsum") {
    std::optional<int64_t> in = static_numel(call.tensor(0)), out = static_numel(node.value());
    if (!in || !out) return unknown;
    // (a prefix sum has at most the whole tensor's count of terms)
    if (op == "cumsum") return {self * double(*in)};
    return {self * double(*out == 0 ? 0 : *in / *out)};
  }
  if (op == "cat") return {b(0)};
  if (op == "pad") return {std::max(self, call.is_none(3) ? 0.0 : b(3))};
  if (op == "scatter") return {call.is_none(4) ? std::max(self, b(3)) : kUnknown};
  if (op == "index_put") return {call.bool_arg(3) ? kUnknown : std::max(self, b(2))};
  if (op == "avg_pool") return {call.is_none(6) ? self : kUnknown};
  if (op == "matmul" || op == "bmm") {
    const ir::TensorMeta& a = call.tensor(0);
    std::optional<int64_t> k = a.shape.empty() ? std::nullopt : a.shape.back().maybe_constant();
    if (!k) return unknown;
    const Tensor* w = call.arg(1).is_node() ? frozen_value(call.arg(1).node()) : nullptr;
    if (w && w->dim() == 2) return {self * scanned(*w, 2)};
    return {double(*k) * self * b(1)};
  }
  if (op == "convolution") {
    const double bias = b(2);
    const Tensor* w = call.arg(1).is_node() ? frozen_value(call.arg(1).node()) : nullptr;
    // Each output is its channel's weights times input elements (or padding's zeros), summed.
    if (w && !call.bool_arg(6)) return {self * scanned(*w, 1) + bias};
    // Otherwise: at most (input channels per group) x (kernel volume) terms per output; a
    // transposed convolution's weight is [in, out / groups, kernel...], and at most all of its
    // input channels times the kernel volume reach one output.
    const ir::TensorMeta& weight = call.tensor(1);
    std::optional<int64_t> volume = static_numel(weight), first = weight.shape.empty() ? std::nullopt : weight.shape[0].maybe_constant();
    if (!volume || !first || *first == 0) return unknown;
    const double terms = call.bool_arg(6) ? double(*volume) : double(*volume / *first);
    return {terms * self * b(1) + bias};
  }
  return unknown;
}

}  // namespace kiln::passes
