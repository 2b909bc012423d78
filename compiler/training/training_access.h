// The training::CompiledTraining behind a public kiln::CompiledTraining (kiln/training.h), for
// Kiln's own code, tests and benchmarks: its optimizer and the partition of its first batch.
#pragma once

#include "compiler/training/compiled_training.h"
#include "kiln/training.h"

namespace kiln {

struct TrainingAccess {
  static training::CompiledTraining& training(kiln::CompiledTraining& handle) { return *handle.training_; }
  static const training::CompiledTraining& training(const kiln::CompiledTraining& handle) { return *handle.training_; }
};

}  // namespace kiln
