// torch.nn.Dropout (dropout.h).
#include "kiln/nn/dropout.h"

#include "kiln/nn/functional.h"
#include "kiln/error.h"

namespace kiln::nn {

Dropout::Dropout(double p) : Module("Dropout"), p_(p) {
  if (p < 0 || p > 1) fail("Dropout: probability has to be between 0 and 1, but got ", p);
}

Var Dropout::forward(const Var& input) { return functional::dropout(input, p_, is_training()); }

}  // namespace kiln::nn
