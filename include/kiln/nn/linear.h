// torch.nn.Linear: y = x @ weight.T + bias, weight [out_features, in_features] and bias
// [out_features], both U(-1/sqrt(in_features), 1/sqrt(in_features)) as PyTorch initializes
// them (kaiming_uniform with a = sqrt(5) for the weight).
#pragma once

#include "kiln/nn/module.h"

namespace kiln::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  // x [..., in_features] -> [..., out_features]; a different last dim is a kiln::Error naming
  // this module's path and both shapes.
  Var forward(const Var& input) override;

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

 private:
  int64_t in_features_;
  int64_t out_features_;
};

}  // namespace kiln::nn
