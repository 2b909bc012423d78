// torch.nn.Dropout: in training, zeroes elements with probability p and scales the rest by
// 1 / (1 - p) (a dropout node seeded from kiln::manual_seed's generator); in eval mode it
// records nothing and returns its input.
#pragma once

#include "kiln/nn/module.h"

namespace kiln::nn {

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Var forward(const Var& input) override;
  double p() const { return p_; }

 private:
  double p_;
};

}  // namespace kiln::nn
