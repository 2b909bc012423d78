// Reference kernels: one straightforward implementation of every op in the registry
// (ir/op_schemas.cpp), used by the interpreter (ir/interpreter.h) as the oracle that every
// backend is checked against. Simple and obviously right beats fast: values are read into
// double (floating) or int64 (integer) vectors, computed there, and rounded to the output
// dtype once. Composite ops are computed directly from their math, never through the
// decompositions in passes/, so that the oracle stays independent of them.
//
// Conventions every kernel follows:
//  - view ops (OpInfo::is_view) return tensors that share storage with `self`; every other
//    op returns fresh storage, except in-place ops ("add_", "copy_", ...) which write into
//    self's storage (through to the base of a view) and return self;
//  - the output dtype and shape come from the op's semantics applied to the actual input
//    tensors (PyTorch's type promotion and broadcasting); the interpreter then checks them
//    against the node's meta;
//  - a user error (integer division by zero, an index out of range, ...) is a kiln::Error
//    naming the node (KernelCall::fail).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/op_registry.h"
#include "kiln/tensor.h"

namespace kiln::ir {

// A bound call of an op with the runtime tensors of its tensor arguments.
class KernelCall {
 public:
  // `inputs[i]` holds the tensors of parameter i: for Tensor / Tensor? / Scalar|Tensor one
  // tensor when a tensor was passed (none for None or a Python number), for Tensor[] /
  // Tensor?[] one per element (an undefined Tensor for a None element), nothing for the
  // other parameter types. SymInt arguments are evaluated under `bindings`.
  KernelCall(const OpCall& call, std::vector<std::vector<Tensor>> inputs,
             std::map<std::string, int64_t> bindings = {});

  const OpCall& call() const { return call_; }
  const OpInfo& op() const { return call_.op(); }
  const Node* node() const { return call_.node(); }
  // The argument; a Scalar given as a size expression (mul(x, s0)) is its value under `bindings`.
  const Argument& arg(size_t index) const { return args_.at(index); }
  const std::map<std::string, int64_t>& bindings() const { return bindings_; }

  // Tensor arguments.
  bool is_none(size_t index) const;    // None (or an absent optional tensor)
  bool is_tensor(size_t index) const;  // a tensor was passed (false for a Python number)
  const Tensor& tensor(size_t index) const;
  const std::vector<Tensor>& tensors(size_t index) const;  // Tensor[] / Tensor?[]

  // Scalar|Tensor arguments that are Python numbers, and Scalar parameters.
  bool is_number(size_t index) const { return arg(index).is_number(); }
  bool is_float_number(size_t index) const { return arg(index).is_float(); }
  double scalar_double(size_t index) const;
  int64_t scalar_int(size_t index) const;

  // Other arguments (forwarded to the OpCall; SymInts evaluated).
  int64_t int_arg(size_t index) const { return call_.int_arg(index); }
  std::vector<int64_t> ints(size_t index) const { return call_.ints(index); }
  int64_t sym_int(size_t index) const;
  std::vector<int64_t> sym_ints(size_t index) const;
  std::optional<int64_t> optional_int(size_t index) const;  // int? / SymInt?
  double float_arg(size_t index) const { return call_.float_arg(index); }
  std::optional<double> optional_float(size_t index) const;
  bool bool_arg(size_t index) const { return call_.bool_arg(index); }
  const std::string& string_arg(size_t index) const { return call_.string_arg(index); }
  std::optional<DType> optional_dtype(size_t index) const;
  DType dtype_arg(size_t index) const { return call_.dtype_arg(index); }

  // Throws kiln::Error prefixed with the node: "node %div (div): ZeroDivisionError ...".
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    call_.fail(parts...);
  }

 private:
  const OpCall& call_;
  std::vector<std::vector<Tensor>> inputs_;
  std::map<std::string, int64_t> bindings_;
  std::vector<Argument> args_;  // call_'s, Scalar size expressions evaluated
};

// Returns every value the op produces: one tensor, or the elements of a tuple.
using ReferenceKernel = std::function<std::vector<Tensor>(const KernelCall&)>;

// The reference kernel of an op (including the generated in-place "<name>_" variants), or
// nullptr when there is none.
const ReferenceKernel* find_reference_kernel(std::string_view op);

// Names of the registry's ops that have no reference kernel (empty when coverage is full).
std::vector<std::string> ops_without_reference_kernel();

}  // namespace kiln::ir
