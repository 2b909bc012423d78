// The hyperparameters of Kiln's optimizers, with PyTorch's names and defaults (torch.optim.SGD,
// Adam, AdamW), for kiln::compile_training (kiln/training.h). Compiling checks them as PyTorch
// does (compiler/training/optimizer_options.h).
#pragma once

namespace kiln::training {

struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;  // L2: added to the gradient as weight_decay * param
  bool nesterov = false;
  bool maximize = false;
};

// Adam, and AdamW when decoupled_weight_decay (PyTorch's Adam(decoupled_weight_decay=True) is
// AdamW): the decay multiplies the parameter by 1 - lr * weight_decay instead of entering the
// gradient.
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  bool decoupled_weight_decay = false;
};

// AdamW's defaults: Adam's, with weight_decay 1e-2, decoupled.
AdamOptions adamw_options();

}  // namespace kiln::training
