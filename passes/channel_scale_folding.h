// Folding a per-input-channel scale of one sample into the convolution that reads it.
//
// convolution(x * s, W, b, ...) -> convolution(x, W * s, b, ...), where x is one sample
// [1, C, H, W] and s a value computed in the graph that varies along the channel dim only
// ([1, C, 1, 1] or [C, 1, 1]): a squeeze-and-excitation block's gate (EfficientNet, MobileNet-v3,
// RegNetY), which scales the whole activation before the block's projection. W * s is O x C x KH x KW
// products against C x H x W for the scale itself, and the convolution no longer reads a scaled
// copy of x: folded where the weights have at most a quarter as many elements as x. The weights
// then change on every call (oneDNN reorders them per call; a few thousand values where it folds).
//
// Values: each term W[o, c] * (x[c] * s[c]) becomes (W[o, c] * s[c]) * x[c], a rounding apart; a
// NaN or infinity gives NaN or infinity either way. Only without padding (a padded position is a
// 0 of the scaled input, which a non-finite s would turn into NaN once in the weights), groups 1,
// not transposed, and where the product has no other user.
#pragma once

#include "ir/graph.h"

namespace kiln::passes {

// Returns whether any convolution was folded.
bool fold_channel_scales_into_convolutions(ir::Graph& graph);

}  // namespace kiln::passes
