// The cpu target's package step. See compiler/targets/cpu_package.h.
#include "compiler/targets/cpu_package.h"

#include <cstring>
#include <future>

#include <nlohmann/json.hpp>

#include "codegen/package/package_fallbacks.h"
#include "compiler/targets/cpu_toolchain.h"
#include "runtime/atomic_file.h"
#include "runtime/checksum.h"
#include "kiln/error.h"
#include "runtime/package_manifest.h"
#include "kiln/safetensors.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln::compiler {

namespace {

namespace fs = std::filesystem;

void prepare_directory(const fs::path& directory, bool overwrite) {
  if (fs::exists(directory) && !fs::is_directory(directory)) fail("output directory ", directory.string(), " is a file");
  if (fs::exists(directory) && !fs::is_empty(directory) && !overwrite)
    fail("output directory ", directory.string(), " exists and is not empty (pass --force to overwrite it)");
  fs::create_directories(directory);
}

// The weights file: every parameter the kernels take, and where each lies in it.
struct Weights {
  std::string bytes;
  std::vector<codegen::PackageParameter> parameters;  // kernel order
};

Weights weights_file(const CpuPackageCode& code, const ir::Graph& graph, const std::string& name) {
  std::map<std::string, Tensor> tensors;
  for (const ArtifactParameter& p : code.parameters) {
    auto it = graph.parameters().find(p.name);
    if (it == graph.parameters().end()) fail("the model has no parameter '", p.name, "' the package's kernels take");
    Tensor value = it->second.contiguous();
    if (value.dtype() != p.dtype || value.sizes() != p.shape)
      fail("parameter '", p.name, "' is ", dtype_name(value.dtype()), sizes_to_string(value.sizes()),
           ", the kernels take ", dtype_name(p.dtype), sizes_to_string(p.shape));
    tensors.emplace(p.name, std::move(value));
  }
  Weights w;
  w.bytes = serialize_safetensors(tensors, {{"format", kPackageFormat}, {"package", name}});
  // Where the writer put each tensor: its header's data_offsets, after the 8-byte length and the header.
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, w.bytes.data(), 8);
  nlohmann::json header = nlohmann::json::parse(w.bytes.substr(8, size_t(header_bytes)));
  for (const ArtifactParameter& p : code.parameters) {
    const nlohmann::json& offsets = header.at(p.name).at("data_offsets");
    int64_t begin = offsets[0].get<int64_t>(), end = offsets[1].get<int64_t>();
    w.parameters.push_back({p.name, int64_t(8 + header_bytes) + begin, end - begin});
  }
  return w;
}

codegen::PackageSpec package_spec(const CpuPackageCode& code, const PackageOptions& options, const Weights& weights) {
  codegen::PackageSpec spec;
  spec.name = options.name;
  spec.source = options.source.empty() ? "a graph" : fs::path(options.source).filename().string();
  spec.kiln_version = KILN_VERSION;
  spec.inputs = code.inputs;
  spec.outputs = code.outputs;
  spec.parameters = weights.parameters;
  spec.symbol_count = int64_t(code.symbols.size());
  spec.weights_bytes = weights.bytes.size();
  Checksum64 checksum;
  checksum.update(weights.bytes.data(), weights.bytes.size());
  spec.weights_checksum = checksum.digest();
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
  PackageManifest m;
  m.name = spec.name;
  m.kiln_version = spec.kiln_version;
  m.source = spec.source;
  for (Isa isa : spec.isas) m.isas.push_back(std::string(isa_name(isa)));
  for (const codegen::PackageTensor& t : spec.inputs) m.inputs.push_back({t.name, t.dtype, t.shape});
  for (const codegen::PackageTensor& t : spec.outputs) m.outputs.push_back({t.name, t.dtype, t.shape});
  m.symbols = code.symbols;
  for (size_t i = 0; i < code.parameters.size(); ++i) {
    const ArtifactParameter& p = code.parameters[i];
    m.parameters.push_back({p.name, p.dtype, p.shape, spec.parameters[i].offset, spec.parameters[i].bytes});
  }
  m.weights_file = spec.name + ".safetensors";
  m.weights_bytes = int64_t(spec.weights_bytes);
  m.weights_xxh64 = checksum_hex(spec.weights_checksum);
  m.embedded_weights = spec.embed_weights;
  m.header = spec.name + ".h";
  m.shared_library = "lib" + spec.name + ".so";
  m.static_library = "lib" + spec.name + ".a";
  m.requires_ = {"openmp"};
  if (spec.uses_blas) m.requires_.push_back("blas");
  if (spec.uses_dnnl) m.requires_.push_back("onednn");
  return m;
}

// Compiles each translation unit (in parallel), then links the shared library and archives the
// static one. Objects and logs go to DIR/build/, removed when everything succeeded.
void build_libraries(const fs::path& directory, const codegen::PackageSpec& spec) {
  const std::string& n = spec.name;
  fs::path build = directory / "build";
  fs::create_directories(build);
  struct Unit {
    std::string source;
    std::vector<std::string> flags;
  };
  std::vector<Unit> units;
  for (Isa isa : spec.isas) units.push_back({n + "_" + std::string(isa_name(isa)) + ".cpp", generated_code_flags(isa)});
  std::vector<std::string> api_flags = {"-O2", "-std=c++17", "-fPIC"};
  if (spec.embed_weights) api_flags.push_back("-Wa,-I" + directory.string());
  units.push_back({n + ".cpp", api_flags});
  std::vector<std::future<void>> compiles;
  std::vector<std::string> objects;
  for (const Unit& unit : units) {
    std::string object = "build/" + fs::path(unit.source).stem().string() + ".o";
    objects.push_back(object);
    std::vector<std::string> argv = {cxx_command()};
    argv.insert(argv.end(), unit.flags.begin(), unit.flags.end());
    argv.insert(argv.end(), {"-fvisibility=hidden", "-c", unit.source, "-o", object});
    fs::path log = build / (fs::path(unit.source).stem().string() + ".log");
    std::string what = "the package's " + (directory / unit.source).string();
    compiles.push_back(std::async(std::launch::async, [argv, directory, log, what] { run_build_step(argv, directory, log, what); }));
  }
  for (std::future<void>& compile : compiles) compile.get();  // the first failure throws (after all ran)

  // The shared library exports the C API alone (not the template instantiations of the
  // standard library the API's code uses, which default to public visibility).
  write_file_atomically((build / "exports.map").string(), "{\n  global: " + n + "_*;\n  local: *;\n};\n");
  std::vector<std::string> link = {cxx_command(), "-shared", "-fopenmp", "-Wl,-soname,lib" + n + ".so",
                                   "-Wl,--version-script=build/exports.map", "-o", "lib" + n + ".so"};
  link.insert(link.end(), objects.begin(), objects.end());
  if (spec.uses_blas) link.push_back(spec.blas_library);
  if (spec.uses_dnnl) link.push_back(dnnl_library());
  run_build_step(link, directory, build / "link.log", "lib" + n + ".so");
  fs::remove(directory / ("lib" + n + ".a"));
  std::vector<std::string> archive = {"ar", "rcs", "lib" + n + ".a"};
  archive.insert(archive.end(), objects.begin(), objects.end());
  run_build_step(archive, directory, build / "archive.log", "lib" + n + ".a");
  fs::remove_all(build);
}

}  // namespace

PackageResult write_cpu_package(const CpuPackageCode& code, const ir::Graph& graph, const PackageOptions& given) {
  PackageOptions options = given;
  options.directory = fs::absolute(given.directory);  // the build steps run inside it
  codegen::check_package_name(options.name);
  // Before anything is written: throws naming the fallback nodes a package cannot compute.
  std::string fallback_handler = codegen::package_fallback_handler(graph, code.module->fallbacks, options.name);
  prepare_directory(options.directory, options.overwrite);
  Weights weights = weights_file(code, graph, options.name);
  codegen::PackageSpec spec = package_spec(code, options, weights);
  spec.fallback_handler = std::move(fallback_handler);
  PackageResult result;
  result.directory = options.directory;
  result.kernel_count = code.kernel_count;
  result.weights_bytes = int64_t(weights.bytes.size());
  auto write = [&](const std::string& file, std::string_view text) {
    write_file_atomically((options.directory / file).string(), text);
    result.files.push_back(file);
  };
  write(spec.name + ".safetensors", weights.bytes);
  for (const auto& [file, text] : codegen::package_files(spec, code.module->source)) write(file, text);
  write(kPackageManifestFile, package_manifest_to_json(package_manifest(code, spec)));
  if (options.build) {
    build_libraries(options.directory, spec);
    result.files.push_back("lib" + spec.name + ".so");
    result.files.push_back("lib" + spec.name + ".a");
  }
  return result;
}

}  // namespace kiln::compiler
