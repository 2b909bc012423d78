// The cuda target through the one driver (compiler/compile_driver.h): every sample model
// compiles with NVRTC for sm_80 and sm_90 without a GPU (cubins whose kernels are the launch
// plan's), the cache serves the second compile, the output directory holds the source, the plan
// and the cubin and loads with the runtime's loader alone (runtime/cuda/cuda_artifact.h), a plan
// that disagrees with its cubin is refused at load; running says "no CUDA device" here, and on a
// GPU matches the interpreter.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compiler/compile_driver.h"
#include "frontends/model_loader.h"
#include "ir/interpreter.h"
#include "runtime/cuda/cubin_elf.h"
#include "runtime/cuda/cuda_artifact.h"
#include "runtime/cuda/cuda_driver.h"
#include "kiln/error.h"
#include "runtime/philox.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char* const kSamples[] = {"mlp", "attention", "cnn", "inplace"};

fs::path sample(const std::string& name) { return fs::path(KILN_SOURCE_DIR) / "samples" / "models" / (name + ".kiln"); }

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

class CudaTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      cuda::nvrtc();
    } catch (const Error& e) {
      GTEST_SKIP() << "no NVRTC here: " << e.what();
    }
    directory_ = fs::temp_directory_path() / ("kiln-cuda-target-" + std::to_string(::getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }
  CompileOptions options(int sm) const {
    CompileOptions o;
    o.target = "cuda";
    o.sm = sm;
    o.cache_dir = directory_ / "cache";
    return o;
  }
  fs::path directory_;
};

const cuda::CudaArtifact& cuda_artifact(const CompiledModel& model) {
  const cuda::CudaArtifact* artifact = model.artifact_as<cuda::CudaArtifact>();
  if (artifact == nullptr) throw std::logic_error("not a cuda artifact");
  return *artifact;
}

TEST_F(CudaTargetTest, EverySampleCompilesForSm80AndSm90) {
  for (const char* name : kSamples) {
    ir::Graph graph = frontends::load_model(sample(name));
    for (int sm : {80, 90}) {
      SCOPED_TRACE(std::string(name) + " sm_" + std::to_string(sm));
      CompiledModel model = compile(graph, options(sm));
      const cuda::CudaArtifact& artifact = cuda_artifact(model);
      EXPECT_EQ(artifact.plan().architecture, "sm_" + std::to_string(sm));
      EXPECT_THAT(model.result().details, HasSubstr("sm_" + std::to_string(sm)));
      cuda::CubinInfo cubin = cuda::read_cubin(artifact.device_code().image, name);
      EXPECT_EQ(cubin.sm, sm);
      std::vector<std::string> kernels = cubin.kernels();
      std::set<std::string> in_cubin(kernels.begin(), kernels.end());
      size_t launches = 0;
      for (const cuda::PlanStep& step : artifact.plan().steps) {
        if (step.kind != cuda::PlanStep::Kind::Kernel) continue;
        ++launches;
        EXPECT_TRUE(in_cubin.count(step.name)) << step.name << " is not in the cubin";
      }
      EXPECT_EQ(launches, model.result().kernel_count);
    }
  }
}

TEST_F(CudaTargetTest, TheSecondCompileIsACacheHit) {
  ir::Graph graph = frontends::load_model(sample("mlp"));
  std::vector<std::string> stages;
  CompileOptions o = options(80);
  o.on_stage = [&](const std::string& stage, double) { stages.push_back(stage); };
  CompiledModel first = compile(graph, o);
  EXPECT_FALSE(first.result().cache_hit);
  EXPECT_NE(std::find(stages.begin(), stages.end(), "nvrtc"), stages.end());
  stages.clear();
  CompiledModel second = compile(graph, o);
  EXPECT_TRUE(second.result().cache_hit);
  EXPECT_EQ(std::find(stages.begin(), stages.end(), "nvrtc"), stages.end());
  EXPECT_EQ(second.result().key, first.result().key);
  EXPECT_EQ(cuda_artifact(second).device_code().image, cuda_artifact(first).device_code().image);
  // Another architecture is another artifact.
  EXPECT_NE(compile(graph, options(90)).result().key, first.result().key);
}

TEST_F(CudaTargetTest, TheOutputDirectoryHoldsSourcePlanAndCubinAndLoadsWithTheRuntimeAlone) {
  CompileOptions o = options(90);
  o.output_dir = directory_ / "out";
  CompiledModel model = compile(frontends::load_model(sample("attention")), o);
  EXPECT_EQ(model.result().artifact_dir, directory_ / "out");
  const cuda::CudaArtifact& compiled = cuda_artifact(model);
  nlohmann::json plan = nlohmann::json::parse(std::ifstream(directory_ / "out" / "launch_plan.json"));
  EXPECT_EQ(plan["format"], "kiln-cuda-launch-plan");
  EXPECT_EQ(plan["version"], 2);
  EXPECT_EQ(plan["architecture"], "sm_90");
  EXPECT_EQ(plan["steps"].size(), compiled.plan().steps.size());
  EXPECT_TRUE(fs::exists(directory_ / "out" / "device.cubin"));
  std::string source = read_text(directory_ / "out" / "kernels.cu");
  for (const cuda::PlanStep& step : compiled.plan().steps) {
    if (step.kind == cuda::PlanStep::Kind::Kernel) {
      EXPECT_THAT(source, HasSubstr(" " + step.name + "("));
    }
  }
  // The runtime's loader reads the folder by itself: the same plan, the same device code.
  std::unique_ptr<cuda::CudaArtifact> loaded = cuda::CudaArtifact::load(directory_ / "out");
  EXPECT_EQ(loaded->device_code().image, compiled.device_code().image);
  EXPECT_EQ(loaded->plan().steps.size(), compiled.plan().steps.size());
  ASSERT_EQ(loaded->inputs().size(), 1u);
  EXPECT_EQ(loaded->inputs()[0].name, "x");
  EXPECT_EQ(loaded->parameters().size(), compiled.parameters().size());
  EXPECT_THAT(error_of([&] { compile(frontends::load_model(sample("attention")), o); }), HasSubstr("exists and is not empty"));
}

TEST_F(CudaTargetTest, APlanThatDisagreesWithItsCubinIsRefusedAtLoad) {
  CompileOptions o = options(80);
  o.output_dir = directory_ / "out";
  compile(frontends::load_model(sample("mlp")), o);
  fs::path file = directory_ / "out" / "launch_plan.json";
  nlohmann::json plan = nlohmann::json::parse(read_text(file));
  plan["architecture"] = "sm_90";
  std::ofstream(file) << plan.dump(2);
  EXPECT_THAT(error_of([&] { cuda::CudaArtifact::load(directory_ / "out"); }),
              HasSubstr("device.cubin is for sm_80 but the launch plan says sm_90"));
  plan["architecture"] = "sm_80";
  for (nlohmann::json& step : plan["steps"])
    if (step.contains("kernel")) step["kernel"] = "kiln_no_such_kernel";
  std::ofstream(file) << plan.dump(2);
  EXPECT_THAT(error_of([&] { cuda::CudaArtifact::load(directory_ / "out"); }),
              HasSubstr("launches kernel kiln_no_such_kernel, which device.cubin does not define"));
  fs::remove(directory_ / "out" / "device.cubin");
  EXPECT_THAT(error_of([&] { cuda::CudaArtifact::load(directory_ / "out"); }),
              HasSubstr("neither device.cubin nor device.ptx is there"));
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
// (s0 = 16), against the interpreter; twice, the second run reusing the parameters kept on
// the device.
void expect_gpu_matches_interpreter(const ir::Graph& graph) {
  CompileOptions o;
  o.target = "cuda";
  o.use_cache = false;
  CompiledModel m = compile(graph, o);
  for (int run = 0; run < 2; ++run) {
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
}

TEST_F(CudaTargetTest, RunningNeedsADeviceAndThenMatchesTheInterpreter) {
  ir::Graph graph = frontends::load_model(sample("mlp"));
  CompiledModel model = compile(graph, options(80));
  std::map<std::string, Tensor> inputs = random_inputs(graph, {{"s0", 16}});
  if (std::optional<std::string> reason = cuda::cuda_unavailable_reason()) {
    std::string message = error_of([&] { model.run(inputs); });
    EXPECT_EQ(message, *reason);
    EXPECT_EQ(message.rfind("no CUDA device: ", 0), 0u);
    return;
  }
  for (const char* name : kSamples) {
    SCOPED_TRACE(name);
    expect_gpu_matches_interpreter(frontends::load_model(sample(name)));
  }
}

// The graph signature's symbol ranges (torch.export's range constraints) travel in the launch
// plan and are checked with the guards before anything touches a device: an input outside its
// range is refused here, without a GPU, naming the symbol, its value and the range.
TEST_F(CudaTargetTest, SymbolRangesAreCarriedInThePlanAndCheckedBeforeAnyLaunch) {
  ir::Graph graph = frontends::load_model(sample("mlp"));
  graph.signature().set_symbol_range("s0", ir::SymbolRange{2, 64});
  CompileOptions o = options(80);
  o.output_dir = directory_ / "out";
  CompiledModel model = compile(graph, o);
  nlohmann::json plan = nlohmann::json::parse(read_text(directory_ / "out" / "launch_plan.json"));
  EXPECT_EQ(plan["symbols"][0]["min"], 2);
  EXPECT_EQ(plan["symbols"][0]["max"], 64);
  EXPECT_EQ(cuda_artifact(model).plan().symbols[0].max, 64);
  // The artifact on its own, as the runtime loads it (CompiledModel::run checks the graph's ranges
  // itself before it calls the artifact).
  std::unique_ptr<cuda::CudaArtifact> artifact = cuda::CudaArtifact::load(directory_ / "out");
  for (int64_t batch : {1, 65}) {
    std::map<std::string, Tensor> inputs = random_inputs(graph, {{"s0", batch}});
    try {
      artifact->run({inputs.at("x")}, {});
      ADD_FAILURE() << "batch " << batch << " ran";
    } catch (const GuardError& error) {
      EXPECT_EQ(std::string(error.what()), "input 'x': dim 0 is " + std::to_string(batch) +
                                               ", outside the range [2, 64] of s0 that the model was compiled for");
    }
  }
  // Within the range the guards pass: the run then needs a device.
  std::map<std::string, Tensor> inputs = random_inputs(graph, {{"s0", 64}});
  if (std::optional<std::string> reason = cuda::cuda_unavailable_reason()) {
    EXPECT_EQ(error_of([&] { artifact->run({inputs.at("x")}, {}); }), *reason);
  } else {
    // On a GPU of another major architecture, sm_80's cubin is refused, naming both; compiled for
    // the GPU, the model runs.
    int sm = cuda::cuda_driver().device_info(0).sm();
    if (sm / 10 != 8) {
      EXPECT_THAT(error_of([&] { model.run(inputs); }), HasSubstr("was built for sm_80, and GPU 0 ("));
      o.sm = sm;
      o.output_dir = directory_ / "out_this_gpu";
      model = compile(graph, o);
    }
    EXPECT_NO_THROW(model.run(inputs));
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

TEST_F(CudaTargetTest, FusedGemmEpiloguesRunAsOneCublasLtCallAndMatchTheInterpreter) {
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
    CompileOptions o = options(80);
    o.output_dir = directory_ / c.name;
    CompiledModel model = compile(c.graph, o);
    nlohmann::json plan = nlohmann::json::parse(read_text(directory_ / c.name / "launch_plan.json"));
    ASSERT_EQ(plan["steps"].size(), 1u) << plan.dump(2);
    EXPECT_EQ(plan["steps"][0]["library"], "gemm_lt");
    EXPECT_EQ(plan["steps"][0]["epilogue"], c.epilogue);
    EXPECT_EQ(plan["steps"][0]["bias"]["buffer"], "b");
    const cuda::PlanStep& step = cuda_artifact(model).plan().steps.at(0);
    EXPECT_EQ(step.kind, cuda::PlanStep::Kind::Gemm);
    EXPECT_EQ(cuda::plan_epilogue_name(step.epilogue), std::string(c.epilogue));
    EXPECT_EQ(model.result().kernel_count, 0u);
    if (!cuda::cuda_unavailable_reason()) expect_gpu_matches_interpreter(c.graph);
  }
}

}  // namespace
}  // namespace kiln::compiler
