// The random graph generator's internals (see random_graph.h for what it guarantees): a
// deterministic random source, what the builder knows about every value it made (magnitude
// bound, which storage it aliases, whether it may be written), and one member function per
// family of ops. The families live in random_graph_core_ops.cpp, random_graph_composite_ops.cpp
// and random_graph_inplace_ops.cpp; the driver and random_inputs in random_graph.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tests/support/random_graph.h"

namespace kiln::test_support::detail {

// splitmix64: the same stream on every platform and standard library (std's distributions
// are implementation-defined, so they are not used).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next();
  int64_t uniform(int64_t low, int64_t high);  // inclusive
  double real(double low, double high);        // [low, high)
  bool chance(double probability);
  // An index drawn with the given relative weights (zero weights are never drawn).
  size_t weighted(const std::vector<double>& weights);
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[size_t(uniform(0, int64_t(items.size()) - 1))];
  }

 private:
  uint64_t state_;
};

// NumPy broadcasting with symbolic sizes as the shape rules see it: right-aligned dims are
// equal expressions, or one of them is the constant 1.
bool broadcast_compatible(const ir::SymShape& a, const ir::SymShape& b);

// Storage that values alias: a fresh result, a placeholder or a parameter. Views share their
// base's root.
struct Root {
  ir::Node* node = nullptr;
  double bound = 0;       // |element| <= bound for anything ever stored there
  bool writable = true;   // false for parameters, and once a possibly-copying reshape reads it
  bool is_input = false;  // a placeholder
  // Computed through a composite op (or from such a value): its rounding differs before and
  // after decomposition, so a value that is exactly 0 (or 1, or a tie) in one may be 1e-8
  // off in the other. Such values never feed discontinuous ops (comparisons, floor, sign,
  // casts to integers, argmax, rounding division), whose results would flip.
  bool noisy = false;
};

// A tensor value the generator can use as an operand.
struct Value {
  ir::Node* node = nullptr;
  int root = 0;           // index into GraphBuilder::roots_
  bool expanded = false;  // an expand in its view chain: never written
};

class GraphBuilder {
 public:
  GraphBuilder(uint64_t seed, const RandomGraphOptions& options);
  ir::Graph build();

 private:
  using Accept = std::function<bool(int)>;

  // ---- values ----
  const ir::TensorMeta& meta(int value) const { return values_[size_t(value)].node->value(); }
  DType dtype(int value) const { return meta(value).dtype; }
  int64_t rank(int value) const { return meta(value).rank(); }
  bool is_float(int value) const;
  bool is_bool(int value) const { return dtype(value) == DType::boolean; }
  double bound(int value) const { return roots_[size_t(values_[size_t(value)].root)].bound; }
  bool noisy(int value) const { return roots_[size_t(values_[size_t(value)].root)].noisy; }
  // Whether discontinuous ops may read the value: not a noisy float.
  bool steady(int value) const { return !(is_float(value) && noisy(value)); }
  ir::Node* node(int value) const { return values_[size_t(value)].node; }
  // A value accepted by `accept`, favouring recent ones so that chains grow deep; -1 if none.
  int pick(const Accept& accept = nullptr);
  // Registers a node with fresh storage, a view of `base`, or a node aliasing `base` exactly.
  int fresh(ir::Node* node, double bound);
  int view_of(ir::Node* node, int base, bool expands = false);

  // ---- building blocks ----
  ir::Node* call(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs = {});
  // `value` itself when |value| <= limit, else a squashed copy (tanh / clamp) within it.
  int tame(int value, double limit);
  // |value| + 1 (>= 1): a safe denominator or logarithm argument. Bool becomes f32 first.
  int at_least_one(int value);
  int new_input(const ir::SymShape& shape, DType dtype);
  // A parameter with values in [low, high]; with `allow_input`, sometimes (and always for a
  // symbolic shape) an input instead, whose values are in [-2, 2].
  int new_parameter(const ir::SymShape& shape, double low, double high, bool allow_input = true);
  // A constant i64 index vector of up to `length` distinct indices in [0, size) for every
  // binding of the symbols (an arange with step 1 or 2).
  int index_vector(const ir::SymInt& size, int64_t length);
  // A bool value broadcastable with `shape` (an existing one, or a comparison).
  int condition_for(const ir::SymShape& shape);
  // An operand broadcastable against `value`: an existing value, a new input, or -1 for "use
  // a Python number".
  int partner_for(int value, const Accept& accept = nullptr);
  ir::Argument scalar_for(DType dtype, double magnitude = 3.0);

  // ---- shapes ----
  ir::SymInt random_dim(bool allow_symbol);
  ir::SymShape random_shape(int64_t rank);
  ir::SymShape random_shape();
  // A random shape whose symbols are bound by some placeholder (for creation ops, whose
  // sizes the interpreter can only evaluate under bindings taken from the inputs).
  ir::SymShape bound_shape();
  // A shape that broadcasts against `shape` (a suffix, some dims set to 1, maybe a new
  // leading dim).
  ir::SymShape broadcast_partner_shape(const ir::SymShape& shape);
  // A shape that broadcasts to exactly `shape` (a suffix with some dims set to 1): for
  // operands of in-place ops and index_put values.
  ir::SymShape fitting_shape(const ir::SymShape& shape);
  // A size at the largest binding inputs may take (symbols at 5), for magnitude bounds.
  static int64_t estimate(const ir::SymInt& size);
  static int64_t estimate_numel(const ir::SymShape& shape);
  static std::optional<int64_t> constant(const ir::SymInt& size) { return size.maybe_constant(); }
  // A valid select index for a dim of this size whatever the symbols are bound to (in
  // [0, smallest(size)) or counted from the end); nullopt when the dim may be empty.
  std::optional<int64_t> select_index(const ir::SymInt& size);
  int64_t random_dim_index(int64_t rank, bool allow_negative = true);
  // The smallest value of a size, or of the number of elements `dims` of `shape` reduce
  // (all dims when empty), over the symbol sizes inputs may bind (s0, s1 in [2, 5]).
  static int64_t smallest(const ir::SymInt& size);
  static int64_t smallest_count(const ir::SymShape& shape, const std::vector<int64_t>& dims);
  // Whether squeeze(dims) (all dims when empty) drops the same dims whatever the symbols are
  // bound to: no candidate dim is symbolic yet possibly 1.
  static bool squeeze_is_static(const ir::SymShape& shape, const std::vector<int64_t>& dims);

  // ---- op families: each adds one op (plus helpers) or throws kiln::Error ----
  void add_input_step();
  void add_unary();
  void add_binary();
  void add_comparison();
  void add_where();
  void add_cast();
  void add_reduction();
  void add_view();
  void add_matmul();
  void add_cat();
  void add_creation();
  void add_copy_op();
  void add_conv_pool();
  void add_clone();
  void add_composite();
  void add_inplace();

  // helpers of the families
  std::vector<int64_t> random_reduce_dims(int64_t rank);
  ir::SymShape reshape_target(const ir::SymShape& shape);
  int writable_target();
  void mark_reshape_read(int value);
  void choose_outputs();

  Random random_;
  RandomGraphOptions options_;
  ir::Graph graph_;
  std::vector<Value> values_;
  std::vector<Root> roots_;
  std::vector<int> mutated_roots_;           // roots written in place, in order of first write
  std::map<const ir::Node*, int> root_of_;  // the root of every registered node
  std::set<std::string> bound_symbols_;  // symbols of placeholder shapes
  bool use_symbols_ = false;
  bool allow_zero_sizes_ = false;
  int inputs_ = 0;
  int parameters_ = 0;
};

// A bound above which operands of growing ops are squashed first.
inline constexpr double kSoftLimit = 100.0;

}  // namespace kiln::test_support::detail
