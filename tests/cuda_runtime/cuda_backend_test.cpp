// The CUDA backend driver: every sample model compiles with NVRTC for sm_80 and sm_90 without a
// GPU (cubins whose kernels are the launch plan's), the cache serves the second compile, the
// output directory holds the source, the plan and the cubin; running says "no CUDA device"
// here, and on a GPU matches the interpreter.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compiler/cuda_backend.h"
#include "frontends/model_loader.h"
#include "ir/interpreter.h"
#include "runtime/cuda/cubin_elf.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/error.h"
#include "runtime/philox.h"

namespace kiln::compiler {
namespace {

const char* const kSamples[] = {"mlp", "attention", "cnn", "inplace"};

std::filesystem::path sample(const std::string& name) {
  return std::filesystem::path(KILN_SOURCE_DIR) / "samples" / "models" / (name + ".kiln");
}

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      cuda::nvrtc();
    } catch (const Error& e) {
      GTEST_SKIP() << "no NVRTC here: " << e.what();
    }
    directory_ = std::filesystem::temp_directory_path() /
                 ("kiln-cuda-backend-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  CudaCompileOptions options(int sm) const {
    CudaCompileOptions o;
    o.sm = sm;
    o.cache_dir = directory_ / "cache";
    return o;
  }
  std::filesystem::path directory_;
};

TEST_F(CudaBackendTest, EverySampleCompilesForSm80AndSm90) {
  for (const char* name : kSamples) {
    ir::Graph graph = frontends::load_model(sample(name));
    for (int sm : {80, 90}) {
      SCOPED_TRACE(std::string(name) + " sm_" + std::to_string(sm));
      CudaModel model = CudaModel::compile(graph, options(sm));
      EXPECT_EQ(model.result().architecture, "sm_" + std::to_string(sm));
      cuda::CubinInfo cubin = cuda::read_cubin(model.device_code().image, name);
      EXPECT_EQ(cubin.sm, sm);
      std::vector<std::string> kernels = cubin.kernels();
      std::set<std::string> in_cubin(kernels.begin(), kernels.end());
      size_t launches = 0;
      for (const codegen::cuda::LaunchStep& step : model.module().steps) {
        if (step.kind != codegen::cuda::LaunchStep::Kind::Kernel) continue;
        ++launches;
        EXPECT_TRUE(in_cubin.count(step.launch.name)) << step.launch.name << " is not in the cubin";
      }
      EXPECT_EQ(launches, model.result().kernel_count);
    }
  }
}

TEST_F(CudaBackendTest, TheSecondCompileIsACacheHit) {
  ir::Graph graph = frontends::load_model(sample("mlp"));
  CudaModel first = CudaModel::compile(graph, options(80));
  EXPECT_FALSE(first.result().cache_hit);
  CudaModel second = CudaModel::compile(graph, options(80));
  EXPECT_TRUE(second.result().cache_hit);
  EXPECT_EQ(second.result().key, first.result().key);
  EXPECT_EQ(second.device_code().image, first.device_code().image);
}

TEST_F(CudaBackendTest, TheOutputDirectoryHoldsSourcePlanAndCubin) {
  CudaCompileOptions o = options(90);
  o.output_dir = directory_ / "out";
  CudaModel model = CudaModel::compile(frontends::load_model(sample("attention")), o);
  std::ifstream source(directory_ / "out" / "kernels.cu");
  std::string text((std::istreambuf_iterator<char>(source)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, model.module().source);
  nlohmann::json plan = nlohmann::json::parse(std::ifstream(directory_ / "out" / "launch_plan.json"));
  EXPECT_EQ(plan["format"], "kiln-cuda-launch-plan");
  EXPECT_EQ(plan["architecture"], "sm_90");
  EXPECT_EQ(plan["steps"].size(), model.module().steps.size());
  EXPECT_TRUE(std::filesystem::exists(directory_ / "out" / "device.cubin"));
  try {
    CudaModel::compile(frontends::load_model(sample("attention")), o);
    FAIL() << "overwrote a non-empty output directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exists and is not empty"), std::string::npos) << e.what();
  }
}

std::map<std::string, Tensor> random_inputs(const ir::Graph& graph, const std::map<std::string, int64_t>& dims) {
  std::map<std::string, Tensor> inputs;
  uint64_t seed = 1;
  for (const ir::Node* node : graph.placeholders()) {
    Sizes sizes;
    for (const ir::SymInt& d : node->meta.values.at(0).shape) sizes.push_back(d.is_constant() ? d.constant() : dims.at(d.to_string()));
    Tensor value = Tensor::empty(sizes, DType::f32);
    float* data = value.data<float>();
    for (int64_t i = 0; i < value.numel(); ++i) data[i] = philox_uniform(seed, 0, uint64_t(i)) * 2 - 1;
    inputs[node->target()] = value;
    ++seed;
  }
  return inputs;
}

// On the device: the model compiled for the device's architecture, run on random inputs
// (s0 = 16), against the interpreter.
void expect_gpu_matches_interpreter(const ir::Graph& graph) {
  CudaCompileOptions o;
  o.use_cache = false;
  CudaModel m = CudaModel::compile(graph, o);
  std::map<std::string, Tensor> in = random_inputs(graph, {{"s0", 16}});
  std::map<std::string, Tensor> for_interpreter;
  for (auto& [key, value] : in) for_interpreter[key] = value.clone();
  std::vector<Tensor> got = m.run(in);
  std::vector<Tensor> expected = ir::Interpreter().run(graph, for_interpreter);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor a = got[i].to(DType::f64), b = expected[i].contiguous().to(DType::f64);
    ASSERT_EQ(a.sizes(), b.sizes());
    for (int64_t j = 0; j < a.numel(); ++j) {
      ASSERT_NEAR(a.data<double>()[j], b.data<double>()[j], 1e-4 + 1e-4 * std::fabs(b.data<double>()[j])) << "output " << i;
    }
  }
  EXPECT_GT(m.last_device_milliseconds(), 0);
}

TEST_F(CudaBackendTest, RunningNeedsADeviceAndThenMatchesTheInterpreter) {
  ir::Graph graph = frontends::load_model(sample("mlp"));
  CudaModel model = CudaModel::compile(graph, options(80));
  std::map<std::string, Tensor> inputs = random_inputs(graph, {{"s0", 16}});
  if (std::optional<std::string> reason = cuda::cuda_unavailable_reason()) {
    try {
      model.run(inputs);
      FAIL() << "ran without a GPU";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), *reason);
      EXPECT_EQ(std::string(e.what()).rfind("no CUDA device: ", 0), 0u);
    }
    return;
  }
  for (const char* name : kSamples) {
    SCOPED_TRACE(name);
    expect_gpu_matches_interpreter(frontends::load_model(sample(name)));
  }
}

// x [s0, 16] (@ w [16, 8] or, batched, x [3, s0, 16] @ w [3, 16, 8]) + b [8], then `activation`.
ir::Graph linear_then(const std::string& activation, const ir::Kwargs& kwargs, bool batched) {
  ir::Graph graph;
  std::vector<ir::SymInt> x_shape{ir::SymInt::symbol("s0"), 16}, w_shape{16, 8};
  if (batched) x_shape.insert(x_shape.begin(), 3), w_shape.insert(w_shape.begin(), 3);
  ir::Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, x_shape));
  ir::Node* w = graph.create_placeholder("w", ir::TensorMeta::contiguous(DType::f32, w_shape));
  ir::Node* b = graph.create_placeholder("b", ir::TensorMeta::contiguous(DType::f32, {8}));
  ir::Node* value = graph.create_call("add", {graph.create_call("matmul", {x, w}), b});
  if (!activation.empty()) value = graph.create_call(activation, {value}, kwargs);
  graph.create_output({value});
  return graph;
}

TEST_F(CudaBackendTest, FusedGemmEpiloguesRunAsOneCublasLtCallAndMatchTheInterpreter) {
  struct Case {
    const char* name;
    ir::Graph graph;
    const char* epilogue;
  };
  std::vector<Case> cases;
  cases.push_back({"bias", linear_then("", {}, false), "bias"});
  cases.push_back({"bias relu, batched", linear_then("relu", {}, true), "bias_relu"});
  cases.push_back({"bias gelu tanh", linear_then("gelu", {{"approximate", "tanh"}}, false), "bias_gelu_tanh"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CudaModel model = CudaModel::compile(c.graph, options(80));
    nlohmann::json plan = nlohmann::json::parse(launch_plan_json(model.scheduled(), model.module(), "sm_80"));
    ASSERT_EQ(plan["steps"].size(), 1u) << plan.dump(2);
    EXPECT_EQ(plan["steps"][0]["library"], "gemm_lt");
    EXPECT_EQ(plan["steps"][0]["epilogue"], c.epilogue);
    EXPECT_EQ(plan["steps"][0]["bias"]["buffer"], "b");
    EXPECT_EQ(model.result().kernel_count, 0u);
    if (!cuda::cuda_unavailable_reason()) expect_gpu_matches_interpreter(c.graph);
  }
}

}  // namespace
}  // namespace kiln::compiler
