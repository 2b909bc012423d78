// The cpu target's package step (compiler/package_writer.h): writes the sources of
// codegen/package/package_sources.h for the module the cpu emitter printed, the weights file, and
// the manifest, then builds libNAME.so and libNAME.a with the system toolchain
// (compiler/targets/cpu_toolchain.h): each instruction set's kernels and the API in parallel,
// with -fvisibility=hidden so the shared library exports the C API alone.
#pragma once

#include <vector>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/package/package_sources.h"
#include "compiler/package_writer.h"
#include "runtime/artifact.h"

namespace kiln::compiler {

// What the cpu emitter made, as the package needs it.
struct CpuPackageCode {
  const codegen::CppModule* module = nullptr;
  std::vector<codegen::PackageTensor> inputs;   // with their shapes
  std::vector<codegen::PackageTensor> outputs;
  std::vector<ArtifactParameter> parameters;    // in the kernels' order
  std::vector<std::string> symbols;
  size_t kernel_count = 0;
};

// `portable`: with both kinds of convolutions (PackageOptions::Convolutions::both), the im2col +
// GEMM kernels beside `code`'s library ones; they must take the same inputs, parameters, symbols
// and fallback nodes (the same graph lowered two ways), else the package gets them alone.
PackageResult write_cpu_package(const CpuPackageCode& code, const ir::Graph& graph, const PackageOptions& options,
                                const CpuPackageCode* portable = nullptr);

}  // namespace kiln::compiler
