// ONNX losses: NegativeLogLikelihoodLoss (Kiln's nll_loss: class weights, ignore_index,
// reductions none/sum/mean over [N, C, d1, ...]) and SoftmaxCrossEntropyLoss (log_softmax over
// the class dim, then the same; its optional second output is the log-probabilities). ONNX
// defines both as PyTorch does: 'mean' divides by the summed weights of the targets that are
// not ignored. Targets of either integer type are read as i64.
#include <limits>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

// nll_loss of `log_probabilities` against input `target_index` (weights at `weight_index`).
void emit_nll(OnnxNodeContext& context, ir::Node* log_probabilities, size_t target_index, size_t weight_index) {
  std::string reduction = context.string_attribute("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    context.fail("reduction '", reduction, "' is not one of none, sum, mean");
  if (log_probabilities->value().rank() < 2)
    context.fail("the input must be [N, C, ...], but it has rank ", log_probabilities->value().rank());
  ir::Node* target = context.tensor(target_index);
  if (!is_integral(target->value().dtype)) context.fail("the target must hold integer class indices");
  if (target->value().dtype != DType::i64) target = context.call("cast", {target, DType::i64});
  // Without ignore_index no target is ignored: pass one no class index can equal.
  int64_t ignore_index = context.int_attribute("ignore_index", std::numeric_limits<int64_t>::min());
  context.emit(0, "nll_loss", {log_probabilities, target, optional_tensor(context, weight_index), reduction, ignore_index});
}

void convert_negative_log_likelihood_loss(OnnxNodeContext& context) { emit_nll(context, context.tensor(0), 1, 2); }

void convert_softmax_cross_entropy_loss(OnnxNodeContext& context) {
  context.require_outputs_at_most(2, "log_prob");
  if (context.rank(0) < 2) context.fail("the scores must be [N, C, ...], but they have rank ", context.rank(0));
  ir::Node* log_probabilities = context.output_used(1) ? context.emit(1, "log_softmax", {context.tensor(0), int64_t(1)})
                                                       : context.call("log_softmax", {context.tensor(0), int64_t(1)});
  emit_nll(context, log_probabilities, 1, 2);
}

}  // namespace

void register_onnx_loss_ops(OnnxOpTable& table) {
  table.add("NegativeLogLikelihoodLoss", convert_negative_log_likelihood_loss);
  table.add("SoftmaxCrossEntropyLoss", convert_softmax_cross_entropy_loss);
}

}  // namespace kiln::frontends
