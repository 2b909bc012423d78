// The CPU emulation of CUDA (codegen/cuda/kiln_cuda_emulation.h) on hand-written kernels: a
// barrier-correct block reduction is right and the same kernel without its __syncthreads is
// wrong; a thread returning before a barrier, bad shuffle masks and a warp operation that a
// named lane never reaches are reported; every shuffle matches CUDA's rules computed here;
// the block reduction of the CUDA backend (kiln_cuda_reductions.h) sums, takes the arg max and
// combines Welford states like a sequential loop.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "codegen/c_like/c_ops.h"
#include "codegen/cuda/cuda_texts.h"
#include "kiln/error.h"
#include "runtime/shared_library.h"
#include "tests/cuda_codegen/emulated_model.h"

namespace kiln::codegen::cuda {
namespace {

// `kernels` after the emulation header, the CUDA prelude, the op layer and the reductions,
// plus a kiln_emulate_<name> entry point for each name.
SharedLibrary build_kernels(const std::string& kernels, const std::vector<std::string>& names) {
  std::string source = std::string(cuda_emulation_header()) + std::string(cuda_prelude()) + std::string(c_ops_text()) +
                       std::string(cuda_reductions_text()) + kernels;
  for (const std::string& name : names) {
    source += "extern \"C\" int kiln_emulate_" + name +
              "(unsigned grid, unsigned block, size_t shared, void** params, char* error, size_t capacity) {\n"
              "  std::string message;\n"
              "  if (::kiln_emu::launch_params(" + name + ", dim3(grid), dim3(block), shared, params, &message)) return 0;\n"
              "  snprintf(error, capacity, \"%s\", message.c_str());\n  return 1;\n}\n";
  }
  return SharedLibrary::open(testing::build_emulation(source));
}

// Runs kernel `name` with pointer arguments; returns the emulation's error ("" when none).
std::string run(const SharedLibrary& library, const std::string& name, unsigned grid, unsigned block, size_t shared,
                std::vector<void*> pointers) {
  std::vector<void*> params;
  for (void*& p : pointers) params.push_back(&p);
  using Entry = int (*)(unsigned, unsigned, size_t, void**, char*, size_t);
  char error[1024] = {};
  int rc = library.function<Entry>("kiln_emulate_" + name)(grid, block, shared, params.data(), error, sizeof error);
  return rc == 0 ? "" : std::string(error);
}

const char* kBlockSums = R"(
// Every block sums 1..blockDim.x through shared memory; thread 0 writes the block's sum.
extern "C" __global__ void block_sum(int* out) {
  KILN_SHARED_MEMORY(shared);
  int* slots = reinterpret_cast<int*>(shared);
  slots[threadIdx.x] = int(threadIdx.x) + 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    int sum = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) sum += slots[i];
    out[blockIdx.x] = sum;
  }
}
extern "C" __global__ void block_sum_missing_barrier(int* out) {
  KILN_SHARED_MEMORY(shared);
  int* slots = reinterpret_cast<int*>(shared);
  slots[threadIdx.x] = int(threadIdx.x) + 1;
  if (threadIdx.x == 0) {
    int sum = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) sum += slots[i];
    out[blockIdx.x] = sum;
  }
}
extern "C" __global__ void early_return(int* out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
)";

TEST(CudaEmulation, AMissingSyncthreadsGivesWrongSumsAndTheBarrierGivesRightOnes) {
  SharedLibrary library = build_kernels(kBlockSums, {"block_sum", "block_sum_missing_barrier", "early_return"});
  const unsigned blocks = 8, threads = 64;
  std::vector<int> out(blocks, 0);
  ASSERT_EQ(run(library, "block_sum", blocks, threads, threads * 4, {out.data()}), "");
  for (int sum : out) EXPECT_EQ(sum, int(threads * (threads + 1) / 2));
  std::vector<int> racy(blocks, 0);
  ASSERT_EQ(run(library, "block_sum_missing_barrier", blocks, threads, threads * 4, {racy.data()}), "");
  int right = 0;
  for (int sum : racy) right += sum == int(threads * (threads + 1) / 2);
  EXPECT_LT(right, int(blocks)) << "every block summed right without its barrier: the emulation hid the race";
}

TEST(CudaEmulation, AThreadReturningBeforeABarrierIsAnError) {
  SharedLibrary library = build_kernels(kBlockSums, {"block_sum", "block_sum_missing_barrier", "early_return"});
  std::vector<int> out(64, 0);
  std::string error = run(library, "early_return", 1, 64, 0, {out.data()});
  EXPECT_NE(error.find("thread (5,0,0) returned while other threads of its block wait at __syncthreads"), std::string::npos)
      << error;
}

const char* kShuffles = R"(
// Lane values are 100 * lane + 7; each test shuffle writes one result per thread.
extern "C" __global__ void shuffles(int* out, int width) {
  const int v = int(threadIdx.x % 32) * 100 + 7;
  const int n = int(blockDim.x);
  const int t = int(threadIdx.x);
  out[0 * n + t] = __shfl_xor_sync(0xffffffffu, v, 5);
  out[1 * n + t] = __shfl_down_sync(0xffffffffu, v, 3, width);
  out[2 * n + t] = __shfl_up_sync(0xffffffffu, v, 2, width);
  out[3 * n + t] = __shfl_sync(0xffffffffu, v, 9, width);
  out[4 * n + t] = __shfl_xor_sync(0xffffffffu, v, 4, width);
}
extern "C" __global__ void mask_without_self(int* out) {
  out[threadIdx.x] = __shfl_sync(0x1u, 1, 0);
}
extern "C" __global__ void named_lane_absent(int* out) {
  if (threadIdx.x % 2 == 0) out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
}
extern "C" __global__ void reads_outside_mask(int* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, 1, 16);
}
)";

// CUDA's rules: the source lane of each shuffle, or the caller's own lane when out of range.
int expected_shuffle(int kind, int lane, int width) {
  int base = lane & ~(width - 1), source = lane;
  switch (kind) {
    case 0: source = lane ^ 5; break;
    case 1: source = lane + 3 < base + width ? lane + 3 : lane; break;
    case 2: source = lane - 2 >= base ? lane - 2 : lane; break;
    case 3: source = base + (9 % width); break;
    case 4: source = (lane ^ 4) < base + width ? lane ^ 4 : lane; break;
  }
  return source * 100 + 7;
}

TEST(CudaEmulation, ShufflesMatchCudasRulesForEveryWidth) {
  SharedLibrary library = build_kernels(kShuffles, {"shuffles", "mask_without_self", "named_lane_absent", "reads_outside_mask"});
  const int threads = 64;
  for (int width : {32, 16, 8, 4}) {
    std::vector<int> out(5 * threads, -1);
    int width_arg = width;
    void* pointer = out.data();
    void* params[] = {&pointer, &width_arg};
    using Entry = int (*)(unsigned, unsigned, size_t, void**, char*, size_t);
    char error[256] = {};
    ASSERT_EQ(library.function<Entry>("kiln_emulate_shuffles")(1, threads, 0, params, error, sizeof error), 0) << error;
    for (int kind = 0; kind < 5; ++kind) {
      for (int t = 0; t < threads; ++t) {
        int expected = kind == 0 ? expected_shuffle(kind, t % 32, 32) : expected_shuffle(kind, t % 32, width);
        EXPECT_EQ(out[size_t(kind * threads + t)], expected) << "shuffle " << kind << " width " << width << " thread " << t;
      }
    }
  }
}

TEST(CudaEmulation, BadShuffleMasksAreErrors) {
  SharedLibrary library = build_kernels(kShuffles, {"shuffles", "mask_without_self", "named_lane_absent", "reads_outside_mask"});
  std::vector<int> out(64, 0);
  EXPECT_NE(run(library, "mask_without_self", 1, 32, 0, {out.data()}).find("does not name the calling lane"), std::string::npos);
  std::string absent = run(library, "named_lane_absent", 1, 32, 0, {out.data()});
  EXPECT_NE(absent.find("which returned instead"), std::string::npos) << absent;
  std::string outside = run(library, "reads_outside_mask", 1, 32, 0, {out.data()});
  EXPECT_NE(outside.find("not in its mask"), std::string::npos) << outside;
}

const char* kBlockReductions = R"(
// One block reduces n values with the backend's block reduction: sum, arg max, Welford.
extern "C" __global__ void reductions(const float* x, float* sum, int64_t* argmax, float* mean, float* m2, int64_t n) {
  KILN_SHARED_MEMORY(shared);
  float s = 0;
  KilnArg<float> a = {-kiln_inf_f32(), -1};
  KilnWelford<float> w = {0, 0, 0};
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    s = KilnSumOp<float>::combine(s, x[i]);
    kiln_arg_add<float, true>(a, x[i], i);
    kiln_welford_add(w, x[i]);
  }
  s = kiln_block_reduce<KilnSumOp<float>>(s, shared);
  a = kiln_block_reduce<KilnArgOp<float, true>>(a, shared);
  w = kiln_block_reduce<KilnWelfordOp<float>>(w, shared);
  if (threadIdx.x == 0) { *sum = s; *argmax = a.index; *mean = w.mean; *m2 = w.m2; }
}
)";

TEST(CudaEmulation, BlockReductionsMatchASequentialLoop) {
  SharedLibrary library = build_kernels(kBlockReductions, {"reductions"});
  for (int64_t n : {1, 31, 1000, 4099}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(std::sin(double(i) * 1.7) * 3);
    x[size_t(n / 2)] = 9;  // the maximum, twice: the first index wins
    if (n > 2) x[size_t(n - 1)] = 9;
    float sum = 0, mean = 0, m2 = 0;
    int64_t argmax = -5;
    float* x_data = x.data();
    float* sum_p = &sum;
    int64_t* argmax_p = &argmax;
    float* mean_p = &mean;
    float* m2_p = &m2;
    void* params[] = {&x_data, &sum_p, &argmax_p, &mean_p, &m2_p, &n};
    using Entry = int (*)(unsigned, unsigned, size_t, void**, char*, size_t);
    char error[256] = {};
    ASSERT_EQ(library.function<Entry>("kiln_emulate_reductions")(1, 128, 1024, params, error, sizeof error), 0) << error;
    double expected_sum = 0, expected_m2 = 0;
    for (float v : x) expected_sum += v;
    double expected_mean = expected_sum / double(n);
    for (float v : x) expected_m2 += (v - expected_mean) * (v - expected_mean);
    EXPECT_NEAR(sum, expected_sum, 1e-3) << n;
    EXPECT_EQ(argmax, n / 2) << n;
    EXPECT_NEAR(mean, expected_mean, 1e-5) << n;
    EXPECT_NEAR(m2, expected_m2, 1e-3 * std::max(1.0, expected_m2)) << n;
  }
}

}  // namespace
}  // namespace kiln::codegen::cuda
