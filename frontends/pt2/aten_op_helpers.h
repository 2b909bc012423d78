// Helpers the ATen converters share: registering an op with its in-place form, wrapping dims,
// and small graph idioms (a constant scalar, a cast when needed, a size as a tensor).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontends/pt2/aten_op_table.h"

namespace kiln::frontends {

// Registers "aten.<name>.<overload>" and, with `inplace`, "aten.<name>_.<overload>": the same
// converter with the context set to write into self (AtenNodeContext::result).
void add_op(AtenOpTable& table, const std::string& name, const std::string& overload, AtenConverter converter,
            bool inplace = false);
// add_op with the in-place form.
void add_op_and_inplace(AtenOpTable& table, const std::string& name, const std::string& overload, AtenConverter converter);
// Registers a Python operator's ATen ops: "aten.__<name>__.<overload>" (a & b, x >> 3) and its
// in-place form "aten.__i<name>__.<overload>" (a &= b).
void add_python_operator(AtenOpTable& table, const std::string& name, const std::string& overload,
                         AtenConverter converter);

// A dim wrapped into [0, rank) (rank 0 accepts 0 and -1), failing with the node named.
int64_t wrap_dim(const AtenNodeContext& context, int64_t dim, int64_t rank);
std::vector<int64_t> wrap_dims(const AtenNodeContext& context, const std::vector<int64_t>& dims, int64_t rank);

// The converter of an op with one tensor argument, `self`: the registry's `op` on it.
AtenConverter unary(std::string op);
// x reshaped to `shape` (a reshape node).
ir::Node* reshape_to(AtenNodeContext& context, ir::Node* x, std::vector<ir::SymInt> shape);

// The seed of the next random node (rand, randn, dropout) of the program being imported: 0, 1,
// 2, ... in node order, so that each random node draws its own numbers (two dropouts of one
// shape get different masks) and an import is reproducible.
int64_t next_random_seed(AtenNodeContext& context);

// `node` cast to `dtype` (itself when it already has it).
ir::Node* cast_to(AtenNodeContext& context, ir::Node* node, DType dtype);

// The rank and shape of a tensor node.
int64_t rank_of(const ir::Node* node);
const ir::SymShape& shape_of(const ir::Node* node);
DType dtype_of(const ir::Node* node);

// The broadcast of two shapes (a size-1 dim takes the other's size).
ir::SymShape broadcast_shapes(const ir::SymShape& a, const ir::SymShape& b);

// The p-norm of x over `dims` (None: all): sum |x|^p ^ (1/p), with p = 0 (the count of
// non-zeros), 1, 2 and +-inf special (aten_ops_reduction.cpp).
ir::Node* vector_norm(AtenNodeContext& context, ir::Node* x, double p, ir::Argument dims, bool keepdim);

// A 0-d constant of `dtype` holding `value`, as a graph node.
// The as_strided arguments that view x's diagonal (the node's offset, dim1, dim2) as its last
// dim: diagonal and diagonal_scatter share them.
std::vector<ir::Argument> diagonal_as_strided_args(AtenNodeContext& c, ir::Node* x);
ir::Node* scalar_constant(AtenNodeContext& context, double value, DType dtype);

}  // namespace kiln::frontends
