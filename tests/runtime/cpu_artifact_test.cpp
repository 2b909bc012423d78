// Tests for runtime/cpu/cpu_artifact (the cpu target's loader): a module written by hand
// against runtime/compiled_abi.h (y = 2*x + bias and z = row sums of y, x: f32[s0, 3] of any
// strides, one symbol s0, guards on dtype, rank and the static size) is compiled at test time
// with $CXX (default c++) and run:
// results against values computed here, non-contiguous inputs, the workspace (aligned, kept,
// grown), guard failures, run failures, every input and parameter check, fallbacks (writing in
// place, returning a tensor, throwing), and load errors (missing or garbled manifest, wrong ABI
// in the manifest or the module, a missing symbol, an ISA this CPU lacks). Skipped, with the
// reason, only where no C++ compiler is found.
#include "runtime/cpu/cpu_artifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/compiled_abi.h"
#include "runtime/cpu_features.h"
#include "kiln/error.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The hand-written module. -DWITH_FALLBACK: y's first term comes from fallback #0 (given x,
// filling a [s0, 3] buffer in the workspace) instead of 2*x. -DMODULE_ABI=N: reports ABI N.
// -DOMIT_RUN: exports no kiln_run. s0 == 7 makes kiln_run fail (to test the error path).
const char* kModuleSource = R"SRC(
#include "runtime/compiled_abi.h"
#include <stdint.h>
#include <stdio.h>
#ifndef MODULE_ABI
#define MODULE_ABI kKilnAbiVersion
#endif
extern "C" {
int32_t kiln_abi_version(void) { return MODULE_ABI; }
int32_t kiln_bind(const KilnTensorDesc* inputs, int64_t num_inputs, int64_t* symbols, char* error, int64_t capacity) {
  if (num_inputs != 1) { snprintf(error, capacity, "expected 1 input, got %lld", (long long)num_inputs); return 1; }
  const KilnTensorDesc* x = &inputs[0];
  if (x->dtype != 0) { snprintf(error, capacity, "x.dtype == f32 (got dtype code %d)", (int)x->dtype); return 1; }
  if (x->rank != 2) { snprintf(error, capacity, "x.dim() == 2 (got %d)", (int)x->rank); return 1; }
  if (x->sizes[1] != 3) { snprintf(error, capacity, "x.size(1) == 3 (got %lld)", (long long)x->sizes[1]); return 1; }
  symbols[0] = x->sizes[0];
  return 0;
}
void kiln_output_sizes(const int64_t* symbols, int64_t* sizes) { sizes[0] = symbols[0]; sizes[1] = 3; sizes[2] = symbols[0]; }
int64_t kiln_workspace_bytes(const int64_t* symbols) { return symbols[0] * 3 * (int64_t)sizeof(float); }
#ifndef OMIT_RUN
int32_t kiln_run(const KilnRunArgs* args) {
  if ((uintptr_t)args->workspace % 64 != 0) { snprintf(args->error, args->error_capacity, "workspace not aligned"); return 1; }
  const int64_t s0 = args->symbols[0];
  if (s0 == 7) { snprintf(args->error, args->error_capacity, "index out of range (s0 == 7)"); return 1; }
  const KilnTensorDesc* x = &args->inputs[0];
  const float* xd = (const float*)x->data;
  float* first = (float*)args->workspace;
#ifdef WITH_FALLBACK
  int64_t sizes[2] = {s0, 3}, strides[2] = {3, 1};
  KilnTensorDesc out = {first, sizes, strides, 0, 2};
  if (args->fallback(args->fallback_state, 0, x, 1, &out, 1, args->error, args->error_capacity) != 0) return 1;
#else
  for (int64_t i = 0; i < s0; ++i)
    for (int64_t j = 0; j < 3; ++j) first[i * 3 + j] = 2 * xd[i * x->strides[0] + j * x->strides[1]];
#endif
  const float* bias = (const float*)args->parameters[0];
  float* y = (float*)args->outputs[0];
  float* z = (float*)args->outputs[1];
  for (int64_t i = 0; i < s0; ++i) {
    float sum = 0;
    for (int64_t j = 0; j < 3; ++j) { y[i * 3 + j] = first[i * 3 + j] + bias[j]; sum += y[i * 3 + j]; }
    z[i] = sum;
  }
  return 0;
}
#endif
}
)SRC";

struct Variant {
  const char* name;
  const char* defines;
  std::vector<std::string> fallbacks;
};

const Variant kVariants[] = {
    {"plain", "", {}},
    {"fallback", "-DWITH_FALLBACK", {"triple_1"}},
    {"module_abi_2", "-DMODULE_ABI=2", {}},
    {"no_run", "-DOMIT_RUN", {}},
};

std::string compiler() {
  const char* cxx = std::getenv("CXX");
  return cxx != nullptr && *cxx != '\0' ? cxx : "c++";
}

ArtifactManifest test_manifest(const Variant& variant) {
  ArtifactManifest manifest;
  manifest.kiln_version = "0.1.0";
  manifest.isa = Isa::scalar;
  manifest.key = "00112233445566778899aabbccddeeff";
  manifest.inputs = {{"x", DType::f32, 2}};
  manifest.outputs = {{"y", DType::f32, 2}, {"z", DType::f32, 1}};
  manifest.parameters = {{"bias", DType::f32, {3}}};
  manifest.symbols = {"s0"};
  manifest.fallbacks = variant.fallbacks;
  return manifest;
}

class CpuArtifactTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("kiln_artifact_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    if (std::system(("command -v " + compiler() + " >/dev/null 2>&1").c_str()) != 0) {
      skip_reason_ = "no C++ compiler found (tried '" + compiler() + "'; set CXX)";
      return;
    }
    std::string commands;
    for (const Variant& variant : kVariants) {
      fs::path dir = root_ / variant.name;
      fs::create_directories(dir);
      std::ofstream(dir / "module.cpp") << kModuleSource;
      write_artifact_manifest(dir / "manifest.json", test_manifest(variant));
      commands += compiler() + " -shared -fPIC -O1 -I" + std::string(KILN_SOURCE_DIR) + " " + variant.defines + " -o " +
                  (dir / "module.so").string() + " " + (dir / "module.cpp").string() + " 2>>" +
                  (root_ / "compile.log").string() + " & ";
    }
    commands += "wait";
    std::system(commands.c_str());
    for (const Variant& variant : kVariants)
      if (!fs::exists(root_ / variant.name / "module.so")) compile_error_ = "cannot compile the test module: " + commands;
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(compile_error_.empty()) << compile_error_;
  }

  static fs::path dir(const char* variant) { return root_ / variant; }
  // A copy of a variant's directory whose manifest is edited by `edit`.
  static fs::path edited(const char* variant, const std::string& name, const std::function<void(ArtifactManifest&)>& edit) {
    fs::path copy = root_ / name;
    fs::remove_all(copy);
    fs::copy(dir(variant), copy);
    ArtifactManifest manifest = read_artifact_manifest(copy / "manifest.json");
    edit(manifest);
    write_artifact_manifest(copy / "manifest.json", manifest);
    return copy;
  }

  static Tensor matrix(int64_t rows, int64_t columns, double scale) {
    std::vector<double> values;
    for (int64_t i = 0; i < rows * columns; ++i) values.push_back(scale * double(i % 13) - 1.5);
    return Tensor::from_doubles({rows, columns}, values, DType::f32);
  }
  static Tensor bias() { return Tensor::from_vector<double>({3}, {0.5, -1.0, 2.0}, DType::f32); }

  // y = factor*x + bias, z = row sums of y, computed element by element here.
  static void expect_results(const std::vector<Tensor>& outputs, const Tensor& x, double factor) {
    ASSERT_EQ(outputs.size(), 2u);
    const int64_t rows = x.size(0);
    EXPECT_THAT(outputs[0].sizes(), ElementsAre(rows, 3));
    EXPECT_THAT(outputs[1].sizes(), ElementsAre(rows));
    EXPECT_TRUE(outputs[0].is_contiguous());
    const double b[3] = {0.5, -1.0, 2.0};
    for (int64_t i = 0; i < rows; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < 3; ++j) {
        int64_t index[2] = {i, j};
        double expected = factor * x.item_double(index) + b[j];
        EXPECT_FLOAT_EQ(float(outputs[0].item_double(index)), float(expected)) << i << "," << j;
        sum += expected;
      }
      int64_t row[1] = {i};
      EXPECT_NEAR(outputs[1].item_double(row), sum, 1e-4) << i;
    }
  }

  static std::string error_of(const std::function<void()>& action) {
    try {
      action();
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  }

  static fs::path root_;
  static std::string skip_reason_;
  static std::string compile_error_;
};

fs::path CpuArtifactTest::root_;
std::string CpuArtifactTest::skip_reason_;
std::string CpuArtifactTest::compile_error_;

TEST_F(CpuArtifactTest, LoadsTheManifest) {
  CpuArtifact artifact = CpuArtifact::load(dir("plain"));
  EXPECT_EQ(artifact.directory(), dir("plain"));
  EXPECT_EQ(artifact.isa(), Isa::scalar);
  EXPECT_EQ(artifact.key(), "00112233445566778899aabbccddeeff");
  ASSERT_EQ(artifact.inputs().size(), 1u);
  EXPECT_EQ(artifact.inputs()[0].name, "x");
  ASSERT_EQ(artifact.outputs().size(), 2u);
  EXPECT_EQ(artifact.outputs()[1].name, "z");
  EXPECT_EQ(artifact.parameters()[0].name, "bias");
  EXPECT_THAT(artifact.symbols(), ElementsAre("s0"));
  EXPECT_TRUE(artifact.fallbacks().empty());
  EXPECT_EQ(artifact.manifest().source, "module.cpp");
}

TEST_F(CpuArtifactTest, RunsAndKeepsTheWorkspace) {
  CpuArtifact artifact = CpuArtifact::load(dir("plain"));
  EXPECT_EQ(artifact.workspace_capacity(), 0u);
  Tensor x = matrix(4, 3, 0.25);
  expect_results(artifact.run({x}, {bias()}), x, 2.0);
  EXPECT_GE(artifact.workspace_capacity(), 4u * 3 * sizeof(float));

  Tensor big = matrix(1000, 3, 1.0);
  expect_results(artifact.run({big}, {bias()}), big, 2.0);
  const size_t grown = artifact.workspace_capacity();
  EXPECT_GE(grown, 1000u * 3 * sizeof(float));
  Tensor one = matrix(1, 3, 3.0);
  expect_results(artifact.run({one}, {bias()}, {}, 2), one, 2.0);
  EXPECT_EQ(artifact.workspace_capacity(), grown);  // kept, not shrunk

  Tensor none = Tensor::empty({0, 3}, DType::f32);
  std::vector<Tensor> outputs = artifact.run({none}, {bias()});
  EXPECT_THAT(outputs[0].sizes(), ElementsAre(0, 3));
  EXPECT_THAT(outputs[1].sizes(), ElementsAre(0));
}

TEST_F(CpuArtifactTest, BindReturnsTheSymbols) {
  CpuArtifact artifact = CpuArtifact::load(dir("plain"));
  EXPECT_THAT(artifact.bind({matrix(17, 3, 1.0)}), ElementsAre(17));
}

TEST_F(CpuArtifactTest, NonContiguousInputsPassTheirStrides) {
  CpuArtifact artifact = CpuArtifact::load(dir("plain"));
  Tensor x = matrix(3, 5, 0.5).transpose(0, 1);  // [5, 3], strides [1, 5]
  ASSERT_FALSE(x.is_contiguous());
  expect_results(artifact.run({x}, {bias()}), x, 2.0);
  Tensor sliced = matrix(10, 3, 1.0).slice(0, 1, 10, 3);  // rows 1, 4, 7: stride 9
  expect_results(artifact.run({sliced}, {bias()}), sliced, 2.0);
}

TEST_F(CpuArtifactTest, GuardFailuresCarryTheModuleMessage) {
  CpuArtifact artifact = CpuArtifact::load(dir("plain"));
  const std::string prefix = "guard of the compiled model in " + dir("plain").string() + " failed: ";
  auto guard_error = [&](const Tensor& x) {
    try {
      artifact.run({x}, {bias()});
    } catch (const GuardError& error) {
      return std::string(error.what());
    }
    return std::string("(no guard error)");
  };
  EXPECT_EQ(guard_error(Tensor::zeros({2, 3}, DType::i64)), prefix + "x.dtype == f32 (got dtype code 4)");
  EXPECT_EQ(guard_error(Tensor::zeros({2, 3, 1}, DType::f32)), prefix + "x.dim() == 2 (got 3)");
  EXPECT_EQ(guard_error(Tensor::zeros({2, 4}, DType::f32)), prefix + "x.size(1) == 3 (got 4)");
  EXPECT_THROW(artifact.bind({Tensor::zeros({2, 4}, DType::f32)}), GuardError);
}

TEST_F(CpuArtifactTest, ModuleFailureBecomesAnError) {
  CpuArtifact artifact = CpuArtifact::load(dir("plain"));
  EXPECT_EQ(error_of([&] { artifact.run({matrix(7, 3, 1.0)}, {bias()}); }),
            "compiled model in " + dir("plain").string() + " failed: index out of range (s0 == 7)");
  expect_results(artifact.run({matrix(6, 3, 1.0)}, {bias()}), matrix(6, 3, 1.0), 2.0);  // still usable
}

TEST_F(CpuArtifactTest, InputsAndParametersAreChecked) {
  CpuArtifact artifact = CpuArtifact::load(dir("plain"));
  const std::string where = "compiled model in " + dir("plain").string();
  Tensor x = matrix(2, 3, 1.0);
  EXPECT_EQ(error_of([&] { artifact.run({}, {bias()}); }), where + " takes 1 inputs, got 0");
  EXPECT_EQ(error_of([&] { artifact.run({x, x}, {bias()}); }), where + " takes 1 inputs, got 2");
  EXPECT_EQ(error_of([&] { artifact.run({Tensor()}, {bias()}); }), where + ": input 'x' is undefined");
  EXPECT_EQ(error_of([&] { artifact.run({x}, {}); }), where + " takes 1 parameters, got 0");
  EXPECT_EQ(error_of([&] { artifact.run({x}, {Tensor::zeros({4}, DType::f32)}); }),
            where + ": parameter 'bias' must be f32[3], got f32[4]");
  EXPECT_EQ(error_of([&] { artifact.run({x}, {Tensor::zeros({3}, DType::f64)}); }),
            where + ": parameter 'bias' must be f32[3], got f64[3]");
  Tensor strided = Tensor::zeros({6}, DType::f32).slice(0, 0, 6, 2);
  EXPECT_EQ(error_of([&] { artifact.run({x}, {strided}); }),
            where + ": parameter 'bias' must be contiguous (strides [2]); pass parameter.contiguous()");
  EXPECT_EQ(error_of([&] { artifact.run({x}, {bias()}, {}, -1); }),
            where + ": num_threads must be >= 0 (0: the OpenMP default), got -1");
}

TEST_F(CpuArtifactTest, FallbackWritesItsOutputsInPlace) {
  CpuArtifact artifact = CpuArtifact::load(dir("fallback"));
  EXPECT_THAT(artifact.fallbacks(), ElementsAre("triple_1"));
  Tensor x = matrix(3, 4, 0.5).transpose(0, 1);  // [4, 3], non-contiguous
  int calls = 0;
  FallbackHandler triple = [&](int index, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
    ++calls;
    EXPECT_EQ(index, 0);
    ASSERT_EQ(inputs.size(), 1u);
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(inputs[0].sizes(), x.sizes());
    EXPECT_EQ(inputs[0].strides(), x.strides());  // a view of the caller's memory, strides kept
    EXPECT_EQ(inputs[0].data_ptr(), x.data_ptr());
    EXPECT_THAT(outputs[0].sizes(), ElementsAre(4, 3));
    EXPECT_TRUE(outputs[0].is_contiguous());
    for_each_index(inputs[0].sizes(), [&](std::span<const int64_t> index_of) {
      outputs[0].set_double(index_of, 3 * inputs[0].item_double(index_of));
    });
  };
  expect_results(artifact.run({x}, {bias()}, triple), x, 3.0);
  EXPECT_EQ(calls, 1);
}

TEST_F(CpuArtifactTest, FallbackMayReturnNewTensors) {
  CpuArtifact artifact = CpuArtifact::load(dir("fallback"));
  Tensor x = matrix(5, 3, 1.0);
  FallbackHandler replace = [](int, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
    Tensor result = Tensor::empty(inputs[0].sizes(), DType::f32);
    for_each_index(inputs[0].sizes(), [&](std::span<const int64_t> index) {
      result.set_double(index, -1 * inputs[0].item_double(index));
    });
    outputs[0] = result;
  };
  expect_results(artifact.run({x}, {bias()}, replace), x, -1.0);

  FallbackHandler wrong_shape = [](int, const std::vector<Tensor>&, std::vector<Tensor>& outputs) {
    outputs[0] = Tensor::zeros({2, 2}, DType::f32);
  };
  EXPECT_EQ(error_of([&] { artifact.run({x}, {bias()}, wrong_shape); }),
            "compiled model in " + dir("fallback").string() +
                " failed: fallback 'triple_1' (#0) failed: the handler returned output #0 as f32[2, 2], expected f32[5, 3]");
}

TEST_F(CpuArtifactTest, FallbackExceptionsBecomeErrors) {
  CpuArtifact artifact = CpuArtifact::load(dir("fallback"));
  const std::string where = "compiled model in " + dir("fallback").string();
  Tensor x = matrix(2, 3, 1.0);
  EXPECT_EQ(error_of([&] {
              artifact.run({x}, {bias()}, [](int, const std::vector<Tensor>&, std::vector<Tensor>&) { fail("boom"); });
            }),
            where + " failed: fallback 'triple_1' (#0) failed: boom");
  EXPECT_EQ(error_of([&] {
              artifact.run({x}, {bias()},
                           [](int, const std::vector<Tensor>&, std::vector<Tensor>&) { throw std::out_of_range("oops"); });
            }),
            where + " failed: fallback 'triple_1' (#0) failed: oops");
  EXPECT_EQ(error_of([&] {
              artifact.run({x}, {bias()}, [](int, const std::vector<Tensor>&, std::vector<Tensor>&) { throw 42; });
            }),
            where + " failed: fallback 'triple_1' (#0) failed with an unknown exception");
  EXPECT_EQ(error_of([&] { artifact.run({x}, {bias()}); }),
            where + " runs 1 node(s) on the reference kernels (first: 'triple_1') and needs a fallback handler");
}

TEST_F(CpuArtifactTest, RunsFromSeveralThreads) {
  CpuArtifact artifact = CpuArtifact::load(dir("plain"));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iteration = 0; iteration < 50; ++iteration) {
        const int64_t rows = 8 + (t * 37 + iteration * 11) % 300;  // never 7, which the module fails on
        Tensor x = matrix(rows, 3, 0.5 + t);
        std::vector<Tensor> outputs = artifact.run({x}, {bias()});
        int64_t last[2] = {rows - 1, 2};
        if (outputs[0].item_double(last) != float(2 * x.item_double(last) + 2.0)) ++failures[size_t(t)];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(failures, ElementsAre(0, 0, 0, 0));
}

TEST_F(CpuArtifactTest, MissingOrGarbledManifest) {
  fs::path empty = root_ / "empty";
  fs::create_directories(empty);
  EXPECT_EQ(error_of([&] { CpuArtifact::load(empty); }),
            "no compiled artifact in " + empty.string() + ": manifest.json is missing");
  EXPECT_EQ(error_of([&] { CpuArtifact::load(root_ / "nowhere"); }),
            "no compiled artifact at " + (root_ / "nowhere").string() + ": not a directory");
  std::ofstream(empty / "manifest.json") << "{\"format\": \"kiln-artifact\", ";
  EXPECT_EQ(error_of([&] { CpuArtifact::load(empty); }), (empty / "manifest.json").string() + ": not valid JSON");
}

TEST_F(CpuArtifactTest, WrongAbiInTheManifest) {
  fs::path abi2 = edited("plain", "manifest_abi_2", [](ArtifactManifest& manifest) { manifest.abi = 2; });
  EXPECT_EQ(error_of([&] { CpuArtifact::load(abi2); }),
            "compiled artifact " + abi2.string() + " uses ABI version 2 but this Kiln loads version 1; recompile the model");
}

TEST_F(CpuArtifactTest, WrongAbiInTheModule) {
  EXPECT_EQ(error_of([&] { CpuArtifact::load(dir("module_abi_2")); }),
            "compiled artifact " + dir("module_abi_2").string() +
                ": module.so reports ABI version 2 but this Kiln loads version 1; recompile the model");
}

TEST_F(CpuArtifactTest, MissingSymbol) {
  std::string message = error_of([&] { CpuArtifact::load(dir("no_run")); });
  EXPECT_THAT(message, HasSubstr("shared library " + (dir("no_run") / "module.so").string() +
                                 " does not export symbol 'kiln_run'"));
}

TEST_F(CpuArtifactTest, MissingLibrary) {
  fs::path moved = edited("plain", "missing_library", [](ArtifactManifest& manifest) { manifest.library = "gone.so"; });
  EXPECT_THAT(error_of([&] { CpuArtifact::load(moved); }),
              HasSubstr("cannot load shared library " + (moved / "gone.so").string()));
}

TEST_F(CpuArtifactTest, InstructionSetThisCpuLacks) {
  if (host_isa() == Isa::avx512) GTEST_SKIP() << "this CPU runs every instruction set Kiln targets";
  fs::path avx512 = edited("plain", "avx512", [](ArtifactManifest& manifest) { manifest.isa = Isa::avx512; });
  EXPECT_EQ(error_of([&] { CpuArtifact::load(avx512); }),
            "compiled artifact " + avx512.string() + " was built for avx512, which this CPU cannot run (it supports " +
                std::string(isa_name(host_isa())) + "); recompile the model on this machine");
}

}  // namespace
}  // namespace kiln
