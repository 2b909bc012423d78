// torch.nn.functional over kiln::Var: each function records its registry op (functional.h).
#include "kiln/nn/functional.h"

#include "frontends/module/tracer.h"
#include "kiln/random.h"
#include "kiln/error.h"

namespace kiln::nn::functional {

namespace {

using frontends::record;
using frontends::Tracer;
using ir::Argument;
using ir::Kwargs;

// An optional tensor argument: the node, or None.
Argument optional(const Var& var) { return var.defined() ? Argument(var.node()) : Argument(); }

void check_reduction(const std::string& reduction, const SourceLocation& loc) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    fail(Tracer::active(loc).where(loc), ": reduction must be 'mean', 'sum' or 'none', got '", reduction, "'");
  }
}

}  // namespace

Var relu(const Var& input, SourceLocation loc) { return input.relu(loc); }
Var gelu(const Var& input, const std::string& approximate, SourceLocation loc) { return input.gelu(approximate, loc); }
Var silu(const Var& input, SourceLocation loc) { return input.silu(loc); }
Var sigmoid(const Var& input, SourceLocation loc) { return input.sigmoid(loc); }
Var tanh(const Var& input, SourceLocation loc) { return input.tanh(loc); }
Var softmax(const Var& input, int64_t dim, SourceLocation loc) { return input.softmax(dim, loc); }
Var log_softmax(const Var& input, int64_t dim, SourceLocation loc) { return input.log_softmax(dim, loc); }

Var linear(const Var& input, const Var& weight, const Var& bias, SourceLocation loc) {
  return record("linear", {input.node(), weight.node(), optional(bias)}, {}, loc);
}

Var conv2d(const Var& input, const Var& weight, const Var& bias, std::vector<int64_t> stride,
           std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups, SourceLocation loc) {
  return record("convolution",
                {input.node(), weight.node(), optional(bias), Argument::ints(stride), Argument::ints(padding),
                 Argument::ints(dilation), false, Argument::ints({0, 0}), groups},
                {}, loc);
}

Var max_pool2d(const Var& input, std::vector<int64_t> kernel_size, std::vector<int64_t> stride,
               std::vector<int64_t> padding, SourceLocation loc) {
  return record("max_pool", {input.node(), Argument::ints(kernel_size), Argument::ints(stride), Argument::ints(padding)},
                {}, loc);
}

Var avg_pool2d(const Var& input, std::vector<int64_t> kernel_size, std::vector<int64_t> stride,
               std::vector<int64_t> padding, SourceLocation loc) {
  return record("avg_pool", {input.node(), Argument::ints(kernel_size), Argument::ints(stride), Argument::ints(padding)},
                {}, loc);
}

Var adaptive_avg_pool2d(const Var& input, std::vector<int64_t> output_size, SourceLocation loc) {
  return record("adaptive_avg_pool", {input.node(), Argument::ints(output_size)}, {}, loc);
}

Var layer_norm(const Var& input, const std::vector<int64_t>& normalized_shape, const Var& weight, const Var& bias,
               double eps, SourceLocation loc) {
  return record("layer_norm",
                {input.node(), Argument::ints(normalized_shape), optional(weight), optional(bias), eps}, {}, loc);
}

Var batch_norm(const Var& input, const Var& running_mean, const Var& running_var, const Var& weight, const Var& bias,
               bool training, double momentum, double eps, SourceLocation loc) {
  Var output = record("batch_norm",
                      {input.node(), optional(weight), optional(bias), optional(running_mean), optional(running_var),
                       training, momentum, eps},
                      {}, loc);
  if (training && (running_mean.defined() || running_var.defined())) {
    std::vector<int64_t> stat_dims{0};
    for (int64_t d = 2; d < input.dim(); ++d) stat_dims.push_back(d);
    if (running_mean.defined()) {
      running_mean.mul_(1 - momentum, loc).add_(input.mean(stat_dims, false, loc), momentum, loc);
    }
    if (running_var.defined()) {
      running_var.mul_(1 - momentum, loc).add_(input.var(stat_dims, 1, false, loc), momentum, loc);
    }
  }
  return output;
}

Var embedding(const Var& input, const Var& weight, int64_t padding_idx, SourceLocation loc) {
  return record("embedding", {weight.node(), input.node(), padding_idx}, {}, loc);
}

Var dropout(const Var& input, double p, bool training, SourceLocation loc) {
  if (p < 0 || p > 1) fail(Tracer::active(loc).where(loc), ": dropout probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0) return input;
  return record("dropout", {input.node(), p, true}, {{"seed", random::next_seed()}}, loc);
}

Var scaled_dot_product_attention(const Var& query, const Var& key, const Var& value, const Var& attn_mask,
                                 double dropout_p, bool is_causal, std::optional<double> scale, SourceLocation loc) {
  Kwargs kwargs;
  if (scale) kwargs.emplace_back("scale", *scale);
  return record("scaled_dot_product_attention",
                {query.node(), key.node(), value.node(), optional(attn_mask), dropout_p, is_causal}, kwargs, loc);
}

Var cross_entropy(const Var& input, const Var& target, const Var& weight, const std::string& reduction,
                  int64_t ignore_index, double label_smoothing, SourceLocation loc) {
  check_reduction(reduction, loc);
  return record("cross_entropy",
                {input.node(), target.node(), optional(weight), reduction, ignore_index, label_smoothing}, {}, loc);
}

Var nll_loss(const Var& input, const Var& target, const Var& weight, const std::string& reduction,
             int64_t ignore_index, SourceLocation loc) {
  check_reduction(reduction, loc);
  return record("nll_loss", {input.node(), target.node(), optional(weight), reduction, ignore_index}, {}, loc);
}

Var mse_loss(const Var& input, const Var& target, const std::string& reduction, SourceLocation loc) {
  check_reduction(reduction, loc);
  return record("mse_loss", {input.node(), target.node(), reduction}, {}, loc);
}

}  // namespace kiln::nn::functional
