// Decompositions of the losses. Input [C], [N, C] or [N, C, d1, ...]; the class dim is 1
// (0 for a 1-d input); targets hold class indices of the input's shape without that dim.
//   nll_loss:      w_t = weight[t] (1 without weights), 0 where t == ignore_index
//                  loss = -gather(x, class_dim, t) * w_t
//                  'mean' = sum(loss) / sum(w_t), 'sum' = sum(loss), 'none' = loss
//   cross_entropy: logp = log_softmax(x, class_dim) (a composite, decomposed next), then the
//                  nll above on logp; with label smoothing eps, PyTorch's mix
//                  (1 - eps) * nll + eps / C * smooth, where smooth = -sum_c(w_c * logp_c),
//                  0 at ignored targets, reduced like nll ('mean' divides by sum(w_t) too).
//                  Class-probability targets: -sum_c(w_c * p_c * logp_c) with p smoothed
//                  toward uniform; 'mean' divides by the number of elements.
//   mse_loss:      (x - y)^2, then mean / sum / none.
// Ignored targets are replaced by class 0 before gathering, so no index is out of range.
#include "passes/decompositions/decomposition.h"

namespace kiln::passes::decompositions {
namespace {

using ir::Argument;
using ir::Node;
using ir::OpCall;

int64_t class_dim_of(const Node* input) { return rank_of(input) == 1 ? 0 : 1; }

// 'none' keeps the per-element losses, 'sum' adds them, 'mean' divides the sum by
// `weight_total` (the mean over elements when it is null).
Node* reduce(Emitter& emit, Node* loss, const std::string& reduction, Node* weight_total, std::string_view role) {
  if (reduction == "none") return loss;
  if (reduction == "mean" && !weight_total) return emit.call("mean", {loss}, {}, role);
  Node* total = emit.call("sum", {loss}, {}, std::string(role) + "_total");
  if (reduction == "sum") return total;
  return emit.call("div", {total, weight_total}, {}, role);
}

// The pieces of nll every class-index loss needs.
struct Targets {
  Node* ignored;  // bool, target == ignore_index
  Node* safe;     // the target with ignored entries replaced by class 0
  Node* weight;   // w_t: the target's class weight, 0 where ignored (floating)
};

Targets class_targets(Emitter& emit, Node* target, Node* weight, int64_t ignore_index, DType dtype) {
  Targets result{};
  result.ignored = emit.call("eq", {target, ignore_index}, {}, "ignored");
  result.safe = emit.call("where", {result.ignored, int64_t(0), target}, {}, "safe_target");
  if (!weight) {
    Node* counted = emit.call("logical_not", {result.ignored}, {}, "counted");
    result.weight = emit.cast(counted, dtype, "target_weight");
    return result;
  }
  Node* index = result.safe;
  if (rank_of(index) != 1)
    index = emit.call("reshape", {index, Argument::sym_ints({meta_of(index).numel()})}, {}, "flat_target");
  Node* picked = emit.call("index_select", {weight, 0, index}, {}, "class_weight");
  if (index != result.safe)
    picked = emit.call("reshape", {picked, Argument::sym_ints(shape_of(target))}, {}, "class_weight_shaped");
  result.weight = emit.call("where", {result.ignored, 0.0, picked}, {}, "target_weight");
  return result;
}

// x[..., t, ...] along the class dim, in the target's shape.
Node* pick_class(Emitter& emit, Node* x, Node* safe_target, int64_t class_dim) {
  Node* index = emit.call("unsqueeze", {safe_target, class_dim}, {}, "target_index");
  Node* gathered = emit.call("gather", {x, class_dim, index}, {}, "picked");
  return emit.call("squeeze", {gathered, Argument::ints({class_dim})}, {}, "target_logp");
}

// Per-element nll of log-probabilities: -logp[t] * w_t.
struct Nll {
  Targets targets;
  Node* loss;
};

Nll nll_elements(Emitter& emit, Node* log_probs, Node* target, Node* weight, int64_t ignore_index) {
  Nll result{class_targets(emit, target, weight, ignore_index, dtype_of(log_probs)), nullptr};
  Node* picked = pick_class(emit, log_probs, result.targets.safe, class_dim_of(log_probs));
  Node* weighted = emit.call("mul", {picked, result.targets.weight}, {}, "weighted");
  result.loss = emit.call("neg", {weighted}, {}, "nll");
  return result;
}

// 'mean' divides by the summed weights of the non-ignored targets (their count without weights).
Node* weight_total(Emitter& emit, const std::string& reduction, const Targets& targets) {
  return reduction == "mean" ? emit.call("sum", {targets.weight}, {}, "weight_total") : nullptr;
}

std::vector<Node*> nll_loss(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  Node* weight = tensor_arg(call, 2);
  if (weight) weight = emit.compute_input(weight);
  const std::string& reduction = call.string_arg(3);
  Nll nll = nll_elements(emit, x, tensor_arg(call, 1), weight, call.int_arg(4));
  return {emit.finish(reduce(emit, nll.loss, reduction, weight_total(emit, reduction, nll.targets), "reduced"))};
}

// eps / C as a number (C must be known).
double smoothing_per_class(Emitter& emit, const Node* x, double smoothing) {
  const ir::SymInt& classes = shape_of(x).at(size_t(class_dim_of(x)));
  std::optional<int64_t> count = classes.maybe_constant();
  if (!count) emit.fail("label_smoothing needs a static number of classes, got ", classes.to_string());
  return smoothing / double(*count);
}

std::vector<Node*> cross_entropy_probabilities(Emitter& emit, const OpCall& call, Node* log_probs) {
  int64_t class_dim = class_dim_of(log_probs);
  Node* target = emit.compute_input(tensor_arg(call, 1));
  double smoothing = call.float_arg(5);
  if (smoothing > 0) {
    Node* kept = emit.call("mul", {target, 1.0 - smoothing}, {}, "target_kept");
    target = emit.call("add", {kept, smoothing_per_class(emit, log_probs, smoothing)}, {}, "target_smoothed");
  }
  Node* product = emit.call("mul", {log_probs, target}, {}, "target_logp");
  if (Node* weight = tensor_arg(call, 2)) {
    Node* per_class = channel_view(emit, emit.compute_input(weight), rank_of(log_probs), "class_weight");
    product = emit.call("mul", {product, per_class}, {}, "weighted");
  }
  Node* summed = emit.call("sum", {product, Argument::ints({class_dim})}, {}, "class_sum");
  Node* loss = emit.call("neg", {summed}, {}, "loss");
  return {emit.finish(reduce(emit, loss, call.string_arg(3), nullptr, "reduced"))};
}

std::vector<Node*> cross_entropy(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  Node* target = tensor_arg(call, 1);
  int64_t class_dim = class_dim_of(x);
  Node* log_probs = emit.call("log_softmax", {x, class_dim}, {}, "log_probs");
  if (is_floating(dtype_of(target))) return cross_entropy_probabilities(emit, call, log_probs);

  Node* weight = tensor_arg(call, 2);
  if (weight) weight = emit.compute_input(weight);
  const std::string& reduction = call.string_arg(3);
  double smoothing = call.float_arg(5);
  Nll nll = nll_elements(emit, log_probs, target, weight, call.int_arg(4));
  Node* total_weight = weight_total(emit, reduction, nll.targets);
  Node* nll_reduced = reduce(emit, nll.loss, reduction, total_weight, "nll_reduced");
  if (smoothing == 0) return {emit.finish(nll_reduced)};

  // smooth = -sum_c(w_c * logp_c), 0 at ignored targets.
  Node* terms = log_probs;
  if (weight)
    terms = emit.call("mul", {log_probs, channel_view(emit, weight, rank_of(x), "class_weight_view")}, {},
                      "weighted_logp");
  Node* summed = emit.call("sum", {terms, Argument::ints({class_dim})}, {}, "class_sum");
  Node* smooth = emit.call("neg", {summed}, {}, "smooth");
  smooth = emit.call("where", {nll.targets.ignored, 0.0, smooth}, {}, "smooth_kept");
  Node* smooth_reduced = reduce(emit, smooth, reduction, total_weight, "smooth_reduced");
  Node* nll_part = emit.call("mul", {nll_reduced, 1.0 - smoothing}, {}, "nll_part");
  Node* smooth_part = emit.call("mul", {smooth_reduced, smoothing_per_class(emit, x, smoothing)}, {}, "smooth_part");
  return {emit.finish(emit.call("add", {nll_part, smooth_part}))};
}

std::vector<Node*> mse_loss(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  Node* y = emit.compute_input(tensor_arg(call, 1));
  Node* difference = emit.call("sub", {x, y}, {}, "difference");
  Node* square = emit.call("mul", {difference, difference}, {}, "square");
  return {emit.finish(reduce(emit, square, call.string_arg(2), nullptr, "reduced"))};
}

}  // namespace

void register_loss_decompositions(DecompositionTable& table) {
  table["nll_loss"] = nll_loss;
  table["cross_entropy"] = cross_entropy;
  table["mse_loss"] = mse_loss;
}

}  // namespace kiln::passes::decompositions
