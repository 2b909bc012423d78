// Artifact: a compiled model loaded from its directory by its target's runtime loader, and run on
// host tensors. Every loader implements it, so an application (or compiler::CompiledModel) runs
// an artifact of any target with runtime/ alone:
//   - cpu:  runtime/cpu/cpu_artifact.h, module.so + manifest.json (the C ABI of runtime/compiled_abi.h);
//   - cuda: runtime/cuda/cuda_artifact.h, launch_plan.json + device.cubin (or device.ptx).
// Also the two contracts every loader shares: a failed guard (GuardError) and the fallback
// callback (FallbackHandler), through which the host runs graph nodes the generated code leaves
// to the reference kernels.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln {

// An input or output of an artifact: its graph name, dtype and rank (sizes are bound per run).
struct ArtifactTensor {
  std::string name;
  DType dtype = DType::f32;
  int64_t rank = 0;
};

// A parameter an artifact takes at run time: exactly this dtype and shape, contiguous.
struct ArtifactParameter {
  std::string name;
  DType dtype = DType::f32;
  Sizes shape;
};

// A guard of a compiled model rejected its inputs (wrong dtype, rank, size, relation among
// sizes, strides). Callers that can recompile (kiln::compile) catch this one.
class GuardError : public Error {
 public:
  using Error::Error;
};

// Runs fallback node `fallback_index` (the artifact's fallbacks() order). `inputs` are views of
// the node's arguments; `outputs` are views of its results where the artifact keeps them, to be
// written in place (outputs[i].copy_from(...)) or replaced by tensors of the same sizes and
// dtype (which are then copied in). An exception becomes an error of the artifact's run().
using FallbackHandler =
    std::function<void(int fallback_index, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs)>;

// Calls `handler` for one fallback node and copies any output it replaced into the artifact's
// view; throws kiln::Error when it left an output undefined or of another dtype or sizes.
void call_fallback_handler(const FallbackHandler& handler, int fallback_index, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& outputs);

class Artifact {
 public:
  virtual ~Artifact() = default;

  virtual const std::filesystem::path& directory() const = 0;
  virtual const std::vector<ArtifactTensor>& inputs() const = 0;   // graph placeholder order
  virtual const std::vector<ArtifactTensor>& outputs() const = 0;  // graph output order
  virtual const std::vector<ArtifactParameter>& parameters() const = 0;
  virtual const std::vector<std::string>& fallbacks() const = 0;  // graph node names, fallback-index order

  // Runs the model on host tensors: `inputs` in inputs() order (the loader's guards decide the
  // strides they accept), `parameters` in parameters() order, each contiguous with exactly its
  // dtype and shape. Returns fresh contiguous host outputs in outputs() order. `fallback` is
  // required when fallbacks() is not empty. `num_threads`: host threads where the target uses
  // them (cpu: OpenMP; 0: the default); ignored otherwise.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                                  const FallbackHandler& fallback = {}, int num_threads = 0) = 0;

  // The host value of parameter `index` changed since the last run. A loader that keeps its own
  // copy (cuda: on the device) takes the new value at the next run; the cpu loader reads the
  // host memory on every run and needs no notice.
  virtual void parameter_changed(size_t index) { (void)index; }

  // Milliseconds the device spent on the last run's steps, without the host-device copies;
  // a negative value where the target has no such measure (cpu).
  virtual double last_device_milliseconds() const { return -1; }

 protected:
  Artifact() = default;
  Artifact(const Artifact&) = default;
  Artifact& operator=(const Artifact&) = default;
  Artifact(Artifact&&) = default;
  Artifact& operator=(Artifact&&) = default;
};

}  // namespace kiln
