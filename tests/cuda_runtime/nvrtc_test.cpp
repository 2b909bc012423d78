// NVRTC without a GPU: a hand-written kernel compiles to a cubin of the requested architecture
// (read back from its ELF header and sections), a device newer than NVRTC gets PTX, and a
// compile error reports NVRTC's log with the line.
#include <string>

#include <gtest/gtest.h>

#include "runtime/cuda/cubin_elf.h"
#include "runtime/cuda/nvrtc.h"
#include "kiln/error.h"

namespace kiln::cuda {
namespace {

const char* const kAddOne = R"(extern "C" __global__ void add_one(float* data, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
)";

class NvrtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      compiler_ = &nvrtc();
    } catch (const Error& e) {
      GTEST_SKIP() << "no NVRTC here: " << e.what();
    }
  }
  const Nvrtc* compiler_ = nullptr;
};

TEST_F(NvrtcTest, ReportsItsVersionAndArchitectures) {
  EXPECT_GE(compiler_->version_major(), 11);
  const std::vector<int>& architectures = compiler_->supported_architectures();
  ASSERT_FALSE(architectures.empty());
  EXPECT_NE(std::find(architectures.begin(), architectures.end(), 80), architectures.end());
  EXPECT_NE(std::find(architectures.begin(), architectures.end(), 90), architectures.end());
}

TEST_F(NvrtcTest, CompilesACubinForEachRequestedArchitecture) {
  for (int sm : {80, 90}) {
    DeviceCode code = compiler_->compile(kAddOne, "add_one.cu", sm);
    ASSERT_TRUE(code.is_cubin);
    EXPECT_EQ(code.architecture, "sm_" + std::to_string(sm));
    CubinInfo info = read_cubin(code.image, "add_one.cu");
    EXPECT_EQ(info.sm, sm);
    EXPECT_EQ(info.kernels(), std::vector<std::string>{"add_one"});
    EXPECT_TRUE(info.has_section(".nv.info"));
    EXPECT_TRUE(info.has_section(".nv.info.add_one"));  // the kernel's parameter layout
  }
}

TEST_F(NvrtcTest, ADeviceNewerThanNvrtcGetsPtxForItsNewestArchitecture) {
  int newest = compiler_->supported_architectures().back();
  EXPECT_EQ(compiler_->target_architecture(newest + 1000), "compute_" + std::to_string(newest));
  DeviceCode code = compiler_->compile(kAddOne, "add_one.cu", newest + 1000);
  EXPECT_FALSE(code.is_cubin);
  EXPECT_NE(code.image.find(".entry add_one"), std::string::npos);
  EXPECT_NE(code.image.find(".target sm_" + std::to_string(newest)), std::string::npos);
  EXPECT_THROW(read_cubin(code.image, "ptx"), Error);
}

TEST_F(NvrtcTest, ADeviceOlderThanNvrtcSupportsIsAnError) {
  try {
    compiler_->compile(kAddOne, "add_one.cu", 20);
    FAIL() << "sm_20 compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot compile for sm_20"), std::string::npos) << e.what();
  }
}

TEST_F(NvrtcTest, ACompileErrorCarriesTheLogWithTheLine) {
  const char* broken = "extern \"C\" __global__ void broken(float* data) {\n"
                       "  int i = threadIdx.x;\n"
                       "  data[i] = undeclared_value;\n"
                       "}\n";
  try {
    compiler_->compile(broken, "broken.cu", 80);
    FAIL() << "the broken kernel compiled";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("failed to compile broken.cu for sm_80"), std::string::npos) << message;
    EXPECT_NE(message.find("broken.cu(3)"), std::string::npos) << message;
    EXPECT_NE(message.find("undeclared_value"), std::string::npos) << message;
  }
}

TEST_F(NvrtcTest, ACompileErrorShowsErrorsAndCountsWarnings) {
  const char* source = "static __device__ int unused_helper() { return 1; }\n"  // warning 177: never referenced
                       "extern \"C\" __global__ void broken(float* data) { data[0] = missing_name; }\n";
  try {
    compiler_->compile(source, "mixed.cu", 90);
    FAIL() << "compiled";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("mixed.cu(2): error"), std::string::npos) << message;
    EXPECT_EQ(message.find("unused_helper"), std::string::npos) << message;
    EXPECT_NE(message.find("(1 warning not shown)"), std::string::npos) << message;
  }
}

// NVIDIA's rule for cubins (the CUDA C++ Programming Guide, "Binary Compatibility"): compute
// capability X.y's machine code runs on X.z for z >= y only.
TEST(CubinElf, AMachineCodeRunsOnLaterMinorVersionsOfItsMajorOnly) {
  EXPECT_TRUE(cubin_runs_on(80, 80));
  EXPECT_TRUE(cubin_runs_on(80, 86));
  EXPECT_TRUE(cubin_runs_on(80, 89));
  EXPECT_FALSE(cubin_runs_on(86, 80));
  EXPECT_FALSE(cubin_runs_on(80, 90));
  EXPECT_FALSE(cubin_runs_on(89, 90));
  EXPECT_FALSE(cubin_runs_on(90, 80));
  EXPECT_FALSE(cubin_runs_on(90, 100));
}

TEST(CubinElf, RejectsWhatIsNotACudaObject) {
  EXPECT_THROW(read_cubin("not an elf file at all, just some text that is long enough to pass size", "x"), Error);
  std::string elf(64, '\0');
  elf[0] = 0x7f, elf[1] = 'E', elf[2] = 'L', elf[3] = 'F', elf[4] = 2, elf[5] = 1;
  elf[18] = 62;  // EM_X86_64
  try {
    read_cubin(elf, "host.o");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another machine than a CUDA GPU"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::cuda
