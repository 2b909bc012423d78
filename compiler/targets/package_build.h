// What the targets' package steps share (compiler/package_writer.h; compiler/targets/
// cpu_package.h, cuda_package.h): the output folder, the weights file (every parameter the
// kernels take, where each lies in it, its checksum), the manifest's fields common to all
// targets, and building the sources into libNAME.so and libNAME.a with the system toolchain
// (compiler/targets/cpu_toolchain.h): the translation units in parallel, -fvisibility=hidden and
// a version script so that the shared library exports the C API alone.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/loop_ir.h"
#include "codegen/package/package_sources.h"
#include "ir/graph.h"
#include "runtime/artifact.h"
#include "runtime/package_manifest.h"

namespace kiln::compiler {

// A package's inputs or outputs (buffers `ids` of `program`) with their shapes as text ("s0",
// "784", "s0*4").
std::vector<codegen::PackageTensor> package_tensors(const codegen::LoopProgram& program, const std::vector<int>& ids);

// Sets spec.outputs, kernel_outputs, output_positions and write_backs (codegen/package/
// package_sources.h) from the kernels' outputs, which are `graph`'s (the simplified graph, whose
// signature marks the mutation outputs): the outputs are the others, in order, named
// `output_names` (as `kiln run` names the model's outputs: PackageOptions::output_names; the
// kernels' names when empty); a mutation of an input (spec.inputs) or of one of the kernels'
// `parameters` becomes a write-back. `device_parameters`: the parameters live on a device,
// where a buffer's write-back is refused (kiln::Error naming it).
void set_package_outputs(codegen::PackageSpec& spec, const std::vector<codegen::PackageTensor>& kernel_outputs,
                         const ir::Graph& graph, const std::vector<std::string>& output_names,
                         const std::vector<ArtifactParameter>& parameters, bool device_parameters);

// Throws kiln::Error when `directory` is a file, or a folder that is not empty (without `overwrite`).
void prepare_package_directory(const std::filesystem::path& directory, bool overwrite);

// The weights file of `parameters` (the kernels' order), taken from `graph`'s parameters, and
// where each lies in it.
struct PackageWeights {
  std::string bytes;
  std::vector<codegen::PackageParameter> parameters;  // kernel order
};
PackageWeights package_weights(const std::vector<ArtifactParameter>& parameters, const ir::Graph& graph, const std::string& name);

// The spec's weights fields (parameters, bytes, checksum).
void set_package_weights(codegen::PackageSpec& spec, const PackageWeights& weights);

// The manifest's fields every target fills alike (all but isas and requires).
PackageManifest common_package_manifest(const codegen::PackageSpec& spec, const std::vector<ArtifactParameter>& parameters,
                                        const std::vector<std::string>& symbols);

struct PackageUnit {
  std::string source;              // in the package folder
  std::vector<std::string> flags;  // the compiler's, before -fvisibility=hidden -c
};
// Compiles `units` (in parallel), links libNAME.so (with `link_flags` after the objects) and
// archives libNAME.a in `directory`. Objects and logs go to DIR/build/, removed when all succeeded.
void build_package_libraries(const std::filesystem::path& directory, const std::string& name,
                             const std::vector<PackageUnit>& units, const std::vector<std::string>& link_flags);

}  // namespace kiln::compiler
