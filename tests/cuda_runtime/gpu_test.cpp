// On a GPU machine only (skipped elsewhere, where driver_loading_test checks the no-device
// error): an NVRTC kernel loaded and launched on a stream, the caching allocator on the driver,
// cuBLAS GEMM and cuBLASLt GEMM with a bias+ReLU epilogue, each against a CPU computation.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/cuda/cublas.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/cuda_stream.h"
#include "runtime/cuda/device_code_cache.h"
#include "runtime/cuda/driver_memory_backend.h"
#include "kiln/error.h"

namespace kiln::cuda {
namespace {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
    context_ = std::make_unique<CudaContext>(0);
    stream_ = std::make_unique<CudaStream>(*context_);
    allocator_ = std::make_unique<CachingDeviceAllocator>(std::make_shared<DriverMemoryBackend>(*context_));
  }
  CUdeviceptr upload(const std::vector<float>& values) {
    CUdeviceptr pointer = allocator_->allocate(values.size() * sizeof(float), StreamId(stream_->handle()));
    stream_->upload(pointer, values.data(), values.size() * sizeof(float));
    return pointer;
  }
  std::vector<float> download(CUdeviceptr pointer, size_t count) {
    std::vector<float> values(count);
    stream_->download(values.data(), pointer, count * sizeof(float));
    stream_->synchronize();
    return values;
  }
  static std::vector<float> random_values(size_t count, unsigned seed) {
    std::mt19937 random(seed);
    std::uniform_real_distribution<float> values(-1, 1);
    std::vector<float> v(count);
    for (float& x : v) x = values(random);
    return v;
  }
  std::unique_ptr<CudaContext> context_;
  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<CachingDeviceAllocator> allocator_;
};

TEST_F(GpuTest, AnNvrtcKernelRunsOnAStream) {
  const char* source = R"(extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
  })";
  DeviceCode code = compile_device_code(nvrtc(), nullptr, source, "axpy.cu", context_->info().sm()).code;
  CudaModule module(*context_, code.image, "axpy.cu");
  int n = 100'003;
  std::vector<float> x = random_values(size_t(n), 1), y = random_values(size_t(n), 2);
  CUdeviceptr dx = upload(x), dy = upload(y);
  KernelArguments arguments;
  arguments.add(dy).add(dx).add(2.5f).add(n);
  LaunchConfig config;
  config.block = {256, 1, 1};
  config.grid = {unsigned((n + 255) / 256), 1, 1};
  stream_->launch(module.function("axpy"), config, arguments);
  std::vector<float> result = download(dy, size_t(n));
  // NVRTC contracts y + a * x into one fused multiply-add (--fmad=true, its default): one rounding
  // instead of two. Where y and a * x nearly cancel, the two differ by many ulps of the result,
  // but at most by one rounding of the operands' size.
  for (int i = 0; i < n; ++i) {
    float product = 2.5f * x[size_t(i)], expected = y[size_t(i)] + product;
    ASSERT_NEAR(result[size_t(i)], expected, 2 * std::numeric_limits<float>::epsilon() * (std::fabs(y[size_t(i)]) + std::fabs(product)))
        << i;
  }
  EXPECT_THROW(module.function("missing"), Error);
  allocator_->free(dx);
  allocator_->free(dy);
  EXPECT_EQ(allocator_->stats().allocated_bytes, 0u);
}

// A cubin of another major architecture (sm_80's on an sm_90 GPU, or sm_90's on any other) is
// refused before the driver sees it, naming both architectures and the flag that fixes it.
TEST_F(GpuTest, ACubinForAnotherArchitectureIsRefusedNamingBoth) {
  int sm = context_->info().sm(), other = sm / 10 == 9 ? 80 : 90;
  DeviceCode code = compile_device_code(nvrtc(), nullptr, "extern \"C\" __global__ void nothing() {}", "nothing.cu", other).code;
  try {
    CudaModule module(*context_, code.image, "nothing.cu");
    FAIL() << "sm_" << other << "'s cubin loaded on an sm_" << sm << " GPU";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the device code of nothing.cu was built for sm_" + std::to_string(other) + ", and GPU 0 (" +
                                         context_->info().name + ") is sm_" + std::to_string(sm) +
                                         ": a cubin runs only on GPUs of its own major architecture; compile for this GPU (`--sm " +
                                         std::to_string(sm) + "`)");
  }
}

TEST_F(GpuTest, CublasGemmAndTheLtEpilogueMatchTheCpu) {
  int64_t m = 33, n = 65, k = 47;
  std::vector<float> a = random_values(size_t(m * k), 3), b = random_values(size_t(n * k), 4), bias = random_values(size_t(n), 5);
  std::vector<float> expected(size_t(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < k; ++l) sum += double(a[size_t(i * k + l)]) * b[size_t(j * k + l)];  // b stored [n, k]
      expected[size_t(i * n + j)] = float(sum);
    }
  }
  RowMajorGemm gemm;
  gemm.m = m, gemm.n = n, gemm.k = k, gemm.transpose_b = true;
  Cublas cublas(*context_);
  CUdeviceptr da = upload(a), db = upload(b), dbias = upload(bias), dc = upload(std::vector<float>(size_t(m * n), 0));
  cublas.gemm(*stream_, gemm, DType::f32, da, db, dc);
  std::vector<float> plain = download(dc, size_t(m * n));
  for (size_t i = 0; i < plain.size(); ++i) ASSERT_NEAR(plain[i], expected[i], 1e-4) << i;
  cublas.gemm_with_epilogue(*stream_, gemm, DType::f32, da, db, dc, GemmEpilogue::bias_relu, dbias);
  std::vector<float> fused = download(dc, size_t(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float want = std::max(0.0f, expected[size_t(i * n + j)] + bias[size_t(j)]);
      ASSERT_NEAR(fused[size_t(i * n + j)], want, 1e-4) << i << "," << j;
    }
  }
}

TEST_F(GpuTest, TheAllocatorReusesDriverMemory) {
  StreamId stream = StreamId(stream_->handle());
  CUdeviceptr first = allocator_->allocate(3 << 20, stream);
  allocator_->free(first);
  EXPECT_EQ(allocator_->allocate(3 << 20, stream), first);
  EXPECT_EQ(allocator_->stats().segment_allocations, 1u);
  allocator_->free(first);
  EXPECT_EQ(allocator_->empty_cache(), size_t(20) << 20);
}

}  // namespace
}  // namespace kiln::cuda
