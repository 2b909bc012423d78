// Packages: what `kiln compile MODEL -o DIR` writes, a folder an app builds with nothing from
// Kiln (issue 15). The driver (compiler/compile_driver.cpp) generates the code as for any compile
// (passes -> lower -> schedule -> emit) and hands it to the target's package step (the cpu
// target's: compiler/targets/cpu_package.h; the cuda target's, the same API over CUDA kernels:
// compiler/targets/cuda_package.h), which writes
//   NAME.h, NAME.cpp, NAME_kernels.inc, NAME_<isa>.cpp, CMakeLists.txt  (codegen/package/package_sources.h)
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

struct PackageOptions {
  std::filesystem::path directory;
  std::string name;    // a C identifier; every exported symbol starts with it
  std::string source;  // the model file, named in the sources' comments
  // The instruction sets built, best first; create picks the best the CPU runs. Empty: all
  // three (avx512, avx2, scalar).
  std::vector<Isa> isas;
  bool embed_weights = false;  // also compile the weights into the libraries
  // Convolutions call the target's convolution library (the cpu target's oneDNN, `--onednn`),
  // which the package then links and its manifest requires. Default: im2col + GEMM, so that the
  // package needs only a C++ compiler, OpenMP and BLAS.
  bool library_convolution = false;
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
};

// The default package name for a model file: its stem, made a C identifier ("resnet-18.onnx"
// -> "resnet_18"; a leading digit gets "m_").
std::string default_package_name(const std::string& model_path);

// Compiles `graph` (with `options`: target, freeze, fuse) into a package. Throws kiln::Error for
// a bad name, a folder that is not empty (without overwrite), a target without packages, a
// model with fallback nodes a package cannot compute (codegen/package/package_fallbacks.h
// lists those it can), and a failed build.
PackageResult write_package(const ir::Graph& graph, const CompileOptions& options, const PackageOptions& package);

}  // namespace kiln::compiler
