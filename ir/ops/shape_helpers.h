// Helpers shared by the shape rules of ir/ops/: dimension wrapping, broadcasting with
// symbolic sizes, type-promotion operands, and building NodeMetas. Every user error goes
// through call.fail(...) so that it names the node and op.
//
// Broadcasting with symbolic sizes (NumPy rules, right-aligned): two sizes broadcast when
// they are equal expressions (s0 with s0), or when one is the constant 1. Two different
// expressions (s0 with s1, or s0 with 3) are an error, even though they might be equal at
// run time: Kiln does not guess relations between symbols; the producer must make them equal
// (e.g. by an expand or a reshape to the same symbol).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "ir/type_promotion.h"

namespace kiln::ir {

NodeMeta single(TensorMeta meta);
NodeMeta tuple_of(std::vector<TensorMeta> metas);

// The device of the first tensor argument (infer_meta has checked they agree), else cpu.
Device first_device(const OpCall& call);

// Wraps a possibly negative dim into [0, rank). A 0-d tensor accepts -1 and 0 (as PyTorch
// does for scalars) unless `scalar_ok` is false. Out of range fails with PyTorch's message
// "Dimension out of range (expected to be in range of [-2, 1], but got 2)".
int64_t wrap_dim(const OpCall& call, int64_t dim, int64_t rank, bool scalar_ok = true);
// Wraps every dim and fails on a repeated one ("dim 1 appears multiple times in the list of dims").
std::vector<int64_t> wrap_dims(const OpCall& call, const std::vector<int64_t>& dims, int64_t rank);

bool is_one(const SymInt& size);
bool is_zero(const SymInt& size);
// Constants compare by value; otherwise only equal expressions are known to be equal.
bool known_equal(const SymInt& a, const SymInt& b);
SymInt product(const SymShape& shape, size_t begin = 0, size_t end = SIZE_MAX);

// NumPy broadcasting (see the file comment); fails with PyTorch's message "The size of
// tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1".
SymShape broadcast_shapes(const OpCall& call, const SymShape& a, const SymShape& b);
// Whether `from` broadcasts to exactly `to` (every dim equal or 1, no more dims than `to`).
bool broadcasts_to(const SymShape& from, const SymShape& to);

// The dtype a Python number takes in type promotion: bool, i64 (int, SymInt) or f32 (float).
DType scalar_dtype(const Argument& value);
// A Tensor or Python-number argument as a type-promotion operand.
PromotionOperand promotion_operand(const OpCall& call, size_t index);

// "[0, 1]".
std::string ints_string(const std::vector<int64_t>& values);
std::string dtype_string(DType dtype);

// Fails when a constant size is negative: "Trying to create tensor with negative dimension -1: [-1, 3]".
void check_sizes_nonnegative(const OpCall& call, const SymShape& shape);

// A list parameter given once per spatial dim or as one value for all (PyTorch's
// expand_param_if_needed); `what` names it in errors. An empty list gives `fallback`.
std::vector<int64_t> expand_param(const OpCall& call, const std::vector<int64_t>& values, size_t count,
                                  const char* what, const std::vector<int64_t>& fallback = {});

}  // namespace kiln::ir
