// The CUDA backend driver: graph -> passes (simplified stage) -> lowering -> scheduling -> CUDA
// source and launch steps (codegen/cuda/cuda_emitter.h) -> NVRTC -> a cubin in the compile
// cache (runtime/cuda/device_code_cache.h), and running the steps on a GPU.
//
// Compiling needs NVRTC but no GPU: the target architecture is the option's, else the device's
// when one is present, else sm_80. Running needs a device: without one, run() throws the
// runtime's "no CUDA device: <reason>" error. A run uploads the inputs (and, once, the
// parameters), allocates the outputs and one workspace from the caching device allocator, runs
// the steps in order on one stream (kernel launches; GEMMs through cuBLAS, or through one
// cuBLASLt call when the emitter fused their epilogue (bias, relu, GELU tanh:
// codegen/cuda/gemm_epilogue.h); fallback nodes on the host through their reference kernels),
// checks the kernels' fault flags, and downloads the outputs.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/schedule.h"
#include "ir/graph.h"
#include "runtime/cuda/nvrtc.h"

namespace kiln::compiler {

struct CudaCompileOptions {
  std::optional<int> sm;  // target architecture (80 for sm_80); default: the device's, else 80
  std::optional<std::filesystem::path> cache_dir;  // default: CompileCache's
  bool use_cache = true;
  bool fuse = true;
  bool freeze = false;  // constant-fold parameters
  // Also write kernels.cu, launch_plan.json and the device code (device.cubin or device.ptx)
  // here; refuses a directory that exists and is not empty unless `overwrite`.
  std::optional<std::filesystem::path> output_dir;
  bool overwrite = false;
  std::function<void(const std::string& stage, double milliseconds)> on_stage;
};

struct CudaCompileResult {
  std::string key;  // of the device code in the cache (empty without a cache)
  bool cache_hit = false;
  size_t kernel_count = 0;  // kernel launches among the steps
  std::string architecture;  // "sm_90", or "compute_90" for PTX
  std::filesystem::path output_dir;  // when written
};

class CudaModel {
 public:
  static CudaModel compile(const ir::Graph& graph, const CudaCompileOptions& options = {});
  ~CudaModel();
  CudaModel(CudaModel&&) noexcept;
  CudaModel& operator=(CudaModel&&) noexcept;

  // Runs on inputs by placeholder name (host tensors); returns host outputs in the graph's order.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);

  // Milliseconds the device spent on the last run's steps (kernels, GEMMs, fallbacks), between
  // two events on its stream: what `kiln bench` reports beside the whole call, which also
  // copies inputs and outputs between host and device.
  double last_device_milliseconds() const { return last_device_milliseconds_; }

  const CudaCompileResult& result() const { return result_; }
  const codegen::ScheduledProgram& scheduled() const { return scheduled_; }
  const codegen::cuda::CudaModule& module() const { return module_; }
  const cuda::DeviceCode& device_code() const { return device_code_; }

 private:
  struct Device;  // the context, stream, allocator, cuBLAS and loaded module of a run
  CudaModel() = default;
  ir::Graph graph_;
  codegen::ScheduledProgram scheduled_;
  codegen::cuda::CudaModule module_;
  cuda::DeviceCode device_code_;
  CudaCompileResult result_;
  std::unique_ptr<Device> device_;  // made by the first run
  double last_device_milliseconds_ = 0;
};

// The launch plan as JSON (what launch_plan.json holds): buffers with kinds, dtypes, shapes and
// workspace offsets; the workspace and scratch sizes; every step in order (a fused GEMM as
// "library": "gemm_lt" with its epilogue, bias and output).
std::string launch_plan_json(const codegen::ScheduledProgram& scheduled, const codegen::cuda::CudaModule& module,
                             const std::string& architecture);

}  // namespace kiln::compiler
