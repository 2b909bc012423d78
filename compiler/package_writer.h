// Packages: what `kiln compile MODEL -o DIR` writes, a folder an app builds with nothing from
// Kiln (issue 15). The driver (compiler/compile_driver.cpp) generates the code as for any compile
// (passes -> lower -> schedule -> emit) and hands it to the target's package step (the cpu
// target's: compiler/targets/cpu_package.h; the cuda target's, the same API over CUDA kernels:
// compiler/targets/cuda_package.h), which writes
//   NAME.h, NAME.cpp, NAME_kernels.inc, NAME_<isa>.cpp, CMakeLists.txt  (codegen/package/package_sources.h)
//   NAME_kernels_portable.inc   with both kinds of convolutions: the im2col + GEMM kernels
//   NAME.safetensors   every parameter and folded constant the kernels take, checksummed
//   libNAME.so, libNAME.a   built here with the system compiler, one kernel build per ISA
//   manifest.json      runtime/package_manifest.h
// kiln::Package (include/kiln/package.h) loads and runs one (`kiln run DIR`, `kiln bench DIR`, apps).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kiln/compile_options.h"
#include "ir/graph.h"
#include "runtime/cpu_features.h"

namespace kiln::compiler {

struct GeneratedCode;

struct PackageOptions {
  std::filesystem::path directory;
  std::string name;    // a C identifier; every exported symbol starts with it
  std::string source;  // the model file, named in the sources' comments
  // The instruction sets built, best first; create picks the best the CPU runs. Empty: all
  // three (avx512, avx2, scalar).
  std::vector<Isa> isas;
  bool embed_weights = false;  // also compile the weights into the libraries
  // How the package's convolutions run: portable (im2col + GEMM: the package needs only a C++
  // compiler, OpenMP and BLAS; `--portable`), library (the target's convolution library, the cpu
  // target's oneDNN, which the package then needs; `--onednn`), or both, the default where the
  // target has a library and the model convolves: both kernel sets ship, the libraries built here
  // and a CMake build that finds the library run the library's (as `kiln run` does), a CMake
  // build without it the portable ones.
  enum class Convolutions { portable, library, both };
  Convolutions convolutions = Convolutions::both;
  // With both: the portable kernels (the driver sets it; null when they are the only ones).
  const GeneratedCode* portable_code = nullptr;
  // The names of the model's outputs as `kiln run` prints them (those of the graph as loaded,
  // ir::Graph::output_names); write_package sets them.
  std::vector<std::string> output_names;
  bool overwrite = false;      // write into a folder that is not empty
  bool build = true;           // false: the sources, weights and manifest only
};

struct PackageResult {
  std::filesystem::path directory;
  std::vector<std::string> files;  // written, in the folder
  size_t kernel_count = 0;
  int64_t weights_bytes = 0;
  bool portable_kernels = false;  // im2col + GEMM convolutions ship beside oneDNN's
};

// The default package name for a model file: its stem, made a C identifier ("resnet-18.onnx"
// -> "resnet_18"; a leading digit gets "m_", a C++ keyword or other reserved name "_model":
// "static.pt2" -> "static_model").
std::string default_package_name(const std::string& model_path);

// Compiles `graph` (with `options`: target, freeze, fuse) into a package. Throws kiln::Error for
// a bad name, a folder that is not empty (without overwrite), a target without packages, a
// model with fallback nodes a package cannot compute (codegen/package/package_fallbacks.h
// lists those it can), and a failed build.
PackageResult write_package(const ir::Graph& graph, const CompileOptions& options, const PackageOptions& package);

}  // namespace kiln::compiler
