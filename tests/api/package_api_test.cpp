// kiln::Package (include/kiln/package.h): a package written by the package step
// (compiler/package_writer.h, as `kiln compile -o` writes it) loads into a program that uses
// Kiln, names its inputs and outputs, runs by position and by name to the interpreter's numbers,
// and refuses what it must with a kiln::Error: unknown or missing inputs, a wrong dtype (the
// package's guard), a folder that is no package, weights of another file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "compiler/model_files.h"
#include "compiler/package_writer.h"
#include "kiln/kiln.h"
#include "tests/support/test_paths.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kMlp = std::string(KILN_SOURCE_DIR) + "/samples/models/mlp.kiln";

class PackageApi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_package_api_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    kiln::compiler::PackageOptions options;
    options.directory = dir_ / "mlp";
    options.name = "mlp";
    options.source = kMlp;
    kiln::compiler::write_package(kiln::compiler::load_model(kMlp), {}, options);
  }
  void TearDown() override { fs::remove_all(dir_); }

  template <typename Body>
  static std::string error_of(Body body) {
    try {
      body();
    } catch (const kiln::Error& e) {
      return e.what();
    }
    return "(no error)";
  }

  fs::path dir_;
};

TEST_F(PackageApi, RunsByPositionAndByNameAsTheInterpreterDoes) {
  kiln::Package package = kiln::Package::load(dir_ / "mlp");
  EXPECT_EQ(package.name(), "mlp");
  ASSERT_EQ(package.inputs().size(), 1u);
  EXPECT_EQ(package.inputs()[0].name, "x");
  EXPECT_EQ(package.inputs()[0].shape, (std::vector<std::string>{"s0", "784"}));
  ASSERT_EQ(package.outputs().size(), 1u);
  EXPECT_EQ(package.outputs()[0].name, "probs");
  EXPECT_THAT((std::vector<std::string>{"avx512", "avx2", "scalar"}), ::testing::Contains(package.isa()));

  kiln::Tensor x = kiln::read_npy(std::string(KILN_SOURCE_DIR) + "/samples/models/mlp_data/inputs/x.npy");
  kiln::Tensor expected = kiln::Graph::load(kMlp).interpret({{"x", x}})[0];
  for (const std::vector<kiln::Tensor>& outputs : {package.run({x}, 2), package.run({{"x", x}})}) {
    ASSERT_EQ(outputs.size(), 1u);
    ASSERT_EQ(outputs[0].sizes(), expected.sizes());
    for (int64_t i = 0; i < expected.numel(); ++i) EXPECT_NEAR(outputs[0].flat_double(i), expected.flat_double(i), 1e-5);
  }
}

TEST_F(PackageApi, BadInputsAndBadFoldersAreKilnErrors) {
  kiln::Package package = kiln::Package::load(dir_ / "mlp");
  kiln::Tensor x = kiln::Tensor::zeros({2, 784}, kiln::DType::f32);
  EXPECT_THAT(error_of([&] { package.run({{"y", x}}); }), HasSubstr("input 'x' is missing"));
  EXPECT_THAT(error_of([&] { package.run({{"x", x}, {"y", x}}); }), HasSubstr("package mlp has no input 'y'"));
  EXPECT_THAT(error_of([&] { package.run({kiln::Tensor::zeros({2, 784}, kiln::DType::f64)}); }),
              HasSubstr("mlp: run: guard failed: input 'x' has dtype f64, expected f32"));
  EXPECT_THAT(error_of([&] { package.run(std::vector<kiln::Tensor>{}); }), HasSubstr("mlp: run: the model takes 1 input(s) ('x'), got 0"));
  EXPECT_THAT(error_of([&] { kiln::Package::load(dir_); }), HasSubstr("manifest.json"));
  EXPECT_THAT(error_of([&] { kiln::Package::load(dir_ / "mlp", kMlp); }), HasSubstr("mlp: create: weights file"));
}

}  // namespace
