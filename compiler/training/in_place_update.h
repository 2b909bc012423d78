// InPlaceUpdate: runs a compiled optimizer update (a compiler::CompiledModel of the cpu target)
// through the artifact's C ABI (runtime/compiled_abi.h, whose kiln_run takes the output buffers
// from its caller) with every output written straight into a caller-given buffer: the update's
// own input arenas, so a step reads and writes each arena once and copies nothing
// (CompiledModel::run returns fresh outputs, and the parameter arena would need a copy back).
//
// When an output may be its own input. The generated code of a single pointwise kernel computes,
// for each index, one statement per stored value in graph order; an output that is also a graph
// output is stored and read back, never recomputed. An update graph (compiler/training/
// update_rule.h) reads each state only in the statement that computes the new state, and the
// parameters only in statements up to the last one, which computes the new parameters (it
// depends on every other output). So every read of an input at an index comes before the write
// of its output at that index, and writing in place gives what fresh outputs would. That holds
// for one kernel only: supports() is false for a model of several kernels (fusion off, or a
// scheduler that splits the update), for fallback nodes or parameters, and for another target
// than cpu; FusedOptimizer then takes CompiledModel::run and copies. The tests run every update
// both ways against PyTorch and the interpreter.
//
// This is a stopgap for a CompiledModel::run that takes caller-provided outputs (and states when
// an output may alias an input); it repeats the few lines of CpuArtifact::run that fill
// KilnRunArgs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/compile_driver.h"
#include "runtime/compiled_abi.h"
#include "runtime/shared_library.h"
#include "runtime/workspace.h"

namespace kiln::training {

class InPlaceUpdate {
 public:
  // Whether `model` is one kernel with no fallback nodes and no parameters (see above).
  static bool supports(const compiler::CompiledModel& model);

  // `model` must satisfy supports() and outlive this object.
  explicit InPlaceUpdate(const compiler::CompiledModel& model);

  // Runs the model on `inputs` (by placeholder name; contiguous; the module checks its guards)
  // writing output i into outputs[i] (contiguous, of the graph's output dtype and shape), which
  // may be any of the inputs.
  void run(const std::map<std::string, Tensor>& inputs, const std::vector<Tensor>& outputs, int num_threads);

 private:
  const compiler::CompiledModel* model_;
  SharedLibrary library_;
  int64_t (*workspace_bytes_)(const int64_t*) = nullptr;
  int32_t (*run_)(const KilnRunArgs*) = nullptr;
  Workspace workspace_;
};

}  // namespace kiln::training
