// The op registry: the single list of ops Kiln understands. Each op has a schema written
// the way PyTorch writes its native functions, e.g.
//   "sum(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
// flags (composite, view, in-place, tags) and a shape/dtype rule. Other layers attach their
// facet by op name (reference kernels in the interpreter, lowering in codegen/, derivatives
// in passes/), and coverage tests list the ops that lack one.
//
// Parameter types in schemas:
//   Tensor, Tensor?, Tensor[], Tensor?[], Tensor(a!) (mutated in place), Scalar|Tensor (a
//   tensor or a Python number that takes part in type promotion as a scalar), int, int?,
//   int[], int[]?, SymInt, SymInt?, SymInt[], float, float?, float[], bool, bool?, str, str?,
//   Scalar, Scalar?, ScalarType, ScalarType?, Device?.
// Returns: "Tensor", "(Tensor, Tensor)" (a tuple of fixed size) or "Tensor[]" (a tuple whose
// length the shape rule decides).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "kiln/error.h"

namespace kiln::ir {

enum class ParamType : uint8_t {
  tensor, optional_tensor, tensor_list, optional_tensor_list, tensor_or_scalar,
  int_, optional_int, int_list, optional_int_list,
  symint, optional_symint, symint_list,
  float_, optional_float, float_list,
  bool_, optional_bool, string, optional_string,
  scalar, optional_scalar, scalar_type, optional_scalar_type, optional_device,
};

struct Param {
  std::string name;
  ParamType type = ParamType::tensor;
  std::string type_text;                 // as written: "int[]?"
  std::optional<Argument> default_value;  // parsed default; absent when required
  bool kwarg_only = false;               // declared after '*'
  bool mutated = false;                  // Tensor(a!)
};

struct OpSchema {
  std::string name;
  std::vector<Param> params;
  enum class Returns : uint8_t { tensor, tuple, tensor_list } returns = Returns::tensor;
  int num_returns = 1;  // for tuple
  std::string text;     // the schema as written

  const Param* find_param(std::string_view name) const;
};

// Parses a schema string; throws kiln::InternalError on a malformed schema (schemas are ours).
OpSchema parse_schema(std::string_view text);

class OpCall;
using ShapeRule = std::function<NodeMeta(const OpCall&)>;

struct OpInfo {
  OpSchema schema;
  bool composite = false;    // decomposed before lowering
  bool is_view = false;      // output aliases `self` (a view in PyTorch's sense)
  std::string inplace_of;    // for "add_": "add"; empty if the op is not in-place
  std::set<std::string> tags;  // "pointwise", "reduction", "view", "random", "inplace", ...
  std::string summary;       // one line for --help and docs
  ShapeRule infer;

  const std::string& name() const { return schema.name; }
  bool is_inplace() const { return !inplace_of.empty(); }
  bool has_tag(std::string_view tag) const { return tags.count(std::string(tag)) > 0; }
};

class OpRegistry {
 public:
  // The registry of every built-in op, built on first use.
  static const OpRegistry& global();

  const OpInfo* find(std::string_view name) const;  // nullptr when unknown
  // Throws kiln::Error("unknown op 'foo'"), suggesting the closest known name.
  const OpInfo& get(std::string_view name) const;
  std::vector<const OpInfo*> all() const;  // sorted by name

  void add(OpInfo info);  // InternalError on a duplicate

 private:
  std::map<std::string, OpInfo, std::less<>> ops_;
};

// Binds positional args and kwargs to a schema: returns one Argument per parameter, in
// schema order, with defaults filled in and kinds checked (an int where a float is expected
// becomes a float; a constant SymInt is an int). Throws kiln::Error describing the mismatch
// (wrong arity, unknown keyword, wrong kind) without a node prefix; callers add it.
std::vector<Argument> bind_arguments(const OpSchema& schema, const std::vector<Argument>& args,
                                     const Kwargs& kwargs);

// A shape rule's refusal of two sizes that had to be equal, a and b, where a - b is linear in
// one symbol: the sizes are equal when that symbol is `value`, an expression of the other
// symbols (a - b = +-symbol + rest) or a constant of at least 2 (the same integer whatever the
// other symbols are: 64*n*s against 768*n gives s = 12). A front end whose symbols are
// only names (ONNX's dim_params: two names for one batch, "past + 1" and "total") may take that
// equality and import again. Everyone else sees the kiln::Error it is.
class SymbolMismatch : public Error {
 public:
  SymbolMismatch(const std::string& message, std::string symbol, SymInt value)
      : Error(message), symbol_(std::move(symbol)), value_(std::move(value)) {}
  const std::string& symbol() const { return symbol_; }
  const SymInt& value() const { return value_; }
  SymbolMismatch with_message(const std::string& message) const { return {message, symbol_, value_}; }

 private:
  std::string symbol_;
  SymInt value_;
};

// The symbol and its value that make a == b, as SymbolMismatch describes; nullopt when there is
// none (a - b is not of that form, or the value would be a constant below 2).
std::optional<std::pair<std::string, SymInt>> equating_substitution(const SymInt& a, const SymInt& b);

// A shape rule's refusal of a size s (a symbol) against min(s, bound): a slice of `bound` elements
// cut at a dynamic size (a causal mask buffer of 128 x 128 sliced [:seq, :seq] against a [seq, seq]
// score), equal whenever s <= bound. A front end may import again with such slices taking exactly
// s elements, checked at run time.
class SymbolBound : public Error {
 public:
  SymbolBound(const std::string& message, std::string symbol, int64_t bound)
      : Error(message), symbol_(std::move(symbol)), bound_(bound) {}
  const std::string& symbol() const { return symbol_; }
  int64_t bound() const { return bound_; }
  SymbolBound with_message(const std::string& message) const { return {message, symbol_, bound_}; }

 private:
  std::string symbol_;
  int64_t bound_;
};

// The symbol s and the constant bound when {a, b} is {s, min(s, bound)}; nullopt otherwise.
std::optional<std::pair<std::string, int64_t>> clamped_symbol(const SymInt& a, const SymInt& b);

// A bound call of an op, as seen by shape rules (and other per-op facets): normalized
// arguments plus typed accessors. Tensor arguments are Nodes; their meta is read here.
class OpCall {
 public:
  OpCall(const OpInfo& op, std::vector<Argument> args, const Node* node = nullptr,
         std::string node_name = "");
  // Binds a node's args/kwargs against its op's schema.
  static OpCall of(const Node& node);

  const OpInfo& op() const { return op_; }
  const std::vector<Argument>& args() const { return args_; }
  const Argument& arg(size_t index) const { return args_.at(index); }
  const Node* node() const { return node_; }

  bool is_none(size_t index) const { return args_.at(index).is_none(); }
  bool is_tensor(size_t index) const { return args_.at(index).is_node(); }
  const TensorMeta& tensor(size_t index) const;  // a Tensor argument's meta
  std::vector<const TensorMeta*> tensors(size_t index) const;  // Tensor[] (None entries null)
  int64_t int_arg(size_t index) const;
  std::vector<int64_t> ints(size_t index) const;
  SymInt sym(size_t index) const;
  std::vector<SymInt> syms(size_t index) const;
  double float_arg(size_t index) const;
  bool bool_arg(size_t index) const;
  const std::string& string_arg(size_t index) const;
  DType dtype_arg(size_t index) const;

  // Throws kiln::Error prefixed with the node: "node %add_1 (add): <message>".
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    throw Error(prefix() + ::kiln::detail::concat(parts...));
  }
  std::string prefix() const;
  // fail(), for sizes a and b that had to be equal: a SymbolMismatch where a symbol's value
  // would make them equal (equating_substitution), a kiln::Error otherwise.
  template <typename... Parts>
  [[noreturn]] void fail_unequal(const SymInt& a, const SymInt& b, const Parts&... parts) const {
    std::string message = prefix() + ::kiln::detail::concat(parts...);
    if (auto equality = equating_substitution(a, b)) throw SymbolMismatch(message, equality->first, equality->second);
    if (auto clamped = clamped_symbol(a, b)) throw SymbolBound(message, clamped->first, clamped->second);
    throw Error(message);
  }

 private:
  const OpInfo& op_;
  std::vector<Argument> args_;
  const Node* node_;
  std::string node_name_;
};

// Infers a call_function node's meta from its args (binding + the op's shape rule).
NodeMeta infer_meta(const Node& node);

}  // namespace kiln::ir
