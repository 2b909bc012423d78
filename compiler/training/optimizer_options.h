// The check of the optimizers' hyperparameters (kiln/optimizer_options.h): validate() throws
// kiln::Error with PyTorch's ValueError message, prefixed by the optimizer's name ("Adam:
// Invalid beta parameter at index 1: 1").
#pragma once

#include "kiln/optimizer_options.h"

namespace kiln::training {

void validate(const SgdOptions& options);
void validate(const AdamOptions& options);
// The learning rate given to set_lr, checked as the constructors check it.
void validate_lr(const char* optimizer, double lr);

}  // namespace kiln::training
