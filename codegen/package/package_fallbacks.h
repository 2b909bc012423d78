// The fallback handler of a package: the C++ text, pasted into NAME.cpp, that computes the
// model's fallback nodes (ops the code generator does not lower; the kernels call
// args->fallback for them, codegen/cpp/cpp_library_calls.cpp) with no help from Kiln. It holds
// the text of ir/kernels/portable_kernels.h, the math the interpreter's reference kernels run
// too, in a namespace of the package's own (NAME_fallback_kernels, so that packages of several
// Kiln versions link into one program), and one function `run_fallback` whose switch over
// the fallback index calls that node's driver with its attributes (dims, reduce mode, k,
// largest, which indices are None, a scalar src, sampling modes) baked in.
//
// Covered: cumsum, cumprod, cummax, cummin, logcumsumexp, scatter (with reduce), index_put (integer and bool indices, None dims,
// accumulate), topk, det, convolution (transposed, or of dtypes the GEMM does not take),
// matmul/bmm (integers, f16, bf16: dtypes the GEMM does not take), grid_sample (nearest,
// bilinear, bicubic; zeros, border, reflection; align_corners; 1-3 spatial dims), roi_align
// (avg, max, aligned) and deform_conv2d (mask, bias, groups, offset groups), on
// f32, f64, f16, bf16, i64, i32, i16, i8, u8 and bool tensors (f16 and bf16 widened to double
// and rounded back as the interpreter does, with runtime/half.h's conversions, pasted in too).
// These are every op the code generator leaves to a fallback; any other fallback node (an op
// added later without a driver here) makes package_fallback_handler throw a kiln::Error naming
// every such node with its op and what to do.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::codegen {

// The handler's text for the fallback nodes `fallbacks` (graph node names in the kernels'
// ABI order) of `graph`; "" when there are none. Throws kiln::Error when a node is not covered.
std::string package_fallback_handler(const ir::Graph& graph, const std::vector<std::string>& fallbacks,
                                     const std::string& package_name);

}  // namespace kiln::codegen
