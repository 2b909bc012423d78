// The training stages of the pipeline, for `kiln dump --stage joint|forward|backward`: a
// model after the default pipeline ("simplified"), its joint forward+backward graph for a
// scalar loss output against every floating parameter (passes/autodiff.h, then simplified
// again), and that graph's min-cut partition into forward and backward (passes/partition.h).
#pragma once

#include <string>
#include <string_view>

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
// loss output chosen by find_loss_output, with gradients of every floating parameter.
passes::JointGraph training_joint_graph(const ir::Graph& model, const std::string& loss);

}  // namespace kiln::compiler
