// The random graph generator's in-place ops: add_, sub_, mul_, div_, relu_, clamp_, copy_,
// fill_, index_put_, gelu_, ... written into clones, into views (and views of views) of
// clones, into fresh results, and now and then into graph inputs. Never into an expanded
// view, a parameter, storage a possibly-copying reshape has read, or from an operand that
// aliases the target without being it.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "kiln/error.h"
#include "tests/support/random_graph_builder.h"

namespace kiln::test_support::detail {

namespace {

using ir::Argument;
using ir::Kwargs;
using ir::SymInt;
using ir::SymShape;

// Whether `from` broadcasts to exactly `to` (right-aligned, each dim equal or 1, no extra dims).
bool broadcasts_to(const SymShape& from, const SymShape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i) {
    const SymInt& a = from[from.size() - i];
    if (!(a == to[to.size() - i]) && !(a == SymInt(1))) return false;
  }
  return true;
}

}  // namespace

int GraphBuilder::writable_target() {
  auto writable = [&](int i, bool input) {
    const Value& value = values_[size_t(i)];
    const Root& root = roots_[size_t(value.root)];
    return !value.expanded && root.writable && root.is_input == input;
  };
  double roll = random_.real(0, 1);
  int target = -1;
  if (roll < 0.1) {  // an input, or a view of one
    target = pick([&](int i) { return writable(i, true); });
  } else if (roll < 0.5) {  // anything written before, or any fresh result
    target = pick([&](int i) { return writable(i, false); });
    if (target >= 0) return target;
  } else if (roll < 0.6) {
    target = pick([&](int i) { return writable(i, false); });
  }
  if (target < 0) {  // a clone
    int source = pick();
    target = fresh(call("clone", {node(source)}), bound(source));
  }
  // Then zero to two views of it.
  int64_t views = int64_t(random_.weighted({0.3, 0.45, 0.25}));
  for (int64_t i = 0; i < views; ++i) {
    const ir::TensorMeta& m = meta(target);
    int64_t r = m.rank();
    int64_t kind = random_.uniform(0, 6);
    if (r == 0 && kind <= 3) kind = 4;
    ir::Node* view = nullptr;
    if (kind == 0) {
      view = call("transpose", {node(target), random_dim_index(r), random_dim_index(r)});
    } else if (kind == 1) {
      int64_t dim = random_dim_index(r);
      int64_t size = estimate(m.shape[size_t(dim < 0 ? dim + r : dim)]);
      std::vector<Argument> args = {node(target), dim, random_.uniform(0, std::max<int64_t>(size - 1, 0)),
                                    random_.chance(0.5) ? Argument() : Argument(random_.uniform(-1, size))};
      if (random_.chance(0.3)) args.emplace_back(int64_t(2));
      view = call("slice", args);
    } else if (kind == 2) {
      int64_t dim = random_dim_index(r);
      std::optional<int64_t> index = select_index(m.shape[size_t(dim < 0 ? dim + r : dim)]);
      if (!index) fail("select from an empty dim");
      view = call("select", {node(target), dim, *index});
    } else if (kind == 3) {
      std::vector<int64_t> dims(static_cast<size_t>(r));
      for (int64_t d = 0; d < r; ++d) dims[size_t(d)] = r - 1 - d;
      view = call("permute", {node(target), Argument::ints(dims)});
    } else if (kind == 4) {
      view = call("unsqueeze", {node(target), random_.uniform(-(r + 1), r)});
    } else if (kind == 5) {
      if (!squeeze_is_static(m.shape, {})) fail("squeeze of a dim that may be 1");
      view = call("squeeze", {node(target)});
    } else {
      // view() always aliases (it fails rather than copy); reshape only aliases a contiguous input.
      view = call(m.is_contiguous() && random_.chance(0.5) ? "reshape" : "view",
                  {node(target), Argument::sym_ints(reshape_target(m.shape))});
    }
    target = view_of(view, target);
  }
  return target;
}

void GraphBuilder::add_inplace() {
  enum Kind {
    add,
    sub,
    mul,
    div,
    relu,
    neg,
    abs,
    clamp,
    tanh,
    sigmoid,
    exp,
    copy,
    fill,
    floor,
    round,
    pow,
    index_put,
    composite
  };
  std::vector<double> weights = {3,   2,   2, 1, 1.5, 0.7, 0.7, 1.5, 0.7,
                                 0.7, 0.3, 3, 2, 0.3, 0.3, 0.4, 1,   options_.allow_composite ? 1.5 : 0.0};
  auto kind = Kind(random_.weighted(weights));
  int target = writable_target();
  const SymShape shape = meta(target).shape;
  int target_root = values_[size_t(target)].root;
  double target_bound = bound(target);

  // An operand that broadcasts to the target's shape and does not alias it (the target itself
  // is fine: x.add_(x)); or -1 for a Python number.
  auto operand = [&](bool allow_self, bool allow_bool) -> int {
    double roll = random_.real(0, 1);
    if (roll < 0.55) {
      int existing = pick([&](int i) {
        if (i == target) return allow_self;
        if (values_[size_t(i)].root == target_root) return false;
        return (allow_bool || !is_bool(i)) && broadcasts_to(meta(i).shape, shape);
      });
      if (existing >= 0) return existing;
    }
    if (roll < 0.8) return -1;
    return new_input(fitting_shape(shape), is_float(target) || random_.chance(0.5) ? DType::f32 : dtype(target));
  };

  ir::Node* written = nullptr;
  double result = target_bound;
  switch (kind) {
    case add:
    case sub:
    case mul: {
      int other = operand(true, false);
      Argument value = other >= 0 ? Argument(node(other)) : scalar_for(dtype(target), kind == mul ? 1.5 : 2.0);
      double other_bound = other >= 0 ? bound(other) : std::fabs(value.floating());
      if (kind == mul && other >= 0 && target_bound * other_bound > 1000 && other != target) {
        other = tame(other, 2);
        value = node(other);
        other_bound = bound(other);
      }
      result = kind == mul ? target_bound * other_bound : target_bound + other_bound;
      if (result > 1000) fail("in-place result would grow too much");
      const char* op = kind == add ? "add_" : kind == sub ? "sub_" : "mul_";
      Kwargs kwargs;
      if (kind != mul && random_.chance(0.15)) {
        kwargs.emplace_back("alpha", is_float(target) ? Argument(0.5) : Argument(int64_t(2)));
        result += other_bound;
      }
      written = call(op, {node(target), value}, kwargs);
      break;
    }
    case div: {
      int other = operand(false, true);
      Argument divisor = other >= 0 ? Argument(node(at_least_one(other))) : Argument(random_.chance(0.5) ? 2.0 : -4.0);
      Kwargs kwargs;
      bool rounding = !is_float(target) || (steady(target) && (other < 0 || steady(other)) && random_.chance(0.2));
      if (rounding) kwargs.emplace_back("rounding_mode", random_.chance(0.5) ? "floor" : "trunc");
      written = call("div_", {node(target), divisor}, kwargs);
      result = target_bound + 1;
      break;
    }
    case relu:
    case neg:
    case abs:
    case floor:
    case round: {
      if ((kind == floor || kind == round) && !steady(target)) fail("rounding a noisy value");
      static const char* const kNames[] = {"relu_", "neg_", "abs_", "floor_", "round_"};
      int index = kind == relu ? 0 : kind == neg ? 1 : kind == abs ? 2 : kind == floor ? 3 : 4;
      written = call(kNames[index], {node(target)});
      result = target_bound + 1;
      break;
    }
    case tanh:
    case sigmoid: {
      written = call(kind == tanh ? "tanh_" : "sigmoid_", {node(target)});
      result = 1;
      break;
    }
    case exp: {
      if (target_bound > 3) fail("exp_ of a large value");
      written = call("exp_", {node(target)});
      result = std::exp(target_bound);
      break;
    }
    case clamp: {
      Argument low = scalar_for(dtype(target), 2.0), high = scalar_for(dtype(target), 2.0);
      if (low.floating() > high.floating()) std::swap(low, high);
      if (random_.chance(0.3)) high = Argument();
      written = call("clamp_", {node(target), low, high});
      break;
    }
    case copy: {
      int source = operand(false, true);
      if (source < 0)
        source =
            pick([&](int i) { return values_[size_t(i)].root != target_root && broadcasts_to(meta(i).shape, shape); });
      if (source < 0) fail("nothing to copy from");
      if (!is_float(target) && !steady(source)) fail("casting a noisy value to an integer");
      written = call("copy_", {node(target), node(source)});
      result = bound(source);
      break;
    }
    case fill: {
      Argument value = scalar_for(dtype(target), 3.0);
      written = call("fill_", {node(target), value});
      result = std::fabs(value.floating());
      break;
    }
    case pow: {
      if (target_bound > 8) fail("pow_ of a large value");
      written = call("pow_", {node(target), int64_t(2)});
      result = target_bound * target_bound;
      break;
    }
    case index_put: {
      if (shape.empty()) fail("index_put_ on a 0-d tensor");
      int index = index_vector(shape[0], random_.uniform(1, 3));
      SymShape indexed = shape;
      indexed[0] = meta(index).shape[0];
      int values = new_input(fitting_shape(indexed), is_float(target) ? DType::f32 : dtype(target));
      bool accumulate = random_.chance(0.4);
      written =
          call("index_put_", {node(target), Argument(std::vector<Argument>{node(index)}), node(values), accumulate});
      result = target_bound + bound(values);
      break;
    }
    case composite: {
      static const char* const kOps[] = {"gelu_", "silu_", "leaky_relu_", "elu_", "hardsigmoid_", "hardswish_"};
      if (target_bound > 30) fail("activation of a large value");
      written = call(kOps[random_.uniform(0, 5)], {node(target)});
      result = target_bound + 1;
      break;
    }
  }
  Root& root = roots_[size_t(target_root)];
  root.bound = std::max(root.bound, result);
  // The storage now holds what the op computed from its operands.
  if (ir::OpRegistry::global().get(written->target()).composite) root.noisy = true;
  for (ir::Node* input : written->input_nodes()) {
    auto known = root_of_.find(input);
    if (known != root_of_.end() && roots_[size_t(known->second)].noisy) root.noisy = true;
  }
  if (std::find(mutated_roots_.begin(), mutated_roots_.end(), target_root) == mutated_roots_.end())
    mutated_roots_.push_back(target_root);
  view_of(written, target);  // the in-place op returns its (aliased) target
}

}  // namespace kiln::test_support::detail
