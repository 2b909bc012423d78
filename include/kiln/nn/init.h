// Parameter initialization (torch.nn.init): fills kiln::Tensor parameters in place from
// Kiln's global generator (kiln/random.h). The distributions are PyTorch's; the numbers are
// not (a different generator).
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::nn::init {

// fan_in = size(1) * (product of sizes from dim 2), fan_out = size(0) * (the same product),
// as torch.nn.init._calculate_fan_in_and_fan_out; a tensor of rank < 2 is an error.
int64_t fan_in(const Tensor& tensor);
int64_t fan_out(const Tensor& tensor);

void uniform_(const Tensor& tensor, double low, double high);
void normal_(const Tensor& tensor, double mean = 0, double std = 1);
void constant_(const Tensor& tensor, double value);
void ones_(const Tensor& tensor);
void zeros_(const Tensor& tensor);
// U(-bound, bound) with bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)) (leaky_relu).
void kaiming_uniform_(const Tensor& tensor, double a = 0);
// U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(const Tensor& tensor, double gain = 1);

}  // namespace kiln::nn::init
