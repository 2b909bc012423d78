// Packing cuLaunchKernel's argument array: each pointer leads to a copy of its value, aligned as
// its type needs, and stays valid as more are added.
#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/kernel_arguments.h"

namespace kiln::cuda {
namespace {

struct alignas(16) Sizes4 {
  int64_t value[2];
};

TEST(KernelArguments, EachPointerLeadsToAnAlignedCopyOfItsValue) {
  KernelArguments arguments;
  CUdeviceptr buffer = 0x7f0012345600ULL;
  {
    char small = 'x';
    int32_t count = -7;
    float scale = 0.5f;
    arguments.add(small).add(buffer).add(count).add(scale).add(Sizes4{{3, 4}}).add(int64_t(1) << 40);
  }  // the originals are gone
  ASSERT_EQ(arguments.size(), 6u);
  void** pointers = arguments.pointers();
  EXPECT_EQ(*static_cast<char*>(pointers[0]), 'x');
  EXPECT_EQ(*static_cast<CUdeviceptr*>(pointers[1]), buffer);
  EXPECT_EQ(*static_cast<int32_t*>(pointers[2]), -7);
  EXPECT_EQ(*static_cast<float*>(pointers[3]), 0.5f);
  EXPECT_EQ(static_cast<Sizes4*>(pointers[4])->value[1], 4);
  EXPECT_EQ(*static_cast<int64_t*>(pointers[5]), int64_t(1) << 40);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pointers[1]) % alignof(CUdeviceptr), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pointers[4]) % 16, 0u);
}

TEST(KernelArguments, ManyArgumentsKeepEarlierOnesValid) {
  KernelArguments arguments;
  arguments.add(int64_t(-1));
  void* first = arguments.pointers()[0];
  for (int64_t i = 0; i < 1000; ++i) arguments.add(i * 3);
  void** pointers = arguments.pointers();
  EXPECT_EQ(pointers[0], first);
  EXPECT_EQ(*static_cast<int64_t*>(pointers[0]), -1);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(*static_cast<int64_t*>(pointers[i + 1]), i * 3);
  // No two arguments share bytes.
  for (size_t i = 1; i < arguments.size(); ++i) {
    ASSERT_NE(pointers[i], pointers[i - 1]);
  }
}

TEST(KernelArguments, AnArgumentBiggerThanABlockGetsItsOwn) {
  struct Big {
    char bytes[600];
  } big;
  std::memset(big.bytes, 0x5a, sizeof big.bytes);
  KernelArguments arguments;
  arguments.add(int32_t(1)).add(big).add(int32_t(2));
  void** pointers = arguments.pointers();
  EXPECT_EQ(std::memcmp(pointers[1], big.bytes, sizeof big.bytes), 0);
  EXPECT_EQ(*static_cast<int32_t*>(pointers[2]), 2);
}

}  // namespace
}  // namespace kiln::cuda
