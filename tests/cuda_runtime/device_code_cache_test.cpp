// Device code through the compile cache: the second compile of a source is a hit with the same
// cubin, the key follows source, architecture and options, and a damaged entry is rebuilt.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/cuda/cubin_elf.h"
#include "runtime/cuda/device_code_cache.h"
#include "kiln/error.h"

namespace kiln::cuda {
namespace {

const char* const kScale = R"(extern "C" __global__ void scale(float* data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
)";

class DeviceCodeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      compiler_ = &nvrtc();
    } catch (const Error& e) {
      GTEST_SKIP() << "no NVRTC here: " << e.what();
    }
    directory_ = std::filesystem::temp_directory_path() /
                 ("kiln-device-code-cache-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  const Nvrtc* compiler_ = nullptr;
  std::filesystem::path directory_;
};

TEST_F(DeviceCodeCacheTest, TheSecondCompileIsAHit) {
  CompileCache cache(directory_);
  CachedDeviceCode first = compile_device_code(*compiler_, &cache, kScale, "scale.cu", 90);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_EQ(read_cubin(first.code.image, "scale.cu").sm, 90);
  EXPECT_TRUE(std::filesystem::exists(first.entry / "kernel.cu"));
  CachedDeviceCode second = compile_device_code(*compiler_, &cache, kScale, "scale.cu", 90);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.key, first.key);
  EXPECT_EQ(second.code.image, first.code.image);
  EXPECT_TRUE(second.code.is_cubin);
  EXPECT_EQ(cache.stats().hits, 1);
}

TEST_F(DeviceCodeCacheTest, TheKeyFollowsSourceArchitectureAndOptions) {
  std::string base = device_code_key(*compiler_, kScale, 80, {});
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(device_code_key(*compiler_, kScale, 80, {}), base);
  EXPECT_NE(device_code_key(*compiler_, kScale, 90, {}), base);
  EXPECT_NE(device_code_key(*compiler_, kScale, 80, {"--use_fast_math"}), base);
  EXPECT_NE(device_code_key(*compiler_, std::string(kScale) + "\n", 80, {}), base);
}

TEST_F(DeviceCodeCacheTest, ADamagedEntryIsRebuilt) {
  CompileCache cache(directory_);
  CachedDeviceCode first = compile_device_code(*compiler_, &cache, kScale, "scale.cu", 80);
  std::filesystem::path cubin = first.entry / "device.cubin";
  ASSERT_TRUE(std::filesystem::exists(cubin));
  {
    std::fstream file(cubin, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(100);
    char byte = char(file.get());
    file.seekp(100);
    file.put(char(~byte));  // one byte changed in place: the size still matches
  }
  CachedDeviceCode rebuilt = compile_device_code(*compiler_, &cache, kScale, "scale.cu", 80);
  EXPECT_FALSE(rebuilt.cache_hit);
  EXPECT_EQ(cache.stats().damaged, 1);
  EXPECT_EQ(rebuilt.code.image, first.code.image);
  EXPECT_TRUE(compile_device_code(*compiler_, &cache, kScale, "scale.cu", 80).cache_hit);
}

TEST_F(DeviceCodeCacheTest, WithoutACacheNvrtcRunsEveryTime) {
  CachedDeviceCode code = compile_device_code(*compiler_, nullptr, kScale, "scale.cu", 80);
  EXPECT_FALSE(code.cache_hit);
  EXPECT_TRUE(code.key.empty());
  EXPECT_EQ(read_cubin(code.code.image, "scale.cu").kernels(), std::vector<std::string>{"scale"});
}

}  // namespace
}  // namespace kiln::cuda
