// kiln::nn::functional: torch.nn.functional over kiln::Var (use `namespace F =
// kiln::nn::functional;`). Each function records the registry's op of the same meaning
// (mostly composite ops, decomposed later) and takes the caller's source location last.
// Optional tensors (a bias, a mask) are an undefined Var when absent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/var.h"

namespace kiln::nn::functional {

Var relu(const Var& input, SourceLocation loc = SourceLocation::current());
Var gelu(const Var& input, const std::string& approximate = "none", SourceLocation loc = SourceLocation::current());
Var silu(const Var& input, SourceLocation loc = SourceLocation::current());
Var sigmoid(const Var& input, SourceLocation loc = SourceLocation::current());
Var tanh(const Var& input, SourceLocation loc = SourceLocation::current());
Var softmax(const Var& input, int64_t dim, SourceLocation loc = SourceLocation::current());
Var log_softmax(const Var& input, int64_t dim, SourceLocation loc = SourceLocation::current());

// input @ weight.T + bias; weight is [out_features, in_features].
Var linear(const Var& input, const Var& weight, const Var& bias = {}, SourceLocation loc = SourceLocation::current());
// input [N, C, H, W], weight [out, C / groups, kh, kw].
Var conv2d(const Var& input, const Var& weight, const Var& bias = {}, std::vector<int64_t> stride = {1, 1},
           std::vector<int64_t> padding = {0, 0}, std::vector<int64_t> dilation = {1, 1}, int64_t groups = 1,
           SourceLocation loc = SourceLocation::current());
Var max_pool2d(const Var& input, std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
               std::vector<int64_t> padding = {0, 0}, SourceLocation loc = SourceLocation::current());
Var avg_pool2d(const Var& input, std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
               std::vector<int64_t> padding = {0, 0}, SourceLocation loc = SourceLocation::current());
Var adaptive_avg_pool2d(const Var& input, std::vector<int64_t> output_size,
                        SourceLocation loc = SourceLocation::current());

Var layer_norm(const Var& input, const std::vector<int64_t>& normalized_shape, const Var& weight = {},
               const Var& bias = {}, double eps = 1e-5, SourceLocation loc = SourceLocation::current());
// As torch's F.batch_norm: normalizes over every dim but 1, with the batch's statistics when
// `training` (then also updating running_mean and running_var in place, when given:
// running = (1 - momentum) * running + momentum * batch statistic, the variance unbiased),
// otherwise with the running statistics.
Var batch_norm(const Var& input, const Var& running_mean, const Var& running_var, const Var& weight = {},
               const Var& bias = {}, bool training = false, double momentum = 0.1, double eps = 1e-5,
               SourceLocation loc = SourceLocation::current());
// Rows of weight by integer indices; padding_idx < 0: none.
Var embedding(const Var& input, const Var& weight, int64_t padding_idx = -1,
              SourceLocation loc = SourceLocation::current());
// Zeroes elements with probability p and scales the rest by 1 / (1 - p) when `training`
// (a Philox stream seeded from kiln::manual_seed's generator); returns input unchanged,
// recording nothing, when not training or p == 0.
Var dropout(const Var& input, double p = 0.5, bool training = true, SourceLocation loc = SourceLocation::current());
// softmax(q k^T * scale + mask) v; a bool attn_mask keeps where true, a float one is added.
Var scaled_dot_product_attention(const Var& query, const Var& key, const Var& value, const Var& attn_mask = {},
                                 double dropout_p = 0, bool is_causal = false, std::optional<double> scale = {},
                                 SourceLocation loc = SourceLocation::current());

// Losses; reduction "mean", "sum" or "none".
Var cross_entropy(const Var& input, const Var& target, const Var& weight = {}, const std::string& reduction = "mean",
                  int64_t ignore_index = -100, double label_smoothing = 0,
                  SourceLocation loc = SourceLocation::current());
Var nll_loss(const Var& input, const Var& target, const Var& weight = {}, const std::string& reduction = "mean",
             int64_t ignore_index = -100, SourceLocation loc = SourceLocation::current());
Var mse_loss(const Var& input, const Var& target, const std::string& reduction = "mean",
             SourceLocation loc = SourceLocation::current());

}  // namespace kiln::nn::functional
