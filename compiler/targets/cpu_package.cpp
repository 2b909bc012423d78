// The cpu target's package step. See compiler/targets/cpu_package.h.
#include "compiler/targets/cpu_package.h"

#include "codegen/package/package_fallbacks.h"
#include "compiler/targets/cpu_toolchain.h"
#include "compiler/targets/package_build.h"
#include "kiln/error.h"
#include "runtime/atomic_file.h"
#include "runtime/package_manifest.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln::compiler {

namespace {

namespace fs = std::filesystem;

codegen::PackageSpec package_spec(const CpuPackageCode& code, const ir::Graph& graph, const PackageOptions& options,
                                  const PackageWeights& weights) {
  codegen::PackageSpec spec;
  spec.name = options.name;
  spec.source = options.source.empty() ? "a graph" : fs::path(options.source).filename().string();
  spec.kiln_version = KILN_VERSION;
  spec.inputs = code.inputs;
  set_package_outputs(spec, code.outputs, graph, options.output_names, code.parameters, /*device_parameters=*/false);
  set_package_weights(spec, weights);
  spec.symbol_count = int64_t(code.symbols.size());
  spec.isas = options.isas.empty() ? std::vector<Isa>{Isa::avx512, Isa::avx2, Isa::scalar} : options.isas;
  spec.embed_weights = options.embed_weights;
  spec.uses_blas = code.module->uses_blas;
  spec.uses_dnnl = code.module->uses_dnnl;
  spec.blas_library = blas_library();
  if (spec.uses_blas && spec.blas_library.empty())
    fail("the model has matrix products, and Kiln was built without a BLAS library (install libopenblas-dev and rebuild)");
  return spec;
}

PackageManifest package_manifest(const CpuPackageCode& code, const codegen::PackageSpec& spec) {
  PackageManifest m = common_package_manifest(spec, code.parameters, code.symbols);
  for (Isa isa : spec.isas) m.isas.push_back(std::string(isa_name(isa)));
  m.requires_ = {"openmp"};
  if (spec.uses_blas) m.requires_.push_back("blas");
  if (spec.uses_dnnl) m.requires_.push_back("onednn");
  return m;
}

// Each instruction set's kernels and the API, in parallel; OpenMP, the BLAS and oneDNN linked.
void build_libraries(const fs::path& directory, const codegen::PackageSpec& spec) {
  const std::string& n = spec.name;
  std::vector<PackageUnit> units;
  for (Isa isa : spec.isas) units.push_back({n + "_" + std::string(isa_name(isa)) + ".cpp", generated_code_flags(isa)});
  std::vector<std::string> api_flags = {"-O2", "-std=c++17", "-fPIC"};
  if (spec.embed_weights) api_flags.push_back("-Wa,-I" + directory.string());
  units.push_back({n + ".cpp", api_flags});
  std::vector<std::string> link = {"-fopenmp"};
  if (spec.uses_blas) link.push_back(spec.blas_library);
  if (spec.uses_dnnl) link.push_back(dnnl_library());
  build_package_libraries(directory, n, units, link);
}

// Whether two codes of one graph can share one API (NAME.cpp's tables and fallback handler).
bool same_interface(const CpuPackageCode& a, const CpuPackageCode& b) {
  auto tensors = [](const std::vector<codegen::PackageTensor>& x, const std::vector<codegen::PackageTensor>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].name != y[i].name || x[i].dtype != y[i].dtype || x[i].shape != y[i].shape) return false;
    return true;
  };
  if (!tensors(a.inputs, b.inputs) || !tensors(a.outputs, b.outputs) || a.symbols != b.symbols ||
      a.module->fallbacks != b.module->fallbacks || a.parameters.size() != b.parameters.size())
    return false;
  for (size_t i = 0; i < a.parameters.size(); ++i)
    if (a.parameters[i].name != b.parameters[i].name) return false;
  return true;
}

}  // namespace

PackageResult write_cpu_package(const CpuPackageCode& given_code, const ir::Graph& graph, const PackageOptions& given,
                                const CpuPackageCode* given_portable) {
  // Both kernel sets only when they share one interface; else the portable one alone.
  const CpuPackageCode* portable = given_portable && same_interface(given_code, *given_portable) ? given_portable : nullptr;
  const CpuPackageCode& code = given_portable && !portable ? *given_portable : given_code;
  PackageOptions options = given;
  options.directory = fs::absolute(given.directory);  // the build steps run inside it
  codegen::check_package_name(options.name);
  // Before anything is written: throws naming the fallback nodes a package cannot compute.
  std::string fallback_handler = codegen::package_fallback_handler(graph, code.module->fallbacks, options.name);
  prepare_package_directory(options.directory, options.overwrite);
  PackageWeights weights = package_weights(code.parameters, graph, options.name);
  codegen::PackageSpec spec = package_spec(code, graph, options, weights);
  spec.fallback_handler = std::move(fallback_handler);
  if (portable) {
    spec.portable_kernels = true;
    spec.uses_blas = spec.uses_blas || portable->module->uses_blas;
  }
  PackageResult result;
  result.directory = options.directory;
  result.kernel_count = code.kernel_count;
  result.weights_bytes = int64_t(weights.bytes.size());
  result.portable_kernels = spec.portable_kernels;
  auto write = [&](const std::string& file, std::string_view text) {
    write_file_atomically((options.directory / file).string(), text);
    result.files.push_back(file);
  };
  write(spec.name + ".safetensors", weights.bytes);
  for (const auto& [file, text] : codegen::package_files(spec, code.module->source, portable ? portable->module->source : ""))
    write(file, text);
  write(kPackageManifestFile, package_manifest_to_json(package_manifest(code, spec)));
  if (options.build) {
    build_libraries(options.directory, spec);
    result.files.push_back("lib" + spec.name + ".so");
    result.files.push_back("lib" + spec.name + ".a");
  }
  return result;
}

}  // namespace kiln::compiler
