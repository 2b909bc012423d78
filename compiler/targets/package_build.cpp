// What the targets' package steps share. See compiler/targets/package_build.h.
#include "compiler/targets/package_build.h"

#include <cstring>
#include <future>

#include <nlohmann/json.hpp>

#include "compiler/targets/cpu_toolchain.h"
#include "kiln/error.h"
#include "kiln/safetensors.h"
#include "runtime/atomic_file.h"
#include "runtime/checksum.h"

namespace kiln::compiler {

namespace fs = std::filesystem;

std::vector<codegen::PackageTensor> package_tensors(const codegen::LoopProgram& program, const std::vector<int>& ids) {
  std::vector<codegen::PackageTensor> tensors;
  for (int id : ids) {
    codegen::PackageTensor t{program.buffer(id).source, program.buffer(id).dtype, {}};
    for (const ir::SymInt& d : program.buffer(id).shape) t.shape.push_back(d.to_string());
    tensors.push_back(std::move(t));
  }
  return tensors;
}

void set_package_outputs(codegen::PackageSpec& spec, const std::vector<codegen::PackageTensor>& kernel_outputs,
                         const ir::Graph& graph, const std::vector<std::string>& output_names,
                         const std::vector<ArtifactParameter>& parameters, bool device_parameters) {
  spec.kernel_outputs = kernel_outputs;
  spec.outputs.clear();
  spec.output_positions.clear();
  spec.write_backs.clear();
  std::vector<bool> mutation(kernel_outputs.size(), false);
  for (const auto& [position, output] : graph.signature().mutations()) {
    KILN_CHECK(position < kernel_outputs.size(), "mutation output ", position, " is not among the kernels' outputs");
    mutation[position] = true;
    codegen::PackageWriteBack write_back;
    write_back.output = int64_t(position);
    if (output.kind == ir::OutputKind::user_input_mutation) {
      for (size_t i = 0; i < spec.inputs.size(); ++i)
        if (spec.inputs[i].name == output.target) write_back.input = int64_t(i);
      KILN_CHECK(write_back.input >= 0, "the mutated input '", output.target, "' is not among the kernels' inputs");
    } else {
      for (size_t i = 0; i < parameters.size(); ++i)
        if (parameters[i].name == output.target) write_back.parameter = int64_t(i);
      if (write_back.parameter < 0) continue;  // no kernel reads it: nothing to keep
      if (device_parameters)
        fail("the model updates its buffer '", output.target, "' in each run (", kernel_outputs[position].name,
             "), and CUDA packages keep no buffer state across runs yet; package it with --target cpu, or run it with "
             "`kiln run --target cuda`");
    }
    spec.write_backs.push_back(write_back);
  }
  for (size_t i = 0; i < kernel_outputs.size(); ++i) {
    if (mutation[i]) continue;
    codegen::PackageTensor output = kernel_outputs[i];
    if (spec.outputs.size() < output_names.size()) output.name = output_names[spec.outputs.size()];
    spec.outputs.push_back(std::move(output));
    spec.output_positions.push_back(int64_t(i));
  }
}

void prepare_package_directory(const fs::path& directory, bool overwrite) {
  if (fs::exists(directory) && !fs::is_directory(directory)) fail("output directory ", directory.string(), " is a file");
  if (fs::exists(directory) && !fs::is_empty(directory) && !overwrite)
    fail("output directory ", directory.string(), " exists and is not empty (pass --force to overwrite it)");
  fs::create_directories(directory);
}

PackageWeights package_weights(const std::vector<ArtifactParameter>& parameters, const ir::Graph& graph, const std::string& name) {
  std::map<std::string, Tensor> tensors;
  for (const ArtifactParameter& p : parameters) {
    auto it = graph.parameters().find(p.name);
    if (it == graph.parameters().end()) fail("the model has no parameter '", p.name, "' the package's kernels take");
    Tensor value = it->second.contiguous();
    if (value.dtype() != p.dtype || value.sizes() != p.shape)
      fail("parameter '", p.name, "' is ", dtype_name(value.dtype()), sizes_to_string(value.sizes()),
           ", the kernels take ", dtype_name(p.dtype), sizes_to_string(p.shape));
    tensors.emplace(p.name, std::move(value));
  }
  PackageWeights w;
  w.bytes = serialize_safetensors(tensors, {{"format", kPackageFormat}, {"package", name}});
  // Where the writer put each tensor: its header's data_offsets, after the 8-byte length and the header.
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, w.bytes.data(), 8);
  nlohmann::json header = nlohmann::json::parse(w.bytes.substr(8, size_t(header_bytes)));
  for (const ArtifactParameter& p : parameters) {
    const nlohmann::json& offsets = header.at(p.name).at("data_offsets");
    int64_t begin = offsets[0].get<int64_t>(), end = offsets[1].get<int64_t>();
    w.parameters.push_back({p.name, int64_t(8 + header_bytes) + begin, end - begin});
  }
  return w;
}

void set_package_weights(codegen::PackageSpec& spec, const PackageWeights& weights) {
  spec.parameters = weights.parameters;
  spec.weights_bytes = weights.bytes.size();
  Checksum64 checksum;
  checksum.update(weights.bytes.data(), weights.bytes.size());
  spec.weights_checksum = checksum.digest();
}

PackageManifest common_package_manifest(const codegen::PackageSpec& spec, const std::vector<ArtifactParameter>& parameters,
                                        const std::vector<std::string>& symbols) {
  PackageManifest m;
  m.name = spec.name;
  m.kiln_version = spec.kiln_version;
  m.source = spec.source;
  for (const codegen::PackageTensor& t : spec.inputs) m.inputs.push_back({t.name, t.dtype, t.shape});
  for (const codegen::PackageTensor& t : spec.outputs) m.outputs.push_back({t.name, t.dtype, t.shape});
  for (const codegen::PackageWriteBack& w : spec.write_backs)
    if (w.input >= 0) m.mutated_inputs.push_back(spec.inputs.at(size_t(w.input)).name);
  m.symbols = symbols;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const ArtifactParameter& p = parameters[i];
    m.parameters.push_back({p.name, p.dtype, p.shape, spec.parameters[i].offset, spec.parameters[i].bytes});
  }
  m.weights_file = spec.name + ".safetensors";
  m.weights_bytes = int64_t(spec.weights_bytes);
  m.weights_xxh64 = checksum_hex(spec.weights_checksum);
  m.embedded_weights = spec.embed_weights;
  m.header = spec.name + ".h";
  m.shared_library = "lib" + spec.name + ".so";
  m.static_library = "lib" + spec.name + ".a";
  return m;
}

void build_package_libraries(const fs::path& directory, const std::string& n, const std::vector<PackageUnit>& units,
                             const std::vector<std::string>& link_flags) {
  fs::path build = directory / "build";
  fs::create_directories(build);
  std::vector<std::future<void>> compiles;
  std::vector<std::string> objects;
  for (const PackageUnit& unit : units) {
    std::string object = "build/" + fs::path(unit.source).stem().string() + ".o";
    objects.push_back(object);
    std::vector<std::string> argv = {cxx_command()};
    argv.insert(argv.end(), unit.flags.begin(), unit.flags.end());
    argv.insert(argv.end(), {"-fvisibility=hidden", "-c", unit.source, "-o", object});
    fs::path log = build / (fs::path(unit.source).stem().string() + ".log");
    fs::path source = directory / unit.source;
    compiles.push_back(std::async(std::launch::async, [argv, directory, log, source] {
      compile_generated_code(argv, directory, log, source, /*copy_kept=*/false);
    }));
  }
  for (std::future<void>& compile : compiles) compile.get();  // the first failure throws (after all ran)

  // The shared library exports the C API alone (not the template instantiations of the
  // standard library the API's code uses, which default to public visibility).
  write_file_atomically((build / "exports.map").string(), "{\n  global: " + n + "_*;\n  local: *;\n};\n");
  std::vector<std::string> link = {cxx_command(), "-shared", "-Wl,-soname,lib" + n + ".so",
                                   "-Wl,--version-script=build/exports.map", "-o", "lib" + n + ".so"};
  link.insert(link.end(), objects.begin(), objects.end());
  link.insert(link.end(), link_flags.begin(), link_flags.end());
  run_build_step(link, directory, build / "link.log", "lib" + n + ".so");
  fs::remove(directory / ("lib" + n + ".a"));
  std::vector<std::string> archive = {"ar", "rcs", "lib" + n + ".a"};
  archive.insert(archive.end(), objects.begin(), objects.end());
  run_build_step(archive, directory, build / "archive.log", "lib" + n + ".a");
  fs::remove_all(build);
}

}  // namespace kiln::compiler
