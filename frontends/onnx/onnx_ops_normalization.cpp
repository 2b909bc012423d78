// ONNX normalization ops: BatchNormalization (inference, and training_mode's batch
// statistics with the running statistics updated), LayerNormalization (with its mean
// and inverse standard deviation outputs),
// InstanceNormalization, GroupNormalization (per-group scale before opset 21, per-channel
// from 21).
#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

// training_mode=1: normalized by the batch's mean and (population) variance over every dim
// but 1; outputs 1 and 2 are the running statistics updated with momentum:
// running * momentum + batch * (1 - momentum).
void convert_batch_norm_training(OnnxNodeContext& context, double epsilon, double momentum) {
  context.require_outputs_at_most(3, "running statistics");
  ir::Node* x = context.tensor(0);
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < x->value().rank(); ++d) dims.push_back(d);
  ir::Node* mean = context.call("mean", {x, ir::Argument::ints(dims)});
  ir::Node* variance = context.call("var", {x, ir::Argument::ints(dims)}, {{"correction", 0.0}});
  context.emit(0, "batch_norm", {x, context.tensor(1), context.tensor(2), mean, variance, false, 0.1, epsilon});
  auto running = [&](size_t index, ir::Node* batch) {
    context.emit(index, "add", {context.call("mul", {context.tensor(index + 2), momentum}), context.call("mul", {batch, 1.0 - momentum})});
  };
  if (context.output_used(1)) running(1, mean);
  if (context.output_used(2)) running(2, variance);
}

void convert_batch_norm(OnnxNodeContext& context) {
  double epsilon = context.float_attribute("epsilon", 1e-5);
  if (context.int_attribute("training_mode", 0) != 0)
    return convert_batch_norm_training(context, epsilon, context.float_attribute("momentum", 0.9));
  context.require_outputs_at_most(1, "running statistics");
  double momentum = 1.0 - context.float_attribute("momentum", 0.9);  // PyTorch counts it the other way (unused here)
  context.emit(0, "batch_norm",
               {context.tensor(0), context.tensor(1), context.tensor(2), context.tensor(3), context.tensor(4), false,
                momentum, epsilon});
}

// LayerNormalization's optional outputs 1 and 2: the mean and 1 / sqrt(variance + epsilon)
// over the normalized dims (kept as size-1 dims), computed in f32 (stash_type 1, the default)
// or in the input's type (stash_type 0).
void layer_norm_statistics(OnnxNodeContext& context, ir::Node* x, int64_t axis, double epsilon) {
  if (context.int_attribute("stash_type", 1) == 1 && x->value().dtype != DType::f32) x = context.call("cast", {x, DType::f32});
  ir::Argument dims = ir::Argument::ints(dims_from(axis, x->value().rank()));
  ir::Node* mean = context.call("mean", {x, dims, true});
  ir::Node* centered = context.call("sub", {x, mean});
  ir::Node* variance = context.call("mean", {context.call("mul", {centered, centered}), dims, true});
  if (context.output_used(1)) context.set_output(1, mean);
  if (context.output_used(2)) context.set_output(2, context.call("rsqrt", {context.call("add", {variance, epsilon})}));
}

void convert_layer_norm(OnnxNodeContext& context) {
  int64_t rank = context.rank(0);
  int64_t axis = context.wrap_axis(context.int_attribute("axis", -1), rank);
  double epsilon = context.float_attribute("epsilon", 1e-5);
  ir::Node* x = context.tensor(0);
  if (context.output_used(1) || context.output_used(2)) layer_norm_statistics(context, x, axis, epsilon);
  ir::SymShape normalized(x->value().shape.begin() + axis, x->value().shape.end());
  bool has_bias = context.has_input(2);
  // Kiln's layer_norm takes weight and bias of exactly the normalized shape; others broadcast.
  bool exact = context.shape(1) == normalized && (!has_bias || context.shape(2) == normalized);
  if (exact) {
    ir::Argument bias = optional_tensor(context, 2);
    context.emit(0, "layer_norm", {x, ir::Argument::sym_ints(normalized), context.tensor(1), bias, epsilon});
    return;
  }
  ir::Node* normalized_x = context.call("layer_norm", {x, ir::Argument::sym_ints(normalized), ir::Argument(), ir::Argument(), epsilon});
  ir::Node* scaled = has_bias ? context.call("mul", {normalized_x, context.tensor(1)}) : context.emit(0, "mul", {normalized_x, context.tensor(1)});
  if (has_bias) context.emit(0, "add", {scaled, context.tensor(2)});
}

int64_t static_channels(const OnnxNodeContext& context) {
  ir::SymShape shape = context.shape(0);
  if (shape.size() < 2 || !shape[1].is_constant()) context.fail("the channel dim (1) must be static");
  return shape[1].constant();
}

void convert_instance_norm(OnnxNodeContext& context) {
  int64_t channels = static_channels(context);
  double epsilon = context.float_attribute("epsilon", 1e-5);
  context.emit(0, "group_norm", {context.tensor(0), channels, context.tensor(1), context.tensor(2), epsilon});
}

void convert_group_norm(OnnxNodeContext& context) {
  int64_t groups = context.int_attribute("num_groups", 0);
  if (groups <= 0) context.fail("attribute 'num_groups' must be positive");
  double epsilon = context.float_attribute("epsilon", 1e-5);
  ir::Node* x = context.tensor(0);
  if (context.opset() >= 21) {
    context.emit(0, "group_norm", {x, groups, context.tensor(1), context.tensor(2), epsilon});
    return;
  }
  // Opsets 18-20: scale and bias hold one value per group; repeat each over its channels.
  int64_t channels = static_channels(context);
  if (channels % groups != 0) context.fail(channels, " channels do not divide into ", groups, " groups");
  int64_t rank = x->value().rank();
  auto per_channel = [&](size_t index) {
    ir::Node* values = context.call("reshape", {context.tensor(index), ir::Argument::ints({groups, 1})});
    values = context.call("expand", {values, ir::Argument::ints({groups, channels / groups})});
    std::vector<int64_t> shape(size_t(rank - 1), 1);
    shape[0] = channels;
    return context.call("reshape", {values, ir::Argument::ints(shape)});
  };
  ir::Node* normalized = context.call("group_norm", {x, groups, ir::Argument(), ir::Argument(), epsilon});
  context.emit(0, "add", {context.call("mul", {normalized, per_channel(1)}), per_channel(2)});
}

}  // namespace

void register_onnx_normalization_ops(OnnxOpTable& table) {
  table.add("BatchNormalization", convert_batch_norm);
  table.add("LayerNormalization", convert_layer_norm);
  table.add("InstanceNormalization", convert_instance_norm);
  table.add("GroupNormalization", convert_group_norm);
}

}  // namespace kiln::frontends
