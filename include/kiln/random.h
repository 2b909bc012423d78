// Kiln's global random generator for the front end (the counterpart of torch.manual_seed):
// parameter initialization draws from it on the host, and each traced random op (dropout)
// takes a fresh seed from it, so a program that seeds once builds the same model and the
// same graph every run. Numbers come from Philox4x32-10 (runtime/philox.h): draw k of a
// seed uses Philox offset k, element i counter i. They are not PyTorch's numbers.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln {

// Resets the generator: every later draw depends only on `seed` and the draws before it.
void manual_seed(uint64_t seed);

namespace random {

// A tensor of `sizes` (f32) with elements uniform in [low, high).
Tensor uniform(const Sizes& sizes, double low, double high);
// A tensor of `sizes` (f32) with normal elements of the given mean and standard deviation.
Tensor normal(const Sizes& sizes, double mean, double std);
// A fresh 63-bit seed for a random op recorded in a graph (dropout's `seed`).
int64_t next_seed();

}  // namespace random
}  // namespace kiln
