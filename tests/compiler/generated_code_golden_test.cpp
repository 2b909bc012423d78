// Pins the generated code of the four bundled samples (and of the cnn sample as compiled with
// oneDNN convolutions): the C++ module source and the CUDA
// module (launch plan and source) are compared byte for byte with golden files under
// tests/compiler/golden/, so a refactor of lowering, scheduling or the emitters that should not
// change what Kiln emits is checked to emit exactly the same text. The checked-in headers pasted
// into a module (the prelude, the thread pool, the oneDNN glue) are replaced by a marker line
// each; everything generated stays.
// KILN_UPDATE_GOLDENS=1 rewrites the files when a change is intended (review the diff).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cpp/prelude.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/cuda_texts.h"
#include "codegen/lowering.h"
#include "compiler/backend_common.h"
#include "ir/model_file.h"
#include "tests/support/golden.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;

// `text` with the first occurrence of `part` replaced by one marker line naming it.
std::string without(std::string text, std::string_view part, const std::string& marker) {
  size_t at = text.find(part);
  if (!part.empty() && at != std::string::npos) text.replace(at, part.size(), "// <" + marker + ">\n");
  return text;
}

codegen::ScheduledProgram scheduled_sample(const std::string& name) {
  ir::Graph graph = ir::load_model((fs::path(KILN_SOURCE_DIR) / "samples" / "models" / (name + ".kiln")).string());
  return codegen::schedule(codegen::lower(simplified_graph(graph, /*freeze=*/false)));
}

class GeneratedCode : public ::testing::TestWithParam<std::string> {};

TEST_P(GeneratedCode, CppSourceIsPinned) {
  codegen::CppModule module = codegen::emit_cpp(scheduled_sample(GetParam()));
  std::string text = without(module.source, codegen::cpp_prelude(), "prelude: codegen/cpp/kiln_prelude.h");
  text = without(text, codegen::cpp_thread_pool(), "thread pool: codegen/cpp/kiln_thread_pool.h");
  test_support::expect_matches_golden(text, fs::path("tests/compiler/golden") / (GetParam() + ".cpp"));
}

TEST_P(GeneratedCode, CudaModuleIsPinned) {
  codegen::cuda::CudaModule module = codegen::cuda::emit_cuda(scheduled_sample(GetParam()));
  std::string text = "// launch plan\n";
  std::string plan = codegen::cuda::launch_plan_text(module);
  for (size_t start = 0; start < plan.size();) {
    size_t end = plan.find('\n', start);
    if (end == std::string::npos) end = plan.size();
    text += "// " + plan.substr(start, end - start) + "\n";
    start = end + 1;
  }
  text += without(module.source, codegen::cuda::cuda_prelude(), "prelude: codegen/cuda/kiln_cuda_prelude.h");
  text = without(text, codegen::cuda::cuda_reductions_text(), "reductions: codegen/cuda/kiln_cuda_reductions.h");
  test_support::expect_matches_golden(text, fs::path("tests/compiler/golden") / (GetParam() + ".cu"));
}

INSTANTIATE_TEST_SUITE_P(Samples, GeneratedCode, ::testing::Values("mlp", "cnn", "attention", "inplace"));

// The cnn sample as the cpu target compiles it with oneDNN (library convolutions, channels-last
// values, column-reduction pools) and frozen parameters (prepacked weights); the glue text
// (codegen/cpp/kiln_dnnl.h) is replaced by a marker like the prelude. Pinned whether or not this
// build has oneDNN: the emitter does not need it.
TEST(GeneratedCode, CnnWithLibraryConvolutionsIsPinned) {
  ir::Graph graph = ir::load_model((fs::path(KILN_SOURCE_DIR) / "samples" / "models" / "cnn.kiln").string());
  codegen::LoweringOptions lowering;
  lowering.library_convolution = true;
  codegen::CppEmitOptions emit;
  emit.constant_parameters = true;
  codegen::CppModule module =
      codegen::emit_cpp(codegen::schedule(codegen::lower(simplified_graph(graph, /*freeze=*/true), lowering)), emit);
  EXPECT_TRUE(module.uses_dnnl);
  std::string text = without(module.source, codegen::cpp_prelude(), "prelude: codegen/cpp/kiln_prelude.h");
  text = without(text, codegen::cpp_openmp_team(), "OpenMP team runner: codegen/cpp/kiln_openmp_team.h");
  text = without(text, codegen::cpp_dnnl_glue(), "oneDNN glue: codegen/cpp/kiln_dnnl.h");
  test_support::expect_matches_golden(text, fs::path("tests/compiler/golden") / "cnn_library_convolution.cpp");
}

}  // namespace
}  // namespace kiln::compiler
