// Executable: a model made ready to run on one target of the registry (compiler/target_registry.h):
// compiled code behind a runtime loader (compiler/compiled_model.h), or the graph itself run by
// the reference interpreter or eager mode. What `kiln run` and `kiln bench` call.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/compile_options.h"
#include "kiln/tensor.h"

namespace kiln::compiler {

class Executable {
 public:
  virtual ~Executable() = default;

  // Runs on inputs by placeholder name; returns the outputs in the graph's output order. A
  // model that mutates an input writes the new value into the caller's tensor, as PyTorch does.
  // `num_threads`: host threads where the target uses them (cpu: OpenMP; 0: the default).
  virtual std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, int num_threads = 0) = 0;

  // What compiling reported; nullptr for the targets that do not compile.
  virtual const CompileResult* compile_result() const { return nullptr; }
  // Milliseconds the device spent on the last run's steps without the host-device copies;
  // negative where the target has no such measure.
  virtual double last_device_milliseconds() const { return -1; }

 protected:
  Executable() = default;
  Executable(const Executable&) = default;
  Executable& operator=(const Executable&) = default;
  Executable(Executable&&) = default;
  Executable& operator=(Executable&&) = default;
};

}  // namespace kiln::compiler
