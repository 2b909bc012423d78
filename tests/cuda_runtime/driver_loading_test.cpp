// The CUDA driver loader without a GPU: every way of having no device ends in one
// "no CUDA device: <reason>" kiln::Error; with a device (on a GPU machine) it reports the device.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_driver.h"
#include "kiln/error.h"

namespace kiln::cuda {
namespace {

std::string message_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool system_has_driver() {
  void* handle = dlopen(kDriverLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) dlclose(handle);
  return handle != nullptr;
}

TEST(CudaDriverLoading, AMissingLibraryMeansNoDevice) {
  std::string message = message_of([] { CudaDriver::load("/nonexistent/libcuda.so.1"); });
  EXPECT_EQ(message.rfind("no CUDA device: /nonexistent/libcuda.so.1 not found", 0), 0u) << message;
}

TEST(CudaDriverLoading, TheToolkitsStubDriverMeansNoDevice) {
  const std::filesystem::path stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  // In a child process: the stub's soname is libcuda.so.1, so once loaded it would stand in for
  // the real driver in this process's later tests.
  EXPECT_EXIT(
      {
        std::string message = message_of([&] { CudaDriver::load(stub.string()); });
        std::fprintf(stderr, "%s\n", message.c_str());
        std::exit(message == "no CUDA device: cuInit returned CUDA_ERROR_STUB_LIBRARY" ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "no CUDA device: cuInit returned CUDA_ERROR_STUB_LIBRARY");
}

TEST(CudaDriverLoading, TheProcessDriverReportsTheSameReasonEveryTime) {
  if (system_has_driver()) {
    // A GPU machine: the driver loads and describes its device.
    ASSERT_EQ(cuda_unavailable_reason(), std::nullopt);
    CudaDeviceInfo info = cuda_driver().device_info(0);
    EXPECT_GE(info.sm(), 50);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GT(info.total_memory_bytes, size_t(1) << 30);
    return;
  }
  std::optional<std::string> reason = cuda_unavailable_reason();
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(reason->rfind("no CUDA device: libcuda.so.1 not found", 0), 0u) << *reason;
  EXPECT_EQ(message_of([] { cuda_driver(); }), *reason);
  EXPECT_EQ(message_of([] { CudaContext context(0); }), *reason);
}

TEST(CudaDriverLoading, ErrorNamesWithoutADriver) {
  EXPECT_EQ(driver_error_name(100), "CUDA_ERROR_NO_DEVICE");
  EXPECT_EQ(driver_error_name(2), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(driver_error_name(12345), "CUDA error 12345");
}

TEST(CudaDriverLoading, PeakBandwidthIsClockTimesTwoTimesBusWidth) {
  CudaDeviceInfo info;
  info.memory_clock_khz = 1'215'000;  // an A100 40GB reports 1215 MHz and a 5120-bit bus
  info.memory_bus_width_bits = 5120;
  EXPECT_DOUBLE_EQ(info.peak_bandwidth_bytes_per_second(), 1215e6 * 2 * 640);
  info.memory_clock_khz = 0;
  EXPECT_EQ(info.peak_bandwidth_bytes_per_second(), 0);
}

}  // namespace
}  // namespace kiln::cuda
