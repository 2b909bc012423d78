// ATen attention and loss functions: scaled_dot_product_attention (and the CPU flash and
// math variants that decompositions produce; grouped-query attention repeats the key and
// value heads) onto Kiln's composite op; cross_entropy, nll_loss, mse_loss onto Kiln's losses;
// l1, smooth_l1, huber, binary cross entropy (with logits), kl_div as compositions. Reductions
// come as PyTorch's enum: 0 none, 1 mean, 2 sum.
#include <cmath>
#include <limits>

#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

// key / value with their heads repeated to the query's (enable_gqa).
ir::Node* repeat_heads(AtenNodeContext& c, ir::Node* x, const SymInt& query_heads) {
  const ir::SymShape& shape = shape_of(x);
  if (shape.size() < 3) return x;
  const SymInt& heads = shape[shape.size() - 3];
  if (heads == query_heads) return x;
  if (!heads.is_constant() || !query_heads.is_constant() || query_heads.constant() % heads.constant() != 0)
    c.fail("grouped-query attention needs the query heads (", query_heads.to_string(), ") to be a multiple of the key heads (",
           heads.to_string(), ")");
  int64_t repeat = query_heads.constant() / heads.constant();
  std::vector<SymInt> with_group(shape.begin(), shape.end() - 2);
  with_group.insert(with_group.end(), {SymInt(1), shape[shape.size() - 2], shape.back()});
  std::vector<SymInt> expanded = with_group;
  expanded[expanded.size() - 3] = SymInt(repeat);
  std::vector<SymInt> merged(shape.begin(), shape.end());
  merged[merged.size() - 3] = query_heads;
  ir::Node* y = c.call("reshape", {x, ir::Argument::sym_ints(with_group)});
  y = c.call("expand", {y, ir::Argument::sym_ints(expanded)});
  return c.call("reshape", {y, ir::Argument::sym_ints(merged)});
}

ir::Node* attention(AtenNodeContext& c) {
  ir::Node* query = c.tensor("query");
  ir::Node* key = c.tensor("key");
  ir::Node* value = c.tensor("value");
  ir::Node* mask = c.optional_tensor("attn_mask");
  double dropout = c.float_arg("dropout_p", 0.0);
  if (dropout != 0.0) c.fail("attention dropout (dropout_p = ", dropout, ") is not supported; export the model in eval mode");
  if (c.bool_arg("enable_gqa", false) && rank_of(query) >= 3) {
    const SymInt& heads = shape_of(query)[size_t(rank_of(query) - 3)];
    key = repeat_heads(c, key, heads);
    value = repeat_heads(c, value, heads);
  }
  ir::Kwargs kwargs;
  if (std::optional<double> scale = c.optional_float("scale")) kwargs.emplace_back("scale", *scale);
  return c.call("scaled_dot_product_attention", {query, key, value, mask ? ir::Argument(mask) : ir::Argument(), 0.0,
                                                 c.bool_arg("is_causal", false)},
                std::move(kwargs));
}

void convert_sdpa(AtenNodeContext& c) { c.set_output(0, attention(c)); }

// The attention scores q k^T * scale, causal positions (key j > query i) and a bool mask's
// False set to -inf, a float mask added: what the softmax of attention runs over.
ir::Node* attention_scores(AtenNodeContext& c) {
  ir::Node* query = c.tensor("query");
  ir::Node* key = c.tensor("key");
  const ir::SymShape& q = shape_of(query);
  const ir::SymShape& k = shape_of(key);
  if (q.size() < 2 || k.size() < 2) c.fail("attention needs query and key of at least 2 dims");
  double scale = 0;
  if (std::optional<double> given = c.optional_float("scale")) {
    scale = *given;
  } else {
    std::optional<int64_t> embed = q.back().maybe_constant();
    if (!embed) c.fail("the attention statistics need a static embedding size (or a given scale)");
    scale = 1.0 / std::sqrt(double(*embed));
  }
  ir::Node* scores = c.call("mul", {c.call("matmul", {query, c.call("transpose", {key, int64_t(-2), int64_t(-1)})}), scale});
  constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();
  if (c.bool_arg("is_causal", false)) {
    ir::Node* row = c.call("unsqueeze", {c.call("iota", {q[q.size() - 2]}), int64_t(-1)});
    ir::Node* column = c.call("unsqueeze", {c.call("iota", {k[k.size() - 2]}), int64_t(0)});
    scores = c.call("where", {c.call("ge", {row, column}), scores, kMinusInfinity});
  }
  if (ir::Node* mask = c.optional_tensor("attn_mask"))
    scores = dtype_of(mask) == DType::boolean ? c.call("where", {mask, scores, kMinusInfinity}) : c.call("add", {scores, mask});
  return scores;
}

// log(sum(exp(scores))) over the keys, shifted by the row's maximum (0 for an all -inf row,
// whose result is -inf).
ir::Node* scores_logsumexp(AtenNodeContext& c, ir::Node* scores) {
  ir::Node* high = c.call("amax", {scores, ir::Argument::ints({-1}), true});
  ir::Node* shift = c.call("where", {c.call("eq", {c.call("abs", {high}), std::numeric_limits<double>::infinity()}), 0.0, high});
  ir::Node* total = c.call("sum", {c.call("exp", {c.call("sub", {scores, shift})}), ir::Argument::ints({-1}), false});
  return c.call("add", {c.call("log", {total}), c.call("squeeze", {shift, ir::Argument::ints({-1})})});
}

// Variants returning (output, statistics, ...): _scaled_dot_product_flash_attention_for_cpu's
// output 1 is the logsumexp of the scores [B, H, L], _scaled_dot_product_attention_math's the
// attention weights (softmax of the scores). Other outputs are not computed.
void convert_sdpa_variant(AtenNodeContext& c) {
  bool flash = c.target().find("flash_attention") != std::string::npos;
  for (size_t i = 2; i < c.output_count(); ++i)
    if (c.output_used(i)) c.fail("output ", i, " (attention statistics) is not supported; only the attention output and ",
                                 flash ? "the logsumexp are" : "the weights are");
  c.set_output(0, attention(c));
  if (c.output_count() < 2 || !c.output_used(1)) return;
  if (c.bool_arg("enable_gqa", false)) c.fail("output 1 (attention statistics) with enable_gqa is not supported");
  ir::Node* scores = attention_scores(c);
  c.set_output(1, flash ? scores_logsumexp(c, scores) : c.call("softmax", {scores, int64_t(-1), ir::Argument()}));
}

std::string reduction_name(AtenNodeContext& c) {
  int64_t reduction = c.int_arg("reduction", 1);
  if (reduction == 0) return "none";
  if (reduction == 1) return "mean";
  if (reduction == 2) return "sum";
  c.fail("reduction ", reduction, " is not one of 0 (none), 1 (mean), 2 (sum)");
}

ir::Node* reduce(AtenNodeContext& c, ir::Node* loss) {
  std::string reduction = reduction_name(c);
  if (reduction == "none") return loss;
  return c.call(reduction == "mean" ? "mean" : "sum", {loss});
}

void convert_cross_entropy(AtenNodeContext& c) {
  ir::Node* weight = c.optional_tensor("weight");
  c.emit(0, "cross_entropy", {c.tensor("self"), c.tensor("target"), weight ? ir::Argument(weight) : ir::Argument(),
                              reduction_name(c), c.int_arg("ignore_index", -100), c.float_arg("label_smoothing", 0.0)});
}

void convert_nll_loss(AtenNodeContext& c) {
  ir::Node* weight = c.optional_tensor("weight");
  c.emit(0, "nll_loss", {c.tensor("self"), c.tensor("target"), weight ? ir::Argument(weight) : ir::Argument(),
                         reduction_name(c), c.int_arg("ignore_index", -100)});
  if (c.output_used(1)) c.fail("output 1 (total_weight) of nll_loss_forward is not supported");
}

void convert_mse_loss(AtenNodeContext& c) {
  c.emit(0, "mse_loss", {c.tensor("self"), c.tensor("target"), reduction_name(c)});
}

void convert_l1_loss(AtenNodeContext& c) {
  c.set_output(0, reduce(c, c.call("abs", {c.call("sub", {c.tensor("self"), c.tensor("target")})})));
}

// smooth_l1 (beta) and huber (delta): quadratic below the threshold, linear above.
AtenConverter robust_loss(bool huber) {
  return [huber](AtenNodeContext& c) {
    double threshold = c.float_arg(huber ? "delta" : "beta", 1.0);
    ir::Node* difference = c.call("abs", {c.call("sub", {c.tensor("self"), c.tensor("target")})});
    ir::Node* loss;
    if (!huber && threshold == 0.0) {
      loss = difference;
    } else {
      ir::Node* quadratic = c.call("mul", {c.call("mul", {difference, difference}), huber ? 0.5 : 0.5 / threshold});
      ir::Node* linear = huber ? c.call("mul", {c.call("sub", {difference, 0.5 * threshold}), threshold})
                               : c.call("sub", {difference, 0.5 * threshold});
      loss = c.call("where", {c.call("lt", {difference, threshold}), quadratic, linear});
    }
    c.set_output(0, reduce(c, loss));
  };
}

// -(t log x + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch does.
void convert_binary_cross_entropy(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  ir::Node* t = c.tensor("target");
  ir::Node* log_x = c.call("clamp", {c.call("log", {x}), -100.0, ir::Argument()});
  ir::Node* log_rest = c.call("clamp", {c.call("log", {c.call("sub", {1.0, x})}), -100.0, ir::Argument()});
  ir::Node* loss = c.call("neg", {c.call("add", {c.call("mul", {t, log_x}), c.call("mul", {c.call("sub", {1.0, t}), log_rest})})});
  if (ir::Node* weight = c.optional_tensor("weight")) loss = c.call("mul", {loss, weight});
  c.set_output(0, reduce(c, loss));
}

// (1 - t) x + (1 + (p - 1) t) * log(1 + exp(-x)), log-sum-exp stable form.
void convert_bce_with_logits(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  ir::Node* t = c.tensor("target");
  ir::Node* softplus_neg = c.call("add", {c.call("log1p", {c.call("exp", {c.call("neg", {c.call("abs", {x})})})}),
                                          c.call("maximum", {c.call("neg", {x}), 0.0})});
  ir::Node* weight_log = softplus_neg;
  if (ir::Node* pos_weight = c.optional_tensor("pos_weight"))
    weight_log = c.call("mul", {c.call("add", {c.call("mul", {c.call("sub", {pos_weight, 1.0}), t}), 1.0}), softplus_neg});
  ir::Node* loss = c.call("add", {c.call("mul", {c.call("sub", {1.0, t}), x}), weight_log});
  if (ir::Node* weight = c.optional_tensor("weight")) loss = c.call("mul", {loss, weight});
  c.set_output(0, reduce(c, loss));
}

void convert_kl_div(AtenNodeContext& c) {
  ir::Node* input = c.tensor("self");
  ir::Node* target = c.tensor("target");
  ir::Node* loss;
  if (c.bool_arg("log_target", false)) {
    loss = c.call("mul", {c.call("exp", {target}), c.call("sub", {target, input})});
  } else {
    ir::Node* log_target = c.call("log", {target});
    ir::Node* term = c.call("mul", {target, c.call("sub", {log_target, input})});
    loss = c.call("where", {c.call("gt", {target, 0.0}), term, 0.0});
  }
  c.set_output(0, reduce(c, loss));
}

}  // namespace

void register_aten_attention_loss_ops(AtenOpTable& table) {
  add_op(table, "scaled_dot_product_attention", "default", convert_sdpa);
  add_op(table, "_scaled_dot_product_flash_attention_for_cpu", "default", convert_sdpa_variant);
  add_op(table, "_scaled_dot_product_attention_math", "default", convert_sdpa_variant);
  add_op(table, "cross_entropy_loss", "default", convert_cross_entropy);
  add_op(table, "nll_loss", "default", convert_nll_loss);
  add_op(table, "nll_loss_nd", "default", convert_nll_loss);
  add_op(table, "nll_loss_forward", "default", convert_nll_loss);
  add_op(table, "nll_loss2d_forward", "default", convert_nll_loss);
  add_op(table, "mse_loss", "default", convert_mse_loss);
  add_op(table, "l1_loss", "default", convert_l1_loss);
  add_op(table, "smooth_l1_loss", "default", robust_loss(false));
  add_op(table, "huber_loss", "default", robust_loss(true));
  add_op(table, "binary_cross_entropy", "default", convert_binary_cross_entropy);
  add_op(table, "binary_cross_entropy_with_logits", "default", convert_bce_with_logits);
  add_op(table, "kl_div", "default", convert_kl_div);
}

}  // namespace kiln::frontends
