// CUDA packages (`kiln compile MODEL -o DIR --target cuda`, compiler/targets/cuda_package.h) as a
// user meets them, on a machine without a GPU as on one with:
//   - every sample becomes a package of the cpu package's kind (NAME.h with the same C API and
//     class, NAME.cpp, NAME_cuda.cpp, NAME_kernels.cu, the device code, NAME.safetensors,
//     CMakeLists.txt, manifest.json, libNAME.so and libNAME.a), built with nvcc's fatbin, and
//     with NVRTC's cubin when nvcc is refused ($KILN_NVCC=none);
//   - the packages of two samples link into one program built with CMake from their folders
//     alone, with nothing of CUDA at build time; without a driver (forced here by
//     $KILN_CUDA_DRIVER_LIBRARY) create returns KILN_NO_DEVICE with the reason, and `kiln run DIR`
//     says so in one line;
//   - the generated launch sequence itself (NAME_cuda.cpp: buffers, launches, GEMMs, guards,
//     fault flags) runs on the CPU emulation of generated CUDA (tests/tools/
//     emulated_package_device.h) through the package's own C API, to the interpreter's numbers;
//     its guards refuse bad inputs (wrong sizes, a symbol outside its range) with the messages a
//     cpu package gives; --embed-weights needs no weights file; fallback nodes run on the host
//     (a round trip of their buffers through the package's portable kernels; the sampling ops
//     grid_sample, roi_align and deform_conv2d among them), to the interpreter's numbers and
//     messages;
//   - on a GPU (tests/gpu/check_cuda_packages.sh runs these there), every sample's package runs
//     to the interpreter's numbers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/tools/cli_runner.h"
#include "tests/packages/package_cli_test.h"
#include "codegen/cuda/cuda_emitter.h"
#include "compiler/model_files.h"
#include "compiler/targets/cuda_package.h"
#include "kiln/error.h"
#include "kiln/npy.h"
#include "kiln/package.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/package_manifest.h"
#include "tests/tools/sample_models.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::expect_user_error;
using cli_test::read_file;
using ::testing::HasSubstr;

// The samples without fallback nodes (the inplace sample's index_put runs on the host: see
// FallbackNodesRunOnTheHost).
const char* const kSamples[] = {"mlp", "attention", "cnn"};

// A driver library that cannot load: create's "no CUDA device" path on any machine.
const std::string kNoDriver = "KILN_CUDA_DRIVER_LIBRARY=/nonexistent/libcuda.so.1";

class CudaPackage : public cli_test::PackageCliTest {
 protected:
  void SetUp() override {
    cli_test::PackageCliTest::SetUp();
    if (!compiler::find_nvcc()) {
      try {
        cuda::nvrtc();
      } catch (const Error& e) {
        GTEST_SKIP() << "neither nvcc nor NVRTC here: " << e.what();
      }
    }
  }

  // Compiles samples/models/MODEL.kiln into a CUDA package in DIR/FOLDER; returns the folder.
  fs::path package(const std::string& model, const std::string& folder, const std::string& environment = "",
                   const std::string& extra = "") {
    fs::path out = dir_ / folder;
    CliResult result = kiln("compile " + cli_test::sample_model(model) + " --target cuda --sm 80 -o " + out.string() + " " + extra,
                            environment);
    EXPECT_EQ(result.status, 0) << result.err;
    return out;
  }

  // A copy of package `dir` whose libNAME.so runs its host code on the CPU emulation; returns the
  // copy and sets `environment` to what its runs need.
  fs::path emulated(const fs::path& dir, const std::string& n, std::string& environment) {
    fs::path copy = dir_ / ("emulated_" + n);
    fs::copy(dir, copy, fs::copy_options::recursive);
    // The kernels for the CPU emulation, with an entry point per kernel the host code launches.
    std::string host = read_file(copy / (n + "_cuda.cpp"));
    std::smatch table;
    EXPECT_TRUE(std::regex_search(host, table, std::regex("const char\\* const kKernels\\[\\] = \\{([^}]*)\\}")));
    codegen::cuda::CudaModule module;
    module.source = read_file(copy / (n + "_kernels.cu"));
    std::string names = table[1];
    std::regex quoted("\"([A-Za-z0-9_]+)\"");
    for (auto it = std::sregex_iterator(names.begin(), names.end(), quoted); it != std::sregex_iterator(); ++it) {
      codegen::cuda::LaunchStep step;
      step.launch.name = (*it)[1];
      module.steps.push_back(step);
    }
    std::ofstream(copy / "emulation.cpp") << codegen::cuda::emulation_source(module);
    fs::path device = fs::path(KILN_SOURCE_DIR) / "tests" / "packages" / "emulated_package_device.h";
    std::string log;
    EXPECT_EQ(shell("cd " + copy.string() + " && c++ -O1 -std=c++17 -shared -fPIC -fno-strict-aliasing -w emulation.cpp " +
                        "-o libemulation.so && c++ -O1 -std=c++17 -shared -fPIC -fvisibility=hidden -Wa,-I" + copy.string() +
                        " '-DKILN_PACKAGE_DEVICE_HEADER=\"" + device.string() + "\"' " + n + ".cpp " + n +
                        "_cuda.cpp -ldl -o lib" + n + ".so",
                    &log),
              0)
        << log;
    environment = "KILN_TEST_EMULATION_LIBRARY=" + (copy / "libemulation.so").string();
    return copy;
  }
};

TEST_F(CudaPackage, EverySampleBecomesAPackageOfTheCpuPackagesKind) {
  for (const char* model : kSamples) {
    SCOPED_TRACE(model);
    const std::string n = model;
    fs::path dir = package(model, n);
    for (const std::string& file : {n + ".h", n + ".cpp", n + "_cuda.cpp", n + "_kernels.cu", n + ".fatbin", n + ".safetensors",
                                    std::string("CMakeLists.txt"), std::string("manifest.json"), "lib" + n + ".so",
                                    "lib" + n + ".a"})
      EXPECT_TRUE(fs::exists(dir / file)) << file;
    if (!compiler::find_nvcc()) continue;  // (NVRTC's cubin instead: the test below)
    EXPECT_FALSE(fs::exists(dir / "build"));
    PackageManifest manifest = read_package_manifest(dir / "manifest.json");
    EXPECT_EQ(manifest.isas, std::vector<std::string>{"cuda"});
    EXPECT_EQ(manifest.requires_.front(), "cuda");
    EXPECT_EQ(manifest.abi, 2);
    std::string header = read_file(dir / (n + ".h"));
    EXPECT_THAT(header, HasSubstr("KilnStatus " + n + "_create(const char* weights_path, " + n + "_model** model);"));
    EXPECT_THAT(header, HasSubstr("class Model {"));
    EXPECT_THAT(header, HasSubstr("loads the CUDA driver (dlopen"));
    // The device code is the package's: nvcc's fatbin of NAME_kernels.cu, .incbin'ed.
    EXPECT_THAT(read_file(dir / (n + "_cuda.cpp")), HasSubstr(".incbin \\\"" + n + ".fatbin\\\""));
  }
}

TEST_F(CudaPackage, WithoutNvccNvrtcBuildsTheDeviceCode) {
  try {
    cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  }
  fs::path dir = package("mlp", "mlp", "KILN_NVCC=none");
  EXPECT_TRUE(fs::exists(dir / "mlp.cubin"));
  EXPECT_FALSE(fs::exists(dir / "mlp.fatbin"));
  EXPECT_TRUE(fs::exists(dir / "libmlp.so"));
  EXPECT_THAT(read_file(dir / "mlp_cuda.cpp"), HasSubstr(".incbin \\\"mlp.cubin\\\""));
}

// Two CUDA packages in one program built with CMake from their folders alone (nothing of Kiln,
// nothing of CUDA at build time); create reports KILN_NO_DEVICE with the reason when there is no
// driver, and the CLI says the same in one line.
TEST_F(CudaPackage, PackagesBuildWithCMakeAndCreateReportsAMissingDriver) {
  for (const char* model : {"mlp", "attention"}) package(model, model);
  std::ofstream(dir_ / "CMakeLists.txt") << "cmake_minimum_required(VERSION 3.16)\n"
                                            "project(cuda_packages LANGUAGES C CXX)\n"
                                            "add_subdirectory(mlp)\nadd_subdirectory(attention)\n"
                                            "add_executable(app app.cpp)\n"
                                            "target_link_libraries(app PRIVATE mlp attention)\n";
  std::ofstream(dir_ / "app.cpp") << R"(#include "attention.h"
#include "mlp.h"
#include <cstdio>
int main(int argc, char** argv) {
  mlp_model* m = nullptr;
  KilnStatus status = mlp_create(argv[1], &m);
  std::printf("mlp: %d %s\n", int(status), mlp_last_error());
  try {
    attention::Model a(argv[2]);
    std::printf("attention: created %s\n", a.isa().c_str());
  } catch (const attention::Error& e) {
    std::printf("attention: %d %s\n", int(e.status()), e.what());
  }
  std::printf("inputs: %s %s %s\n", mlp_input(0)->shape, attention_input(0)->name, attention_output(0)->name);
  mlp_destroy(m);
  return 0;
}
)";
  std::string log;
  ASSERT_EQ(shell("cmake -S " + dir_.string() + " -B " + (dir_ / "app-build").string() + " && cmake --build " +
                      (dir_ / "app-build").string() + " -j2",
                  &log),
            0)
      << log;
  std::string output;
  ASSERT_EQ(shell(kNoDriver + " " + (dir_ / "app-build" / "app").string() + " " + (dir_ / "mlp" / "mlp.safetensors").string() +
                      " " + (dir_ / "attention" / "attention.safetensors").string(),
                  &output),
            0)
      << output;
  EXPECT_THAT(output, HasSubstr("mlp: 6 mlp: create: no CUDA device: the CUDA driver (libcuda.so.1) was not found: "
                                "$KILN_CUDA_DRIVER_LIBRARY is /nonexistent/libcuda.so.1"));
  EXPECT_THAT(output, HasSubstr("attention: 6 attention: create: no CUDA device: "));
  EXPECT_THAT(output, HasSubstr("inputs: [s0, 784] x "));
  expect_user_error(kiln("run " + (dir_ / "mlp").string() + " --random-inputs 1 --dim s0=2", kNoDriver),
                    "mlp: create: no CUDA device: the CUDA driver (libcuda.so.1) was not found");
  if (std::optional<std::string> reason = cuda::cuda_unavailable_reason()) {
    // This machine has no GPU: the default driver search says why, as Kiln's runtime does.
    CliResult run = kiln("run " + (dir_ / "mlp").string() + " --random-inputs 1 --dim s0=2");
    expect_user_error(run, "mlp: create: no CUDA device: ");
  }
}

// The generated launch sequence of each sample, run on the CPU emulation through the package's
// own C API (`kiln run DIR` loads the package's library), against the interpreter.
TEST_F(CudaPackage, TheLaunchSequenceRunsOnTheCpuEmulationAsTheInterpreterRunsTheModel) {
  for (const char* model : {"mlp", "attention", "cnn"}) {
    SCOPED_TRACE(model);
    std::string environment;
    fs::path dir = emulated(package(model, model), model, environment);
    std::string inputs = " --random-inputs 7 --dim s0=3";
    expect_close(run_outputs(dir.string() + inputs, std::string(model) + "_package", environment),
                 run_outputs(cli_test::sample_model(model) + inputs, std::string(model) + "_interpreter"), 1e-4);
    // A second run with other sizes reuses (and grows) the model's device buffers.
    CliResult bench = kiln("bench " + dir.string() + " -n 2 --warmup 1 --dim s0=5", environment);
    EXPECT_EQ(bench.status, 0) << bench.err;
  }
}

// Fallback nodes (ops the code generator does not lower) run on the host in the launch
// sequence: their buffers copied from the device, the portable kernels NAME.cpp carries (as a
// cpu package's), the results copied back. The inplace sample (index_put) and every fallback op
// of tests/data/packages/fallback_ops.kiln, on the CPU emulation, against the interpreter; a
// fallback's run-time error is the interpreter's message.
TEST_F(CudaPackage, FallbackNodesRunOnTheHost) {
  std::string environment;
  fs::path inplace = emulated(package("inplace", "inplace"), "inplace", environment);
  std::string host = read_file(inplace / "inplace_cuda.cpp");
  EXPECT_THAT(host, HasSubstr("fallback node index_put"));
  EXPECT_THAT(host, HasSubstr("run.to_host("));
  EXPECT_THAT(read_file(inplace / "inplace.cpp"), HasSubstr("namespace fallback_kernels = inplace_fallback_kernels;"));
  expect_close(run_outputs(inplace.string() + " --random-inputs 3", "inplace_package", environment),
               run_outputs(cli_test::sample_model("inplace") + " --random-inputs 3", "inplace_interpreter"), 1e-6);

  std::string model = (fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "packages" / "fallback_ops.kiln").string();
  fs::path built = dir_ / "fallback_ops";
  CliResult compiled = kiln("compile " + model + " --target cuda --sm 80 -o " + built.string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  fs::path dir = emulated(built, "fallback_ops", environment);
  for (const char* size : {"2", "5"}) {
    SCOPED_TRACE(std::string("s0=") + size);
    std::string inputs = std::string(" --random-inputs 7 --dim s0=") + size;
    std::map<std::string, Tensor> expected = run_outputs(model + inputs, std::string("interp_") + size);
    EXPECT_EQ(expected.size(), 19u);
    expect_close(run_outputs(dir.string() + inputs, std::string("package_") + size, environment), expected, 1e-5);
  }
  // A fallback's failure (an index out of range) is the interpreter's message.
  fs::path scatter = dir_ / "scatter_ones.kiln";
  std::ofstream(scatter) << R"(graph():
    %x : f32[2, 6] [num_users=1] = placeholder[target=x]
    %index : i64[2, 2] [num_users=1] = placeholder[target=index]
    %scatter : f32[2, 6] [num_users=1] = call_function[target=scatter](args = (%x, 1, %index, 1.0), kwargs = {})
    return (scatter,)
)";
  compiled = kiln("compile " + scatter.string() + " --target cuda --sm 80 -o " + (dir_ / "scatter_ones").string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  fs::path scatter_dir = emulated(dir_ / "scatter_ones", "scatter_ones", environment);
  write_npy((dir_ / "x.npy").string(), Tensor::zeros({2, 6}, DType::f32));
  Tensor index = Tensor::zeros({2, 2}, DType::i64);
  index.data<int64_t>()[3] = 9;
  write_npy((dir_ / "bad.npy").string(), index);
  std::string bad = " --input x=" + (dir_ / "x.npy").string() + " --input index=" + (dir_ / "bad.npy").string();
  expect_user_error(kiln("run " + scatter_dir.string() + bad, environment),
                    "scatter_ones: run: node %scatter (scatter): scatter(): index 9 is out of bounds for dimension of size 6");
}

// The sampling ops' fallback nodes (grid_sample, roi_align, deform_conv2d) run on the host as
// the others do: a model of the three, with a symbolic batch, on the CPU emulation against the
// interpreter; a roi batch index out of range is the interpreter's message, naming the node.
TEST_F(CudaPackage, SamplingFallbackNodesRunOnTheHost) {
  fs::path model = dir_ / "sampling.kiln";
  std::ofstream(model) << R"(graph():
    %x : f32[s0, 4, 6, 6] [num_users=4] = placeholder[target=x]
    %grid : f32[s0, 3, 3, 2] [num_users=2] = placeholder[target=grid]
    %rois : f32[3, 4] [num_users=1] = placeholder[target=rois]
    %images : i64[3] [num_users=1] = placeholder[target=images]
    %weight : f32[2, 2, 3, 3] [num_users=1] = placeholder[target=weight]
    %offset : f32[s0, 36, 4, 4] [num_users=1] = placeholder[target=offset]
    %mask : f32[s0, 18, 4, 4] [num_users=1] = placeholder[target=mask]
    %bias : f32[2] [num_users=1] = placeholder[target=bias]
    %doubled : f32[s0, 4, 6, 6] [num_users=1] = call_function[target=mul](args = (%x, 2), kwargs = {})
    %sampled : f32[s0, 4, 3, 3] [num_users=1] = call_function[target=grid_sample](args = (%doubled, %grid, "bicubic", "reflection", False), kwargs = {})
    %nearest : f32[s0, 4, 3, 3] [num_users=1] = call_function[target=grid_sample](args = (%x, %grid, "nearest", "border", True), kwargs = {})
    %pooled : f32[3, 4, 2, 2] [num_users=1] = call_function[target=roi_align](args = (%x, %rois, %images, 2, 2, 0, 1.0, "avg", True), kwargs = {})
    %deformed : f32[s0, 2, 4, 4] [num_users=1] = call_function[target=deform_conv2d](args = (%x, %weight, %offset, %mask, %bias, [1, 1], [0, 0], [1, 1], 2, 2), kwargs = {})
    %relu : f32[s0, 2, 4, 4] [num_users=1] = call_function[target=relu](args = (%deformed,), kwargs = {})
    return (sampled, nearest, pooled, relu)
)";
  fs::path built = dir_ / "sampling";
  CliResult compiled = kiln("compile " + model.string() + " --target cuda --sm 80 -o " + built.string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  EXPECT_THAT(read_file(built / "sampling_cuda.cpp"), HasSubstr("fallback node sampled"));
  std::string environment;
  fs::path dir = emulated(built, "sampling", environment);
  write_npy((dir_ / "rois.npy").string(),
            Tensor::from_doubles({3, 4}, std::vector<double>{0, 0, 4, 4, 1.5, 2, 5.5, 5, -1, 3, 2, 7}, DType::f32));
  write_npy((dir_ / "images.npy").string(), Tensor::from_doubles({3}, std::vector<double>{1, 0, 1}, DType::i64));
  std::string boxes = " --input rois=" + (dir_ / "rois.npy").string() + " --input images=";
  for (const char* size : {"2", "3"}) {
    SCOPED_TRACE(std::string("s0=") + size);
    std::string inputs = boxes + (dir_ / "images.npy").string() + " --random-inputs 7 --dim s0=" + size;
    std::map<std::string, Tensor> expected = run_outputs(model.string() + inputs, std::string("interp_") + size);
    EXPECT_EQ(expected.size(), 4u);
    expect_close(run_outputs(dir.string() + inputs, std::string("package_") + size, environment), expected, 1e-5);
  }
  write_npy((dir_ / "bad.npy").string(), Tensor::from_doubles({3}, std::vector<double>{1, 0, 2}, DType::i64));
  std::string bad = boxes + (dir_ / "bad.npy").string() + " --random-inputs 7 --dim s0=2";
  const std::string message = "node %pooled (roi_align): roi_align: batch index 2 of box 2 is out of range for a batch of 2";
  expect_user_error(kiln("run " + model.string() + bad), message);
  expect_user_error(kiln("run " + dir.string() + bad, environment), "sampling: run: " + message);
}

// The exported program of in-place view writes (tests/data/pt2/inplace_views.pt2: index_put
// runs on the host) as a CUDA package, through kiln::Package on the CPU emulation: PyTorch's
// outputs under `kiln run`'s names, and the input y written in place as the program writes it.
TEST_F(CudaPackage, InPlaceWritesReachTheCallersInputs) {
  fs::path data = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "pt2";
  std::string model = (data / "inplace_views.pt2").string();
  CliResult compiled = kiln("compile " + model + " --target cuda --sm 80 -o " + (dir_ / "inplace_views").string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  std::string environment;
  fs::path dir = emulated(dir_ / "inplace_views", "inplace_views", environment);
  PackageManifest manifest = read_package_manifest(dir / "manifest.json");
  ASSERT_EQ(manifest.outputs.size(), 3u);
  EXPECT_EQ(manifest.outputs[2].name, "mul");
  EXPECT_EQ(manifest.mutated_inputs, std::vector<std::string>{"y"});
  const std::string variable = "KILN_TEST_EMULATION_LIBRARY=";
  ASSERT_EQ(environment.rfind(variable, 0), 0u);
  ASSERT_EQ(setenv("KILN_TEST_EMULATION_LIBRARY", environment.substr(variable.size()).c_str(), 1), 0);
  std::map<std::string, Tensor> inputs = compiler::model_sample_inputs(model);
  for (auto& [name, tensor] : inputs) tensor = tensor.clone();
  std::vector<Tensor> outputs = Package::load(dir).run(inputs);
  unsetenv("KILN_TEST_EMULATION_LIBRARY");
  ASSERT_EQ(outputs.size(), 3u);
  auto expect_near = [](const Tensor& got, const Tensor& want, const std::string& what) {
    ASSERT_EQ(got.sizes(), want.sizes()) << what;
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.flat_double(i), want.flat_double(i), 1e-6 * (1 + std::fabs(want.flat_double(i)))) << what << " " << i;
  };
  for (size_t i = 0; i < outputs.size(); ++i)
    expect_near(outputs[i], read_npy((data / "inplace_views" / ("expected_" + std::to_string(i) + ".npy")).string()),
                "output " + std::to_string(i));
  expect_near(inputs.at("y"), read_npy((data / "inplace_views" / "after_y.npy").string()), "y after the run");
}

// --embed-weights: the weights compiled into the library, as in a cpu package.
TEST_F(CudaPackage, EmbeddedWeightsNeedNoWeightsFile) {
  std::string environment;
  fs::path dir = emulated(package("mlp", "embedded", "", "--embed-weights --name embedded"), "embedded", environment);
  fs::remove(dir / "embedded.safetensors");
  std::string inputs = " --random-inputs 2 --dim s0=4";
  expect_close(run_outputs(dir.string() + inputs, "embedded_out", environment),
               run_outputs(cli_test::sample_model("mlp") + inputs, "interp"), 1e-4);
}

// The host code's guards are the C++ backend's: bad inputs are refused before any launch, with
// the messages of a cpu package, and a symbol outside the range the model was compiled for
// (the graph signature's, from torch.export's range constraints) is named with its range.
TEST_F(CudaPackage, TheGuardsRefuseBadInputsBeforeAnyLaunch) {
  std::string text = read_file(cli_test::sample_model("mlp"));
  std::ofstream(dir_ / "ranged.kiln") << text << "\nRange constraints: {s0: VR[2, 16]}\n";
  fs::copy_file(fs::path(cli_test::sample_model("mlp")).replace_extension(".safetensors"), dir_ / "ranged.safetensors");
  CliResult compiled = kiln("compile " + (dir_ / "ranged.kiln").string() + " --target cuda --sm 80 -o " + (dir_ / "ranged").string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  std::string environment;
  fs::path dir = emulated(dir_ / "ranged", "ranged", environment);
  expect_user_error(kiln("run " + dir.string() + " --random-inputs 1 --dim s0=17", environment),
                    "ranged: run: guard failed: input 'x' dim 0 is 17, outside the range [2, 16] of s0 that the model was compiled for");
  write_npy((dir_ / "wide.npy").string(), Tensor::zeros({3, 785}, DType::f32));
  expect_user_error(kiln("run " + dir.string() + " --input x=" + (dir_ / "wide.npy").string(), environment),
                    "ranged: run: guard failed: input 'x' dim 1 has size 785, expected 784");
  std::string inputs = " --random-inputs 4 --dim s0=16";
  expect_close(run_outputs(dir.string() + inputs, "ranged_out", environment),
               run_outputs((dir_ / "ranged.kiln").string() + inputs, "ranged_interpreter"), 1e-4);
}

// NAME_run_device: inputs and outputs in device memory (the emulation's device memory is host
// memory), through the package's C++ class: the same numbers as NAME_run, bit for bit, with an
// input the kernels read in place (256-byte aligned) and one copied first (misaligned); an
// input the model writes in place holds its new value on the device afterwards.
TEST_F(CudaPackage, RunsOnDeviceMemoryAsOnHostMemory) {
  std::ofstream(dir_ / "accumulate.kiln") << R"(graph():
    %x : f32[s0, 8] [num_users=1] = placeholder[target=x]
    %y : f32[s0, 8] [num_users=2] = placeholder[target=y]
    %add_ : f32[s0, 8] [num_users=0] = call_function[target=add_](args = (%y, %x), kwargs = {})
    %mul : f32[s0, 8] [num_users=1] = call_function[target=mul](args = (%y, 2.0), kwargs = {})
    return (mul,)
)";
  CliResult compiled =
      kiln("compile " + (dir_ / "accumulate.kiln").string() + " --target cuda --sm 80 -o " + (dir_ / "accumulate").string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  const std::string driver = R"(#include PACKAGE_HEADER
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
// Inputs of 3 rows (their other dims from the shape's text), `offset` floats past a 256-byte
// boundary, filled by `seed`.
struct Inputs {
  std::vector<std::vector<int64_t>> sizes;
  std::vector<KilnTensor> tensors;
  std::vector<void*> blocks;
  ~Inputs() { for (void* block : blocks) free(block); }
};
void make(Inputs& in, int offset) {
  for (const KilnTensorInfo& info : PACKAGE::Model::input_infos()) {
    std::vector<int64_t> sizes = {3};
    std::string shape = info.shape;
    for (size_t at = shape.find(", "); at != std::string::npos; at = shape.find(", ", at + 1)) sizes.push_back(atoll(shape.c_str() + at + 2));
    in.sizes.push_back(sizes);
  }
  for (size_t i = 0; i < in.sizes.size(); ++i) {
    int64_t count = 1;
    for (int64_t size : in.sizes[i]) count *= size;
    void* block = aligned_alloc(256, size_t((count + offset) * 4 + 255) / 256 * 256);
    in.blocks.push_back(block);
    float* data = static_cast<float*>(block) + offset;
    for (int64_t e = 0; e < count; ++e) data[e] = float((e * 37 + int64_t(i) * 11) % 101 - 50) / 25.0f;
    in.tensors.push_back({data, in.sizes[i].data(), nullptr, int32_t(in.sizes[i].size()), KILN_F32});
  }
}
std::vector<float> values(const KilnTensor& t) {
  int64_t count = 1;
  for (int32_t d = 0; d < t.rank; ++d) count *= t.sizes[d];
  const float* data = static_cast<const float*>(t.data);
  return std::vector<float>(data, data + count);
}
int main(int, char** argv) {
  PACKAGE::Model model(argv[1]);
  Inputs host;
  make(host, 0);
  std::vector<KilnTensor> outputs = model.run(host.tensors);
  std::vector<std::vector<float>> expected, expected_inputs;
  for (const KilnTensor& t : outputs) expected.push_back(values(t));
  for (const KilnTensor& t : host.tensors) expected_inputs.push_back(values(t));
  for (int offset : {0, 1}) {
    Inputs device;
    make(device, offset);
    outputs = model.run_device(device.tensors);
    for (size_t o = 0; o < outputs.size(); ++o)
      if (values(outputs[o]) != expected[o]) return printf("offset %d: output %zu differs from run's\n", offset, o), 1;
    for (size_t i = 0; i < device.tensors.size(); ++i)
      if (values(device.tensors[i]) != expected_inputs[i]) return printf("offset %d: input %zu differs from run's\n", offset, i), 1;
  }
  printf("ok %zu outputs\n", expected.size());
  return 0;
}
)";
  std::ofstream(dir_ / "device_driver.cpp") << driver;
  for (const char* n : {"mlp", "accumulate"}) {
    SCOPED_TRACE(n);
    std::string environment;
    fs::path dir = std::string(n) == "mlp" ? emulated(package("mlp", "mlp"), "mlp", environment)
                                            : emulated(dir_ / "accumulate", "accumulate", environment);
    std::string output;
    ASSERT_EQ(shell("cd " + dir_.string() + " && c++ -std=c++17 -I" + dir.string() + " '-DPACKAGE_HEADER=\"" + n +
                        ".h\"' -DPACKAGE=" + n + " device_driver.cpp -L" + dir.string() + " -l" + n + " -Wl,-rpath," +
                        dir.string() + " -o device_" + n + " && " + environment + " ./device_" + n + " " +
                        (dir / (std::string(n) + ".safetensors")).string(),
                    &output),
              0)
        << output;
    EXPECT_THAT(output, HasSubstr("ok 1 outputs"));
  }
}

// On a GPU: every sample's package, through its own library, to the interpreter's numbers
// (cuBLAS sums in another order than the interpreter: 1e-3).
TEST_F(CudaPackage, OnAGpuEverySampleRunsAsTheInterpreterRunsTheModel) {
  if (std::optional<std::string> reason = cuda::cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  int sm = cuda::cuda_driver().device_info(0).sm();
  for (const char* model : kSamples) {
    SCOPED_TRACE(model);
    fs::path out = dir_ / model;
    CliResult result = kiln("compile " + cli_test::sample_model(model) + " --target cuda --sm " + std::to_string(sm) + " -o " +
                            out.string());
    ASSERT_EQ(result.status, 0) << result.err;
    std::string inputs = " --random-inputs 11 --dim s0=3";
    expect_close(run_outputs(out.string() + inputs, std::string(model) + "_gpu"),
                 run_outputs(cli_test::sample_model(model) + inputs, std::string(model) + "_interpreter"), 1e-3);
  }
}

}  // namespace
}  // namespace kiln
