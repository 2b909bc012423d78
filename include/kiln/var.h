// kiln::Var: the tensor a traced program computes with. Every operation on a Var records one
// node of the graph being traced (ir::Graph::create_call with the op registry's names) and
// returns a Var for the node's result; no numbers are computed. A Var knows its dtype and
// shape (from the registry's shape rules), so code can branch on shapes as it would in PyTorch.
//
// Why "Var" and not "Tensor": kiln::Tensor (kiln/tensor.h) is the concrete data tensor that
// holds parameters, inputs and results. The recording tensor is a different thing: a symbolic
// value in a graph, like a variable in a program (and like torch.autograd.Variable, the name
// PyTorch once gave the tensors that recorded a graph). A short, distinct name keeps the two
// apart in code that uses both (modules hold kiln::Tensor parameters and compute on Vars).
//
// Methods follow torch.Tensor's names and defaults. Each takes a trailing
// std::source_location (defaulted to the caller's), stored with the module path in the
// recorded node's ir::SourceInfo. Operators take their operands as kiln::Operand, whose
// implicit conversion captures the caller's location (operators cannot have default
// arguments). In-place methods (add_, relu_, copy_, ...) record the registry's in-place ops
// and return a Var of the in-place node (the same storage as `*this`): later reads of `*this`
// see the mutation, as the graph's semantics say and functionalization keeps.
//
// A Var is valid only inside the kiln::trace call that created it; using it in another trace
// is an error. A default-constructed Var is undefined: it stands for None in optional
// arguments (a missing bias).
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <variant>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/shape.h"

namespace kiln {

namespace ir {  // the graph IR (ir/graph.h), which only Kiln's own code sees
class Node;
class Argument;
struct TensorMeta;
}  // namespace ir

namespace frontends {
class Tracer;  // the state of a running trace (frontends/module/tracer.h)
}  // namespace frontends

using SourceLocation = std::source_location;

class Operand;

class Var {
 public:
  Var() = default;  // undefined: None
  // A Var of `node` in the active trace.
  explicit Var(ir::Node* node);
  // The trace knows its live Vars (kiln::compile(fn) carries their values across a graph
  // break instead of computing them again), so copies, moves and destruction tell it.
  Var(const Var& other);
  Var(Var&& other) noexcept;
  Var& operator=(const Var& other);
  Var& operator=(Var&& other) noexcept;
  ~Var();

  bool defined() const { return node_ != nullptr; }
  // The recorded node (nullptr when undefined). A Var of a trace that is not the active one
  // (a trace that ended, or another thread's) is a kiln::Error here and in meta().
  ir::Node* node() const;
  // The recorded value's type; a Var of an undefined or tuple node is an internal error.
  const ir::TensorMeta& meta() const;
  DType dtype() const;
  int64_t dim() const;
  // The sizes, each a known integer or symbolic (kiln/shape.h).
  Shape sym_sizes() const;
  // Static sizes; a symbolic dim is an error naming the dim (use sym_sizes for those).
  // Under kiln::compile, a symbolic dim read here makes the trace static; the log and
  // kiln::explain name this call's line.
  std::vector<int64_t> sizes(SourceLocation loc = SourceLocation::current()) const;
  int64_t size(int64_t dim, SourceLocation loc = SourceLocation::current()) const;
  std::string type_string() const;  // "f32[2, 3]"

  // ---- values while tracing (a graph break under kiln::compile; an error under kiln::trace) ----
  // The value of a one-element Var, as torch.Tensor.item().
  double item(SourceLocation loc = SourceLocation::current()) const;
  // item() != 0; `if (var)` does the same, without the caller's line (to_bool names it).
  bool to_bool(SourceLocation loc = SourceLocation::current()) const;
  explicit operator bool() const { return to_bool(); }

  // ---- pointwise ----
  Var add(const Operand& other, double alpha = 1, SourceLocation loc = SourceLocation::current()) const;
  Var sub(const Operand& other, double alpha = 1, SourceLocation loc = SourceLocation::current()) const;
  Var mul(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var div(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var pow(const Operand& exponent, SourceLocation loc = SourceLocation::current()) const;
  Var maximum(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var minimum(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var neg(SourceLocation loc = SourceLocation::current()) const;
  Var abs(SourceLocation loc = SourceLocation::current()) const;
  Var exp(SourceLocation loc = SourceLocation::current()) const;
  Var log(SourceLocation loc = SourceLocation::current()) const;
  Var sqrt(SourceLocation loc = SourceLocation::current()) const;
  Var rsqrt(SourceLocation loc = SourceLocation::current()) const;
  Var reciprocal(SourceLocation loc = SourceLocation::current()) const;
  Var sin(SourceLocation loc = SourceLocation::current()) const;
  Var cos(SourceLocation loc = SourceLocation::current()) const;
  Var tanh(SourceLocation loc = SourceLocation::current()) const;
  Var sigmoid(SourceLocation loc = SourceLocation::current()) const;
  Var erf(SourceLocation loc = SourceLocation::current()) const;
  Var erfinv(SourceLocation loc = SourceLocation::current()) const;  // inverse of erf on [-1, 1]
  Var relu(SourceLocation loc = SourceLocation::current()) const;
  Var gelu(const std::string& approximate = "none", SourceLocation loc = SourceLocation::current()) const;
  Var silu(SourceLocation loc = SourceLocation::current()) const;
  Var clamp(std::optional<double> min, std::optional<double> max,
            SourceLocation loc = SourceLocation::current()) const;
  Var logical_not(SourceLocation loc = SourceLocation::current()) const;
  // Comparisons give bool Vars.
  Var eq(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var ne(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var lt(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var le(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var gt(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var ge(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  // value where mask is true, else self (mask broadcasts).
  Var masked_fill(const Var& mask, const Operand& value, SourceLocation loc = SourceLocation::current()) const;
  Var to(DType dtype, SourceLocation loc = SourceLocation::current()) const;  // cast (itself when same dtype)
  Var clone(SourceLocation loc = SourceLocation::current()) const;

  // ---- reductions (no dims: over all) ----
  Var sum(SourceLocation loc = SourceLocation::current()) const;
  Var sum(const std::vector<int64_t>& dims, bool keepdim = false, SourceLocation loc = SourceLocation::current()) const;
  Var mean(SourceLocation loc = SourceLocation::current()) const;
  Var mean(const std::vector<int64_t>& dims, bool keepdim = false, SourceLocation loc = SourceLocation::current()) const;
  Var amax(const std::vector<int64_t>& dims, bool keepdim = false, SourceLocation loc = SourceLocation::current()) const;
  Var amin(const std::vector<int64_t>& dims, bool keepdim = false, SourceLocation loc = SourceLocation::current()) const;
  Var argmax(int64_t dim, bool keepdim = false, SourceLocation loc = SourceLocation::current()) const;
  Var var(const std::vector<int64_t>& dims, double correction = 1, bool keepdim = false,
          SourceLocation loc = SourceLocation::current()) const;
  Var softmax(int64_t dim, SourceLocation loc = SourceLocation::current()) const;
  Var log_softmax(int64_t dim, SourceLocation loc = SourceLocation::current()) const;

  // ---- shape and views ----
  Var reshape(const Shape& shape, SourceLocation loc = SourceLocation::current()) const;
  Var view(const Shape& shape, SourceLocation loc = SourceLocation::current()) const;
  Var permute(const std::vector<int64_t>& dims, SourceLocation loc = SourceLocation::current()) const;
  Var transpose(int64_t dim0, int64_t dim1, SourceLocation loc = SourceLocation::current()) const;
  Var t(SourceLocation loc = SourceLocation::current()) const;  // transpose(0, 1) of a 2-d Var
  Var unsqueeze(int64_t dim, SourceLocation loc = SourceLocation::current()) const;
  Var squeeze(SourceLocation loc = SourceLocation::current()) const;
  Var squeeze(int64_t dim, SourceLocation loc = SourceLocation::current()) const;
  Var flatten(int64_t start_dim = 0, int64_t end_dim = -1, SourceLocation loc = SourceLocation::current()) const;
  Var expand(const Shape& sizes, SourceLocation loc = SourceLocation::current()) const;
  // self[start:end:step] along dim; nullopt: from the beginning / to the end.
  Var slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step = 1,
            SourceLocation loc = SourceLocation::current()) const;
  Var select(int64_t dim, int64_t index, SourceLocation loc = SourceLocation::current()) const;
  Var matmul(const Var& other, SourceLocation loc = SourceLocation::current()) const;
  // self[indices] with an integer tensor: result shape indices.shape + self.shape[1:].
  Var index(const Var& indices, SourceLocation loc = SourceLocation::current()) const;
  Var index_select(int64_t dim, const Var& indices, SourceLocation loc = SourceLocation::current()) const;
  // The coordinates of the nonzero elements, i64[n, dim()] in row-major order (torch.nonzero).
  // n depends on the data: under kiln::compile(fn) a graph break (the graph so far runs, and the
  // result enters the rest as an input); under kiln::trace an error naming the line.
  Var nonzero(SourceLocation loc = SourceLocation::current()) const;
  // The elements where `mask` (bool, broadcast to this Var's shape) is true, flattened
  // (torch.masked_select); a break like nonzero().
  Var masked_select(const Var& mask, SourceLocation loc = SourceLocation::current()) const;
  Var gather(int64_t dim, const Var& indices, SourceLocation loc = SourceLocation::current()) const;

  // ---- in place: record the registry's in-place ops ----
  Var add_(const Operand& other, double alpha = 1, SourceLocation loc = SourceLocation::current()) const;
  Var sub_(const Operand& other, double alpha = 1, SourceLocation loc = SourceLocation::current()) const;
  Var mul_(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var div_(const Operand& other, SourceLocation loc = SourceLocation::current()) const;
  Var relu_(SourceLocation loc = SourceLocation::current()) const;
  Var sigmoid_(SourceLocation loc = SourceLocation::current()) const;
  Var tanh_(SourceLocation loc = SourceLocation::current()) const;
  Var exp_(SourceLocation loc = SourceLocation::current()) const;
  Var gelu_(SourceLocation loc = SourceLocation::current()) const;
  Var silu_(SourceLocation loc = SourceLocation::current()) const;
  Var clamp_(std::optional<double> min, std::optional<double> max, SourceLocation loc = SourceLocation::current()) const;
  Var copy_(const Var& src, SourceLocation loc = SourceLocation::current()) const;
  Var fill_(double value, SourceLocation loc = SourceLocation::current()) const;
  Var zero_(SourceLocation loc = SourceLocation::current()) const;  // fill_(0)
  Var masked_fill_(const Var& mask, const Operand& value, SourceLocation loc = SourceLocation::current()) const;
  // self[indices] = values (or += with accumulate); indices index dim 0.
  Var index_put_(const Var& indices, const Var& values, bool accumulate = false,
                 SourceLocation loc = SourceLocation::current()) const;

 private:
  friend class frontends::Tracer;  // repoints live Vars at a graph break
  void track();    // joins its trace's live Vars (when that trace is running)
  void untrack();  // leaves them

  ir::Node* node_ = nullptr;
  uint64_t trace_id_ = 0;  // of the trace that recorded node_
};

// One operand of an operator or a binary method: a Var or a Python-like number (integers stay
// integers, so an i64 Var plus 1 stays i64). Converting to an Operand records the caller's
// source location.
class Operand {
 public:
  Operand(const Var& var, SourceLocation loc = SourceLocation::current()) : value_(var.node()), loc_(loc) {}
  template <typename Integer>
    requires std::integral<Integer> && (!std::same_as<Integer, bool>)
  Operand(Integer value, SourceLocation loc = SourceLocation::current()) : value_(int64_t(value)), loc_(loc) {}
  Operand(bool value, SourceLocation loc = SourceLocation::current()) : value_(value), loc_(loc) {}
  Operand(double value, SourceLocation loc = SourceLocation::current()) : value_(value), loc_(loc) {}
  Operand(float value, SourceLocation loc = SourceLocation::current()) : value_(double(value)), loc_(loc) {}

  // The operand as a node argument (frontends/module/var.cpp).
  ir::Argument argument() const;
  const SourceLocation& location() const { return loc_; }

 private:
  std::variant<ir::Node*, int64_t, bool, double> value_;
  SourceLocation loc_;
};

// Operators (Python's); each records the op its method does, at the location of its operands.
Var operator+(const Operand& a, const Operand& b);
Var operator-(const Operand& a, const Operand& b);
Var operator*(const Operand& a, const Operand& b);
Var operator/(const Operand& a, const Operand& b);
Var operator-(const Operand& a);
Var operator<(const Operand& a, const Operand& b);
Var operator<=(const Operand& a, const Operand& b);
Var operator>(const Operand& a, const Operand& b);
Var operator>=(const Operand& a, const Operand& b);
Var operator==(const Operand& a, const Operand& b);
Var operator!=(const Operand& a, const Operand& b);
// Compound assignment is in place, as in PyTorch (x += y records add_).
Var operator+=(const Var& a, const Operand& b);
Var operator-=(const Var& a, const Operand& b);
Var operator*=(const Var& a, const Operand& b);
Var operator/=(const Var& a, const Operand& b);

// Free functions of torch's namespace.
Var cat(const std::vector<Var>& vars, int64_t dim = 0, SourceLocation loc = SourceLocation::current());
Var stack(const std::vector<Var>& vars, int64_t dim = 0, SourceLocation loc = SourceLocation::current());
Var where(const Var& condition, const Operand& self, const Operand& other,
          SourceLocation loc = SourceLocation::current());
Var matmul(const Var& a, const Var& b, SourceLocation loc = SourceLocation::current());
// A new f32 (or dtype) Var of `size` filled with `value`; constants of the graph.
Var full(const Shape& size, double value, DType dtype = DType::f32, SourceLocation loc = SourceLocation::current());
Var arange(int64_t end, DType dtype = DType::i64, SourceLocation loc = SourceLocation::current());

// torch.cond without a graph break: traces both branches (functions of no arguments returning
// Vars of the same dtypes and shapes) and selects each output with where(pred, ...), so the
// graph holds both and computes both. `pred` is a one-element bool Var.
std::vector<Var> cond(const Var& pred, const std::function<std::vector<Var>()>& true_fn,
                      const std::function<std::vector<Var>()>& false_fn, SourceLocation loc = SourceLocation::current());

}  // namespace kiln
