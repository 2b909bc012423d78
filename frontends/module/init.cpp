// PyTorch's default parameter distributions over Kiln's generator (init.h).
#include "kiln/nn/init.h"

#include <cmath>

#include "kiln/random.h"
#include "kiln/error.h"

namespace kiln::nn::init {

namespace {

int64_t receptive_field(const Tensor& tensor) {
  if (tensor.dim() < 2) {
    fail("fan in and fan out can not be computed for a tensor with fewer than 2 dimensions (sizes ",
         sizes_to_string(tensor.sizes()), ")");
  }
  int64_t field = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) field *= tensor.size(d);
  return field;
}

}  // namespace

int64_t fan_in(const Tensor& tensor) { return tensor.size(1) * receptive_field(tensor); }
int64_t fan_out(const Tensor& tensor) { return tensor.size(0) * receptive_field(tensor); }

void uniform_(const Tensor& tensor, double low, double high) {
  tensor.copy_from(random::uniform(tensor.sizes(), low, high));
}

void normal_(const Tensor& tensor, double mean, double std) {
  tensor.copy_from(random::normal(tensor.sizes(), mean, std));
}

void constant_(const Tensor& tensor, double value) {
  tensor.copy_from(Tensor::full(tensor.sizes(), value, tensor.dtype()));
}
void ones_(const Tensor& tensor) { constant_(tensor, 1); }
void zeros_(const Tensor& tensor) { constant_(tensor, 0); }

void kaiming_uniform_(const Tensor& tensor, double a) {
  double gain = std::sqrt(2.0 / (1 + a * a));
  double bound = gain * std::sqrt(3.0 / double(fan_in(tensor)));
  uniform_(tensor, -bound, bound);
}

void xavier_uniform_(const Tensor& tensor, double gain) {
  double bound = gain * std::sqrt(6.0 / double(fan_in(tensor) + fan_out(tensor)));
  uniform_(tensor, -bound, bound);
}

}  // namespace kiln::nn::init
