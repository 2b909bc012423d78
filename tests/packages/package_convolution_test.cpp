// Packages of convolution models build with only a C++ compiler, OpenMP and BLAS (issue 15 item
// 1) and run as fast as `kiln run` where oneDNN is (item 9):
//  - `--portable`: the convolutions lower to im2col + GEMM, so nothing of oneDNN is on the
//    library's link line, among its undefined symbols or in its sources, and the manifest does
//    not require it; the cnn sample and the ResNet-18 ONNX test model (generated in the test
//    set-up: tests/frontends/onnx_generated_data.h) run as such packages to the interpreter's
//    numbers;
//  - the default, where Kiln has oneDNN: oneDNN's convolutions in the libraries built here (as
//    `kiln run`), and the im2col + GEMM ones beside them, which the package's CMakeLists.txt
//    compiles where oneDNN is not found or NAME_ONEDNN is off: both builds give the interpreter's
//    numbers;
//  - `--onednn`: oneDNN's alone, which the manifest then requires; refused where it cannot apply.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "compiler/target_registry.h"
#include "compiler/targets/cpu_toolchain.h"
#include "kiln/npy.h"
#include "runtime/package_manifest.h"
#include "tests/frontends/onnx_generated_data.h"
#include "tests/packages/package_cli_test.h"
#include "tests/tools/sample_models.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::expect_user_error;
using cli_test::read_file;
using ::testing::HasSubstr;
using ::testing::Not;

bool built_with_onednn() { return compiler::find_code_target("cpu").lowering_options().library_convolution; }

class PackageConvolution : public cli_test::PackageCliTest {
 protected:
  // Compiles `model` into DIR/NAME with `extra` flags; returns the folder.
  fs::path package(const std::string& model, const std::string& name, const std::string& extra = "") {
    fs::path out = dir_ / name;
    CliResult result = kiln("compile " + model + " -o " + out.string() + " --name " + name + " " + extra);
    EXPECT_EQ(result.status, 0) << result.err;
    return out;
  }

  // What of oneDNN the package holds: its libraries' dynamic dependencies and undefined
  // symbols, its generated sources and its manifest's requirements ("" when nothing).
  std::string onednn_traces(const fs::path& dir, const std::string& name) {
    std::string needed, undefined;
    EXPECT_EQ(shell("readelf -d " + (dir / ("lib" + name + ".so")).string(), &needed), 0) << needed;
    EXPECT_EQ(shell("nm -D --undefined-only " + (dir / ("lib" + name + ".so")).string(), &undefined), 0) << undefined;
    std::string traces;
    if (needed.find("dnnl") != std::string::npos) traces += "NEEDED libdnnl; ";
    if (undefined.find("dnnl_") != std::string::npos) traces += "undefined dnnl_ symbols; ";
    std::string archive;
    EXPECT_EQ(shell("nm --undefined-only " + (dir / ("lib" + name + ".a")).string(), &archive), 0) << archive;
    if (archive.find("dnnl_") != std::string::npos) traces += "dnnl_ symbols in the archive; ";
    for (const char* file : {"_kernels.inc", ".cpp"})
      if (read_file(dir / (name + file)).find("dnnl") != std::string::npos) traces += name + file + " mentions dnnl; ";
    if (read_file(dir / "CMakeLists.txt").find("dnnl") != std::string::npos) traces += "CMakeLists.txt links dnnl; ";
    PackageManifest manifest = read_package_manifest(dir / "manifest.json");
    if (std::count(manifest.requires_.begin(), manifest.requires_.end(), "onednn") != 0) traces += "requires onednn; ";
    return traces;
  }
};

TEST_F(PackageConvolution, TheCnnSamplesPortablePackageNeedsNoOneDnn) {
  fs::path dir = package(cli_test::sample_model("cnn"), "cnn", "--portable");
  EXPECT_FALSE(fs::exists(dir / "cnn_kernels_portable.inc"));  // its only kernels are portable
  EXPECT_EQ(onednn_traces(dir, "cnn"), "");
  EXPECT_EQ(read_package_manifest(dir / "manifest.json").requires_, (std::vector<std::string>{"openmp", "blas"}));
  EXPECT_THAT(read_file(dir / "cnn_kernels.inc"), HasSubstr("cblas_sgemm"));  // im2col + GEMM
  std::string inputs = " --random-inputs 7 --dim s0=3";
  std::map<std::string, Tensor> expected = run_outputs(cli_test::sample_model("cnn") + inputs, "interpreter");
  expect_close(run_outputs(dir.string() + inputs, "package"), expected, 1e-4);
  // The package builds from its own CMakeLists.txt without oneDNN either.
  std::string log;
  ASSERT_EQ(shell("cmake -S " + dir.string() + " -B " + (dir_ / "cmake_build").string() + " && cmake --build " +
                      (dir_ / "cmake_build").string() + " -j2",
                  &log),
            0)
      << log;
  EXPECT_THAT(log, Not(HasSubstr("dnnl")));
}

TEST_F(PackageConvolution, ResNet18RunsAsAPackageWithoutOneDnnAsTheInterpreterRunsIt) {
  std::optional<fs::path> data = frontends::testing::generated_onnx_test_data();
  if (!data) {
    if (frontends::testing::generated_onnx_test_data_required()) FAIL() << frontends::testing::missing_generated_onnx_test_data();
    GTEST_SKIP() << frontends::testing::missing_generated_onnx_test_data();
  }
  fs::path folder = *data / "resnet18";
  fs::path dir = package((folder / "model.onnx").string(), "resnet18", "--isa avx2 --portable");
  EXPECT_EQ(onednn_traces(dir, "resnet18"), "");
  PackageManifest manifest = read_package_manifest(dir / "manifest.json");
  ASSERT_EQ(manifest.inputs.size(), 1u);
  std::string input = " --input " + manifest.inputs[0].name + "=" + (folder / "input_0.npy").string();
  std::map<std::string, Tensor> expected = run_outputs((folder / "model.onnx").string() + input, "interpreter");
  ASSERT_EQ(expected.size(), 1u);
  std::map<std::string, Tensor> got = run_outputs(dir.string() + input, "package");
  expect_close(got, expected, 1e-4);
  // And ONNX Runtime's logits (the set-up's golden output).
  expect_close(got, {{expected.begin()->first, read_npy((folder / "output_0.npy").string())}}, 1e-4);
}

TEST_F(PackageConvolution, OneDnnAloneIsAnOptIn) {
  if (!built_with_onednn()) {
    expect_user_error(kiln("compile " + cli_test::sample_model("cnn") + " -o " + (dir_ / "cnn").string() + " --onednn"),
                      "--onednn: Kiln was built without oneDNN");
    return;
  }
  fs::path dir = package(cli_test::sample_model("cnn"), "cnn_dnnl", "--onednn");
  EXPECT_FALSE(fs::exists(dir / "cnn_dnnl_kernels_portable.inc"));
  std::string traces = onednn_traces(dir, "cnn_dnnl");
  EXPECT_THAT(traces, HasSubstr("NEEDED libdnnl"));
  EXPECT_THAT(traces, HasSubstr("requires onednn"));
  EXPECT_THAT(read_file(dir / "CMakeLists.txt"), HasSubstr("find_library(cnn_dnnl_DNNL_LIBRARY dnnl REQUIRED)"));
  std::string inputs = " --random-inputs 7 --dim s0=2";
  expect_close(run_outputs(dir.string() + inputs, "package"),
               run_outputs(cli_test::sample_model("cnn") + inputs, "interpreter"), 1e-4);
}

// The default where Kiln has oneDNN: the libraries built here call oneDNN (as `kiln run` does),
// and the package's CMakeLists.txt compiles the im2col + GEMM kernels it also carries where
// oneDNN is not found, or with cnn_ONEDNN=OFF: a library with nothing of oneDNN, the same numbers.
TEST_F(PackageConvolution, TheDefaultPackageCarriesBothConvolutions) {
  if (!built_with_onednn()) {
    fs::path dir = package(cli_test::sample_model("cnn"), "cnn");
    EXPECT_EQ(onednn_traces(dir, "cnn"), "");  // without oneDNN in Kiln: the portable kernels alone
    return;
  }
  CliResult compiled = kiln("compile " + cli_test::sample_model("cnn") + " -o " + (dir_ / "cnn").string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  EXPECT_THAT(compiled.out, HasSubstr("note: the kernels call oneDNN for convolutions"));
  EXPECT_THAT(compiled.out, HasSubstr("builds where oneDNN is not found (or with -Dcnn_ONEDNN=OFF)"));
  fs::path dir = dir_ / "cnn";
  ASSERT_TRUE(fs::exists(dir / "cnn_kernels_portable.inc"));
  EXPECT_THAT(read_file(dir / "cnn_kernels.inc"), HasSubstr("kiln_convolution("));
  EXPECT_THAT(read_file(dir / "cnn_kernels_portable.inc"), Not(HasSubstr("dnnl")));
  EXPECT_THAT(read_file(dir / "cnn_kernels_portable.inc"), HasSubstr("cblas_sgemm"));
  EXPECT_THAT(onednn_traces(dir, "cnn"), HasSubstr("NEEDED libdnnl"));
  std::string inputs = " --random-inputs 7 --dim s0=3";
  std::map<std::string, Tensor> expected = run_outputs(cli_test::sample_model("cnn") + inputs, "interpreter");
  expect_close(run_outputs(dir.string() + inputs, "package"), expected, 1e-4);
  // Built by its own CMakeLists.txt with oneDNN turned off: the portable kernels, nothing of oneDNN.
  fs::path build = dir_ / "cmake_portable", copy = dir_ / "cnn_portable";
  fs::copy(dir, copy, fs::copy_options::recursive);
  fs::remove(copy / "libcnn.so");
  std::string log;
  ASSERT_EQ(shell("cmake -S " + dir.string() + " -B " + build.string() + " -Dcnn_ONEDNN=OFF && cmake --build " +
                      build.string() + " -j2 && c++ -shared -fopenmp -o " + (copy / "libcnn.so").string() +
                      " -Wl,--whole-archive " + (build / "libcnn.a").string() + " -Wl,--no-whole-archive " +
                      compiler::blas_library(),
                  &log),
            0)
      << log;
  std::string undefined;
  ASSERT_EQ(shell("nm --undefined-only " + (build / "libcnn.a").string(), &undefined), 0) << undefined;
  EXPECT_THAT(undefined, Not(HasSubstr("dnnl_")));
  EXPECT_THAT(undefined, HasSubstr("cblas_sgemm"));
  expect_close(run_outputs(copy.string() + inputs, "portable_outputs"), expected, 1e-4);
}

TEST_F(PackageConvolution, OneDnnAppliesOnlyToCpuPackages) {
  std::string cnn = cli_test::sample_model("cnn");
  expect_user_error(kiln("compile " + cnn + " --onednn"), "--onednn applies only to packages");
  expect_user_error(kiln("compile " + cnn + " -o " + (dir_ / "cuda").string() + " --target cuda --onednn"),
                    "--onednn applies only to --target cpu packages");
  expect_user_error(kiln("compile " + cnn + " --portable"), "--portable applies only to packages");
  expect_user_error(kiln("compile " + cnn + " -o " + (dir_ / "cuda").string() + " --target cuda --portable"),
                    "--portable applies only to --target cpu packages");
  expect_user_error(kiln("compile " + cnn + " -o " + (dir_ / "both").string() + " --onednn --portable"),
                    "--onednn and --portable exclude each other");
  EXPECT_FALSE(fs::exists(dir_ / "cuda"));
  EXPECT_FALSE(fs::exists(dir_ / "both"));
}

}  // namespace
}  // namespace kiln
