// Which GEMM epilogues the CUDA backend hands to cuBLASLt instead of running them as a kernel.
//
// The scheduler makes a pointwise node that reads a GEMM's output its epilogue (codegen/schedule.h);
// the C++ backend applies it per block of rows, the CUDA backend by default as a pointwise kernel
// after the cuBLAS call. cuBLASLt fuses a few epilogues into the product itself
// (D = act(A @ B + bias)), which saves the kernel and a round trip of the output through memory.
// fused_gemm_epilogue() recognises exactly those, on the scheduled loop IR:
//   - the epilogue is one step with one f32 output, stored at the GEMM output's own point, and
//     its expression is act(v) with v = gemm[point] + bias[n] (either order) or v = gemm[point];
//   - bias: a load of an f32 buffer at x_last + c (one value per output column, broadcast over
//     the rows and the batch: a [n] or [1, n] bias), c a multiple of 4 (16-byte alignment);
//   - act: none (then a bias is required), relu, or the tanh form of GELU exactly as
//     passes/decompositions/activations.cpp writes it (cuBLASLt's GELU epilogue is the tanh
//     approximation; the exact erf form is not fused and keeps its kernel);
//   - everything is f32 (A, B, the GEMM output, the bias, the epilogue's output);
//   - the GEMM's own output is an intermediate buffer that nothing but this epilogue reads
//     (the fused call never writes it), at offset 0 and laid out like the epilogue's output.
// Anything else keeps the cuBLAS call plus the epilogue kernel.
#pragma once

#include <optional>
#include <string>

#include "codegen/schedule.h"

namespace kiln::codegen::cuda {

enum class GemmActivation { none, relu, gelu_tanh };

struct FusedGemmEpilogue {
  GemmActivation activation = GemmActivation::none;
  // The bias: a view [n] with stride 1 of the bias buffer (absent: no bias).
  std::optional<StridedView> bias;
  // The buffer the fused call writes: the epilogue's output, laid out as the GEMM's output view.
  int output = -1;
};

// The fused form of scheduled kernel `kernel`'s epilogue, or std::nullopt when the kernel is not
// a GEMM with an epilogue cuBLASLt can run (see above).
std::optional<FusedGemmEpilogue> fused_gemm_epilogue(const ScheduledProgram& scheduled, int kernel);

// "bias_relu", "gelu_tanh", "bias": the epilogue's name as the launch plan prints it.
std::string epilogue_name(const FusedGemmEpilogue& epilogue);

}  // namespace kiln::codegen::cuda
