// Every kernel the CUDA code generator prints for the core-op cases, the samples and a few
// random graphs compiles with NVRTC (runtime/cuda/nvrtc.h) into cubins for sm_80 and sm_90 (no
// GPU needed). Without libnvrtc the test is skipped, saying why.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/lowering.h"
#include "ir/model_file.h"
#include "runtime/cuda/library_search.h"
#include "runtime/cuda/nvrtc.h"
#include "kiln/error.h"
#include "tests/cuda_codegen/emulated_model.h"
#include "tests/support/op_coverage_cases.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_paths.h"

namespace kiln::codegen::cuda {
namespace {

namespace fs = std::filesystem;

// Why the process's NVRTC cannot be loaded; nothing when it can.
std::optional<std::string> nvrtc_unavailable() {
  try {
    kiln::cuda::nvrtc();
    return std::nullopt;
  } catch (const Error& error) {
    return std::string(error.what());
  }
}

void expect_compiles(const ir::Graph& graph, const std::string& what) {
  if (std::optional<std::string> reason = nvrtc_unavailable()) GTEST_SKIP() << "NVRTC cannot be loaded: " << *reason;
  CudaModule module = emit_cuda(schedule(lower(testing::simplified(graph))));
  std::vector<std::string> options = module.nvrtc_options;
  if (module.uses_half) {
    std::optional<std::string> include = kiln::cuda::toolkit_include_directory();
    ASSERT_TRUE(include) << what << ": computes in f16/bf16, and the CUDA toolkit's cuda_fp16.h was not found";
    options.push_back("-I" + *include);
  }
  for (int sm : {80, 90}) {
    try {
      kiln::cuda::DeviceCode code = kiln::cuda::nvrtc().compile(module.source, "kernels.cu", sm, options);
      EXPECT_EQ(code.architecture, "sm_" + std::to_string(sm)) << what << ": a cubin, not PTX for a newer device";
      EXPECT_TRUE(code.is_cubin) << what;
    } catch (const Error& error) {
      ADD_FAILURE() << what << ": " << error.what();
    }
  }
}

TEST(CudaNvrtc, EveryCoreOpCaseCompilesForSm80AndSm90) {
  for (const test_support::OpCoverageCase& c : test_support::op_coverage_cases()) expect_compiles(c.graph, c.name);
}

TEST(CudaNvrtc, EverySampleCompilesForSm80AndSm90) {
  fs::path dir = fs::path(KILN_SOURCE_DIR) / "samples" / "models";
  for (const char* sample : {"mlp", "cnn", "attention", "inplace"}) {
    expect_compiles(ir::load_model((dir / (std::string(sample) + ".kiln")).string()), sample);
  }
}

TEST(CudaNvrtc, RandomGraphsCompileForSm80AndSm90) {
  for (uint64_t seed = 0; seed < 8; ++seed) expect_compiles(test_support::random_graph(seed), "seed " + std::to_string(seed));
}

}  // namespace
}  // namespace kiln::codegen::cuda
