// Packages from Kiln's side: manifest.json and the loader. See runtime/package.h.
#include "runtime/package.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/error.h"
#include "runtime/json_fields.h"
#include "runtime/package_abi.h"
#include "runtime/shared_library.h"

namespace kiln {

namespace {

using nlohmann::json;

json tensors_json(const std::vector<PackageTensorSpec>& tensors) {
  json out = json::array();
  for (const PackageTensorSpec& t : tensors) out.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}});
  return out;
}

class PackageManifestReader : public JsonFields {
 public:
  using JsonFields::JsonFields;

  std::vector<PackageTensorSpec> tensors(const json& object, const std::string& name) const {
    std::vector<PackageTensorSpec> result;
    const json& values = array(object, "", name);
    for (size_t i = 0; i < values.size(); ++i) {
      std::string prefix = name + "[" + std::to_string(i) + "].";
      if (!values[i].is_object()) bad(name + "[" + std::to_string(i) + "]", "an object", values[i]);
      result.push_back({string(values[i], prefix, "name"), dtype(values[i], prefix), strings(values[i], prefix, "shape")});
    }
    return result;
  }

  std::vector<PackageParameterSpec> parameters(const json& object) const {
    std::vector<PackageParameterSpec> result;
    const json& values = array(object, "", "parameters");
    for (size_t i = 0; i < values.size(); ++i) {
      std::string prefix = "parameters[" + std::to_string(i) + "].";
      if (!values[i].is_object()) bad("parameters[" + std::to_string(i) + "]", "an object", values[i]);
      PackageParameterSpec p{string(values[i], prefix, "name"), dtype(values[i], prefix), {},
                             integer(values[i], prefix, "offset"), integer(values[i], prefix, "bytes")};
      const json& shape = array(values[i], prefix, "shape");
      for (size_t d = 0; d < shape.size(); ++d) {
        if (!shape[d].is_number_integer()) bad(prefix + "shape[" + std::to_string(d) + "]", "an integer", shape[d]);
        p.shape.push_back(shape[d].get<int64_t>());
      }
      result.push_back(std::move(p));
    }
    return result;
  }

  bool boolean(const json& object, const std::string& name) const {
    const json& value = member(object, "", name);
    if (!value.is_boolean()) bad(name, "true or false", value);
    return value.get<bool>();
  }
};

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot read ", file.string(), ": no such file (is this a package folder of `kiln compile -o`?)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string package_manifest_to_json(const PackageManifest& m) {
  json parameters = json::array();
  for (const PackageParameterSpec& p : m.parameters)
    parameters.push_back({{"name", p.name}, {"dtype", dtype_name(p.dtype)}, {"shape", p.shape}, {"offset", p.offset}, {"bytes", p.bytes}});
  json out = {{"format", kPackageFormat},
              {"abi", m.abi},
              {"name", m.name},
              {"kiln_version", m.kiln_version},
              {"source", m.source},
              {"isas", m.isas},
              {"inputs", tensors_json(m.inputs)},
              {"outputs", tensors_json(m.outputs)},
              {"symbols", m.symbols},
              {"parameters", parameters},
              {"weights", {{"file", m.weights_file}, {"bytes", m.weights_bytes}, {"xxh64", m.weights_xxh64}}},
              {"embedded_weights", m.embedded_weights},
              {"header", m.header},
              {"libraries", {{"shared", m.shared_library}, {"static", m.static_library}}},
              {"requires", m.requires_}};
  return out.dump(2) + "\n";
}

PackageManifest read_package_manifest(const std::filesystem::path& file) {
  std::string text = read_text(file);
  PackageManifestReader r(file.string());
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    r.fail_at(std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) r.fail_at("the manifest is not a JSON object");
  std::string format = r.string(root, "", "format");
  if (format != kPackageFormat)
    r.fail_at("format is '" + format + "', not '" + kPackageFormat + "' (a folder of `kiln compile -o` before packages, or another file)");
  PackageManifest m;
  m.abi = r.integer(root, "", "abi");
  m.name = r.string(root, "", "name");
  m.kiln_version = r.string(root, "", "kiln_version");
  m.source = r.string(root, "", "source");
  m.isas = r.strings(root, "", "isas");
  m.inputs = r.tensors(root, "inputs");
  m.outputs = r.tensors(root, "outputs");
  m.symbols = r.strings(root, "", "symbols");
  m.parameters = r.parameters(root);
  const json& weights = r.object(root, "", "weights");
  m.weights_file = r.string(weights, "weights.", "file");
  m.weights_bytes = r.integer(weights, "weights.", "bytes");
  m.weights_xxh64 = r.string(weights, "weights.", "xxh64");
  m.embedded_weights = r.boolean(root, "embedded_weights");
  m.header = r.string(root, "", "header");
  const json& libraries = r.object(root, "", "libraries");
  m.shared_library = r.string(libraries, "libraries.", "shared");
  m.static_library = r.string(libraries, "libraries.", "static");
  m.requires_ = r.strings(root, "", "requires");
  return m;
}

bool is_package_directory(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return false;
  std::filesystem::path file = path / kPackageManifestFile;
  if (!std::filesystem::is_regular_file(file, error)) return false;
  try {
    json root = json::parse(read_text(file));
    return root.is_object() && root.value("format", "") == kPackageFormat;
  } catch (const std::exception&) {
    return false;
  }
}

struct Package::State {
  PackageManifest manifest;
  SharedLibrary library;
  void* model = nullptr;
  KilnStatus (*create)(const char*, void**) = nullptr;
  KilnStatus (*run)(void*, const KilnTensor*, int64_t, KilnTensor*, int64_t) = nullptr;
  void (*destroy)(void*) = nullptr;
  void (*set_num_threads)(void*, int32_t) = nullptr;
  const char* (*isa)(const void*) = nullptr;
  const char* (*last_error)(void) = nullptr;

  ~State() {
    if (model != nullptr && destroy != nullptr) destroy(model);
  }
};

Package::Package(std::unique_ptr<State> state) : state_(std::move(state)) {}
Package::~Package() = default;
Package::Package(Package&&) noexcept = default;
Package& Package::operator=(Package&&) noexcept = default;

Package Package::load(const std::filesystem::path& directory, const std::filesystem::path& weights) {
  auto state = std::make_unique<State>();
  state->manifest = read_package_manifest(directory / kPackageManifestFile);
  const PackageManifest& m = state->manifest;
  std::string where = "package " + directory.string();
  if (m.abi != KILN_PACKAGE_ABI)
    fail(where, " has package ABI ", m.abi, "; this Kiln runs ABI ", KILN_PACKAGE_ABI, " (compile the model again)");
  state->library = SharedLibrary::open(directory / m.shared_library);
  const std::string& n = m.name;
  state->create = state->library.function<KilnStatus (*)(const char*, void**)>(n + "_create");
  state->run = state->library.function<KilnStatus (*)(void*, const KilnTensor*, int64_t, KilnTensor*, int64_t)>(n + "_run");
  state->destroy = state->library.function<void (*)(void*)>(n + "_destroy");
  state->set_num_threads = state->library.function<void (*)(void*, int32_t)>(n + "_set_num_threads");
  state->isa = state->library.function<const char* (*)(const void*)>(n + "_isa");
  state->last_error = state->library.function<const char* (*)(void)>(n + "_last_error");
  int32_t abi = state->library.function<int32_t (*)(void)>(n + "_abi_version")();
  if (abi != KILN_PACKAGE_ABI)
    fail(where, ": its library implements package ABI ", abi, ", its manifest says ", m.abi, " (a library of another build)");
  // The library's own copy when it has one (--embed-weights), unless another file is named.
  std::filesystem::path weights_file = weights.empty() ? directory / m.weights_file : weights;
  const char* path = weights.empty() && m.embedded_weights ? nullptr : weights_file.c_str();
  if (state->create(path, &state->model) != KILN_OK) fail(state->last_error());
  return Package(std::move(state));
}

const PackageManifest& Package::manifest() const { return state_->manifest; }

std::string Package::isa() const { return state_->isa(state_->model); }

std::vector<Tensor> Package::run(const std::vector<Tensor>& inputs, int num_threads) {
  state_->set_num_threads(state_->model, num_threads);
  std::vector<Tensor> contiguous;
  std::vector<KilnTensor> arguments;
  contiguous.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    contiguous.push_back(input.contiguous());
    const Tensor& t = contiguous.back();
    arguments.push_back({t.data_ptr(), t.sizes().data(), nullptr, int32_t(t.dim()), int32_t(t.dtype())});
  }
  std::vector<KilnTensor> outputs(state_->manifest.outputs.size());
  if (state_->run(state_->model, arguments.data(), int64_t(arguments.size()), outputs.data(), int64_t(outputs.size())) != KILN_OK)
    fail(state_->last_error());
  std::vector<Tensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Sizes sizes(outputs[i].sizes, outputs[i].sizes + outputs[i].rank);
    Tensor result = Tensor::empty(sizes, DType(outputs[i].dtype));
    if (result.nbytes() > 0) std::memcpy(result.data_ptr(), outputs[i].data, result.nbytes());
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace kiln
