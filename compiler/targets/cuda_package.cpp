// The cuda target's package step. See compiler/targets/cuda_package.h.
#include "compiler/targets/cuda_package.h"

#include <cstdlib>
#include <filesystem>

#include "codegen/package/cuda_package_sources.h"
#include "codegen/package/package_fallbacks.h"
#include "compiler/targets/cpu_toolchain.h"
#include "compiler/targets/package_build.h"
#include "kiln/error.h"
#include "runtime/atomic_file.h"
#include "runtime/cuda/library_search.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/package_manifest.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln::compiler {

namespace {

namespace fs = std::filesystem;

std::vector<ArtifactParameter> cuda_package_parameters(const codegen::LoopProgram& p) {
  std::vector<ArtifactParameter> parameters;
  for (int id : p.parameters) {
    const codegen::Buffer& b = p.buffer(id);
    Sizes shape;
    for (const ir::SymInt& d : b.shape) {
      if (!d.is_constant()) fail("parameter '", b.source, "' has the symbolic size ", d.to_string());
      shape.push_back(d.constant());
    }
    parameters.push_back({b.source, b.dtype, shape});
  }
  return parameters;
}

bool multiplies_matrices(const CudaPackageCode& code) {
  for (const codegen::cuda::LaunchStep& step : code.module->steps)
    if (step.kind == codegen::cuda::LaunchStep::Kind::Library &&
        code.scheduled->program.nodes.at(size_t(step.loop_node)).extern_call.kind == codegen::ExternKind::Gemm)
      return true;
  return false;
}

// The device code, built into the package folder; returns its file name and sets `architecture`.
std::string build_device_code(const fs::path& directory, const std::string& n, const CudaPackageCode& code,
                              std::string& architecture) {
  const std::string source = n + "_kernels.cu";
  if (std::optional<std::string> nvcc = find_nvcc()) {
    std::string sm = std::to_string(code.sm);
    std::vector<std::string> argv = {*nvcc, "--fatbin", "-O3", "-gencode", "arch=compute_" + sm + ",code=[sm_" + sm + ",compute_" + sm + "]"};
    for (const std::string& option : code.module->nvrtc_options) argv.push_back(option);
    argv.insert(argv.end(), {source, "-o", n + ".fatbin"});
    fs::create_directories(directory / "build");
    run_build_step(argv, directory, directory / "build" / "nvcc.log", "the package's " + (directory / source).string() + " (nvcc)");
    architecture = "sm_" + sm;
    return n + ".fatbin";
  }
  std::vector<std::string> options = code.module->nvrtc_options;
  if (code.module->uses_half) {
    std::optional<std::string> include = cuda::toolkit_include_directory();
    if (!include) fail("the model computes in f16/bf16, and the CUDA toolkit's cuda_fp16.h was not found (set $CUDA_HOME)");
    options.push_back("-I" + *include);
  }
  cuda::DeviceCode device = cuda::nvrtc().compile(code.module->source, source, code.sm, options);
  architecture = device.architecture;
  std::string file = n + (device.is_cubin ? ".cubin" : ".ptx");
  write_file_atomically((directory / file).string(), device.image);
  return file;
}

PackageManifest cuda_package_manifest(const codegen::PackageSpec& spec, const std::vector<ArtifactParameter>& parameters,
                                      const std::vector<std::string>& symbols) {
  PackageManifest m = common_package_manifest(spec, parameters, symbols);
  m.isas = {"cuda"};
  m.requires_ = {"cuda"};
  if (spec.uses_blas) m.requires_.push_back("cublas");
  return m;
}

}  // namespace

std::optional<std::string> find_nvcc() {
  if (const char* forced = std::getenv("KILN_NVCC"); forced != nullptr && *forced != '\0') {
    if (std::string(forced) == "none") return std::nullopt;
    return std::string(forced);
  }
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* root = std::getenv(variable);
    std::error_code error;
    if (root != nullptr && *root != '\0' && fs::exists(fs::path(root) / "bin" / "nvcc", error))
      return (fs::path(root) / "bin" / "nvcc").string();
  }
  std::error_code error;
  if (fs::exists("/usr/local/cuda/bin/nvcc", error)) return std::string("/usr/local/cuda/bin/nvcc");
  if (const char* path = std::getenv("PATH")) {
    std::string list = path;
    for (size_t at = 0; at <= list.size();) {
      size_t end = list.find(':', at);
      if (end == std::string::npos) end = list.size();
      fs::path candidate = fs::path(list.substr(at, end - at)) / "nvcc";
      if (end > at && fs::exists(candidate, error)) return candidate.string();
      at = end + 1;
    }
  }
  return std::nullopt;
}

PackageResult write_cuda_package(const CudaPackageCode& code, const ir::Graph& graph, const PackageOptions& given) {
  PackageOptions options = given;
  options.directory = fs::absolute(given.directory);  // the build steps run inside it
  codegen::check_package_name(options.name);
  // Before anything is written: throws naming the fallback nodes a package cannot compute. The
  // others run on the host, as in a cpu package (codegen/package/cuda_package_sources.h).
  std::string fallback_handler = codegen::package_fallback_handler(graph, code.module->fallbacks, options.name);
  const codegen::LoopProgram& p = code.scheduled->program;
  std::vector<ArtifactParameter> parameters = cuda_package_parameters(p);
  codegen::PackageSpec spec;
  spec.name = options.name;
  spec.source = options.source.empty() ? "a graph" : fs::path(options.source).filename().string();
  spec.kiln_version = KILN_VERSION;
  spec.target = "cuda";
  spec.inputs = package_tensors(p, p.inputs);
  // Before anything is written: throws for a buffer the model updates (no device state kept).
  set_package_outputs(spec, package_tensors(p, p.outputs), graph, options.output_names, parameters, /*device_parameters=*/true);
  prepare_package_directory(options.directory, options.overwrite);
  PackageWeights weights = package_weights(parameters, graph, options.name);
  set_package_weights(spec, weights);
  spec.symbol_count = int64_t(p.symbols.size());
  spec.embed_weights = options.embed_weights;
  spec.uses_blas = multiplies_matrices(code);
  spec.fallback_handler = std::move(fallback_handler);

  PackageResult result;
  result.directory = options.directory;
  result.kernel_count = code.kernel_count;
  result.weights_bytes = int64_t(weights.bytes.size());
  auto write = [&](const std::string& file, std::string_view text) {
    write_file_atomically((options.directory / file).string(), text);
    result.files.push_back(file);
  };
  const std::string& n = spec.name;
  write(n + "_kernels.cu", code.module->source);
  spec.device_image_file = build_device_code(options.directory, n, code, spec.cuda_architecture);
  result.files.push_back(spec.device_image_file);
  spec.cuda_host_source = codegen::cuda_package_host_source(spec, *code.scheduled, *code.module);
  write(n + ".safetensors", weights.bytes);
  for (const auto& [file, text] : codegen::package_files(spec, code.module->source))
    if (file != n + "_kernels.cu") write(file, text);
  write(kPackageManifestFile, package_manifest_to_json(cuda_package_manifest(spec, parameters, p.symbols)));
  if (options.build) {
    std::vector<std::string> flags = {"-O2", "-std=c++17", "-fPIC", "-Wa,-I" + options.directory.string()};
    build_package_libraries(options.directory, n, {{n + ".cpp", flags}, {n + "_cuda.cpp", flags}}, {"-ldl"});
    result.files.push_back("lib" + n + ".so");
    result.files.push_back("lib" + n + ".a");
  }
  fs::remove_all(options.directory / "build");
  return result;
}

}  // namespace kiln::compiler
