// Tests for runtime/cuda/plan_runner: a hand-written launch plan run on a host device (host
// memory, kernels as C++ functions, GEMMs by a host loop) with runtime/ alone: the steps run in
// order with the right pointers, symbols and views (the results checked against values computed
// here), parameters are uploaded once and again after parameter_changed, a kernel's fault flag
// and bad inputs become clear errors, a grid of zero blocks launches nothing, and every
// allocation of a run is freed however the run ends. The same runner runs the compiler's plans
// through the CPU emulation of generated CUDA (tests/cuda_codegen) and on GPUs (tests/cuda_runtime).
#include "runtime/cuda/plan_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "kiln/error.h"

namespace kiln::cuda {
namespace {

using ::testing::HasSubstr;

// x [s0, 4] -> k0: t = 2*x (and flags an index fault when x[0] < 0) -> y = relu(t @ w + x[0, 1:4])
// -> fallback #0: z[i] = the column of row i's largest y. A kernel k_empty of s0 - s0 blocks.
const char* kPlan = R"({
  "format": "kiln-cuda-launch-plan", "version": 2, "architecture": "sm_80", "nvrtc_options": [],
  "symbols": [{"name": "s0", "input": 0, "dim": 0}],
  "inputs": ["x"], "parameters": ["w"], "outputs": ["y", "z"], "fallbacks": ["argmax_1"],
  "workspace_bytes": "s0*16 + 64", "scratch_offset": "s0*16",
  "buffers": [
    {"id": 0, "name": "x", "kind": "input", "dtype": "f32", "shape": ["s0", "4"], "source": "x"},
    {"id": 1, "name": "w", "kind": "parameter", "dtype": "f32", "shape": ["4", "3"], "source": "w"},
    {"id": 2, "name": "t", "kind": "intermediate", "dtype": "f32", "shape": ["s0", "4"], "workspace_offset": "0"},
    {"id": 3, "name": "y", "kind": "output", "dtype": "f32", "shape": ["s0", "3"], "source": "y"},
    {"id": 4, "name": "z", "kind": "output", "dtype": "i64", "shape": ["s0"], "source": "z"}
  ],
  "steps": [
    {"kernel": "k0", "grid": "(s0*4 + 255)//256", "block": 256, "shared_bytes": 0,
     "arguments": ["buffer x", "buffer t", "symbol s0", "scratch"]},
    {"kernel": "k_empty", "grid": "s0 - s0", "block": 32, "shared_bytes": 0, "arguments": []},
    {"library": "gemm_lt", "node": "mm", "graph_node": "mm", "epilogue": "bias_relu",
     "bias": {"buffer": "x", "offset": "1"}, "output": "y",
     "inputs": [{"buffer": "t", "shape": ["s0", "4"], "strides": ["4", "1"], "offset": "0"},
                {"buffer": "w", "shape": ["4", "3"], "strides": ["3", "1"], "offset": "0"}],
     "outputs": [{"buffer": "y", "shape": ["s0", "3"], "strides": ["3", "1"], "offset": "0"}]},
    {"library": "fallback", "node": "argmax_1", "graph_node": "argmax_1", "fallback": 0,
     "inputs": [{"buffer": "y", "shape": ["s0", "3"], "strides": ["3", "1"], "offset": "0"}],
     "outputs": [{"buffer": "z", "shape": ["s0"], "strides": ["1"], "offset": "0"}]}
  ]})";

// Host memory as device memory; kernels are C++ functions of cuLaunchKernel's parameters.
class HostDevice final : public PlanDevice {
 public:
  using Kernel = std::function<void(void** parameters, const LaunchConfig& config)>;

  CUdeviceptr allocate(size_t bytes) override {
    auto block = std::make_unique<unsigned char[]>(bytes + 256);
    CUdeviceptr pointer = CUdeviceptr((reinterpret_cast<uintptr_t>(block.get()) + 255) / 256 * 256);
    live_.emplace(pointer, std::move(block));
    ++allocations;
    return pointer;
  }
  void free(CUdeviceptr pointer) override { ASSERT_EQ(live_.erase(pointer), 1u); }
  void upload(CUdeviceptr to, const void* from, size_t bytes) override {
    ++uploads;
    std::memcpy(host(to), from, bytes);
  }
  void download(void* to, CUdeviceptr from, size_t bytes) override { std::memcpy(to, host(from), bytes); }
  void memset(CUdeviceptr to, unsigned char value, size_t bytes) override { std::memset(host(to), value, bytes); }
  void synchronize() override {}
  std::pair<CUdeviceptr, size_t> global(const std::string& name) override {
    return {CUdeviceptr(reinterpret_cast<uintptr_t>(&globals_[name])), sizeof(int)};
  }
  void launch(const std::string& kernel, const LaunchConfig& config, KernelArguments& arguments) override {
    launched.push_back(kernel);
    kernels.at(kernel)(arguments.pointers(), config);
  }
  // Row-major, no transposes (all this plan's GEMM needs), the epilogue as cuBLASLt's.
  void gemm(const RowMajorGemm& g, DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, GemmEpilogue epilogue,
            CUdeviceptr bias) override {
    EXPECT_EQ(dtype, DType::f32);
    EXPECT_FALSE(g.transpose_a || g.transpose_b);
    const float *pa = static_cast<float*>(host(a)), *pb = static_cast<float*>(host(b)), *pbias = static_cast<float*>(host(bias));
    float* pc = static_cast<float*>(host(c));
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float sum = 0;
        for (int64_t k = 0; k < g.k; ++k) sum += pa[i * (g.lda ? g.lda : g.k) + k] * pb[k * (g.ldb ? g.ldb : g.n) + j];
        if (epilogue == GemmEpilogue::bias_relu) sum = std::max(sum + pbias[j], 0.0f);
        pc[i * (g.ldc ? g.ldc : g.n) + j] = sum;
      }
  }

  size_t live() const { return live_.size(); }
  static void* host(CUdeviceptr pointer) { return reinterpret_cast<void*>(uintptr_t(pointer)); }
  int& flag(const std::string& name) { return globals_[name]; }

  std::map<std::string, Kernel> kernels;
  std::vector<std::string> launched;
  int allocations = 0, uploads = 0;

 private:
  std::map<CUdeviceptr, std::unique_ptr<unsigned char[]>> live_;
  std::map<std::string, int> globals_;
};

template <typename T>
T argument(void** parameters, size_t index) {
  T value;
  std::memcpy(&value, parameters[index], sizeof(T));
  return value;
}

class PlanRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    device_.kernels["k0"] = [this](void** parameters, const LaunchConfig& config) {
      EXPECT_EQ(config.block[0], 256u);
      auto* x = static_cast<float*>(HostDevice::host(argument<CUdeviceptr>(parameters, 0)));
      auto* t = static_cast<float*>(HostDevice::host(argument<CUdeviceptr>(parameters, 1)));
      int64_t s0 = argument<int64_t>(parameters, 2);
      scratch_seen_ = argument<CUdeviceptr>(parameters, 3);
      t_seen_ = argument<CUdeviceptr>(parameters, 1);
      for (int64_t i = 0; i < s0 * 4; ++i) t[i] = 2 * x[i];
      if (x[0] < 0) device_.flag("kiln_fault_index") = 1;
    };
    device_.kernels["k_empty"] = [](void**, const LaunchConfig&) { ADD_FAILURE() << "a grid of 0 blocks was launched"; };
  }

  // z[i] = the column of row i's largest value.
  FallbackHandler argmax() {
    return [this](int index, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
      ++fallback_calls_;
      EXPECT_EQ(index, 0);
      const Tensor& y = inputs.at(0);
      for (int64_t i = 0; i < y.size(0); ++i) {
        int64_t best = 0;
        for (int64_t j = 1; j < y.size(1); ++j)
          if (y.flat_double(i * 3 + j) > y.flat_double(i * 3 + best)) best = j;
        store_double(DType::i64, static_cast<int64_t*>(outputs.at(0).data_ptr()) + i, double(best));
      }
    };
  }

  static Tensor values(const Sizes& sizes, std::vector<double> data) { return Tensor::from_doubles(sizes, data, DType::f32); }

  LaunchPlan plan_ = parse_launch_plan(kPlan, "plan");
  HostDevice device_;
  CUdeviceptr scratch_seen_ = 0, t_seen_ = 0;
  int fallback_calls_ = 0;
};

TEST_F(PlanRunnerTest, RunsEveryStepInOrderWithTheRightOperands) {
  PlanRunner runner(plan_, device_);
  Tensor x = values({2, 4}, {1, 0.5, -1, 2, -3, 1, 0, 4});
  Tensor w = values({4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, -1, 2});
  std::vector<Tensor> out = runner.run({x}, {w}, argmax());
  ASSERT_EQ(out.size(), 2u);
  // y = relu(2x @ w + (0.5, -1, 2)), by hand.
  const double y[2][3] = {{2 + 4 + 0.5, 1 - 4 - 1, -2 + 8 + 2}, {-6 + 8 + 0.5, 2 - 8 - 1, 0 + 16 + 2}};
  ASSERT_EQ(out[0].sizes(), (Sizes{2, 3}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(out[0].flat_double(i * 3 + j), std::max(y[i][j], 0.0)) << i << "," << j;
  ASSERT_EQ(out[1].dtype(), DType::i64);
  EXPECT_EQ(out[1].flat_int(0), 2);
  EXPECT_EQ(out[1].flat_int(1), 2);
  EXPECT_EQ(device_.launched, std::vector<std::string>{"k0"});  // k_empty has no blocks
  EXPECT_EQ(fallback_calls_, 1);
  EXPECT_EQ(scratch_seen_, t_seen_ + 2 * 16);  // workspace + scratch_offset (s0*16)
  EXPECT_EQ(device_.live(), 1u);               // only the parameter's copy stays
}

TEST_F(PlanRunnerTest, ParametersAreUploadedOnceAndAgainWhenChanged) {
  PlanRunner runner(plan_, device_);
  Tensor x = values({1, 4}, {1, 1, 1, 1});
  Tensor w = values({4, 3}, std::vector<double>(12, 1.0));
  EXPECT_FLOAT_EQ(runner.run({x}, {w}, argmax())[0].flat_double(0), 9);
  int uploads = device_.uploads;
  w.copy_from(values({4, 3}, std::vector<double>(12, 2.0)));
  EXPECT_FLOAT_EQ(runner.run({x}, {w}, argmax())[0].flat_double(0), 9);  // the device copy is kept
  EXPECT_EQ(device_.uploads - uploads, 2);  // the input and the fallback's result, not the parameter
  runner.parameter_changed(0);
  EXPECT_FLOAT_EQ(runner.run({x}, {w}, argmax())[0].flat_double(0), 17);
  EXPECT_EQ(device_.live(), 1u);
}

TEST_F(PlanRunnerTest, GuardsNameTheInputTheDimAndBothValues) {
  PlanRunner runner(plan_, device_);
  Tensor w = values({4, 3}, std::vector<double>(12, 1.0));
  auto guard = [&](std::vector<Tensor> inputs) -> std::string {
    try {
      runner.run(inputs, {w}, argmax());
    } catch (const GuardError& error) {
      return error.what();
    } catch (const Error& error) {
      return std::string("not a guard: ") + error.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(guard({values({2, 5}, std::vector<double>(10, 0))}), "input 'x': expected f32[s0, 4], got f32[2, 5]: dim 1 is 5, expected 4");
  EXPECT_EQ(guard({Tensor::zeros({2, 4}, DType::f64)}), "input 'x': expected f32[s0, 4], got f64[2, 4]: dtype is f64, expected f32");
  EXPECT_EQ(guard({Tensor::zeros({8}, DType::f32)}), "input 'x': expected f32[s0, 4], got f32[8]: rank is 1, expected 2");
  EXPECT_EQ(runner.bind({Tensor::zeros({7, 4}, DType::f32)}), std::vector<int64_t>{7});
  EXPECT_THAT(guard({}), HasSubstr("not a guard: the CUDA model takes 1 inputs, got 0"));
  try {
    runner.run({Tensor::zeros({2, 4}, DType::f32)}, {values({3, 4}, std::vector<double>(12, 0))}, argmax());
    ADD_FAILURE() << "ran with a parameter of another shape";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "parameter 'w' must be a contiguous f32[4, 3], got f32[3, 4]");
  }
  EXPECT_EQ(device_.live(), 0u);  // nothing kept from the failed runs
}

TEST_F(PlanRunnerTest, AFaultFlagAFailingFallbackAndAMissingHandlerAreErrors) {
  PlanRunner runner(plan_, device_);
  Tensor w = values({4, 3}, std::vector<double>(12, 1.0));
  auto error_of = [&](const Tensor& x, const FallbackHandler& handler) -> std::string {
    try {
      runner.run({x}, {w}, handler);
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(error_of(values({1, 4}, {-1, 0, 0, 0}), argmax()),
            "IndexError: an index is out of range in the model's CUDA kernels");
  EXPECT_EQ(error_of(values({1, 4}, {1, 0, 0, 0}), {}),
            "the CUDA model runs 1 node(s) on the host's reference kernels (first: 'argmax_1') and needs a fallback handler");
  FallbackHandler throwing = [](int, const std::vector<Tensor>&, std::vector<Tensor>&) { fail("no kernel for this dtype"); };
  EXPECT_EQ(error_of(values({1, 4}, {1, 0, 0, 0}), throwing), "fallback 'argmax_1' (#0) failed: no kernel for this dtype");
  FallbackHandler wrong = [](int, const std::vector<Tensor>&, std::vector<Tensor>& outputs) {
    outputs[0] = Tensor::zeros({5}, DType::i64);
  };
  EXPECT_EQ(error_of(values({1, 4}, {1, 0, 0, 0}), wrong),
            "fallback 'argmax_1' (#0) failed: the handler returned output #0 as i64[5], expected i64[1]");
  EXPECT_EQ(device_.live(), 1u);  // the parameter's copy; every run's own memory is freed
  // A flag from one run does not leak into the next: the flags are cleared before the steps.
  EXPECT_EQ(runner.run({values({1, 4}, {1, 0, 0, 0})}, {w}, argmax()).size(), 2u);
}

}  // namespace
}  // namespace kiln::cuda
