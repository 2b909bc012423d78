// DataParallel: what kiln::compile_training does with TrainingOptions::data_parallel, after
// PyTorch's DistributedDataParallel. Each rank trains the same model on its own share of the
// global batch; their gradients are averaged before every optimizer update, so every rank makes
// the update that one process would make from the mean loss over the concatenated batch (when
// the ranks' batches are of equal size and the loss is a mean over the batch).
//
// At set-up (a collective, once the first step variant is compiled): the ranks check that they
// build the same training (compiler/distributed/rank_agreement.h: the parameters' names, dtypes
// and shapes, the module's buffers, the optimizer's options, the forward and backward graphs),
// then take rank 0's parameters (one broadcast per dtype group of the ParameterArena) and
// buffers, so that they start identical whatever each initialized.
//
// The gradients are averaged across the ranks bucket by bucket (compiler/distributed/
// gradient_buckets.h: about 25 MB each, in the order the backward produces the gradients), then
// the fused optimizer runs unchanged on every rank. CompiledTraining::step() averages each bucket
// as soon as the backward has computed it, on the communication stream of a VM while the rest of
// the backward runs on its compute stream (the backward cut into stages at the buckets'
// boundaries: compiler/distributed/backward_stages.h), as DDP's bucket hooks do.
// accumulate() communicates nothing, and apply() averages what was accumulated since (a
// collective), so gradient accumulation over micro-batches costs one average per update, as
// DDP's no_sync() gives. Afterwards the gradient views hold the averaged gradients, as PyTorch's
// .grad does after DDP's backward.
//
// Buffers (BatchNorm's running statistics), which each rank's forward updates from its own share
// of the batch, are rank 0's again before every training forward (TrainingOptions::
// broadcast_buffers, as DDP's broadcast_buffers): one broadcast per dtype of all of them packed
// together, as DDP coalesces its buffers. evaluate() is not a collective and broadcasts nothing:
// it reads this rank's buffers, rank 0's of the last step updated by this rank's last batch.
//
// Not done yet: CUDA tensors need a NCCL process group, which has never run on a GPU here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/distributed/gradient_buckets.h"
#include "compiler/distributed/rank_agreement.h"
#include "compiler/training/parameter_arena.h"
#include "ir/graph.h"
#include "kiln/distributed.h"
#include "kiln/training.h"

namespace kiln::compiler {

class DataParallel {
 public:
  // The gradients' buckets, in `gradient_order` (gradient_production_order's).
  DataParallel(std::shared_ptr<distributed::ProcessGroup> group, training::ParameterArena& arena,
               const std::vector<std::string>& gradient_order, int64_t bucket_bytes);

  // The set-up collective: the agreement check, then rank 0's parameters and `buffers` everywhere.
  void start(const std::vector<RankDescription>& descriptions, const std::vector<Tensor>& buffers);
  // Rank 0's values of the buffers given to start() on every rank (a collective; nothing on one rank).
  void broadcast_buffers();
  // The gradient arena's average across the ranks (a collective).
  void average_gradients();
  // Bucket `index`'s part of it (a collective: every rank averages the buckets in one order).
  void average_bucket(size_t index);

  distributed::ProcessGroup& group() const { return *group_; }
  const std::vector<GradientBucket>& buckets() const { return buckets_; }

 private:
  std::shared_ptr<distributed::ProcessGroup> group_;
  training::ParameterArena* arena_;
  std::vector<GradientBucket> buckets_;
  std::vector<Tensor> buffers_;  // the module's buffers (views of its own storage)
};

// The parameters `wrt` (the backward's outputs, in order) sorted by where the backward computes
// their gradients: the node that produces each output, earliest first.
std::vector<std::string> gradient_production_order(const ir::Graph& backward, const std::vector<std::string>& wrt);

// The optimizer and every option, one per line ("adam", "lr 0.001", ...), exact to the last bit.
std::string describe_optimizer(const training::OptimizerOptions& optimizer);

}  // namespace kiln::compiler
