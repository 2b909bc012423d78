// torch.nn.Flatten (flatten.h).
#include "kiln/nn/flatten.h"

namespace kiln::nn {

Var Flatten::forward(const Var& input) { return input.flatten(start_dim_, end_dim_); }

}  // namespace kiln::nn
