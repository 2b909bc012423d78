// Activation modules (activation.h).
#include "kiln/nn/activation.h"

#include "kiln/nn/functional.h"
#include "kiln/error.h"

namespace kiln::nn {

Var ReLU::forward(const Var& input) { return functional::relu(input); }

GELU::GELU(std::string approximate) : Module("GELU"), approximate_(std::move(approximate)) {
  if (approximate_ != "none" && approximate_ != "tanh") {
    fail("GELU: approximate must be 'none' or 'tanh', got '", approximate_, "'");
  }
}

Var GELU::forward(const Var& input) { return functional::gelu(input, approximate_); }

Var SiLU::forward(const Var& input) { return functional::silu(input); }

}  // namespace kiln::nn
