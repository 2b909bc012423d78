// Small models for the batch split's tests (passes/batch_split.h; tests/passes and tests/compiler
// use the same graphs).
#pragma once

#include "ir/graph.h"

namespace kiln::test_support {

// A sequence-first attention ([seq 5, batch 4, d 8], as nn.MultiheadAttention without
// batch_first, 2 heads): the batch is the input's second dim, the heads merge it ([seq,
// batch*heads, hd]) and the output projection's rows merge it with the sequence ([seq*batch, d],
// returned too: seq blocks of batch rows). Returns (out, projected).
ir::Graph sequence_first_attention();

}  // namespace kiln::test_support
