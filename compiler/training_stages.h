// The training stages of the pipeline, for `kiln dump --stage joint|forward|backward`,
// `kiln compile --train` and kiln::compile_training: a model after the default pipeline
// ("simplified"), its joint forward+backward graph for a scalar loss output against its
// floating parameters
// (passes/autodiff.h, then simplified again), and that graph's min-cut partition into forward
// and backward (passes/partition.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "passes/joint_graph.h"
#include "passes/partition.h"

namespace kiln::compiler {

// "joint", "forward", "backward".
bool is_training_stage(std::string_view stage);

// The index of the output to differentiate: the output named `loss`, or with an empty `loss`
// the model's only floating scalar output. Throws kiln::Error naming the outputs when no
// output has that name, when the named output is not a floating scalar, or when `loss` is
// empty and the model has no scalar output or several.
int64_t find_loss_output(const ir::Graph& model, const std::string& loss);

// The joint graph of `model` (as loaded, at any stage up to "simplified"; copied) for the
// loss output chosen by find_loss_output, with gradients of the parameters (get_attr targets)
// and placeholders named in `wrt`, in that order; an empty `wrt`: every floating parameter the
// model reads, in the order of each one's first read.
passes::JointGraph training_joint_graph(const ir::Graph& model, const std::string& loss,
                                        const std::vector<std::string>& wrt = {});

// The min-cut partition of `joint` (not modified) into the forward and backward graphs, with
// its saved-bytes report (passes/partition.h).
passes::Partition partition_training_graph(const passes::JointGraph& joint);

}  // namespace kiln::compiler
