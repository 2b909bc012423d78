// Lowering: from the graph IR (after the default pipeline: functional, decomposed, simplified)
// to the loop IR (codegen/loop_ir.h). One LoopNode per non-view graph node (a few ops take two
// or three: mean, var, avg_pool, convolution with bias); views produce no node.
//
// What it guarantees:
//  - every graph value has an accessor: a buffer and an index expression over the value's own
//    dim variables x0..x{rank-1}. Views (reshape, view, permute, transpose, expand, squeeze,
//    unsqueeze, slice, select, as_strided, getitem of a tuple) compose into the accessor of
//    their input; a reshape that no strides can express uses floordiv/mod terms;
//  - every non-view node writes fresh contiguous buffers named after it, reading its inputs
//    through their accessors; graph inputs are Input buffers (contiguous), the parameters
//    that some node reads are Parameter buffers, and each graph output is an Output buffer
//    (an intermediate buffer that holds exactly the output is turned into it, otherwise a
//    Pointwise copy is added);
//  - arithmetic follows the reference interpreter: PyTorch type promotion, f16/bf16 computed
//    in f32 and cast back at the store, scalars as Constants rounded to the computation
//    dtype, integer division and remainder with Python/C semantics, NaN-propagating
//    max/min, round half to even, the Philox index contract of rand/randn;
//  - ops without a native lowering (scatter, index_put, cumsum, transposed convolution of
//    over 64 kernel points, matmul/convolution of dtypes other than f32/f64, composite ops, and anything in
//    LoweringOptions::force_fallback_ops) become ExternKind::Fallback calls of the graph
//    node's reference kernel, with StridedViews of their tensor arguments (one per tensor
//    argument occurrence, in the order ir::tensor_arguments walks them; a tuple passed
//    whole contributes one view per element) and contiguous outputs. cumsum, cumprod, topk and
//    scatter of common dtypes also name a NativeFallback (their tensor inputs then contiguous),
//    which the C++ backend computes itself.
//  - with LoweringOptions::library_convolution, f32 1-d to 3-d convolutions are ExternKind::Convolution
//    calls that read and write channels-last (NHWC, NDHWC) buffers; pointwise values and pooling
//    windows computed from a channels-last value are stored channels-last too, so that the
//    layout flows from one convolution to the next (their accessors read the NHWC buffers as
//    the graph's NCHW values).
// LoopNode::name is the graph node's name (helper nodes of one graph node add a suffix:
// "mean_sum"), and origins lists the graph nodes it computes, views folded into its loads first.
//
// Errors (kiln::Error): a node that mutates (run the pipeline first), a graph symbol named like
// a loop variable (x<digits>, r<digits>), a symbol that no input dim binds by itself, an
// integer tensor raised to a negative integer power.
#pragma once

#include <set>
#include <string>

#include "codegen/loop_ir.h"
#include "ir/graph.h"

namespace kiln::codegen {

struct LoweringOptions {
  // Ops to lower as Fallback externs even when a native lowering exists (for tests).
  std::set<std::string> force_fallback_ops;
  // f32 1-d to 3-d convolutions become ExternKind::Convolution calls in channels-last layout (a
  // backend with a convolution library: the CPU backend with oneDNN) instead of im2col + GEMM;
  // see codegen/lowering_convolution.cpp for the layout they bring.
  bool library_convolution = false;
  // The same library may run GEMMs (LoopProgram::library_matmul): the C++ emitter then calls its
  // matmul for GEMMs whose right operand is a frozen parameter (CppEmitOptions::library_matmul).
  bool library_matmul = false;
  // Parameters are constants (CompileOptions::freeze): library convolutions then carry a bound of
  // their output from the parameters' values (ExternCall::output_bound, passes/value_bounds.h).
  bool frozen_parameters = false;
};

LoopProgram lower(const ir::Graph& graph, const LoweringOptions& options = {});

}  // namespace kiln::codegen
