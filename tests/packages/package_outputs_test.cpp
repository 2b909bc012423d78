// A package's outputs are the model's as `kiln run MODEL` gives them (issue 15): the same names
// (those of the graph as loaded, not of the simplified graph the kernels compute: `mul`, not
// `y_mutated`), the same order, no mutation outputs; the inputs the model writes in place hold
// their new values after a run (the manifest lists them), and a buffer the model updates is kept
// by the package's model for its next run, as `kiln run`'s compiled model keeps it. Checked on
// the .pt2 program of in-place view writes (tests/data/pt2/inplace_views.pt2, against PyTorch's
// outputs and mutated input), a .kiln model with in-place writes to an input and a buffer, and
// the ONNX test models' output names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "compiler/executable.h"
#include "compiler/model_files.h"
#include "compiler/target_registry.h"
#include "kiln/npy.h"
#include "kiln/package.h"
#include "kiln/safetensors.h"
#include "runtime/package_manifest.h"
#include "tests/packages/package_cli_test.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::read_file;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PackageOutputs : public cli_test::PackageCliTest {
 protected:
  fs::path package(const std::string& model, const std::string& name, const std::string& extra = "") {
    fs::path out = dir_ / name;
    CliResult result = kiln("compile " + model + " -o " + out.string() + " --name " + name + " " + extra);
    EXPECT_EQ(result.status, 0) << result.err;
    return out;
  }

  static std::vector<std::string> names(const std::vector<PackageTensorInfo>& tensors) {
    std::vector<std::string> list;
    for (const PackageTensorInfo& t : tensors) list.push_back(t.name);
    return list;
  }

  static std::map<std::string, Tensor> clones(const std::map<std::string, Tensor>& tensors) {
    std::map<std::string, Tensor> copies;
    for (const auto& [name, tensor] : tensors) copies[name] = tensor.clone();
    return copies;
  }

  static void expect_equal(const Tensor& got, const Tensor& expected, double tolerance, const std::string& what) {
    ASSERT_EQ(got.dtype(), expected.dtype()) << what;
    ASSERT_EQ(got.sizes(), expected.sizes()) << what;
    for (int64_t i = 0; i < expected.numel(); ++i)
      ASSERT_NEAR(got.flat_double(i), expected.flat_double(i), tolerance * (1 + std::fabs(expected.flat_double(i))))
          << what << " element " << i;
  }
};

TEST_F(PackageOutputs, AnExportedProgramsInPlaceWritesAreKilnRunsAndPyTorchs) {
  fs::path data = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "pt2";
  std::string model = (data / "inplace_views.pt2").string();
  fs::path dir = package(model, "inplace_views");
  PackageManifest manifest = read_package_manifest(dir / "manifest.json");
  EXPECT_THAT(names(manifest.outputs), ElementsAre("index_put_", "contiguous", "mul"));
  EXPECT_THAT(manifest.mutated_inputs, ElementsAre("y"));
  EXPECT_THAT(read_file(dir / "inplace_views.h"), HasSubstr("Inputs written in place by each run (as the model's in-place ops write them): y;"));
  // `kiln run DIR` prints what `kiln run MODEL` prints.
  std::string inputs = " --random-inputs 3";
  expect_close(run_outputs(dir.string() + inputs, "package"), run_outputs(model + inputs, "interpreter"), 1e-6);
  // Through the library: PyTorch's outputs, and y as the program left it.
  std::map<std::string, Tensor> sample = compiler::model_sample_inputs(model);
  Package loaded = Package::load(dir);
  std::map<std::string, Tensor> arguments = clones(sample);
  std::vector<Tensor> outputs = loaded.run(arguments);
  ASSERT_EQ(outputs.size(), 3u);
  for (size_t i = 0; i < outputs.size(); ++i)
    expect_equal(outputs[i], read_npy((data / "inplace_views" / ("expected_" + std::to_string(i) + ".npy")).string()), 1e-6,
                 "output " + std::to_string(i));
  expect_equal(arguments.at("y"), read_npy((data / "inplace_views" / "after_y.npy").string()), 1e-6, "y after the run");
  expect_equal(arguments.at("x"), sample.at("x"), 0, "x (not written)");
}

// In-place writes to an input and to a buffer (a counter every run increments), in a .kiln
// model: two runs of the package against two runs of the interpreter, outputs and mutated
// input alike; a non-contiguous input is written back too.
TEST_F(PackageOutputs, InPlaceWritesToInputsAndBuffersAreTheInterpretersAcrossRuns) {
  fs::path model = dir_ / "counter.kiln";
  std::ofstream(model) << R"(graph():
    %x : f32[3, 4] [num_users=2] = placeholder[target=x]
    %y : f32[4] [num_users=1] = placeholder[target=y]
    %count : f32[1] [num_users=2] = get_attr[target=count]
    %add_ : f32[1] [num_users=0] = call_function[target=add_](args = (%count, 1.0), kwargs = {})
    %scaled : f32[3, 4] [num_users=1] = call_function[target=mul](args = (%x, %count), kwargs = {})
    %sum_1 : f32[4] [num_users=1] = call_function[target=sum](args = (%x, [0]), kwargs = {})
    %mul_ : f32[4] [num_users=1] = call_function[target=mul_](args = (%y, %sum_1), kwargs = {})
    %total : f32[4] [num_users=1] = call_function[target=add](args = (%mul_, 1.0), kwargs = {})
    return (scaled, total)
)";
  Tensor count = Tensor::empty({1}, DType::f32);
  count.data<float>()[0] = 2.0f;
  write_safetensors((dir_ / "counter.safetensors").string(), {{"count", count}});
  fs::path dir = package(model.string(), "counter");
  PackageManifest manifest = read_package_manifest(dir / "manifest.json");
  EXPECT_THAT(names(manifest.outputs), ElementsAre("scaled", "total"));
  EXPECT_THAT(manifest.mutated_inputs, ElementsAre("y"));
  EXPECT_THAT(read_file(dir / "counter.h"), HasSubstr("Buffers each run updates (1), kept per model"));

  Tensor x = Tensor::empty({3, 4}, DType::f32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i % 5) * 0.25f - 0.5f;
  Tensor y_wide = Tensor::empty({4, 2}, DType::f32);  // y is its column 1: strided
  for (int64_t i = 0; i < y_wide.numel(); ++i) y_wide.data<float>()[i] = 0.5f + float(i) * 0.125f;
  CompileOptions interpreter;
  interpreter.target = "interp";
  std::unique_ptr<compiler::Executable> reference = compiler::prepare(compiler::load_model(model.string()), interpreter);
  Package loaded = Package::load(dir);
  Tensor y_interpreter = y_wide.clone().select(1, 1), y_package = y_wide.clone().select(1, 1);
  for (int run = 1; run <= 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    std::vector<Tensor> expected = reference->run({{"x", x}, {"y", y_interpreter}});
    std::vector<Tensor> got = loaded.run({{"x", x}, {"y", y_package}});
    ASSERT_EQ(expected.size(), 2u);
    ASSERT_EQ(got.size(), 2u);
    expect_equal(got[0], expected[0], 1e-6, "scaled");
    expect_equal(got[1], expected[1], 1e-6, "total");
    expect_equal(y_package, y_interpreter, 1e-6, "y");
    // The counter, 2 in the weights, is incremented before it is read: 2 + run.
    EXPECT_FLOAT_EQ(got[0].data<float>()[1], x.data<float>()[1] * float(2 + run));
  }
  // The weights file is left as it was: a new model starts from 2 again.
  EXPECT_FLOAT_EQ(Package::load(dir).run({{"x", x}, {"y", y_package}})[0].data<float>()[1], x.data<float>()[1] * 3.0f);
}

// The ONNX test models: `kiln run DIR` names the outputs as `kiln run MODEL` does.
TEST_F(PackageOutputs, OnnxModelsKeepTheirOutputNames) {
  fs::path models = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "onnx" / "models";
  for (const char* name : {"lenet", "gpt_block"}) {
    SCOPED_TRACE(name);
    std::string model = (models / name / "model.onnx").string();
    fs::path dir = package(model, name, "--isa avx2");
    std::string inputs = " --random-inputs 5";
    expect_close(run_outputs(dir.string() + inputs, std::string(name) + "_package"),
                 run_outputs(model + inputs, std::string(name) + "_interpreter"), 1e-4);
  }
}

// A CUDA package cannot keep a buffer's state across runs: refused before anything is written.
TEST_F(PackageOutputs, CudaPackagesRefuseBufferUpdates) {
  std::string model = (fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "pt2" / "cnn_train.pt2").string();
  CliResult refused = kiln("compile " + model + " -o " + (dir_ / "cuda").string() + " --target cuda");
  cli_test::expect_user_error(refused, "the model updates its buffer 'bn.running_mean' in each run");
  EXPECT_FALSE(fs::exists(dir_ / "cuda"));
}

}  // namespace
}  // namespace kiln
