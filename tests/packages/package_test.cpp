// Packages (`kiln compile MODEL -o DIR`, compiler/package_writer.h) as a user meets them: every
// sample compiled into a package runs (`kiln run DIR`, through the package's own library) to the
// interpreter's numbers, and the ONNX test models to their golden outputs, with folded
// constants (the attention sample, --freeze), symbolic dims, each instruction set forced,
// embedded weights; two packages link into one C++ program and one
// C program built with CMake (samples/embed/packages); the C API's error contract, from a driver
// compiled against a package; and every bad input: weights truncated, damaged, missing; a
// damaged manifest; wrong input dtype or rank; bad names; a CPU lacking every instruction set
// the package holds (through the test hook $KILN_HIDE_CPU_FEATURES). Models with fallback ops
// (cumsum, scatter, index_put, topk, det, transposed convolution:
// tests/data/packages/fallback_ops.kiln; the sampling ops: package_sampling_test.cpp) run as
// packages to the interpreter's numbers, their
// run-time errors as the interpreter's; a model with a fallback op a package cannot carry is
// refused, naming the node and the op.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "codegen/package/package_fallbacks.h"
#include "codegen/package/package_sources.h"
#include "compiler/package_writer.h"
#include "tests/support/test_paths.h"
#include "tests/tools/cli_runner.h"
#include "tests/packages/package_cli_test.h"
#include "runtime/cpu_features.h"
#include "kiln/npy.h"
#include "runtime/package_manifest.h"
#include "kiln/safetensors.h"
#include "tests/tools/sample_models.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::expect_user_error;
using cli_test::read_file;
using ::testing::HasSubstr;
using ::testing::Not;

class PackageCli : public cli_test::PackageCliTest {
 protected:
  // Compiles samples/models/MODEL.kiln into DIR/NAME (NAME defaults to MODEL); returns the folder.
  fs::path package(const std::string& model, const std::string& extra = "", std::string folder = "") {
    if (folder.empty()) folder = model;
    fs::path out = dir_ / folder;
    CliResult result = kiln("compile " + cli_test::sample_model(model) + " -o " + out.string() + " " + extra);
    EXPECT_EQ(result.status, 0) << result.err;
    return out;
  }

  // Writes `bytes` over the file at `offset` (or truncates it to `offset` when bytes is empty).
  static void damage(const fs::path& file, std::streamoff offset, const std::string& bytes) {
    if (bytes.empty()) {
      fs::resize_file(file, uintmax_t(offset));
      return;
    }
    std::fstream out(file, std::ios::in | std::ios::out | std::ios::binary);
    out.seekp(offset);
    out.write(bytes.data(), std::streamsize(bytes.size()));
  }
};

// A model file written in the test's folder.
std::string write_model(const fs::path& dir, const std::string& name, const std::string& text) {
  fs::path file = dir / (name + ".kiln");
  std::ofstream(file) << text;
  return file.string();
}

// Every fallback op a package carries (cumsum, topk and scatter with a sum, which its kernels compute
// themselves, scatter with a number and with amax, index_put with None, integer and bool indices, accumulating, det, cumprod, cummax on
// f32, cummin on i32 (ties), logcumsumexp, a transposed
// convolution with bias), on f32, i32 and i64, through symbolic dims (two sizes of s0 on one
// package) and each instruction set: the same numbers as the interpreter's.
TEST_F(PackageCli, FallbackOpsRunInPackagesAsInTheInterpreter) {
  std::string model = (fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "packages" / "fallback_ops.kiln").string();
  fs::path dir = dir_ / "fallbacks";
  CliResult compiled = kiln("compile " + model + " -o " + dir.string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  std::string source = read_file(dir / "fallback_ops.cpp");
  EXPECT_THAT(source, HasSubstr("namespace fallback_kernels = fallback_ops_fallback_kernels;"));
  EXPECT_THAT(source, HasSubstr("fallback_kernels::ScatterReduce::amax"));
  for (const char* size : {"2", "5"}) {
    SCOPED_TRACE(std::string("s0=") + size);
    std::string inputs = std::string(" --random-inputs 7 --dim s0=") + size;
    std::map<std::string, Tensor> expected = run_outputs(model + inputs, std::string("interp_") + size);
    EXPECT_EQ(expected.size(), 19u);
    expect_close(run_outputs(dir.string() + inputs, std::string("package_") + size), expected, 1e-6);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
      if (!host_supports(isa)) continue;
      std::string name(isa_name(isa));
      SCOPED_TRACE(name);
      expect_close(run_outputs(dir.string() + inputs, "package_" + name + size, "KILN_ISA=" + name), expected, 1e-6);
    }
  }
  // The in-place sample: functionalization writes through its views with index_put.
  fs::path inplace = package("inplace");
  expect_close(run_outputs(inplace.string() + " --random-inputs 3", "inplace_package"),
               run_outputs(cli_test::sample_model("inplace") + " --random-inputs 3", "inplace_interp"), 1e-6);
  // An exported program of backward ops (tests/data/pt2): embedding's backward (index_put,
  // accumulating) runs as a fallback, max_pool2d's and col2im's (scatter with sum) as the kernels'
  // own scatters; avg_pool2d's (a transposed convolution) is a GEMM and a gather of its taps, no
  // fallback.
  std::string pt2 = (fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "pt2" / "core_backward.pt2").string();
  fs::path backward = dir_ / "core_backward";
  compiled = kiln("compile " + pt2 + " -o " + backward.string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  std::string backward_source = read_file(backward / "core_backward.cpp");
  EXPECT_THAT(backward_source, HasSubstr("fallback_kernels::index_put("));
  EXPECT_THAT(read_file(backward / "core_backward_kernels.inc"), HasSubstr("kiln_scatter_tasks<float, double>"));
  EXPECT_THAT(backward_source, Not(HasSubstr("fallback_kernels::convolution(")));
  expect_close(run_outputs(backward.string() + " --random-inputs 3", "backward_package"),
               run_outputs(pt2 + " --random-inputs 3", "backward_interp"), 1e-5);
}

// A fallback op's run-time error (an index out of range) is the interpreter's message, as the
// package's run error.
TEST_F(PackageCli, FallbackErrorsAreTheInterpretersMessages) {
  std::string model = write_model(dir_, "scatter_ones", R"(graph():
    %x : f32[2, 6] [num_users=1] = placeholder[target=x]
    %index : i64[2, 2] [num_users=1] = placeholder[target=index]
    %scatter : f32[2, 6] [num_users=1] = call_function[target=scatter](args = (%x, 1, %index, 1.0), kwargs = {})
    return (scatter,)
)");
  fs::path dir = dir_ / "scatter_ones_package";
  ASSERT_EQ(kiln("compile " + model + " -o " + dir.string()).status, 0);
  write_npy((dir_ / "x.npy").string(), Tensor::zeros({2, 6}, DType::f32));
  Tensor index = Tensor::zeros({2, 2}, DType::i64);
  index.data<int64_t>()[3] = 5;
  write_npy((dir_ / "good.npy").string(), index);
  index.data<int64_t>()[3] = 9;
  write_npy((dir_ / "bad.npy").string(), index);
  std::string good = " --input x=" + (dir_ / "x.npy").string() + " --input index=" + (dir_ / "good.npy").string();
  expect_close(run_outputs(dir.string() + good, "package"), run_outputs(model + good, "interp"), 0);
  std::string bad = " --input x=" + (dir_ / "x.npy").string() + " --input index=" + (dir_ / "bad.npy").string();
  const std::string message = "node %scatter (scatter): scatter(): index 9 is out of bounds for dimension of size 6";
  expect_user_error(kiln("run " + model + bad), message);
  expect_user_error(kiln("run " + dir.string() + bad), "scatter_ones: run: " + message);
}

// i16 through a package's C API (dtype code KILN_I16, 2-byte elements): an i16 input and
// outputs, wrapping arithmetic, a running sum in i64 that the kernels compute (reading i16), and
// a fallback op (cummax) of i16 values; the outputs are the interpreter's exactly.
TEST_F(PackageCli, Int16InputsAndOutputs) {
  std::string model = write_model(dir_, "shorts", R"(graph():
    %x : i16[2, 5] [num_users=4] = placeholder[target=x]
    %mul : i16[2, 5] [num_users=1] = call_function[target=mul](args = (%x, 3), kwargs = {})
    %neg : i16[2, 5] [num_users=1] = call_function[target=neg](args = (%x,), kwargs = {})
    %cumsum : i64[2, 5] [num_users=1] = call_function[target=cumsum](args = (%x, 1), kwargs = {})
    %cummax : (i16[2, 5], i64[2, 5]) [num_users=1] = call_function[target=cummax](args = (%x, 1), kwargs = {})
    %peaks : i16[2, 5] [num_users=1] = call_function[target=getitem](args = (%cummax, 0), kwargs = {})
    return (mul, neg, cumsum, peaks)
)");
  fs::path dir = dir_ / "shorts_package";
  CliResult compiled = kiln("compile " + model + " -o " + dir.string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  EXPECT_THAT(read_file(dir / "shorts.cpp"), HasSubstr("fallback_kernels::"));
  EXPECT_THAT(read_file(dir / "shorts_kernels.inc"), HasSubstr("kiln_prefix_scan_tasks<int16_t, int64_t, uint64_t>"));
  Tensor x = Tensor::from_doubles({2, 5}, std::vector<double>{-32768, -12000, -1, 0, 1, 7, 11000, 20000, 32767, -300},
                                  DType::i16);
  write_npy((dir_ / "x.npy").string(), x);
  std::string input = " --input x=" + (dir_ / "x.npy").string();
  std::map<std::string, Tensor> from_package = run_outputs(dir.string() + input, "package");
  expect_close(from_package, run_outputs(model + input, "interp"), 0);
  ASSERT_TRUE(from_package.count("mul"));
  EXPECT_EQ(from_package.at("mul").dtype(), DType::i16);
  EXPECT_EQ(from_package.at("mul").flat_int(6), int16_t(33000));  // 11000 * 3 wraps
}

// Matrix products of dtypes the GEMM does not take run on the package's fallback kernels:
// wrapping i64 (batch dims broadcast), an i32 vector times a matrix, a u8 bmm, f16 and bf16
// (in double, rounded once): the interpreter's numbers exactly.
TEST_F(PackageCli, IntegerAndHalfMatmulsRunInPackagesAsInTheInterpreter) {
  std::string model = write_model(dir_, "products", R"(graph():
    %a : i64[2, 3, 4] [num_users=1] = placeholder[target=a]
    %b : i64[4, 5] [num_users=1] = placeholder[target=b]
    %v : i32[4] [num_users=1] = placeholder[target=v]
    %m : i32[4, 3] [num_users=1] = placeholder[target=m]
    %p : u8[2, 3, 4] [num_users=1] = placeholder[target=p]
    %q : u8[2, 4, 2] [num_users=1] = placeholder[target=q]
    %h : f16[3, 8] [num_users=1] = placeholder[target=h]
    %g : f16[8, 2] [num_users=1] = placeholder[target=g]
    %r : bf16[2, 8] [num_users=2] = placeholder[target=r]
    %big : i64[2, 3, 5] [num_users=1] = call_function[target=matmul](args = (%a, %b), kwargs = {})
    %vec : i32[3] [num_users=1] = call_function[target=matmul](args = (%v, %m), kwargs = {})
    %bytes : u8[2, 3, 2] [num_users=1] = call_function[target=bmm](args = (%p, %q), kwargs = {})
    %half : f16[3, 2] [num_users=1] = call_function[target=matmul](args = (%h, %g), kwargs = {})
    %rt : bf16[8, 2] [num_users=1] = call_function[target=transpose](args = (%r, 0, 1), kwargs = {})
    %brain : bf16[2, 2] [num_users=1] = call_function[target=matmul](args = (%r, %rt), kwargs = {})
    return (big, vec, bytes, half, brain)
)");
  fs::path dir = dir_ / "products_package";
  CliResult compiled = kiln("compile " + model + " -o " + dir.string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  EXPECT_THAT(read_file(dir / "products.cpp"), HasSubstr("fallback_kernels::matmul("));
  Tensor a = Tensor::from_doubles({2, 3, 4}, std::vector<double>(24, 0), DType::i64);
  for (int64_t i = 0; i < 24; ++i) a.data<int64_t>()[i] = (i % 2 ? -1 : 1) * (int64_t(1) << 62) + i;  // products wrap
  write_npy((dir_ / "a.npy").string(), a);
  std::string inputs = " --random-inputs 5 --input a=" + (dir_ / "a.npy").string();
  std::map<std::string, Tensor> expected = run_outputs(model + inputs, "interp");
  ASSERT_EQ(expected.size(), 5u);
  expect_close(run_outputs(dir.string() + inputs, "package"), expected, 0);
}

// Fallback ops a package cannot carry are refused before anything is written, naming each node,
// its op and why.
// Every op the code generator leaves to a fallback has a driver in the package's handler; one
// without (any other op made a fallback node) is refused naming the node, the op and the ops
// that packages carry, before anything is written.
TEST(PackageFallbacks, AnOpWithoutADriverIsRefusedByName) {
  ir::Graph graph;
  ir::Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {3}));
  ir::Node* doubled = graph.create_call("add", {x, x});
  graph.create_output({doubled});
  try {
    codegen::package_fallback_handler(graph, {doubled->name()}, "uncovered");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("the model has nodes that the code generator does not compile and a package "
                                        "cannot carry: %" + doubled->name() + " (add)"));
    EXPECT_THAT(error.what(), HasSubstr("cumsum, cumprod, cummax, cummin, logcumsumexp, scatter, index_put, topk, det, "
                                        "convolution, matmul, grid_sample, roi_align and deform_conv2d only"));
  }
}

// The default name is the model file's stem made a C identifier that no C or C++ keyword,
// standard macro or implementation-reserved spelling claims, since it names the package's
// namespace, classes and macros; each default passes the check an explicit --name gets.
TEST(PackageNames, TheDefaultNameIsAnIdentifierNoKeywordClaims) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"models/resnet-18.onnx", "resnet_18"}, {"static.pt2", "static_model"}, {"dir/class.kiln", "class_model"},
      {"7up.onnx", "m_7up"},                  {"_Model.pt2", "m_Model"},      {"a__b.onnx", "a_b"},
      {"NULL.onnx", "NULL_model"},            {"my model.onnx", "my_model"},             {"net.v2.onnx", "net_v2"}};
  for (const auto& [path, expected] : cases) {
    std::string name = compiler::default_package_name(path);
    EXPECT_EQ(name, expected) << path;
    EXPECT_NO_THROW(codegen::check_package_name(name)) << path;
  }
  for (const std::string reserved : {"static", "and", "co_await", "errno", "_Bool", "x__y", "std"})
    EXPECT_TRUE(codegen::is_reserved_package_name(reserved)) << reserved;
  for (const std::string allowed : {"resnet", "static_model", "_x", "Static", "mlp2"})
    EXPECT_FALSE(codegen::is_reserved_package_name(allowed)) << allowed;
}

// A CPU lacking every instruction set of the package, through the test hook
// $KILN_HIDE_CPU_FEATURES (the package's create reads it; the numbers stay real: a hidden
// feature only removes choices): KILN_UNSUPPORTED_CPU and its message, from the C API and
// `kiln run`; with all sets built, hiding AVX-512 picks the next best.
TEST_F(PackageCli, ACpuLackingEveryPackedInstructionSetIsRefused) {
  fs::path dir = package("mlp", "--isa avx512 --name lacking", "lacking");
  const std::string driver = R"(#include "lacking.h"
#include <stdio.h>
int main(int argc, char** argv) {
  lacking_model* model = NULL;
  KilnStatus status = lacking_create(argv[1], &model);
  printf("%d %s %p\n", (int)status, lacking_last_error(), (void*)model);
  lacking_destroy(model);
  return 0;
}
)";
  std::ofstream(dir_ / "lacking.c") << driver;
  std::string output;
  ASSERT_EQ(shell("cd " + dir_.string() + " && gcc -std=c11 -I" + dir.string() + " lacking.c " + (dir / "liblacking.a").string() +
                      " -fopenmp -lstdc++ -lm -lopenblas -o lacking_driver && KILN_HIDE_CPU_FEATURES=avx2,avx512f ./lacking_driver " +
                      (dir / "lacking.safetensors").string(),
                  &output),
            0)
      << output;
  const std::string message = "lacking: create: this CPU supports none of the instruction sets the package was built for "
                              "(avx512); compile it again with --isa all or --isa scalar";
  EXPECT_THAT(output, HasSubstr("3 " + message + " (nil)"));
  std::string run = "run " + dir.string() + " --random-inputs 1 --dim s0=2";
  expect_user_error(kiln(run, "KILN_HIDE_CPU_FEATURES=avx512f"), message);
  expect_user_error(kiln(run, "KILN_HIDE_CPU_FEATURES=avx512bw KILN_ISA=avx512"),
                    "lacking: create: $KILN_ISA is avx512, which this CPU does not support");
  if (host_supports(Isa::avx2)) {
    fs::path all = package("mlp", "", "all");
    CliResult bench = kiln("bench " + all.string() + " --dim s0=2 -n 1 --warmup 0", "KILN_HIDE_CPU_FEATURES=avx512f");
    ASSERT_EQ(bench.status, 0) << bench.err;
    EXPECT_THAT(bench.out, HasSubstr("package (avx2)"));
  }
}

// Kiln loading a package (`kiln bench DIR`, kiln::Package) chooses OpenBLAS's kernels before the
// package's library loads OpenBLAS, as it does for a compiled module
// (runtime/cpu/openblas_core_type.h): Debian 12's OpenBLAS, left to itself on a CPU newer than its
// table, runs its SSE3 (Prescott) kernels. The MLP sample's GEMMs, not frozen, are OpenBLAS's.
TEST_F(PackageCli, KilnChoosesOpenBlasKernelsBeforeAPackageLoadsThem) {
  if (host_isa() != Isa::avx512) GTEST_SKIP() << "the expected kernels are AVX-512's (SkylakeX)";
  fs::path dir = package("mlp", "", "blas_kernels");
  CliResult bench = kiln("bench " + dir.string() + " --dim s0=4 -n 1 --warmup 0", "env -u OPENBLAS_CORETYPE");
  ASSERT_EQ(bench.status, 0) << bench.err;
  EXPECT_THAT(bench.out, HasSubstr("OpenBLAS kernels: SkylakeX")) << bench.out;
}

TEST_F(PackageCli, EverySampleRunsAsAPackageAsTheInterpreterRunsTheModel) {
  for (const char* model : {"mlp", "attention", "cnn"}) {
    SCOPED_TRACE(model);
    fs::path dir = package(model);
    for (const char* file : {".h", ".cpp", "_kernels.inc", "_avx512.cpp", "_avx2.cpp", "_scalar.cpp",
                                   ".safetensors"})
      EXPECT_TRUE(fs::exists(dir / (std::string(model) + file))) << file;
    for (const std::string& file : {std::string("CMakeLists.txt"), std::string("manifest.json"),
                                   "lib" + std::string(model) + ".so", "lib" + std::string(model) + ".a"})
      EXPECT_TRUE(fs::exists(dir / file)) << file;
    EXPECT_FALSE(fs::exists(dir / "build"));  // objects and logs go once the build succeeded
    std::string inputs = " --random-inputs 7 --dim s0=3";
    expect_close(run_outputs(dir.string() + inputs, std::string(model) + "_package"),
                 run_outputs(cli_test::sample_model(model) + inputs, std::string(model) + "_interpreter"), 1e-4);
  }
}

// The ONNX test models (tests/data/onnx/models: LeNet, MobileNet and ResNet blocks, a GPT block,
// an encoder layer) as packages, against their committed golden outputs (PyTorch's, as
// written by scripts/make_onnx_test_models.py).
TEST_F(PackageCli, OnnxTestModelsRunAsPackagesToTheirGoldenOutputs) {
  fs::path models = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "onnx" / "models";
  size_t count = 0;
  for (const auto& entry : fs::directory_iterator(models)) {
    std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    fs::path dir = dir_ / name;
    CliResult compiled = kiln("compile " + (entry.path() / "model.onnx").string() + " -o " + dir.string());
    ASSERT_EQ(compiled.status, 0) << compiled.err;
    PackageManifest manifest = read_package_manifest(dir / "manifest.json");
    ASSERT_EQ(manifest.inputs.size(), 1u);
    ASSERT_EQ(manifest.outputs.size(), 1u);
    std::map<std::string, Tensor> got =
        run_outputs(dir.string() + " --input " + manifest.inputs[0].name + "=" + (entry.path() / "input_0.npy").string(),
                    name + "_out");
    expect_close(got, {{manifest.outputs[0].name, read_npy((entry.path() / "output_0.npy").string())}}, 1e-4);
    ++count;
  }
  EXPECT_GE(count, 6u);
}

TEST_F(PackageCli, FoldedConstantsAreInTheWeightsFile) {
  fs::path dir = package("attention");
  EXPECT_TRUE(read_safetensors((dir / "attention.safetensors").string()).count("_folded_causal"));
  fs::path frozen = package("mlp", "--freeze", "frozen");
  bool folded = false;
  for (const auto& [name, tensor] : read_safetensors((frozen / "mlp.safetensors").string()))
    folded = folded || name.rfind("_folded", 0) == 0;
  EXPECT_TRUE(folded);
  std::string inputs = " --random-inputs 3 --dim s0=5";
  expect_close(run_outputs(frozen.string() + inputs, "frozen_out"), run_outputs(cli_test::sample_model("mlp") + inputs, "interp"),
               1e-4);
}

TEST_F(PackageCli, EachInstructionSetGivesTheSameNumbers) {
  fs::path dir = package("attention");
  std::string inputs = dir.string() + " --random-inputs 5";
  std::map<std::string, Tensor> expected = run_outputs(cli_test::sample_model("attention") + " --random-inputs 5", "interp");
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (!host_supports(isa)) continue;
    std::string name(isa_name(isa));
    SCOPED_TRACE(name);
    expect_close(run_outputs(inputs, "out_" + name, "KILN_ISA=" + name), expected, 1e-4);
    CliResult bench = kiln("bench " + dir.string() + " -n 3 --warmup 1", "KILN_ISA=" + name);
    ASSERT_EQ(bench.status, 0) << bench.err;
    EXPECT_THAT(bench.out, HasSubstr("package (" + name + ")"));
  }
}

TEST_F(PackageCli, EmbeddedWeightsNeedNoWeightsFile) {
  fs::path dir = package("mlp", "--embed-weights --name embedded", "embedded");
  fs::remove(dir / "embedded.safetensors");
  std::string inputs = " --random-inputs 2 --dim s0=4";
  expect_close(run_outputs(dir.string() + inputs, "embedded_out"), run_outputs(cli_test::sample_model("mlp") + inputs, "interp"),
               1e-4);
}

// samples/embed/packages: the MLP and attention packages in one C++ program and one C program,
// built with CMake from the package folders alone; their outputs against the interpreter's.
TEST_F(PackageCli, TwoPackagesLinkIntoOneProgramInCAndCpp) {
  fs::path mlp = package("mlp"), attention = package("attention");
  fs::path build = dir_ / "app";
  std::string log;
  ASSERT_EQ(shell("cmake -S " + (fs::path(KILN_SOURCE_DIR) / "samples" / "embed" / "packages").string() + " -B " +
                      build.string() + " -DMLP_PACKAGE=" + mlp.string() + " -DATTENTION_PACKAGE=" + attention.string() +
                      " && cmake --build " + build.string() + " -j2",
                  &log),
            0)
      << log;
  // The apps' inputs, x[i] = sin(0.37 i) / 2, for the interpreter.
  auto sample = [](const Sizes& sizes) {
    Tensor t = Tensor::empty(sizes, DType::f32);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(std::sin(0.37 * double(i)) / 2);
    return t;
  };
  write_npy((dir_ / "mlp_x.npy").string(), sample({3, 784}));
  write_npy((dir_ / "attention_x.npy").string(), sample({2, 8, 32}));
  std::map<std::string, Tensor> expected;
  for (const char* model : {"mlp", "attention"}) {
    std::string input = " --input x=" + (dir_ / (std::string(model) + "_x.npy")).string();
    for (auto& [name, tensor] : run_outputs(cli_test::sample_model(model) + input, std::string(model) + "_interp"))
      expected[std::string(model) + "." + name] = tensor;
  }
  for (const char* app : {"two_models_cpp", "two_models_c"}) {
    SCOPED_TRACE(app);
    std::string output;
    ASSERT_EQ(shell((build / app).string() + " " + (mlp / "mlp.safetensors").string() + " " +
                        (attention / "attention.safetensors").string(),
                    &output),
              0)
        << output;
    std::map<std::string, Tensor> got;
    std::istringstream lines(output);
    std::string name;
    int rank = 0;
    while (lines >> name >> rank) {
      Sizes sizes(size_t(rank), 0);
      for (int64_t& size : sizes) lines >> size;
      std::string colon;
      lines >> colon;
      Tensor t = Tensor::empty(sizes, DType::f32);
      for (int64_t i = 0; i < t.numel(); ++i) lines >> t.data<float>()[i];
      got[name] = t;
    }
    expect_close(got, expected, 1e-4);
  }
}

// The C API's contract, from a program compiled against the MLP package: every misuse returns
// its status with a message naming what is wrong; the C++ class throws.
TEST_F(PackageCli, TheCApiReportsEveryMisuse) {
  fs::path dir = package("mlp");
  const std::string driver = R"(#include "mlp.h"
#include <stdio.h>
#include <string.h>
static void report(const char* what, KilnStatus status) { printf("%s: %d %s\n", what, (int)status, mlp_last_error()); }
int main(int argc, char** argv) {
  mlp_model* model = NULL;
  report("null out", mlp_create(argv[1], NULL));
  report("no embedded", mlp_create(NULL, &model));
  report("missing file", mlp_create("/nonexistent/mlp.safetensors", &model));
  report("create", mlp_create(argv[1], &model));
  float x[2 * 784] = {0};
  int64_t sizes[] = {2, 784}, bad_rank[] = {2, 784, 1}, negative[] = {-2, 784};
  KilnTensor in = {x, sizes, NULL, 2, KILN_F32}, out[1];
  report("null model", mlp_run(NULL, &in, 1, out, 1));
  report("two inputs", mlp_run(model, &in, 2, out, 1));
  report("no outputs", mlp_run(model, &in, 1, out, 0));
  report("null inputs", mlp_run(model, NULL, 1, out, 1));
  KilnTensor wrong = in; wrong.dtype = KILN_F64; report("dtype", mlp_run(model, &wrong, 1, out, 1));
  wrong = in; wrong.rank = 3; wrong.sizes = bad_rank; report("rank", mlp_run(model, &wrong, 1, out, 1));
  wrong = in; wrong.sizes = negative; report("negative", mlp_run(model, &wrong, 1, out, 1));
  wrong = in; wrong.data = NULL; report("no data", mlp_run(model, &wrong, 1, out, 1));
  int64_t strides[] = {1, 2}; wrong = in; wrong.strides = strides; report("strides", mlp_run(model, &wrong, 1, out, 1));
  report("run", mlp_run(model, &in, 1, out, 1));
  report("device memory", mlp_run_device(model, &in, 1, out, 1, NULL));
  printf("out %d %lld %lld %s\n", out[0].rank, (long long)out[0].sizes[0], (long long)out[0].sizes[1], mlp_output(0)->shape);
  printf("info %lld %s %s %p\n", (long long)mlp_num_inputs(), mlp_input(0)->name, mlp_input(0)->shape, (void*)mlp_input(1));
  mlp_destroy(model);
  mlp_destroy(NULL);
  return 0;
}
)";
  std::ofstream(dir_ / "driver.c") << driver;
  std::string output;
  ASSERT_EQ(shell("cd " + dir_.string() + " && gcc -std=c11 -I" + dir.string() + " driver.c " + (dir / "libmlp.a").string() +
                      " -fopenmp -lstdc++ -lm -lopenblas -o driver && ./driver " +
                      (dir / "mlp.safetensors").string(),
                  &output),
            0)
      << output;
  auto line = [&](const std::string& what) {  // the driver's line that starts with `what`
    std::string text = "\n" + output;
    size_t at = text.find("\n" + what + ": ");
    return at == std::string::npos ? std::string() : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  EXPECT_THAT(line("null out"), HasSubstr(": 1 mlp: create: the model pointer is NULL"));
  EXPECT_THAT(line("no embedded"), HasSubstr(": 1 mlp: create: no weights path was given"));
  EXPECT_THAT(line("missing file"), HasSubstr(": 2 mlp: create: cannot open weights file '/nonexistent/mlp.safetensors'"));
  EXPECT_THAT(line("create"), HasSubstr(": 0"));
  EXPECT_THAT(line("null model"), HasSubstr(": 1 mlp: run: the model is NULL"));
  EXPECT_THAT(line("two inputs"), HasSubstr(": 1 mlp: run: the model takes 1 input(s) ('x'), got 2"));
  EXPECT_THAT(line("no outputs"), HasSubstr(": 1 mlp: run: the model has 1 output(s) ('probs'), got room for 0"));
  EXPECT_THAT(line("null inputs"), HasSubstr(": 1 mlp: run: inputs is NULL"));
  EXPECT_THAT(line("dtype"), HasSubstr(": 1 mlp: run: guard failed: input 'x' has dtype f64, expected f32"));
  EXPECT_THAT(line("rank"), HasSubstr(": 1 mlp: run: guard failed: input 'x' has rank 3"));
  EXPECT_THAT(line("negative"), HasSubstr(": 1 mlp: run: input 'x' has size -2 in dim 0"));
  EXPECT_THAT(line("no data"), HasSubstr(": 1 mlp: run: input 'x' has no data (NULL)"));
  EXPECT_THAT(line("strides"), HasSubstr(": 1 mlp: run: guard failed: input 'x' dim 1 has stride 2"));
  EXPECT_THAT(line("run"), HasSubstr(": 0"));
  EXPECT_THAT(line("device memory"), HasSubstr(": 1 mlp: run_device: this package runs on the CPU ("));
  EXPECT_THAT(line("device memory"), HasSubstr("): its inputs and outputs are host memory; use mlp_run"));
  EXPECT_THAT(output, HasSubstr("out 2 2 10 [s0, 10]"));
  EXPECT_THAT(output, HasSubstr("info 1 x [s0, 784] (nil)"));
}

TEST_F(PackageCli, DamagedOrForeignWeightsAreRefused) {
  fs::path dir = package("mlp");
  fs::path weights = dir / "mlp.safetensors";
  fs::path saved = dir_ / "saved.safetensors";
  fs::copy_file(weights, saved);
  std::string run = "run " + dir.string() + " --random-inputs 1 --dim s0=2";

  damage(weights, std::streamoff(fs::file_size(weights) - 10), "\x7f\x7f\x7f");
  expect_user_error(kiln(run), "weights file '" + weights.string() + "' does not match the package: its XXH64 checksum is ");
  fs::copy_file(saved, weights, fs::copy_options::overwrite_existing);
  damage(weights, 1000, "");
  expect_user_error(kiln(run), "has 1000 bytes; the package's weights have ");
  fs::remove(weights);
  expect_user_error(kiln(run), "cannot open weights file '" + weights.string() + "': No such file or directory");
  // The weights of another model of the same size are caught by the checksum too.
  fs::path other = package("mlp", "--freeze", "frozen");
  fs::copy_file(other / "mlp.safetensors", weights);
  CliResult foreign = kiln(run);
  EXPECT_EQ(foreign.status, 1);
  EXPECT_THAT(foreign.err, HasSubstr("mlp: create: weights file"));
}

TEST_F(PackageCli, BadInputsAreRefusedByTheGuards) {
  fs::path dir = package("mlp");
  write_npy((dir_ / "f64.npy").string(), Tensor::zeros({2, 784}, DType::f64));
  write_npy((dir_ / "rank3.npy").string(), Tensor::zeros({2, 784, 1}, DType::f32));
  write_npy((dir_ / "narrow.npy").string(), Tensor::zeros({2, 783}, DType::f32));
  expect_user_error(kiln("run " + dir.string() + " --input x=" + (dir_ / "f64.npy").string()),
                    "mlp: run: guard failed: input 'x' has dtype f64, expected f32");
  expect_user_error(kiln("run " + dir.string() + " --input x=" + (dir_ / "rank3.npy").string()),
                    "mlp: run: guard failed: input 'x' has rank 3, expected 2");
  expect_user_error(kiln("run " + dir.string() + " --input x=" + (dir_ / "narrow.npy").string()),
                    "mlp: run: guard failed: input 'x' dim 1 has size 783, expected 784");
  expect_user_error(kiln("run " + dir.string() + " --random-inputs 1"), "input 'x' has symbolic size s0");
  expect_user_error(kiln("run " + dir.string() + " --input y=" + (dir_ / "f64.npy").string()), "the model has no input named 'y'");
}

TEST_F(PackageCli, DamagedManifestsAndForeignLibrariesAreRefused) {
  fs::path dir = package("mlp");
  std::string manifest = read_file(dir / "manifest.json");
  std::ofstream(dir / "manifest.json") << "{\"format\": \"kiln-package\", \"abi\": 1}";
  expect_user_error(kiln("run " + dir.string() + " --random-inputs 1 --dim s0=1"), "manifest.json: field 'name' is missing");
  std::string abi = manifest;
  abi.replace(abi.find("\"abi\": 2"), 8, "\"abi\": 99");
  std::ofstream(dir / "manifest.json") << abi;
  expect_user_error(kiln("run " + dir.string() + " --random-inputs 1 --dim s0=1"), "has package ABI 99; this Kiln runs ABI 2");
  std::ofstream(dir / "manifest.json") << manifest;
  fs::remove(dir / "libmlp.so");
  expect_user_error(kiln("run " + dir.string() + " --random-inputs 1 --dim s0=1"), "libmlp.so");
}

TEST_F(PackageCli, BadPackageRequestsAreUserErrors) {
  std::string mlp = cli_test::sample_model("mlp");
  expect_user_error(kiln("compile " + mlp + " -o " + (dir_ / "a").string() + " --name 9lives"), "package name '9lives' is not a C identifier");
  expect_user_error(kiln("compile " + mlp + " -o " + (dir_ / "b").string() + " --name my-model"), "package name 'my-model' is not a C identifier");
  expect_user_error(kiln("compile " + mlp + " -o " + (dir_ / "c").string() + " --name static"), "package name 'static' is a C or C++ keyword");
  expect_user_error(kiln("compile " + mlp + " --name mlp"), "--name applies only to packages");
  expect_user_error(kiln("compile " + mlp + " --isa all"), "--isa all applies only to packages");
  expect_user_error(kiln("compile " + mlp + " --embed-weights"), "--embed-weights applies only to packages");
  fs::path dir = package("mlp");
  expect_user_error(kiln("compile " + mlp + " -o " + dir.string()), "exists and is not empty (pass --force to overwrite it)");
  EXPECT_EQ(kiln("compile " + mlp + " -o " + dir.string() + " --force").status, 0);
  expect_user_error(kiln("run " + dir.string() + " --target cpu --random-inputs 1 --dim s0=1"), "a package runs as it was compiled");
  expect_user_error(kiln("run " + dir.string() + " --check --random-inputs 1 --dim s0=1"), "--check needs the model's graph");
  fs::path avx2 = package("mlp", "--isa avx2", "avx2_only");
  expect_user_error(kiln("run " + avx2.string() + " --random-inputs 1 --dim s0=1", "KILN_ISA=scalar"),
                    "mlp: create: $KILN_ISA is scalar, but the package was built for avx2 only");
}

}  // namespace
}  // namespace kiln
