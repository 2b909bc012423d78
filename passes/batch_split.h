// Batch splitting: whether a graph computes each sample of its batch on its own, and the graph
// of one chunk of the batch.
//
// A model called on a batch of B samples mostly computes every sample apart from the others: its
// convolutions, matrix products against weights, normalizations over features and pointwise ops
// never mix two samples. Such a graph is the same as `chunks` calls of the graph on B/chunks
// samples each, their outputs side by side; the C++ target runs those calls on its threads at
// once, one chunk per thread, each kernel inside a chunk on that thread alone. Every kernel then
// runs on one thread without a barrier or a hand-off, instead of each small kernel split over
// the threads (per-sample work too small to share well: MobileNet-v2 at batch 8, LeNet at 64).
//
// The analysis tracks, for every tensor, where the batch is: the dim that holds it and how many
// consecutive indices of that dim belong to one sample (a transformer's token embedding reshapes
// [B, S] ids into [B*S]: sample b holds indices [b*S, (b+1)*S)), or that the tensor does not
// depend on the sample (weights, constants, a causal mask). Each op is separable under the rule
// of its kind (below, in batch_split.cpp), or the graph is not split. The batch is the first
// input's first dim, or else its second (a sequence-first model's [seq, batch, d]); inputs with
// the batch's size in that dim are split, others are passed whole to every chunk. Every output
// must hold the batch somewhere.
//
// Only static graphs are split (every size a constant), and the chunk graph is checked against
// the op registry's own shape rules: every rewritten node's inferred shape must be the shape the
// analysis expects, or the graph is not split.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

// Where an input or output of the whole call holds the batch: dim `dim` (-1: nowhere; the input
// is passed whole to every chunk), made of `outer` blocks of batch x per_sample indices, sample b
// holding indices [b * per_sample, (b + 1) * per_sample) of each block. A chunk's part of it is a
// slice of that dim: one contiguous block of memory where it is the first dim and outer is 1.
struct BatchSlice {
  int64_t dim = -1;
  int64_t per_sample = 1;
  int64_t outer = 1;
  friend bool operator==(const BatchSlice&, const BatchSlice&) = default;
};

struct BatchSplit {
  ir::Graph chunk;                 // the graph of one chunk (batch / chunks samples)
  int64_t batch = 0;               // samples in a whole call
  int64_t chunks = 1;              // chunks of batch / chunks samples each
  std::vector<BatchSlice> inputs;  // per placeholder
  std::vector<BatchSlice> outputs; // per output
};

// How many chunks: `chunks` exactly (where it divides the batch), or with `chunks` 0 the
// smallest chunks that keep every GEMM that matters efficient, where they keep `cpus` CPUs busy
// and the call has work enough to share (kMinWork).
//
// Why small chunks: a chunk's activations are reused from the caches, layer after layer, while
// they fit; MobileNet-v2 at batch 8 on 2 threads ran 24 ms as 8 chunks of one image, 31 ms as 2
// of four, 33 ms whole (bench/README.md). Why not too small: a GEMM whose rows are the samples (a
// linear layer on [batch, features]) needs rows to be efficient; a chunk holds at least
// kMinGemmRows of them in every such GEMM with a tenth or more of the model's multiply-adds
// (LeNet at batch 64, whose first linear layer has 11% of them: 0.50 ms in 2, 4 or 8 chunks,
// 0.67 ms in 64). Of chunks that are equally fast, more leave less to wait for when a thread
// starts late: LeNet's slowest tenth of calls took 0.58-0.66 ms in 2 chunks, 0.55-0.57 in 4.
struct BatchChunking {
  int64_t chunks = 0;  // 0: chosen as above
  int64_t cpus = 1;    // (when chosen) the chunks must be at least this many, or one sample each
  int64_t max_chunks = 64;
  static constexpr int64_t kMinGemmRows = 16;
  // (When chosen) a call with less work than this (its nodes' multiply-adds, or output elements
  // where they have none) runs whole: one parallel loop's worth, as the C++ emitter's
  // CppEmitOptions::parallel_threshold, under which waking another thread costs more than it saves.
  static constexpr int64_t kMinWork = 32768;
};

// The chunk graph of `graph`, or std::nullopt with the reason in `why_not` (when given) where
// the graph is not separable, not static, or its batch does not divide as `chunking` asks.
std::optional<BatchSplit> split_batch(const ir::Graph& graph, const BatchChunking& chunking, std::string* why_not = nullptr);

}  // namespace kiln::passes
