// The backward of a data-parallel training step cut into stages that end where gradient buckets
// are complete, so that a bucket's average across the ranks runs on the VM's communication stream
// while the next stages compute (compiled_training.cpp's overlapped step, after PyTorch DDP's
// bucket hooks). Each stage is compiled on its own (compiler/subgraphs.h's split_in_stages): the
// values a later stage reads are returned by the stage that computes them, which costs the fusion
// of kernels across a cut, and nothing else.
#pragma once

#include <string>
#include <vector>

#include "compiler/distributed/gradient_buckets.h"
#include "compiler/subgraphs.h"
#include "ir/graph.h"

namespace kiln::compiler {

struct BackwardStages {
  StagedGraph staged;
  // Per stage: the buckets whose gradients are all computed once it and the stages before it ran,
  // each listed once, at the first such stage.
  std::vector<std::vector<size_t>> buckets_done;
  // Per stage: the parameters (of `wrt`) whose gradients it returns, and each one's name among its
  // returned values.
  std::vector<std::vector<std::pair<std::string, std::string>>> gradients;
};

// `backward` (its outputs: the gradients of `wrt`, in that order) cut after the node that
// completes each of `buckets` (the last of its gradients in node order).
BackwardStages stage_backward(const ir::Graph& backward, const std::vector<std::string>& wrt,
                              const std::vector<GradientBucket>& buckets);

}  // namespace kiln::compiler
