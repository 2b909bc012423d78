// CudaArtifact: the cuda target's runtime loader (runtime/artifact.h). Loads a compiled model
// from its artifact directory: launch_plan.json (runtime/cuda/launch_plan.h) and the device code,
// device.cubin (or device.ptx, which the driver compiles for a device newer than the NVRTC
// that built it); kernels.cu beside them is for people. Loading reads and checks both and needs
// no GPU; a run checks the inputs against the plan's guards first (runtime/cuda/plan_runner.h:
// bind_launch_plan), also without a GPU; the first run then makes the device side (runtime/cuda/driver_plan_device.h; without a
// device it throws the runtime's "no CUDA device: <reason>" error) and every run goes through
// runtime/cuda/plan_runner.h: host inputs in, host outputs out, parameters kept on the device
// between runs. run() may be called from several threads; calls run one at a time.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/artifact.h"
#include "runtime/cuda/launch_plan.h"
#include "runtime/cuda/nvrtc.h"

namespace kiln::cuda {

class CudaArtifact final : public Artifact {
 public:
  // Throws kiln::Error for a missing or damaged plan (naming the field), missing device code, or
  // a cubin that is not one.
  static std::unique_ptr<CudaArtifact> load(const std::filesystem::path& directory);
  ~CudaArtifact() override;

  const std::filesystem::path& directory() const override { return directory_; }
  const std::vector<ArtifactTensor>& inputs() const override { return inputs_; }
  const std::vector<ArtifactTensor>& outputs() const override { return outputs_; }
  const std::vector<ArtifactParameter>& parameters() const override { return parameters_; }
  const std::vector<std::string>& fallbacks() const override { return plan_.fallbacks; }
  const LaunchPlan& plan() const { return plan_; }
  const DeviceCode& device_code() const { return code_; }

  // Inputs: host tensors. `num_threads` is not used.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                          const FallbackHandler& fallback = {}, int num_threads = 0) override;
  void parameter_changed(size_t index) override;
  double last_device_milliseconds() const override;

 private:
  struct Device;  // the GPU side, made by the first run
  CudaArtifact() = default;
  std::filesystem::path directory_;
  LaunchPlan plan_;
  DeviceCode code_;
  std::vector<ArtifactTensor> inputs_, outputs_;
  std::vector<ArtifactParameter> parameters_;
  mutable std::mutex mutex_;
  std::unique_ptr<Device> device_;
};

}  // namespace kiln::cuda
