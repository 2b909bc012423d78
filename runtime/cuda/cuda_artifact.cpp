// The cuda target's loader. See runtime/cuda/cuda_artifact.h.
#include "runtime/cuda/cuda_artifact.h"

#include <set>

#include "runtime/cuda/cubin_elf.h"
#include "runtime/cuda/device_code_cache.h"
#include "runtime/cuda/driver_plan_device.h"
#include "runtime/cuda/plan_runner.h"
#include "kiln/error.h"

namespace kiln::cuda {

namespace fs = std::filesystem;

namespace {

// Checks that the device code defines every kernel the plan launches, and (a cubin) that it was
// built for the plan's architecture.
void check_device_code(const LaunchPlan& plan, const std::string& image, bool is_cubin, const fs::path& file) {
  std::set<std::string> defined;
  if (is_cubin) {
    CubinInfo cubin = read_cubin(image, file.string());
    if (plan.architecture != "sm_" + std::to_string(cubin.sm))
      fail("CUDA artifact ", file.parent_path().string(), ": ", file.filename().string(), " is for sm_", cubin.sm,
           " but the launch plan says ", plan.architecture);
    for (const std::string& kernel : cubin.kernels()) defined.insert(kernel);
  }
  for (const PlanStep& step : plan.steps) {
    if (step.kind != PlanStep::Kind::Kernel) continue;
    bool found = is_cubin ? defined.count(step.name) > 0 : image.find(".entry " + step.name + "(") != std::string::npos;
    if (!found)
      fail("CUDA artifact ", file.parent_path().string(), ": the launch plan launches kernel ", step.name, ", which ",
           file.filename().string(), " does not define");
  }
}

ArtifactTensor tensor_of(const PlanBuffer& buffer) {
  return {buffer.source.empty() ? buffer.name : buffer.source, buffer.dtype, int64_t(buffer.shape.size())};
}

}  // namespace

struct CudaArtifact::Device {
  DriverPlanDevice device;
  PlanRunner runner;  // after `device`: destroyed first, it frees the parameters there

  Device(const LaunchPlan& plan, const std::string& image, const std::string& what)
      : device(image, what), runner(plan, device) {}
};

CudaArtifact::~CudaArtifact() = default;

std::unique_ptr<CudaArtifact> CudaArtifact::load(const fs::path& directory) {
  std::unique_ptr<CudaArtifact> artifact(new CudaArtifact());
  artifact->directory_ = fs::absolute(directory).lexically_normal();
  std::error_code error;
  if (!fs::is_directory(artifact->directory_, error))
    fail("no CUDA artifact at ", artifact->directory_.string(), ": not a directory");
  artifact->plan_ = read_launch_plan(artifact->directory_ / kLaunchPlanFile);
  std::optional<DeviceCode> code = read_device_code(artifact->directory_, artifact->plan_.architecture);
  if (!code)
    fail("no CUDA artifact in ", artifact->directory_.string(), ": neither ", kCubinFile, " nor ", kPtxFile, " is there");
  artifact->code_ = std::move(*code);
  check_device_code(artifact->plan_, artifact->code_.image, artifact->code_.is_cubin,
                    artifact->directory_ / (artifact->code_.is_cubin ? kCubinFile : kPtxFile));
  const LaunchPlan& plan = artifact->plan_;
  for (int id : plan.inputs) artifact->inputs_.push_back(tensor_of(plan.buffer(id)));
  for (int id : plan.outputs) artifact->outputs_.push_back(tensor_of(plan.buffer(id)));
  for (int id : plan.parameters) {
    const PlanBuffer& buffer = plan.buffer(id);
    ArtifactParameter parameter{tensor_of(buffer).name, buffer.dtype, {}};
    for (const SizeExpression& size : buffer.shape) {
      if (!size.is_constant())
        fail("CUDA artifact ", artifact->directory_.string(), ": parameter '", parameter.name, "' has symbolic size ", size.text());
      parameter.shape.push_back(size.evaluate({}));
    }
    artifact->parameters_.push_back(std::move(parameter));
  }
  return artifact;
}

std::vector<Tensor> CudaArtifact::run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                                      const FallbackHandler& fallback, int /*num_threads*/) {
  std::lock_guard<std::mutex> guard(mutex_);
  bind_launch_plan(plan_, inputs);  // the guards first: a bad input is reported as such, with or without a GPU
  if (!device_) device_ = std::make_unique<Device>(plan_, code_.image, (directory_ / "kernels.cu").string());
  device_->device.make_current();
  return device_->runner.run(inputs, parameters, fallback);
}

void CudaArtifact::parameter_changed(size_t index) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (device_) device_->runner.parameter_changed(index);
}

double CudaArtifact::last_device_milliseconds() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return device_ ? device_->runner.last_steps_milliseconds() : -1;
}

}  // namespace kiln::cuda
