// Fallback ops on f16 and bf16 tensors in cpu packages (tests/data/packages/fallback_ops_half.kiln:
// cumsum, topk, scatter with a tensor, a number, sum and prod, index_put accumulating): the
// package's portable kernels read the 16-bit values widened to double and round the results
// back through float, as the interpreter does, so every output is bit-identical to the
// interpreter's, on each instruction set and two sizes of the symbolic dim.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "runtime/cpu_features.h"
#include "tests/packages/package_cli_test.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::read_file;
using ::testing::HasSubstr;

class PackageHalfFallbacks : public cli_test::PackageCliTest {
 protected:
  // The same names, dtypes, shapes and bytes.
  static void expect_identical(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& expected) {
    ASSERT_EQ(got.size(), expected.size());
    for (const auto& [name, want] : expected) {
      ASSERT_TRUE(got.count(name)) << name;
      const Tensor& have = got.at(name);
      ASSERT_EQ(have.dtype(), want.dtype()) << name;
      ASSERT_EQ(have.sizes(), want.sizes()) << name;
      Tensor a = have.contiguous(), b = want.contiguous();
      EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0) << name;
    }
  }
};

TEST_F(PackageHalfFallbacks, RunBitIdenticalToTheInterpreter) {
  std::string model = (fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "packages" / "fallback_ops_half.kiln").string();
  fs::path dir = dir_ / "half";
  CliResult compiled = kiln("compile " + model + " -o " + dir.string() + " --name half");
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  EXPECT_THAT(read_file(dir / "half.cpp"), HasSubstr("float_to_bf16"));
  for (const char* size : {"4", "7"}) {
    SCOPED_TRACE(std::string("s0=") + size);
    std::string inputs = std::string(" --random-inputs 11 --dim s0=") + size;
    std::map<std::string, Tensor> expected = run_outputs(model + inputs, std::string("interp_") + size);
    ASSERT_EQ(expected.size(), 10u);
    EXPECT_EQ(expected.at("cumsum").dtype(), DType::f16);
    expect_identical(run_outputs(dir.string() + inputs, std::string("package_") + size), expected);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
      if (!host_supports(isa)) continue;
      std::string name(isa_name(isa));
      SCOPED_TRACE(name);
      expect_identical(run_outputs(dir.string() + inputs, "package_" + name + size, "KILN_ISA=" + name), expected);
    }
  }
}

}  // namespace
}  // namespace kiln
