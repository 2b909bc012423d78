// EmulatedModel: a graph through the CUDA code generator and run on the CPU exactly as the
// runtime runs the cuda target's artifact on a GPU: the launch plan is written as the cuda target
// writes launch_plan.json (compiler/targets/cuda_target.h), read back by the runtime's parser
// (runtime/cuda/launch_plan.h) and run by the runtime's own PlanRunner (runtime/cuda/
// plan_runner.h) on an EmulatedDevice: host memory for device memory (poisoned, so a read of
// something never written shows), the kernels built with the host's C++ compiler against the
// CPU emulation (codegen/cuda/kiln_cuda_emulation.h) and launched through their
// kiln_emulate_<name> entry points with cuLaunchKernel-style parameters, the GEMM calls the
// runner plans (runtime/cuda/gemm_plan.h) by a plain host loop in double (cuBLAS's part; with a
// fused epilogue also the bias and the activation as cuBLASLt defines them), fault flags checked
// after every launch (naming the kernel). Fallback nodes go through the runner's
// FallbackHandler to the graph's reference kernels (compiler/backend_common.h).
// Header-only: the suite's only sources are its *_test.cpp files.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/lowering.h"
#include "codegen/schedule.h"
#include "compiler/backend_common.h"
#include "compiler/targets/cuda_target.h"
#include "ir/interpreter.h"
#include "passes/pass_manager.h"
#include "runtime/cuda/launch_plan.h"
#include "runtime/cuda/plan_device.h"
#include "runtime/cuda/plan_runner.h"
#include "kiln/error.h"
#include "runtime/shared_library.h"
#include "kiln/tensor.h"
#include "tests/support/test_paths.h"

namespace kiln::codegen::cuda::testing {

namespace fs = std::filesystem;

// The graph after the default passes (what the targets compile).
inline ir::Graph simplified(const ir::Graph& graph) {
  ir::Graph g = graph.clone();
  passes::run_pipeline(g, "simplified", passes::RunOptions{});
  return g;
}

// Builds `source` with the host compiler into a shared object in the suite's cache (keyed by
// the source's hash; published by rename, so parallel test processes share entries safely).
inline fs::path build_emulation(const std::string& source) {
  fs::path dir = fs::path(KILN_BINARY_DIR) / "cuda-emulation-cache";
  fs::create_directories(dir);
  std::string key = std::to_string(std::hash<std::string>()(source));
  fs::path library = dir / ("kernels_" + key + ".so");
  if (fs::exists(library)) return library;
  std::string stem = "kernels_" + key + "_" + std::to_string(getpid());
  fs::path cpp = dir / (stem + ".cpp"), temporary = dir / (stem + ".so"), log = dir / (stem + ".log");
  std::ofstream(cpp) << source;
  const char* cxx = std::getenv("CXX");
  std::string command = std::string(cxx && *cxx ? cxx : "c++") +
                        " -O1 -std=c++17 -shared -fPIC -fno-strict-aliasing -w -o " + temporary.string() + " " +
                        cpp.string() + " > " + log.string() + " 2>&1";
  int status = std::system(command.c_str());
  if (status != 0) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fail("the emulated CUDA source ", cpp.string(), " does not compile:\n", text.substr(0, 4000));
  }
  fs::rename(temporary, library);
  fs::remove(cpp);
  fs::remove(log);
  return library;
}

// The device of a plan's runs, on the host (see the header comment).
class EmulatedDevice final : public kiln::cuda::PlanDevice {
 public:
  using CUdeviceptr = kiln::cuda::CUdeviceptr;

  // `misalign_bytes`: every allocation starts this many bytes past a 256-byte boundary (0: as
  // aligned as cuMemAlloc's), to take the kernels' paths for unaligned pointers.
  EmulatedDevice(const SharedLibrary& library, size_t misalign_bytes) : library_(library), misalign_(misalign_bytes) {}

  CUdeviceptr allocate(size_t bytes) override {
    auto block = std::make_unique<unsigned char[]>(bytes + 256 + misalign_);
    std::memset(block.get(), 0xcd, bytes + 256 + misalign_);
    uintptr_t base = reinterpret_cast<uintptr_t>(block.get());
    CUdeviceptr pointer = CUdeviceptr((base + 255) / 256 * 256 + misalign_);
    blocks_.emplace(pointer, std::move(block));
    return pointer;
  }
  void free(CUdeviceptr pointer) override {
    KILN_CHECK(blocks_.erase(pointer) == 1, "the emulated device freed memory it did not allocate");
  }
  void upload(CUdeviceptr to, const void* from, size_t bytes) override { std::memcpy(host(to), from, bytes); }
  void download(void* to, CUdeviceptr from, size_t bytes) override { std::memcpy(to, host(from), bytes); }
  void memset(CUdeviceptr to, unsigned char value, size_t bytes) override { std::memset(host(to), value, bytes); }
  void synchronize() override {}
  std::pair<CUdeviceptr, size_t> global(const std::string& name) override {
    return {CUdeviceptr(reinterpret_cast<uintptr_t>(library_.symbol(name))), sizeof(int)};
  }

  void launch(const std::string& kernel, const kiln::cuda::LaunchConfig& config,
              kiln::cuda::KernelArguments& arguments) override {
    using Entry = int (*)(unsigned, unsigned, size_t, void**, char*, size_t);
    auto entry = library_.function<Entry>("kiln_emulate_" + kernel);
    char error[1024] = {};
    if (entry(config.grid[0], config.block[0], size_t(config.shared_bytes), arguments.pointers(), error, sizeof error) != 0)
      fail("the CUDA emulation stopped ", kernel, ": ", error);
    if (*static_cast<int*>(library_.symbol("kiln_fault_zero_division")))
      fail("ZeroDivisionError: integer division by zero in ", kernel);
    if (*static_cast<int*>(library_.symbol("kiln_fault_index"))) fail("IndexError: an index is out of range in ", kernel);
  }

  // c[i, j] = act(sum_k op(a)[i, k] op(b)[k, j] + bias[j]) per batch, in double, as cuBLAS (or
  // cuBLASLt with the epilogue) computes it on a GPU.
  void gemm(const kiln::cuda::RowMajorGemm& g, DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
            kiln::cuda::GemmEpilogue epilogue, CUdeviceptr bias) override {
    using kiln::cuda::GemmEpilogue;
    const size_t element = dtype_size(dtype);
    const int64_t lda = g.lda ? g.lda : (g.transpose_a ? g.m : g.k), ldb = g.ldb ? g.ldb : (g.transpose_b ? g.k : g.n);
    const int64_t ldc = g.ldc ? g.ldc : g.n;
    auto at = [&](CUdeviceptr base, int64_t index) { return static_cast<unsigned char*>(host(base)) + index * int64_t(element); };
    for (int64_t batch = 0; batch < g.batch; ++batch) {
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t k = 0; k < g.k; ++k) {
            int64_t a_index = batch * g.stride_a + (g.transpose_a ? k * lda + i : i * lda + k);
            int64_t b_index = batch * g.stride_b + (g.transpose_b ? j * ldb + k : k * ldb + j);
            sum += load_double(dtype, at(a, a_index)) * load_double(dtype, at(b, b_index));
          }
          sum *= g.alpha;
          bool has_bias = epilogue == GemmEpilogue::bias || epilogue == GemmEpilogue::bias_relu ||
                          epilogue == GemmEpilogue::bias_gelu;
          if (has_bias) sum += load_double(dtype, at(bias, j));
          if (epilogue == GemmEpilogue::relu || epilogue == GemmEpilogue::bias_relu) sum = sum > 0 ? sum : 0;
          if (epilogue == GemmEpilogue::gelu || epilogue == GemmEpilogue::bias_gelu)
            sum = 0.5 * sum * (1 + std::tanh(std::sqrt(2 / M_PI) * (sum + 0.044715 * sum * sum * sum)));
          void* out = at(c, batch * g.stride_c + i * ldc + j);
          if (g.beta != 0) sum += g.beta * load_double(dtype, out);
          store_double(dtype, out, sum);
        }
      }
    }
  }

 private:
  void* host(CUdeviceptr pointer) const { return reinterpret_cast<void*>(uintptr_t(pointer)); }

  const SharedLibrary& library_;
  size_t misalign_;
  std::map<CUdeviceptr, std::unique_ptr<unsigned char[]>> blocks_;
};

class EmulatedModel {
 public:
  static EmulatedModel compile(const ir::Graph& graph, const CudaEmitOptions& options = {}, size_t misalign_bytes = 0) {
    EmulatedModel m;
    m.graph_ = std::make_unique<ir::Graph>(simplified(graph));
    m.scheduled_ = std::make_unique<ScheduledProgram>(schedule(lower(*m.graph_)));
    m.module_ = emit_cuda(*m.scheduled_, options);
    m.plan_ = std::make_unique<kiln::cuda::LaunchPlan>(kiln::cuda::parse_launch_plan(
        compiler::launch_plan_json(*m.scheduled_, m.module_, "sm_80"), "the emulated model's launch_plan.json"));
    m.library_ = std::make_unique<SharedLibrary>(SharedLibrary::open(build_emulation(emulation_source(m.module_))));
    m.device_ = std::make_unique<EmulatedDevice>(*m.library_, misalign_bytes);
    m.runner_ = std::make_unique<kiln::cuda::PlanRunner>(*m.plan_, *m.device_);
    return m;
  }

  const CudaModule& module() const { return module_; }
  const ScheduledProgram& scheduled() const { return *scheduled_; }
  const kiln::cuda::LaunchPlan& plan() const { return *plan_; }

  // Outputs in the graph's output order (mutated inputs' copy-back outputs included).
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) const {
    std::map<std::string, int64_t> bindings = ir::bind_symbols(*graph_, inputs);
    std::vector<Tensor> ordered, parameters;
    for (int id : plan_->inputs) ordered.push_back(inputs.at(plan_->buffer(id).source));
    for (int id : plan_->parameters) parameters.push_back(graph_->parameters().at(plan_->buffer(id).source).contiguous());
    FallbackHandler fallback = [&](int index, const std::vector<Tensor>& arguments, std::vector<Tensor>& outputs) {
      std::vector<Tensor> results =
          compiler::run_fallback_node(*graph_, plan_->fallbacks.at(size_t(index)), arguments, bindings);
      for (size_t i = 0; i < results.size(); ++i) outputs.at(i).copy_from(results[i]);
    };
    return runner_->run(ordered, parameters, fallback);
  }

 private:
  std::unique_ptr<ir::Graph> graph_;
  std::unique_ptr<ScheduledProgram> scheduled_;
  CudaModule module_;
  std::unique_ptr<kiln::cuda::LaunchPlan> plan_;
  std::unique_ptr<SharedLibrary> library_;
  std::unique_ptr<EmulatedDevice> device_;
  std::unique_ptr<kiln::cuda::PlanRunner> runner_;  // last: destroyed first
};

}  // namespace kiln::codegen::cuda::testing
