// The manifest.json of packages: reading and writing. See runtime/package_manifest.h.
#include "runtime/package_manifest.h"

#include <nlohmann/json.hpp>

#include "kiln/error.h"
#include "runtime/atomic_file.h"
#include "runtime/json_fields.h"

namespace kiln {

namespace {

using nlohmann::json;

json tensors_json(const std::vector<PackageTensorInfo>& tensors) {
  json out = json::array();
  for (const PackageTensorInfo& t : tensors) out.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}});
  return out;
}

class PackageManifestReader : public JsonFields {
 public:
  using JsonFields::JsonFields;

  std::vector<PackageTensorInfo> tensors(const json& object, const std::string& name) const {
    std::vector<PackageTensorInfo> result;
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

// The manifest's text; a missing one is no package folder.
std::string read_text(const std::filesystem::path& file) {
  std::error_code status;
  if (!std::filesystem::exists(file, status))
    fail("cannot read ", file.string(), ": no such file (is this a package folder of `kiln compile -o`?)");
  return read_file(file.string());
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
  if (!m.mutated_inputs.empty()) out["mutated_inputs"] = m.mutated_inputs;
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
  if (root.contains("mutated_inputs")) m.mutated_inputs = r.strings(root, "", "mutated_inputs");
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

}  // namespace kiln
