// `kiln kernel --target cuda` (codegen/cuda/cuda_kernel_header.h): the .cuh headers of several
// expressions (pointwise, broadcast, a whole-tensor sum, softmax, several kernels with a
// workspace, f16 storage) and of two kernels of a model (by name, by node) compile with nvcc, three of them included in two translation units
// linked into one program, and compile with NVRTC for sm_80 and sm_90. Nothing runs here (no
// GPU is needed); without nvcc or NVRTC the test is skipped, saying why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "runtime/cuda/library_search.h"
#include "runtime/cuda/nvrtc.h"
#include "kiln/error.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::read_file;
using ::testing::HasSubstr;

struct Case {
  std::string name;
  std::string arguments;  // --expr and --input flags
};

const std::vector<Case>& cases() {
  static const std::vector<Case> list = {
      {"fused_gelu", "--expr 'gelu(x * w + b) * sigmoid(x)' --input 'x=f32[s0,4096]' --input w=f32[4096] --input b=f32[4096]"},
      {"broadcast", "--expr '-x - y / (z + 2)' --input 'x=f32[4,1,6]' --input 'y=f32[5,1]' --input z=f32[6]"},
      {"total", "--expr 'sum(x * x)' --input 'x=f32[s0]'"},
      {"row_softmax", "--expr 'softmax(x, -1)' --input 'x=f32[s0,50]'"},
      {"two_kernels", "--expr 'softmax(x, 0) * sum(x, 1, keepdim=True)' --input 'x=f32[s0,40]'"},
      {"to_half", "--expr 'cast(x * 2, f16)' --input 'x=f32[s0]'"},
      {"model_softmax", std::string(KILN_SOURCE_DIR) + "/samples/models/attention.kiln --kernel kernel3_softmax_max"},
      {"model_layer_norm", std::string(KILN_SOURCE_DIR) + "/samples/models/attention.kiln --node layer_norm"},
  };
  return list;
}

std::optional<std::string> nvcc_path() {
  for (const char* candidate : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (fs::exists(candidate)) return std::string(candidate);
  return std::nullopt;
}

class KernelCudaCli : public cli_test::KilnCliTest {
 protected:
  fs::path emit(const Case& c) {
    fs::path header = dir_ / (c.name + ".cuh");
    CliResult result = kiln("kernel " + c.arguments + " --target cuda --name " + c.name + " -o " + header.string());
    EXPECT_EQ(result.status, 0) << result.err;
    return header;
  }
};

TEST_F(KernelCudaCli, HeadersDocumentTheLaunchHelper) {
  std::string model = read_file(emit(cases()[6]));
  EXPECT_THAT(model, HasSubstr("static inline cudaError_t model_softmax(const bool* _folded_causal, const float* matmul, float* softmax, "
                               "cudaStream_t stream = 0)"));
  EXPECT_THAT(model, ::testing::Not(HasSubstr("kernel0_layer_norm_var_mean")));  // only the chosen kernel
  std::string header = read_file(emit(cases()[4]));
  EXPECT_THAT(header, HasSubstr("static inline cudaError_t two_kernels(const float* x, float* out, long long s0, void* workspace, cudaStream_t stream = 0)"));
  EXPECT_THAT(header, HasSubstr("static inline long long two_kernels_workspace_bytes(long long s0)"));
  EXPECT_THAT(header, HasSubstr("#if defined(__CUDACC_RTC__)\n#define TWO_KERNELS_GLOBAL extern \"C\" __global__"));
  EXPECT_THAT(header, HasSubstr("//   two_kernels_kernel0_softmax_max<<<"));
  EXPECT_THAT(header, ::testing::Not(HasSubstr("#include \"")));
}

TEST_F(KernelCudaCli, HeadersCompileWithNvccAndLinkFromTwoFiles) {
  std::optional<std::string> nvcc = nvcc_path();
  if (!nvcc) GTEST_SKIP() << "no nvcc at /usr/local/cuda/bin or /usr/bin";
  std::string includes;
  for (const Case& c : cases()) includes += "#include \"" + emit(c).string() + "\"\n";
  std::ofstream(dir_ / "a.cu") << includes
                               << "int other(const float* x, float* out, void* workspace) {\n"
                                  "  return int(fused_gelu(x, x, x, out, 2)) + int(broadcast(x, x, x, out)) + int(total(x, out, 9)) +\n"
                                  "         int(row_softmax(x, out, 3)) + int(two_kernels(x, out, 3, workspace)) +\n"
                                  "         int(to_half(x, (__half*)out, 5)) + int(model_softmax((const bool*)x, x, out)) +\n"
                                  "         int(model_layer_norm(x, x, x, out));\n}\n";
  std::ofstream(dir_ / "b.cu") << "#include \"" << (dir_ / "fused_gelu.cuh").string() << "\"\n#include \""
                               << (dir_ / "two_kernels.cuh").string() << "\"\n"
                               << "int other(const float* x, float* out, void* workspace);\n"
                                  "int main() {\n"
                                  "  if (two_kernels_workspace_bytes(7) <= 0) return 1;\n"
                                  "  return 0 * (other(nullptr, nullptr, nullptr) + int(fused_gelu(nullptr, nullptr, nullptr, nullptr, 0)));\n}\n";
  const std::string log = " 2>" + (dir_ / "nvcc.log").string();
  for (const char* file : {"a", "b"}) {
    std::string command = *nvcc + " -std=c++17 -c " + (dir_ / (std::string(file) + ".cu")).string() + " -o " +
                          (dir_ / (std::string(file) + ".o")).string() + log;
    ASSERT_EQ(std::system(command.c_str()), 0) << read_file(dir_ / "nvcc.log");
  }
  std::string link = *nvcc + " " + (dir_ / "a.o").string() + " " + (dir_ / "b.o").string() + " -o " + (dir_ / "linked").string() + log;
  ASSERT_EQ(std::system(link.c_str()), 0) << read_file(dir_ / "nvcc.log");
}

TEST_F(KernelCudaCli, HeadersCompileWithNvrtc) {
  try {
    cuda::nvrtc();
  } catch (const Error& error) {
    GTEST_SKIP() << "NVRTC cannot be loaded: " << error.what();
  }
  for (const Case& c : cases()) {
    std::vector<std::string> options = {"-std=c++17"};
    if (c.name == "to_half") {
      std::optional<std::string> include = cuda::toolkit_include_directory();
      ASSERT_TRUE(include) << "the CUDA toolkit's cuda_fp16.h was not found";
      options.push_back("-I" + *include);
    }
    std::string source = read_file(emit(c));
    for (int sm : {80, 90}) {
      try {
        cuda::DeviceCode code = cuda::nvrtc().compile(source, c.name + ".cuh", sm, options);
        EXPECT_TRUE(code.is_cubin) << c.name;
      } catch (const Error& error) {
        ADD_FAILURE() << c.name << " for sm_" << sm << ": " << error.what();
      }
    }
  }
}

}  // namespace
}  // namespace kiln
