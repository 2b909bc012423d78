// torch.nn.Flatten: merges dims start_dim..end_dim (by default all but the batch dim).
#pragma once

#include <cstdint>

#include "kiln/nn/module.h"

namespace kiln::nn {

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim_(start_dim), end_dim_(end_dim) {}
  Var forward(const Var& input) override;

 private:
  int64_t start_dim_;
  int64_t end_dim_;
};

}  // namespace kiln::nn
