// Activation modules (torch.nn.ReLU, GELU, SiLU): parameterless wrappers of the functional ops.
#pragma once

#include <string>

#include "kiln/nn/module.h"

namespace kiln::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Var forward(const Var& input) override;
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");  // "none" or "tanh"
  Var forward(const Var& input) override;

 private:
  std::string approximate_;
};

class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Var forward(const Var& input) override;
};

}  // namespace kiln::nn
