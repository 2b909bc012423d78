// Generated CUDA builds with both compilers that use it (issue 15): NVRTC, as the cuda target
// builds artifacts, and nvcc, as CUDA packages build their device code. The prelude
// (codegen/cuda/kiln_cuda_prelude.h) declares the fixed-width integer types itself only under
// NVRTC, which has no <stdint.h>; under nvcc it includes <cstdint> (declaring them again was
// nvcc's "invalid redeclaration of type name int64_t"). Each sample's kernels.cu, and a
// program that stores f16 (cuda_fp16.h), compile with nvcc -cubin for sm_80 and with NVRTC; the
// nvcc cubin defines every kernel the launch plan launches. Skipped, with the reason, where
// nvcc or NVRTC is missing.
#include <filesystem>
#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler/compile_driver.h"
#include "compiler/targets/cuda_package.h"
#include "frontends/model_loader.h"
#include "kiln/error.h"
#include "runtime/cuda/cubin_elf.h"
#include "runtime/cuda/cuda_artifact.h"
#include "runtime/cuda/library_search.h"
#include "runtime/cuda/nvrtc.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// x f16 [s0, 8] -> relu(x) * 2 (stored as f16: the half headers under both compilers).
ir::Graph half_graph() {
  ir::Graph graph;
  ir::Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f16, {ir::SymInt::symbol("s0"), 8}));
  ir::Node* relu = graph.create_call("relu", {x});
  graph.create_output({graph.create_call("add", {relu, relu})});
  return graph;
}

class NvccBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      cuda::nvrtc();
    } catch (const Error& e) {
      GTEST_SKIP() << "no NVRTC here: " << e.what();
    }
    std::optional<std::string> found = find_nvcc();
    if (!found) GTEST_SKIP() << "no nvcc here (set $KILN_NVCC or $CUDA_HOME)";
    nvcc_ = *found;
    directory_ = fs::temp_directory_path() / ("kiln-nvcc-build-" + std::to_string(::getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  // Compiles `graph` for cuda sm_80 (NVRTC, through the driver) into DIR/NAME; returns the artifact.
  std::unique_ptr<cuda::CudaArtifact> compile_with_nvrtc(const ir::Graph& graph, const std::string& name) {
    CompileOptions o;
    o.target = "cuda";
    o.sm = 80;
    o.cache_dir = directory_ / "cache";
    o.output_dir = directory_ / name;
    compile(graph, o);
    return cuda::CudaArtifact::load(directory_ / name);
  }

  // nvcc -cubin for sm_80 with the module's options; the cubin's bytes.
  std::string compile_with_nvcc(const fs::path& source, const std::vector<std::string>& options) {
    fs::path cubin = source.parent_path() / "nvcc.cubin", log = source.parent_path() / "nvcc.log";
    std::string command = nvcc_ + " -cubin -arch=sm_80";
    for (const std::string& option : options) command += " " + option;
    command += " " + source.string() + " -o " + cubin.string() + " > " + log.string() + " 2>&1";
    int status = std::system(command.c_str());
    EXPECT_EQ(status, 0) << read_text(log);
    return read_text(cubin);
  }

  std::string nvcc_;
  fs::path directory_;
};

TEST_F(NvccBuild, EverySamplesKernelsBuildWithNvccAndNvrtc) {
  for (const char* name : {"mlp", "attention", "cnn", "inplace"}) {
    SCOPED_TRACE(name);
    ir::Graph graph = frontends::load_model(fs::path(KILN_SOURCE_DIR) / "samples" / "models" / (std::string(name) + ".kiln"));
    std::unique_ptr<cuda::CudaArtifact> artifact = compile_with_nvrtc(graph, name);
    ASSERT_TRUE(artifact->device_code().is_cubin);
    fs::path source = directory_ / name / "kernels.cu";
    std::string again = cuda::nvrtc().compile(read_text(source), "kernels.cu", 80, artifact->plan().nvrtc_options).image;
    EXPECT_EQ(cuda::read_cubin(again, name).sm, 80);
    cuda::CubinInfo cubin = cuda::read_cubin(compile_with_nvcc(source, artifact->plan().nvrtc_options), name);
    EXPECT_EQ(cubin.sm, 80);
    std::vector<std::string> kernels = cubin.kernels();
    std::set<std::string> defined(kernels.begin(), kernels.end());
    for (const cuda::PlanStep& step : artifact->plan().steps) {
      if (step.kind == cuda::PlanStep::Kind::Kernel) {
        EXPECT_TRUE(defined.count(step.name)) << step.name;
      }
    }
  }
}

TEST_F(NvccBuild, HalfPrecisionKernelsBuildWithNvccAndNvrtc) {
  if (!cuda::toolkit_include_directory()) GTEST_SKIP() << "the CUDA toolkit's cuda_fp16.h is not here";
  std::unique_ptr<cuda::CudaArtifact> artifact = compile_with_nvrtc(half_graph(), "half");
  fs::path source = directory_ / "half" / "kernels.cu";
  EXPECT_THAT(read_text(source), ::testing::HasSubstr("#define KILN_CUDA_HALF 1"));
  cuda::CubinInfo cubin = cuda::read_cubin(compile_with_nvcc(source, artifact->plan().nvrtc_options), "half");
  EXPECT_FALSE(cubin.kernels().empty());
}

}  // namespace
}  // namespace kiln::compiler
