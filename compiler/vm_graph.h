// A compiled graph as one instruction of the VM (runtime/vm), as OneFlow's LaunchLazyJob runs a
// compiled job among eager instructions: it reads its inputs' VM buffers and writes its outputs',
// so the VM orders it after the instructions that write its inputs and before those that read its
// outputs, on any stream, and runs unrelated work (copies, communication, other graphs) beside it.
// (compile_training's data-parallel step runs its backward stages as such graph runs too, with
// its own values map rather than VM tensors: compiler/training/compiled_training.cpp.)
//
// What it costs (bench/compile_function_bench.cpp, BM_CompiledModelRunThroughTheVm): 0.8 us per
// call over CompiledModel::run through a single-thread VM, and the hand-offs between threads
// (tens of us) through a VM with its own scheduler and workers, which is why a single compiled
// model called from one thread does not go through a VM.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/executable.h"
#include "kiln/tensor.h"
#include "runtime/vm/instructions_builder.h"

namespace kiln::compiler {

// A contiguous tensor held in a VM buffer (at least sizes x dtype bytes).
struct VmTensor {
  vm::BufferPtr buffer;
  Sizes sizes;
  DType dtype = DType::f32;
};

// Appends to `builder` one instruction on `stream` that runs `executable` (kept alive by the
// instruction) on `inputs` (placeholder name -> tensor) with `num_threads` and copies its outputs,
// in order, into `outputs`. A result whose dtype or sizes differ from its VmTensor's, or a count
// that differs, fails the instruction with a kiln::Error naming `name` and the output, which the
// VM reports at the next sync; the instructions that read those outputs are skipped.
void submit_graph_run(vm::InstructionsBuilder& builder, vm::Stream& stream, std::string name,
                      std::shared_ptr<Executable> executable, std::vector<std::pair<std::string, VmTensor>> inputs,
                      std::vector<VmTensor> outputs, int num_threads = 0);

}  // namespace kiln::compiler
