// Folding per-channel affine maps into convolutions, for frozen parameters (inference).
//
// A convolution whose only user scales or shifts its output by a constant per output channel —
// mul or div by s, add or sub t, where s and t are frozen parameters or folded constants that
// broadcast along the channel dim only (shape [C, 1, 1], [1, C, 1, 1], [1], or a number) — becomes
// one convolution with weight W*s (W/s) and bias b*s (b/s), b+t (b-t). Batch norm in inference,
// decomposed, is such a chain (sub mean, mul rstd, mul weight, add bias), so `conv -> batch_norm`
// becomes one convolution with a bias, as ONNX Runtime and Inductor's freezing fold it; the
// CPU backend then has no epilogue left but the activation. New weights and biases are
// CONSTANT_TENSOR parameters named "_folded_<node>_weight" / "_folded_<node>_bias" (earlier
// ones a later fold replaces are dropped by constant folding's cleanup); the folded values are
// computed in double and rounded once to the parameter's dtype.
//
// Not folded: transposed convolutions; a scale or shift that is not finite (inf * 0 = NaN where
// the convolution itself gave 0), a division by zero; an alpha other than 1; a convolution read
// by anything else; dtypes other than f32 and f64. Without `freeze` nothing changes.
#pragma once

#include "ir/graph.h"

namespace kiln::passes {

// Returns whether any convolution was folded.
bool fold_affine_into_convolutions(ir::Graph& graph, bool freeze);

}  // namespace kiln::passes
