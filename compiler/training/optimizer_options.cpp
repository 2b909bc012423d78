// The optimizers' hyperparameter checks. See compiler/training/optimizer_options.h.
#include "compiler/training/optimizer_options.h"

#include "kiln/error.h"

namespace kiln::training {

namespace {

// !(x >= 0) also refuses NaN.
bool negative_or_nan(double value) { return !(value >= 0.0); }

const char* adam_name(const AdamOptions& options) { return options.decoupled_weight_decay ? "AdamW" : "Adam"; }

}  // namespace

AdamOptions adamw_options() {
  AdamOptions options;
  options.weight_decay = 1e-2;
  options.decoupled_weight_decay = true;
  return options;
}

void validate_lr(const char* optimizer, double lr) {
  if (negative_or_nan(lr)) fail(optimizer, ": Invalid learning rate: ", lr);
}

void validate(const SgdOptions& options) {
  validate_lr("SGD", options.lr);
  if (negative_or_nan(options.momentum)) fail("SGD: Invalid momentum value: ", options.momentum);
  if (negative_or_nan(options.weight_decay)) fail("SGD: Invalid weight_decay value: ", options.weight_decay);
  if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
    fail("SGD: Nesterov momentum requires a momentum and zero dampening");
}

void validate(const AdamOptions& options) {
  const char* name = adam_name(options);
  validate_lr(name, options.lr);
  if (negative_or_nan(options.eps)) fail(name, ": Invalid epsilon value: ", options.eps);
  if (negative_or_nan(options.beta1) || !(options.beta1 < 1.0))
    fail(name, ": Invalid beta parameter at index 0: ", options.beta1);
  if (negative_or_nan(options.beta2) || !(options.beta2 < 1.0))
    fail(name, ": Invalid beta parameter at index 1: ", options.beta2);
  if (negative_or_nan(options.weight_decay)) fail(name, ": Invalid weight_decay value: ", options.weight_decay);
}

}  // namespace kiln::training
