// The random graph generator's core op families: new inputs, pointwise unary and binary
// ops, comparisons, where, casts, reductions, views, matmul, cat, creation ops, copies
// (pad, gather, index_select, scatter, index_put) and convolution/pooling. Each family adds
// one op (plus guards) or lets the registry's kiln::Error propagate so the driver redraws.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/error.h"
#include "tests/support/random_graph_builder.h"

namespace kiln::test_support::detail {

namespace {

using ir::Argument;
using ir::Kwargs;
using ir::SymInt;
using ir::SymShape;

double magnitude_of(const Argument& scalar) { return scalar.is_none() ? 0.0 : std::fabs(scalar.floating()); }

}  // namespace

void GraphBuilder::add_input_step() {
  static const std::vector<double> kDTypeWeights = {0.78, 0.12, 0.10};
  static const DType kDTypes[] = {DType::f32, DType::i64, DType::boolean};
  DType type = kDTypes[random_.weighted(kDTypeWeights)];
  int model = values_.empty() || random_.chance(0.4) ? -1 : pick();
  new_input(model >= 0 ? broadcast_partner_shape(meta(model).shape) : random_shape(), type);
}

void GraphBuilder::add_unary() {
  static const char* const kOps[] = {"neg",        "abs",   "exp",  "log",         "log1p",   "expm1", "sqrt", "rsqrt",
                                     "reciprocal", "sin",   "cos",  "tanh",        "sigmoid", "erf",   "relu", "floor",
                                     "ceil",       "round", "sign", "logical_not", "isnan",   "clamp", "erfinv"};
  std::string op = kOps[random_.uniform(0, std::size(kOps) - 1)];
  bool logical = op == "logical_not" || op == "isnan";
  bool discontinuous = op == "floor" || op == "ceil" || op == "round" || op == "sign" || op == "logical_not";
  int v = pick([&](int i) { return (logical || !is_bool(i)) && (!discontinuous || steady(i)); });
  if (v < 0) fail("no operand");
  if (op == "exp" || op == "expm1") {
    int x = tame(v, 3.0);
    fresh(call(op, {node(x)}), std::exp(bound(x)) + 1);
  } else if (op == "log" || op == "rsqrt" || op == "reciprocal") {
    int x = at_least_one(v);  // log(|v| + 1), 1 / (|v| + 1), ...
    fresh(call(op, {node(x)}), op == "log" ? std::log(bound(x)) + 1 : 1.0);
  } else if (op == "log1p" || op == "sqrt") {
    int x = fresh(call("abs", {node(v)}), bound(v));
    fresh(call(op, {node(x)}), op == "log1p" ? std::log1p(bound(x)) + 1 : std::sqrt(bound(x)) + 1);
  } else if (op == "sin" || op == "cos" || op == "tanh" || op == "sigmoid" || op == "erf") {
    fresh(call(op, {node(tame(v, kSoftLimit))}), 1.0);
  } else if (op == "erfinv") {  // defined on [-1, 1] and steep near its ends: 0.9 tanh(v) keeps it calm
    int squashed = fresh(call("tanh", {node(tame(v, kSoftLimit))}), 1.0);
    int inside = fresh(call("mul", {node(squashed), 0.9}), 0.9);
    fresh(call(op, {node(inside)}), 1.2);  // erfinv(0.9) = 1.163
  } else if (op == "sign" || logical) {
    fresh(call(op, {node(v)}), 1.0);
  } else if (op == "clamp") {
    Argument low = random_.chance(0.75) ? scalar_for(dtype(v), 2.0) : Argument();
    Argument high = low.is_none() || random_.chance(0.5) ? scalar_for(dtype(v), 2.0) : Argument();
    if (!low.is_none() && !high.is_none() && low.floating() > high.floating()) std::swap(low, high);
    double limit = std::max(magnitude_of(low), magnitude_of(high));
    double magnitude = !low.is_none() && !high.is_none() ? limit : std::max(bound(v), limit);
    if (random_.chance(0.3))
      fresh(call(op, {node(v)}, {{"min", low}, {"max", high}}), magnitude);
    else
      fresh(call(op, {node(v), low, high}), magnitude);
  } else {  // neg, abs, relu, floor, ceil, round
    fresh(call(op, {node(v)}), bound(v) + 1);
  }
}

void GraphBuilder::add_binary() {
  static const std::vector<double> kWeights = {4, 3, 3, 2, 1.5, 1, 1, 1, 1};
  static const char* const kOps[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "remainder"};
  std::string op = kOps[random_.weighted(kWeights)];
  int a = pick([&](int i) { return !is_bool(i); });
  if (a < 0) fail("no operand");
  a = tame(a, kSoftLimit);
  int b = partner_for(a, [&](int i) { return !is_bool(i); });
  if (b >= 0) b = tame(b, kSoftLimit);
  bool operands_steady = steady(a) && (b < 0 || steady(b));
  if (op == "remainder" && !operands_steady) op = "fmod";  // remainder jumps at 0, fmod does not
  bool swap = b >= 0 && random_.chance(0.3);
  auto operands = [&](int first, const Argument& second) -> std::vector<Argument> {
    if (swap && second.is_node()) return {second, node(first)};
    return {node(first), second};
  };
  Argument other = b >= 0 ? Argument(node(b)) : scalar_for(dtype(a));
  double other_bound = b >= 0 ? bound(b) : magnitude_of(other);

  if (op == "add" || op == "sub") {
    Kwargs kwargs;
    double alpha = 1;
    if (random_.chance(0.2)) {
      bool floating = is_float(a) || (b >= 0 && is_float(b)) || other.is_float();
      Argument value =
          floating ? Argument(random_.chance(0.5) ? 0.5 : -2.0) : Argument(int64_t(random_.chance(0.5) ? 2 : -1));
      alpha = std::fabs(value.floating());
      kwargs.emplace_back("alpha", value);
    }
    fresh(call(op, operands(a, other), kwargs), bound(a) + alpha * other_bound);
  } else if (op == "mul") {
    if (bound(a) * other_bound > 1000) {
      a = tame(a, 10);
      if (b >= 0) {
        b = tame(b, 10);
        other = node(b);
      }
      other_bound = b >= 0 ? bound(b) : other_bound;
    }
    fresh(call(op, operands(a, other)), bound(a) * other_bound);
  } else if (op == "div" || op == "fmod" || op == "remainder") {
    // The divisor is |b| + 1 or a nonzero number; the dividend may also be a number.
    Argument divisor;
    double smallest = 1;
    if (b >= 0) {
      divisor = node(at_least_one(b));
    } else {
      static const double kDivisors[] = {2.0, -4.0, 0.5, 3.0, -1.5};
      double value = kDivisors[random_.uniform(0, 4)];
      divisor = is_float(a) || random_.chance(0.5) ? Argument(value) : Argument(int64_t(value < 0 ? -3 : 2));
      smallest = std::fabs(divisor.floating());
    }
    Kwargs kwargs;
    if (op == "div" && operands_steady && random_.chance(0.3))
      kwargs.emplace_back("rounding_mode", random_.chance(0.5) ? "trunc" : "floor");
    std::vector<Argument> args = {node(a), divisor};
    if (divisor.is_node() && random_.chance(0.1)) args[0] = Argument(random_.chance(0.5) ? 1.5 : -3.0);
    double result = op == "div" ? std::max(bound(a), 3.0) / std::min(smallest, 1.0) + 1
                                : std::max(bound(a), b >= 0 ? bound(b) + 1 : smallest) + 1;
    fresh(call(op, args, kwargs), result);
  } else if (op == "pow") {
    double roll = random_.real(0, 1);
    if (roll < 0.35) {  // x ** 2, x ** 3
      int x = tame(a, 8);
      int64_t exponent = random_.uniform(2, 3);
      fresh(call(op, {node(x), is_float(x) && random_.chance(0.5) ? Argument(double(exponent)) : Argument(exponent)}),
            std::pow(bound(x), double(exponent)) + 1);
    } else if (roll < 0.6) {  // (|x| + 1) ** 0.5 or ** -1
      int x = at_least_one(a);
      double exponent = random_.chance(0.5) ? 0.5 : -1.0;
      fresh(call(op, {node(x), exponent}), std::pow(bound(x), 0.5) + 1);
    } else if (roll < 0.85) {  // (|x| + 1) ** tanh(y): tensor exponent
      int x = at_least_one(tame(a, 20));
      int y =
          b >= 0 ? b : pick([&](int i) { return !is_bool(i) && broadcast_compatible(meta(i).shape, meta(x).shape); });
      if (y < 0) fail("no exponent");
      int e = fresh(call("tanh", {node(y)}), 1.0);
      fresh(call(op, {node(x), node(e)}), bound(x) + 1);
    } else {  // 2 ** tanh(x): a number base
      int e = fresh(call("tanh", {node(a)}), 1.0);
      fresh(call(op, {2.0, node(e)}), 2.0);
    }
  } else {  // maximum, minimum
    if (b < 0) {
      b = new_input(broadcast_partner_shape(meta(a).shape), is_float(a) ? DType::f32 : dtype(a));
      other = node(b);
    }
    fresh(call(op, operands(a, other)), std::max(bound(a), bound(b)));
  }
}

void GraphBuilder::add_comparison() {
  static const char* const kOps[] = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"};
  std::string op = kOps[random_.uniform(0, std::size(kOps) - 1)];
  auto steady_value = [&](int i) { return steady(i); };
  int a = pick(steady_value);
  if (a < 0) fail("no steady operand");
  int b = partner_for(a, steady_value);
  Argument other = b >= 0 ? Argument(node(b)) : scalar_for(dtype(a), 1.0);
  if (b >= 0 && random_.chance(0.3))
    fresh(call(op, {other, node(a)}), 1.0);
  else
    fresh(call(op, {node(a), other}), 1.0);
}

void GraphBuilder::add_where() {
  int a = pick();
  int condition = condition_for(meta(a).shape);
  int b = partner_for(a);
  Argument other = b >= 0 ? Argument(node(b)) : scalar_for(dtype(a));
  double magnitude = std::max(bound(a), b >= 0 ? bound(b) : magnitude_of(other));
  if (random_.chance(0.5))
    fresh(call("where", {node(condition), node(a), other}), magnitude);
  else
    fresh(call("where", {node(condition), other, node(a)}), magnitude);
}

void GraphBuilder::add_cast() {
  static const DType kTargets[] = {DType::f32, DType::i64, DType::boolean};
  int v = pick();
  DType target = kTargets[random_.uniform(0, 2)];
  if (!steady(v)) target = DType::f32;  // truncation and != 0 jump
  fresh(call("cast", {node(v), target}), target == DType::boolean ? 1.0 : bound(v) + 1);
}

std::vector<int64_t> GraphBuilder::random_reduce_dims(int64_t rank) {
  if (rank == 0) return random_.chance(0.5) ? std::vector<int64_t>{} : std::vector<int64_t>{random_dim_index(0)};
  std::vector<int64_t> order(static_cast<size_t>(rank));
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[size_t(random_.uniform(0, int64_t(i) - 1))]);
  int64_t count = random_.chance(0.6) ? 1 : random_.uniform(1, rank);
  std::vector<int64_t> dims(order.begin(), order.begin() + count);
  for (int64_t& dim : dims)
    if (random_.chance(0.35)) dim -= rank;
  return dims;
}

void GraphBuilder::add_reduction() {
  static const std::vector<double> kWeights = {4, 1, 2, 2, 1, 1.5, 1, 1.5, 1, 1.5};
  static const char* const kOps[] = {"sum",    "prod",   "mean", "amax",     "amin",
                                     "argmax", "argmin", "var",  "var_mean", "cumsum"};
  std::string op = kOps[random_.weighted(kWeights)];
  bool floating_only = op == "mean" || op == "var" || op == "var_mean";
  bool arg = op == "argmax" || op == "argmin";  // ties of noisy values would flip
  int v = pick([&](int i) { return (!floating_only || is_float(i)) && (!arg || steady(i)); });
  if (v < 0) fail("no operand");
  const SymShape& shape = meta(v).shape;
  int64_t r = rank(v);
  bool keepdim = random_.chance(0.4);

  if (op == "argmax" || op == "argmin") {
    Argument dim = random_.chance(0.25) ? Argument() : Argument(random_dim_index(r));
    std::vector<Argument> args = {node(v), dim};
    if (keepdim || random_.chance(0.3)) args.emplace_back(keepdim);
    fresh(call(op, args), double(estimate_numel(shape)));
    return;
  }
  if (op == "cumsum") {
    int64_t dim = random_dim_index(r);
    int64_t length = r == 0 ? 1 : estimate(shape[size_t(dim < 0 ? dim + r : dim)]);
    int x = tame(v, std::max(1.0, 1000.0 / double(std::max<int64_t>(length, 1))));
    Kwargs kwargs;
    if (!is_float(x) && random_.chance(0.3)) kwargs.emplace_back("dtype", DType::f32);
    fresh(call(op, {node(x), dim}, kwargs), bound(x) * double(std::max<int64_t>(length, 1)));
    return;
  }

  std::vector<int64_t> dims = random_reduce_dims(r);
  int64_t reduced = 1;
  if (dims.empty()) reduced = estimate_numel(shape);
  for (int64_t dim : dims)
    if (r > 0) reduced *= estimate(shape[size_t(dim < 0 ? dim + r : dim)]);
  reduced = std::max<int64_t>(reduced, 1);
  // None and [] both mean every dim; amax/amin only take a list.
  bool all_dims = dims.empty();
  Argument dim_arg =
      all_dims && op != "amax" && op != "amin" && random_.chance(0.5) ? Argument() : Argument::ints(dims);

  if (op == "amax" || op == "amin") {
    std::vector<Argument> args = {node(v), dim_arg};
    if (keepdim || random_.chance(0.3)) args.emplace_back(keepdim);
    fresh(call(op, args), bound(v));
  } else if (op == "var" || op == "var_mean") {
    int x = tame(v, 10);
    // The variance of one element (correction 1) or of none is NaN: keep that to an
    // occasional edge case.
    int64_t count = smallest_count(shape, dims);
    if (count == 0 && random_.chance(0.9)) fail("variance of nothing");
    Kwargs kwargs;
    if (count == 1 && random_.chance(0.9))
      kwargs.emplace_back("correction", 0.0);
    else if (random_.chance(0.4))
      kwargs.emplace_back("correction", random_.chance(0.5) ? 0.0 : 1.0);
    if (keepdim) kwargs.emplace_back("keepdim", true);
    double variance = 4 * bound(x) * bound(x) + 1;
    ir::Node* result = call(op, {node(x), dim_arg}, kwargs);
    if (op == "var") {
      fresh(result, variance);
    } else {
      fresh(call("getitem", {result, int64_t(0)}), variance);
      if (random_.chance(0.7)) fresh(call("getitem", {result, int64_t(1)}), bound(x));
    }
  } else {  // sum, prod, mean
    if (op == "mean" && smallest_count(shape, dims) == 0 && random_.chance(0.9)) fail("mean of nothing");
    int x = v;
    double result = bound(v);
    if (op == "sum") {
      x = tame(v, std::max(1.0, 1000.0 / double(reduced)));
      result = bound(x) * double(reduced);
    } else if (op == "prod") {
      if (reduced > 8) fail("prod over too many elements");
      x = tame(v, 1.5);
      result = std::pow(std::max(bound(x), 1.0), double(reduced));
    }
    std::vector<Argument> args = {node(x), dim_arg};
    Kwargs kwargs;
    if (keepdim || random_.chance(0.2)) args.emplace_back(keepdim);
    if (op != "mean" && !is_float(x) && random_.chance(0.3)) kwargs.emplace_back("dtype", DType::f32);
    fresh(call(op, args, kwargs), result);
  }
}

SymShape GraphBuilder::reshape_target(const SymShape& shape) {
  SymShape dims = shape;
  int64_t changes = random_.uniform(1, 2);
  for (int64_t change = 0; change < changes; ++change) {
    int64_t kind = random_.uniform(0, 4);
    if (kind == 0 && dims.size() >= 2) {  // merge two neighbours
      size_t at = size_t(random_.uniform(0, int64_t(dims.size()) - 2));
      dims[at] = dims[at] * dims[at + 1];
      dims.erase(dims.begin() + long(at) + 1);
    } else if (kind == 1 && !dims.empty()) {  // split a constant dim
      size_t at = size_t(random_.uniform(0, int64_t(dims.size()) - 1));
      std::optional<int64_t> size = constant(dims[at]);
      if (!size || *size < 4) continue;
      std::vector<int64_t> divisors;
      for (int64_t f = 2; f < *size; ++f)
        if (*size % f == 0) divisors.push_back(f);
      if (divisors.empty()) continue;
      int64_t f = random_.pick(divisors);
      dims[at] = SymInt(*size / f);
      dims.insert(dims.begin() + long(at), SymInt(f));
    } else if (kind == 2 && dims.size() < 4) {  // insert a 1
      dims.insert(dims.begin() + random_.uniform(0, int64_t(dims.size())), SymInt(1));
    } else if (kind == 3) {  // drop a 1
      auto one = std::find(dims.begin(), dims.end(), SymInt(1));
      if (one != dims.end()) dims.erase(one);
    } else {  // flatten
      SymInt numel(1);
      for (const SymInt& d : dims) numel = numel * d;
      dims = {numel};
    }
  }
  if (!dims.empty() && random_.chance(0.4)) dims[size_t(random_.uniform(0, int64_t(dims.size()) - 1))] = SymInt(-1);
  return dims;
}

void GraphBuilder::mark_reshape_read(int value) {
  // A reshape of a non-contiguous tensor may copy or view: nothing may write that storage
  // after it, or the two readings would differ.
  roots_[size_t(values_[size_t(value)].root)].writable = false;
}

void GraphBuilder::add_view() {
  static const std::vector<double> kWeights = {2, 3, 3, 2, 2, 1.5, 2, 2.5, 1.5};
  static const char* const kOps[] = {"permute", "transpose", "slice",   "select", "unsqueeze",
                                     "squeeze", "expand",    "reshape", "view"};
  std::string op = kOps[random_.weighted(kWeights)];
  int v = pick();
  const ir::TensorMeta& m = meta(v);
  const SymShape& shape = m.shape;
  int64_t r = m.rank();

  if (op == "permute") {
    std::vector<int64_t> dims(static_cast<size_t>(r));
    std::iota(dims.begin(), dims.end(), 0);
    for (size_t i = dims.size(); i > 1; --i) std::swap(dims[i - 1], dims[size_t(random_.uniform(0, int64_t(i) - 1))]);
    for (int64_t& d : dims)
      if (random_.chance(0.2)) d -= r;
    view_of(call(op, {node(v), Argument::ints(dims)}), v);
  } else if (op == "transpose") {
    view_of(call(op, {node(v), random_dim_index(r), random_dim_index(r)}), v);
  } else if (op == "slice") {
    if (r == 0) fail("slice of a 0-d tensor");
    int64_t dim = random_dim_index(r);
    int64_t size = estimate(shape[size_t(dim < 0 ? dim + r : dim)]);
    auto bound_arg = [&]() -> Argument {
      double roll = random_.real(0, 1);
      if (roll < 0.3) return Argument();
      if (roll < 0.38) return Argument(int64_t(9223372036854775807));  // sys.maxsize: "to the end"
      return Argument(random_.uniform(-size - 1, size + 1));
    };
    Argument start = bound_arg(), end = bound_arg();
    int64_t step = random_.chance(0.7) ? 1 : random_.uniform(2, 3);
    std::vector<Argument> args = {node(v), dim, start, end};
    if (step != 1 || random_.chance(0.2)) args.emplace_back(step);
    view_of(call(op, args), v);
  } else if (op == "select") {
    if (r == 0) fail("select of a 0-d tensor");
    int64_t dim = random_dim_index(r);
    std::optional<int64_t> index = select_index(shape[size_t(dim < 0 ? dim + r : dim)]);
    if (!index) fail("select from an empty dim");
    view_of(call(op, {node(v), dim, *index}), v);
  } else if (op == "unsqueeze") {
    int64_t dim = random_.uniform(-(r + 1), r);
    view_of(call(op, {node(v), dim}), v);
  } else if (op == "squeeze") {
    std::vector<Argument> args = {node(v)};
    std::vector<int64_t> dims;
    if (random_.chance(0.6)) {
      for (int64_t i = 0; i < r; ++i)
        if ((shape[size_t(i)] == SymInt(1) && random_.chance(0.7)) || random_.chance(0.15)) dims.push_back(i);
      if (dims.empty()) dims.push_back(random_dim_index(r));
      args.push_back(Argument::ints(dims));
    }
    // A symbolic dim that may be 1 at run time would be squeezed by the kernel only.
    if (!squeeze_is_static(shape, dims)) fail("squeeze of a dim that may be 1");
    view_of(call(op, args), v);
  } else if (op == "expand") {
    if (r > 3) fail("no expand of rank 4");
    SymShape sizes;
    if (r < 4 && random_.chance(0.3)) sizes.push_back(SymInt(random_.uniform(1, 3)));
    for (const SymInt& d : shape) {
      if (d == SymInt(1)) {
        bool symbol = !bound_symbols_.empty() && random_.chance(0.2);
        sizes.push_back(symbol ? SymInt::symbol(*bound_symbols_.begin()) : SymInt(random_.uniform(1, 4)));
      } else {
        sizes.push_back(random_.chance(0.5) ? SymInt(-1) : d);
      }
    }
    view_of(call(op, {node(v), Argument::sym_ints(sizes)}), v, /*expands=*/true);
  } else {  // reshape, view
    SymShape target = reshape_target(shape);
    bool contiguous = m.is_contiguous();
    if (op == "reshape" && !contiguous && random_.chance(0.3)) fail("skipped a copying reshape");
    ir::Node* result = call(op, {node(v), Argument::sym_ints(target)});
    if (op == "reshape" && !contiguous) mark_reshape_read(v);
    view_of(result, v);
  }
}

void GraphBuilder::add_matmul() {
  int a = pick([&](int i) { return is_float(i) && rank(i) >= 1; });
  if (a < 0) fail("no matrix");
  a = tame(a, 3);
  const SymShape& shape = meta(a).shape;
  int64_t r = rank(a);
  SymInt k = shape.back();
  bool batched = r == 3 && random_.chance(0.25);
  // The right operand: [k], [k, m], or batch dims + [k, m].
  SymShape wanted;
  int64_t other_rank = batched ? 3 : int64_t(random_.weighted({1, 4, r >= 3 ? 1.5 : 0.5}) + 1);
  SymInt m = random_dim(true);
  if (other_rank == 1) {
    wanted = {k};
  } else if (other_rank == 2) {
    wanted = {k, m};
  } else {
    wanted = r >= 3 ? SymShape(shape.begin(), shape.end() - 2) : SymShape{SymInt(random_.uniform(1, 2))};
    if (!batched)
      for (SymInt& d : wanted)
        if (random_.chance(0.3)) d = SymInt(1);
    wanted.push_back(k);
    wanted.push_back(m);
  }
  for (SymInt& d : wanted)
    if (!d.is_constant() && !d.is_symbol()) d = SymInt(1);
  int b = pick([&](int i) {
    const SymShape& s = meta(i).shape;
    if (!is_float(i) || s.size() != wanted.size() || bound(i) > 3) return false;
    return s[s.size() - (s.size() == 1 ? 1 : 2)] == k;
  });
  if (b < 0 || random_.chance(0.4)) b = new_parameter(wanted, -0.5, 0.5);
  double magnitude = bound(a) * bound(b) * double(std::max<int64_t>(estimate(k), 1)) + 1;
  if (batched)
    fresh(call("bmm", {node(a), node(b)}), magnitude);
  else
    fresh(call("matmul", {node(a), node(b)}), magnitude);
}

void GraphBuilder::add_cat() {
  int a = pick([&](int i) { return rank(i) >= 1; });
  if (a < 0) fail("no operand");
  int64_t r = rank(a);
  int64_t dim = random_dim_index(r);
  size_t d = size_t(dim < 0 ? dim + r : dim);
  const SymShape shape = meta(a).shape;
  auto fits = [&](int i) {
    const SymShape& s = meta(i).shape;
    if (s.size() != shape.size() || dtype(i) != dtype(a)) return false;
    for (size_t j = 0; j < s.size(); ++j)
      if (j != d && !(s[j] == shape[j])) return false;
    return true;
  };
  std::vector<int> parts = {a};
  int64_t count = random_.chance(0.1) ? 1 : random_.uniform(2, 3);
  while (int64_t(parts.size()) < count) {
    double roll = random_.real(0, 1);
    int part = -1;
    if (roll < 0.5) part = pick(fits);
    if (part < 0 && roll < 0.75) {
      part = view_of(call("slice", {node(a), dim, random_.uniform(0, 1), ir::Argument()}), a);
    }
    if (part < 0) {
      SymShape other = shape;
      for (SymInt& s : other)
        if (!s.is_constant() && !s.is_symbol()) fail("cat partner of a derived symbolic shape");
      other[d] = allow_zero_sizes_ && random_.chance(0.2) ? SymInt(0) : random_dim(true);
      part = new_input(other, dtype(a));
    }
    parts.push_back(part);
  }
  std::vector<Argument> tensors;
  double magnitude = 0;
  for (int part : parts) {
    tensors.emplace_back(node(part));
    magnitude = std::max(magnitude, bound(part));
  }
  if (random_.chance(0.2))
    fresh(call("cat", {Argument(tensors)}, {{"dim", dim}}), magnitude);
  else
    fresh(call("cat", {Argument(tensors), dim}), magnitude);
}

void GraphBuilder::add_creation() {
  int64_t kind = random_.uniform(0, options_.allow_random ? 5 : 3);
  if (kind == 0) {  // full
    SymShape shape = bound_shape();
    Argument value = scalar_for(random_.chance(0.8) ? DType::f32 : DType::i64, 2.0);
    Kwargs kwargs;
    if (random_.chance(0.2)) kwargs.emplace_back("dtype", DType::f32);
    fresh(call("full", {Argument::sym_ints(shape), value}, kwargs), magnitude_of(value));
  } else if (kind == 1) {  // full_like
    int v = pick();
    Argument value = scalar_for(dtype(v), 2.0);
    fresh(call("full_like", {node(v), value}), magnitude_of(value) + 1);
  } else if (kind == 2) {  // arange
    if (random_.chance(0.5)) {
      int64_t start = random_.uniform(-3, 2), end = start + random_.uniform(1, 6), step = random_.uniform(1, 2);
      fresh(call("arange", {start, end, step}), double(std::max(std::abs(start), std::abs(end))));
    } else {
      double start = random_.uniform(-8, 0) / 4.0, step = random_.uniform(1, 4) / 4.0;
      double end = start + step * double(random_.uniform(1, 5));
      fresh(call("arange", {start, end, step}), std::max(std::fabs(start), std::fabs(end)));
    }
  } else if (kind == 3) {  // iota
    int64_t length = random_.uniform(1, 5), start = random_.uniform(-2, 2), step = random_.uniform(1, 2);
    fresh(call("iota", {length}, {{"start", start}, {"step", step}}), double(std::abs(start) + length * step));
  } else {  // rand, randn
    bool normal = kind == 5;
    SymShape shape = bound_shape();
    Kwargs kwargs = {{"seed", random_.uniform(0, 1000)}};
    if (random_.chance(0.5)) kwargs.emplace_back("offset", random_.uniform(0, 64));
    fresh(call(normal ? "randn" : "rand", {Argument::sym_ints(shape)}, kwargs), normal ? 8.0 : 1.0);
  }
}

void GraphBuilder::add_copy_op() {
  int64_t kind = random_.uniform(0, 4);
  if (kind == 0) {  // pad
    int v = pick([&](int i) { return rank(i) >= 1; });
    if (v < 0) fail("no operand");
    int64_t dims = random_.uniform(1, std::min<int64_t>(rank(v), 3));
    static const char* const kModes[] = {"constant", "constant", "reflect", "replicate", "circular"};
    std::string mode = kModes[random_.uniform(0, 4)];
    std::vector<int64_t> pad;
    for (int64_t i = 0; i < 2 * dims; ++i) pad.push_back(random_.chance(0.1) ? -1 : random_.uniform(0, 2));
    // Every padded dim must stay valid at run time too: crop (a negative pad) only a dim of
    // at least 3, and keep reflect/circular pads below the dim's size.
    for (size_t i = 0; i < pad.size(); ++i) {
      int64_t size = smallest(meta(v).shape[size_t(rank(v) - 1 - int64_t(i / 2))]);
      if (pad[i] < 0 && size < 3) pad[i] = 0;
      if (size <= 0) mode = "constant";  // reflect/circular need elements to repeat
      if ((mode == "reflect" || mode == "circular") && pad[i] >= size) pad[i] = std::max<int64_t>(size - 1, 0);
    }
    std::vector<Argument> args = {node(v), Argument::ints(pad)};
    if (mode != "constant" || random_.chance(0.5)) args.emplace_back(mode);
    double magnitude = bound(v);
    if (mode == "constant" && random_.chance(0.5)) {
      if (args.size() == 2) args.emplace_back(mode);
      args.emplace_back(1.5);
      magnitude = std::max(magnitude, 1.5);
    }
    fresh(call("pad", args), magnitude);
  } else if (kind == 1) {  // gather(v, dim, argmax(w, dim, keepdim=True)): along-dim indices in range
    int v = pick([&](int i) { return rank(i) >= 1; });
    if (v < 0) fail("no operand");
    int64_t dim = random_dim_index(rank(v));
    int w = pick([&](int i) { return meta(i).shape == meta(v).shape && !is_bool(i) && steady(i); });
    if (w < 0) fail("no steady value to index by");
    int index = fresh(call("argmax", {node(w), dim, true}), double(estimate_numel(meta(w).shape)));
    fresh(call("gather", {node(v), dim, node(index)}), bound(v));
  } else if (kind == 2) {  // index_select
    int v = pick([&](int i) { return rank(i) >= 1; });
    if (v < 0) fail("no operand");
    int64_t dim = random_dim_index(rank(v));
    const SymInt& size = meta(v).shape[size_t(dim < 0 ? dim + rank(v) : dim)];
    int index;
    int integers = pick([&](int i) { return dtype(i) == DType::i64 && rank(i) <= 1; });
    if (integers >= 0 && smallest(size) > 0 && random_.chance(0.5)) {
      // Any integers, clamped into range (repeats allowed).
      int flat = integers;
      if (rank(integers) == 0) flat = view_of(call("unsqueeze", {node(integers), int64_t(0)}), integers);
      index = fresh(call("clamp", {node(flat), int64_t(0), smallest(size) - 1}), double(smallest(size)));
    } else {
      index = index_vector(size, random_.uniform(1, 4));
    }
    fresh(call("index_select", {node(v), dim, node(index)}), bound(v));
  } else if (kind == 3) {  // scatter: one index per row along dim, so no two writes collide
    int v = pick([&](int i) { return rank(i) >= 1 && !is_bool(i); });
    if (v < 0) fail("no operand");
    int64_t dim = random_dim_index(rank(v));
    int w = pick([&](int i) { return meta(i).shape == meta(v).shape && !is_bool(i) && steady(i); });
    if (w < 0) fail("no steady value to index by");
    int index = fresh(call("argmin", {node(w), dim, true}), double(estimate_numel(meta(w).shape)));
    Argument source;
    double magnitude = bound(v);
    if (random_.chance(0.5)) {
      source = scalar_for(dtype(v), 2.0);
      magnitude = std::max(magnitude, magnitude_of(source));
    } else {
      int s = fresh(call("sum", {node(tame(v, 10)), Argument::ints({dim}), true}),
                    10.0 * double(estimate_numel(meta(v).shape)));
      source = node(s);
      magnitude = std::max(magnitude, bound(s));
    }
    Kwargs kwargs;
    if (random_.chance(0.4)) {
      static const char* const kReduce[] = {"sum", "prod", "amax", "amin"};
      kwargs.emplace_back("reduce", kReduce[random_.uniform(0, 3)]);
      magnitude = magnitude * magnitude + 1;
    }
    fresh(call("scatter", {node(v), dim, node(index), source}, kwargs), magnitude);
  } else {  // index_put with distinct indices along dim 0 (or 1, through a None)
    int v = pick([&](int i) { return rank(i) >= 1; });
    if (v < 0) fail("no operand");
    const SymShape& shape = meta(v).shape;
    bool second = rank(v) >= 2 && random_.chance(0.3);
    int index = index_vector(shape[second ? 1 : 0], random_.uniform(1, 3));
    SymShape indexed = shape;
    indexed.erase(indexed.begin() + (second ? 1 : 0));
    indexed.insert(indexed.begin() + (second ? 1 : 0), meta(index).shape[0]);
    int values = new_input(fitting_shape(indexed), is_float(v) ? DType::f32 : dtype(v));
    std::vector<Argument> indices;
    if (second) indices.emplace_back();
    indices.emplace_back(node(index));
    bool accumulate = random_.chance(0.4);
    fresh(call("index_put", {node(v), Argument(indices), node(values), accumulate}), bound(v) + bound(values));
  }
}

void GraphBuilder::add_conv_pool() {
  bool two_d = random_.chance(0.5);
  int64_t wanted_rank = two_d ? 4 : 3;
  int x = pick([&](int i) { return is_float(i) && rank(i) == wanted_rank && meta(i).is_static(); });
  if (x < 0 || random_.chance(0.3)) {
    SymShape shape = {SymInt(random_.uniform(1, 2)), SymInt(random_.uniform(1, 3))};
    for (int64_t i = 2; i < wanted_rank; ++i) shape.push_back(SymInt(random_.uniform(3, 6)));
    x = new_input(shape, DType::f32);
  }
  x = tame(x, 3);
  const SymShape& shape = meta(x).shape;
  int64_t spatial = wanted_rank - 2;
  int64_t channels = *constant(shape[1]);
  auto per_dim = [&](int64_t low, int64_t high) {
    std::vector<int64_t> values;
    int64_t count = random_.chance(0.5) ? 1 : spatial;
    for (int64_t i = 0; i < count; ++i) values.push_back(random_.uniform(low, high));
    return values;
  };
  int64_t kind = random_.uniform(0, 4);
  if (kind <= 1) {  // convolution
    bool transposed = random_.chance(0.15);
    int64_t groups = channels > 1 && random_.chance(0.3) ? channels : 1;
    int64_t out_per_group = random_.uniform(1, 2);
    SymShape weight_shape = transposed ? SymShape{SymInt(channels), SymInt(out_per_group)}
                                       : SymShape{SymInt(groups * out_per_group), SymInt(channels / groups)};
    std::vector<int64_t> kernel;
    for (int64_t i = 0; i < spatial; ++i) kernel.push_back(random_.uniform(1, 3));
    for (int64_t k : kernel) weight_shape.push_back(SymInt(k));
    int weight = new_parameter(weight_shape, -0.5, 0.5);
    int64_t outputs = groups * out_per_group;
    Argument bias = random_.chance(0.5) ? Argument(node(new_parameter({SymInt(outputs)}, -0.5, 0.5))) : Argument();
    std::vector<int64_t> stride = per_dim(1, 2), padding = per_dim(0, 1), dilation = per_dim(1, 2);
    std::vector<int64_t> output_padding = {0};
    int64_t fan_in = channels;
    for (int64_t k : kernel) fan_in *= k;
    double magnitude = bound(x) * bound(weight) * double(fan_in) + 1;
    fresh(call("convolution", {node(x), node(weight), bias, Argument::ints(stride), Argument::ints(padding),
                               Argument::ints(dilation), transposed, Argument::ints(output_padding), groups}),
          magnitude);
  } else if (kind == 2) {  // max_pool / avg_pool
    std::vector<int64_t> kernel;
    for (int64_t i = 0; i < spatial; ++i) kernel.push_back(random_.uniform(1, 3));
    std::vector<Argument> args = {node(x), Argument::ints(kernel)};
    bool average = random_.chance(0.5);
    if (random_.chance(0.6)) {
      args.emplace_back(Argument::ints(random_.chance(0.3) ? std::vector<int64_t>{} : per_dim(1, 2)));
      args.emplace_back(Argument::ints({random_.uniform(0, kernel[0] / 2)}));
      if (!average) args.emplace_back(Argument::ints({1}));
      args.emplace_back(random_.chance(0.3));  // ceil_mode
    }
    fresh(call(average ? "avg_pool" : "max_pool", args), bound(x));
  } else {  // adaptive pooling
    std::vector<int64_t> output = per_dim(1, 3);
    if (output.size() == 1 && spatial > 1) output.assign(size_t(spatial), output[0]);
    fresh(call(random_.chance(0.5) ? "adaptive_avg_pool" : "adaptive_max_pool", {node(x), Argument::ints(output)}),
          bound(x));
  }
}

}  // namespace kiln::test_support::detail
