// The random graph generator's driver (random_graph), its value bookkeeping and shared
// building blocks, the choice of outputs, and random_inputs. The op families are in
// random_graph_core_ops.cpp, random_graph_composite_ops.cpp and random_graph_inplace_ops.cpp.
#include "tests/support/random_graph.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "ir/op_registry.h"
#include "kiln/error.h"
#include "tests/support/random_graph_builder.h"

namespace kiln::test_support {

namespace detail {

bool broadcast_compatible(const ir::SymShape& a, const ir::SymShape& b) {
  size_t common = std::min(a.size(), b.size());
  for (size_t i = 1; i <= common; ++i) {
    const ir::SymInt& x = a[a.size() - i];
    const ir::SymInt& y = b[b.size() - i];
    if (!(x == y) && !(x == ir::SymInt(1)) && !(y == ir::SymInt(1))) return false;
  }
  return true;
}

// ---- Random ----

uint64_t Random::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t Random::uniform(int64_t low, int64_t high) {
  KILN_CHECK(low <= high, "Random::uniform(", low, ", ", high, ")");
  uint64_t span = uint64_t(high - low) + 1;
  return low + int64_t(next() % span);  // the modulo bias is irrelevant at these spans
}

double Random::real(double low, double high) {
  double unit = double(next() >> 11) * 0x1.0p-53;
  return low + (high - low) * unit;
}

bool Random::chance(double probability) { return real(0, 1) < probability; }

size_t Random::weighted(const std::vector<double>& weights) {
  double total = 0;
  for (double weight : weights) total += weight;
  KILN_CHECK(total > 0, "Random::weighted with no positive weight");
  double point = real(0, total);
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    if (point < weights[i]) return i;
    point -= weights[i];
  }
  for (size_t i = weights.size(); i-- > 0;)
    if (weights[i] > 0) return i;
  return 0;
}

// ---- values ----

GraphBuilder::GraphBuilder(uint64_t seed, const RandomGraphOptions& options)
    : random_(seed * 0x2545F4914F6CDD1Dull + 0x1234567), options_(options) {}

bool GraphBuilder::is_float(int value) const { return is_floating(dtype(value)); }

int GraphBuilder::pick(const Accept& accept) {
  std::vector<int> candidates;
  for (int i = 0; i < int(values_.size()); ++i)
    if (!accept || accept(i)) candidates.push_back(i);
  if (candidates.empty()) return -1;
  if (random_.chance(0.5)) {  // one of the newest: grows deep chains
    int64_t recent = std::min<int64_t>(4, int64_t(candidates.size()));
    return candidates[candidates.size() - 1 - size_t(random_.uniform(0, recent - 1))];
  }
  return random_.pick(candidates);
}

int GraphBuilder::fresh(ir::Node* node, double bound) {
  Root root;
  root.node = node;
  root.bound = bound;
  root.is_input = node->op() == ir::OpKind::placeholder;
  root.writable = node->op() != ir::OpKind::get_attr;
  if (node->op() == ir::OpKind::call_function) {
    root.noisy = ir::OpRegistry::global().get(node->target()).composite;
    std::vector<ir::Node*> inputs = node->input_nodes();
    if (node->target() == "getitem") {  // a tuple node is not registered: look through it
      ir::Node* tuple = inputs.front();
      if (ir::OpRegistry::global().get(tuple->target()).composite) root.noisy = true;
      inputs = tuple->input_nodes();
    }
    for (ir::Node* input : inputs) {
      auto known = root_of_.find(input);
      if (known != root_of_.end() && roots_[size_t(known->second)].noisy) root.noisy = true;
    }
  }
  roots_.push_back(root);
  root_of_[node] = int(roots_.size()) - 1;
  values_.push_back(Value{node, int(roots_.size()) - 1, false});
  return int(values_.size()) - 1;
}

int GraphBuilder::view_of(ir::Node* node, int base, bool expands) {
  const Value& of = values_[size_t(base)];
  root_of_[node] = of.root;
  values_.push_back(Value{node, of.root, of.expanded || expands});
  return int(values_.size()) - 1;
}

// ---- building blocks ----

ir::Node* GraphBuilder::call(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs) {
  return graph_.create_call(target, std::move(args), std::move(kwargs));
}

int GraphBuilder::tame(int value, double limit) {
  if (bound(value) <= limit) return value;
  if (is_float(value)) {
    if (random_.chance(0.5)) return fresh(call("tanh", {node(value)}), 1.0);
    return fresh(call("clamp", {node(value), -limit, limit}), limit);
  }
  int64_t integer_limit = std::max<int64_t>(1, int64_t(limit));
  return fresh(call("clamp", {node(value), -integer_limit, integer_limit}), double(integer_limit));
}

int GraphBuilder::at_least_one(int value) {
  int source = value;
  if (is_bool(value)) source = fresh(call("cast", {node(value), DType::f32}), 1.0);
  int magnitude = fresh(call("abs", {node(source)}), bound(source));
  ir::Argument increment = is_float(source) ? ir::Argument(1.0) : ir::Argument(int64_t(1));
  return fresh(call("add", {node(magnitude), increment}), bound(source) + 1);
}

int GraphBuilder::new_input(const ir::SymShape& shape, DType dtype) {
  static const char* const kNames[] = {"x", "y", "z", "u", "v", "w"};
  std::string name = inputs_ < 6 ? kNames[inputs_] : "x" + std::to_string(inputs_);
  ++inputs_;
  ir::Node* placeholder = graph_.create_placeholder(name, ir::TensorMeta::contiguous(dtype, shape));
  for (const ir::SymInt& dim : shape)
    for (const std::string& symbol : dim.free_symbols()) bound_symbols_.insert(symbol);
  // Placeholders stay at the top of the graph, in creation order.
  for (ir::Node* other : graph_.nodes()) {
    if (other == placeholder) break;
    if (other->op() != ir::OpKind::placeholder) {
      graph_.move_before(placeholder, other);
      break;
    }
  }
  double magnitude = dtype == DType::boolean ? 1.0 : is_floating(dtype) ? 2.0 : 4.0;
  return fresh(placeholder, magnitude);
}

int GraphBuilder::new_parameter(const ir::SymShape& shape, double low, double high, bool allow_input) {
  bool symbolic = std::any_of(shape.begin(), shape.end(), [](const ir::SymInt& d) { return !d.is_constant(); });
  if (symbolic && !allow_input) fail("a parameter needs a static shape");
  // A symbolic shape cannot be a parameter: it becomes an input (values in [-2, 2]).
  if (symbolic || (allow_input && random_.chance(0.2))) return new_input(shape, DType::f32);
  Sizes sizes;
  for (const ir::SymInt& d : shape) sizes.push_back(d.constant());
  Tensor tensor = Tensor::empty(sizes, DType::f32);
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    // Multiples of 1/64: exact in every float type, short when printed.
    double value = std::round(random_.real(low, high) * 64) / 64;
    store_double(DType::f32, static_cast<char*>(tensor.data_ptr()) + i * 4, value);
  }
  std::string target = "params.w" + std::to_string(parameters_++);
  graph_.set_parameter(target, tensor);
  return fresh(graph_.create_get_attr(target), std::max(std::fabs(low), std::fabs(high)));
}

int GraphBuilder::index_vector(const ir::SymInt& size, int64_t length) {
  int64_t limit = smallest(size);
  if (limit <= 0) fail("no index into a dim that may be empty");
  int64_t start = random_.uniform(0, limit - 1);
  int64_t step = random_.uniform(1, 2);
  int64_t available = (limit - start + step - 1) / step;
  int64_t count = std::max<int64_t>(1, std::min(length, available));
  return fresh(call("arange", {start, start + count * step, step}), double(limit));
}

int GraphBuilder::condition_for(const ir::SymShape& shape) {
  auto broadcasts = [&](int v) { return broadcast_compatible(meta(v).shape, shape); };
  if (random_.chance(0.5)) {
    int existing = pick([&](int v) { return is_bool(v) && broadcasts(v); });
    if (existing >= 0) return existing;
  }
  int source = pick([&](int v) { return !is_bool(v) && steady(v) && broadcasts(v); });
  if (source < 0 || random_.chance(0.15)) return new_input(broadcast_partner_shape(shape), DType::boolean);
  static const char* const kComparisons[] = {"gt", "lt", "ge", "le", "ne"};
  const char* op = kComparisons[random_.uniform(0, 4)];
  return fresh(call(op, {node(source), scalar_for(dtype(source), 1.0)}), 1.0);
}

int GraphBuilder::partner_for(int value, const Accept& accept) {
  const ir::SymShape& shape = meta(value).shape;
  auto broadcasts = [&](int v) { return broadcast_compatible(meta(v).shape, shape) && (!accept || accept(v)); };
  double roll = random_.real(0, 1);
  if (roll < 0.6) {
    int existing = pick(broadcasts);
    if (existing >= 0) return existing;
  }
  if (roll < 0.8) return -1;
  DType type = is_float(value) || random_.chance(0.7) ? DType::f32 : dtype(value);
  if (type == DType::boolean) type = DType::f32;
  int input = new_input(broadcast_partner_shape(shape), type);
  if (accept && !accept(input)) return -1;
  return input;
}

ir::Argument GraphBuilder::scalar_for(DType type, double magnitude) {
  if (type == DType::boolean && random_.chance(0.5)) return ir::Argument(random_.chance(0.5));
  if (is_floating(type) || random_.chance(0.1)) {
    double value = std::round(random_.real(-magnitude, magnitude) * 4) / 4 + 0.0;  // + 0.0: no -0.0
    return ir::Argument(value);
  }
  int64_t limit = std::max<int64_t>(1, int64_t(magnitude));
  return ir::Argument(random_.uniform(-limit, limit));
}

// ---- shapes ----

ir::SymInt GraphBuilder::random_dim(bool allow_symbol) {
  if (use_symbols_ && allow_symbol && random_.chance(0.3)) return ir::SymInt::symbol(random_.chance(0.6) ? "s0" : "s1");
  if (allow_zero_sizes_ && random_.chance(0.12)) return ir::SymInt(0);
  static const std::vector<double> kWeights = {0, 0.2, 0.25, 0.25, 0.18, 0.12};
  return ir::SymInt(int64_t(random_.weighted(kWeights)));
}

ir::SymShape GraphBuilder::random_shape(int64_t rank) {
  ir::SymShape shape;
  for (int64_t i = 0; i < rank; ++i) shape.push_back(random_dim(true));
  return shape;
}

ir::SymShape GraphBuilder::random_shape() {
  static const std::vector<double> kRankWeights = {0.07, 0.2, 0.35, 0.26, 0.12};
  return random_shape(int64_t(random_.weighted(kRankWeights)));
}

ir::SymShape GraphBuilder::bound_shape() {
  ir::SymShape shape = random_shape();
  for (ir::SymInt& dim : shape)
    if (dim.is_symbol() && !bound_symbols_.count(dim.free_symbols().front())) dim = ir::SymInt(random_.uniform(1, 4));
  return shape;
}

ir::SymShape GraphBuilder::broadcast_partner_shape(const ir::SymShape& shape) {
  int64_t rank = int64_t(shape.size());
  int64_t keep = random_.chance(0.6) ? rank : random_.uniform(0, rank);
  ir::SymShape result(shape.end() - keep, shape.end());
  for (ir::SymInt& dim : result) {
    // Placeholders only take constants and bare symbols (the interpreter binds symbols from them).
    if (!dim.is_constant() && !dim.is_symbol()) dim = ir::SymInt(1);
    if (random_.chance(0.3)) dim = ir::SymInt(1);
  }
  if (result.size() < 4 && random_.chance(0.15)) result.insert(result.begin(), ir::SymInt(random_.uniform(1, 3)));
  return result;
}

ir::SymShape GraphBuilder::fitting_shape(const ir::SymShape& shape) {
  int64_t keep = random_.chance(0.5) ? int64_t(shape.size()) : random_.uniform(0, int64_t(shape.size()));
  ir::SymShape result(shape.end() - keep, shape.end());
  for (ir::SymInt& dim : result)
    if ((!dim.is_constant() && !dim.is_symbol()) || random_.chance(0.3)) dim = ir::SymInt(1);
  return result;
}

int64_t GraphBuilder::estimate(const ir::SymInt& size) {
  static const std::map<std::string, int64_t> kGenerous = {{"s0", 5}, {"s1", 5}};
  return size.evaluate(kGenerous);
}

int64_t GraphBuilder::estimate_numel(const ir::SymShape& shape) {
  int64_t numel = 1;
  for (const ir::SymInt& d : shape) numel *= std::max<int64_t>(estimate(d), 0);
  return numel;
}

std::optional<int64_t> GraphBuilder::select_index(const ir::SymInt& size) {
  int64_t least = smallest(size);
  if (least <= 0) return std::nullopt;
  if (size.is_constant()) return random_.uniform(-least, least - 1);
  int64_t index = random_.uniform(0, std::min<int64_t>(least, 2) - 1);
  return random_.chance(0.5) ? index : -index - 1;
}

namespace {

// Every binding of the symbols random graphs use that inputs may take (sizes 2 to 5).
const std::vector<std::map<std::string, int64_t>>& symbol_grid() {
  static const std::vector<std::map<std::string, int64_t>> grid = [] {
    std::vector<std::map<std::string, int64_t>> bindings;
    for (int64_t s0 = 2; s0 <= 5; ++s0)
      for (int64_t s1 = 2; s1 <= 5; ++s1) bindings.push_back({{"s0", s0}, {"s1", s1}});
    return bindings;
  }();
  return grid;
}

}  // namespace

int64_t GraphBuilder::smallest(const ir::SymInt& size) {
  if (size.is_constant()) return size.constant();
  int64_t least = INT64_MAX;
  for (const auto& bindings : symbol_grid()) least = std::min(least, size.evaluate(bindings));
  return least;
}

int64_t GraphBuilder::smallest_count(const ir::SymShape& shape, const std::vector<int64_t>& dims) {
  int64_t rank = int64_t(shape.size());
  ir::SymInt count(1);
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced =
        dims.empty() || std::any_of(dims.begin(), dims.end(), [&](int64_t d) { return d == i || d + rank == i; });
    if (reduced) count = count * shape[size_t(i)];
  }
  return smallest(count);
}

bool GraphBuilder::squeeze_is_static(const ir::SymShape& shape, const std::vector<int64_t>& dims) {
  int64_t rank = int64_t(shape.size());
  for (int64_t i = 0; i < rank; ++i) {
    bool candidate =
        dims.empty() || std::any_of(dims.begin(), dims.end(), [&](int64_t d) { return d == i || d + rank == i; });
    if (candidate && !shape[size_t(i)].is_constant() && smallest(shape[size_t(i)]) <= 1) return false;
  }
  return true;
}

int64_t GraphBuilder::random_dim_index(int64_t rank, bool allow_negative) {
  if (rank == 0) return allow_negative && random_.chance(0.5) ? -1 : 0;
  int64_t dim = random_.uniform(0, rank - 1);
  if (allow_negative && random_.chance(0.35)) dim -= rank;
  return dim;
}

// ---- the driver ----

void GraphBuilder::add_clone() {
  int source = pick();
  fresh(call("clone", {node(source)}), bound(source));
}

ir::Graph GraphBuilder::build() {
  use_symbols_ = options_.allow_symbolic && random_.chance(0.3);
  allow_zero_sizes_ = random_.chance(0.1);
  new_input(random_shape(), DType::f32);
  int64_t more_inputs = random_.uniform(0, 2);
  for (int64_t i = 0; i < more_inputs; ++i) add_input_step();

  using Family = void (GraphBuilder::*)();
  struct Choice {
    Family family;
    double weight;
  };
  const std::vector<Choice> choices = {
      {&GraphBuilder::add_input_step, 2},
      {&GraphBuilder::add_unary, 12},
      {&GraphBuilder::add_binary, 14},
      {&GraphBuilder::add_comparison, 3},
      {&GraphBuilder::add_where, 3},
      {&GraphBuilder::add_cast, 3},
      {&GraphBuilder::add_reduction, 9},
      {&GraphBuilder::add_view, 14},
      {&GraphBuilder::add_matmul, 4},
      {&GraphBuilder::add_cat, 3},
      {&GraphBuilder::add_creation, 2},
      {&GraphBuilder::add_copy_op, 4},
      {&GraphBuilder::add_conv_pool, 1.5},
      {&GraphBuilder::add_clone, options_.allow_inplace ? 4.0 : 1.0},
      {&GraphBuilder::add_composite, options_.allow_composite ? 9.0 : 0.0},
      {&GraphBuilder::add_inplace, options_.allow_inplace ? 12.0 : 0.0},
  };
  std::vector<double> weights;
  for (const Choice& choice : choices) weights.push_back(choice.weight);

  for (int step = 0; step < options_.num_ops; ++step) {
    for (int attempt = 0; attempt < 12; ++attempt) {
      if (inputs_ >= 5) weights[0] = 0;
      Family family = choices[random_.weighted(weights)].family;
      try {
        (this->*family)();
        break;
      } catch (const kiln::Error&) {
        // The registry rejected this choice (shape, dtype, ...): draw another.
      }
    }
  }
  choose_outputs();
  return std::move(graph_);
}

void GraphBuilder::choose_outputs() {
  std::vector<ir::Argument> outputs;
  std::vector<ir::Node*> chosen;
  auto add = [&](ir::Node* n) {
    chosen.push_back(n);
    outputs.emplace_back(n);
  };
  // Values nobody reads (the ends of chains), newest first, at most four; an in-place node
  // counts through its root below.
  std::vector<int> sinks;
  for (int v = int(values_.size()) - 1; v >= 0; --v) {
    ir::Node* n = node(v);
    if (n->op() != ir::OpKind::call_function || !n->users().empty()) continue;
    const ir::OpInfo* op = ir::OpRegistry::global().find(n->target());
    if (op && op->is_inplace()) continue;
    if (std::find(sinks.begin(), sinks.end(), v) != sinks.end()) continue;
    sinks.push_back(v);
  }
  for (int v : sinks) {
    if (chosen.size() >= 4) break;
    if (chosen.empty() || random_.chance(0.8)) add(node(v));
  }
  // The final state of storage written in place (an input's comes back as a copy-back).
  for (int root : mutated_roots_) {
    const Root& written = roots_[size_t(root)];
    if (written.is_input) {
      if (random_.chance(0.15)) add(written.node);  // an output that is an input
      continue;
    }
    if (random_.chance(0.8)) add(written.node);
    if (random_.chance(0.3)) {
      int alias = pick([&](int v) { return values_[size_t(v)].root == root && node(v) != written.node; });
      if (alias >= 0) add(node(alias));
    }
  }
  if (!chosen.empty() && random_.chance(0.08)) add(chosen.front());  // the same value twice
  if (chosen.empty()) add(node(int(values_.size()) - 1));
  graph_.create_output(std::move(outputs));
}

}  // namespace detail

ir::Graph random_graph(uint64_t seed, const RandomGraphOptions& options) {
  return detail::GraphBuilder(seed, options).build();
}

std::map<std::string, int64_t> default_symbol_sizes() { return {{"s0", 3}, {"s1", 2}}; }

std::map<std::string, Tensor> random_inputs(const ir::Graph& graph, uint64_t seed,
                                            const std::map<std::string, int64_t>& symbol_sizes) {
  detail::Random random(seed ^ 0xA5A5A5A5DEADBEEFull);
  std::map<std::string, Tensor> inputs;
  for (ir::Node* placeholder : graph.placeholders()) {
    const ir::TensorMeta& meta = placeholder->value();
    Tensor tensor = Tensor::empty(meta.evaluate_shape(symbol_sizes), meta.dtype);
    char* data = static_cast<char*>(tensor.data_ptr());
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      void* address = data + i * int64_t(tensor.element_size());
      if (is_floating(meta.dtype))
        store_double(meta.dtype, address, random.real(-2, 2));
      else if (meta.dtype == DType::boolean)
        store_int(meta.dtype, address, random.chance(0.5) ? 1 : 0);
      else
        store_int(meta.dtype, address, random.uniform(-4, 4));
    }
    inputs[placeholder->target()] = tensor;
  }
  return inputs;
}

}  // namespace kiln::test_support
