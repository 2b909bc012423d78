// manifest.json of compiled artifacts: parsing with field-by-field errors, and writing.
#include "runtime/cpu/artifact_manifest.h"

#include <nlohmann/json.hpp>

#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "runtime/json_brief.h"
#include "runtime/json_fields.h"

namespace kiln {

namespace {

using nlohmann::json;

// The manifest's own field kinds, on top of JsonFields.
class ManifestReader : public JsonFields {
 public:
  using JsonFields::JsonFields;

  std::vector<ArtifactTensor> tensors(const json& object, const std::string& name) const {
    std::vector<ArtifactTensor> result;
    const json& values = array(object, "", name);
    for (size_t i = 0; i < values.size(); ++i) {
      std::string prefix = name + "[" + std::to_string(i) + "].";
      if (!values[i].is_object()) bad(name + "[" + std::to_string(i) + "]", "an object", values[i]);
      ArtifactTensor tensor{string(values[i], prefix, "name"), dtype(values[i], prefix), integer(values[i], prefix, "rank")};
      if (tensor.rank < 0 || tensor.rank > 64) bad(prefix + "rank", "a rank from 0 to 64", values[i]["rank"]);
      result.push_back(std::move(tensor));
    }
    return result;
  }
  std::vector<ArtifactParameter> parameters(const json& object) const {
    std::vector<ArtifactParameter> result;
    const json& values = array(object, "", "parameters");
    for (size_t i = 0; i < values.size(); ++i) {
      std::string prefix = "parameters[" + std::to_string(i) + "].";
      if (!values[i].is_object()) bad("parameters[" + std::to_string(i) + "]", "an object", values[i]);
      ArtifactParameter parameter{string(values[i], prefix, "name"), dtype(values[i], prefix), {}};
      const json& shape = member(values[i], prefix, "shape");
      if (!shape.is_array()) bad(prefix + "shape", "an array of sizes", shape);
      for (const json& size : shape) {
        if (!size.is_number_integer() || size.get<int64_t>() < 0) bad(prefix + "shape", "an array of sizes >= 0", shape);
        parameter.shape.push_back(size.get<int64_t>());
      }
      result.push_back(std::move(parameter));
    }
    return result;
  }
  // A file name inside the artifact directory: relative, no "..".
  std::string file_name(const json& object, const std::string& name) const {
    std::string value = string(object, "", name);
    std::filesystem::path path(value);
    if (value.empty() || path.is_absolute() || path.lexically_normal().string().starts_with(".."))
      bad(name, "a file name inside the artifact directory", object[name]);
    return value;
  }
};

json tensors_json(const std::vector<ArtifactTensor>& tensors) {
  json result = json::array();
  for (const ArtifactTensor& tensor : tensors)
    result.push_back({{"name", tensor.name}, {"dtype", dtype_name(tensor.dtype)}, {"rank", tensor.rank}});
  return result;
}

}  // namespace

ArtifactManifest parse_artifact_manifest(const std::string& text, const std::string& where) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) fail(where, ": not valid JSON");
  if (!document.is_object()) fail(where, ": expected a JSON object, got ", json_brief(document));
  ManifestReader read(where);
  std::string format = read.string(document, "", "format");
  if (format != kArtifactFormat) fail(where, ": not a Kiln artifact manifest (format is \"", format, "\", expected \"", kArtifactFormat, "\")");
  ArtifactManifest manifest;
  manifest.abi = read.integer(document, "", "abi");
  manifest.kiln_version = read.string(document, "", "kiln_version");
  std::string isa = read.string(document, "", "isa");
  try {
    manifest.isa = parse_isa(isa);
  } catch (const Error& error) {
    fail(where, ": field 'isa': ", error.what());
  }
  manifest.key = read.string(document, "", "key");
  manifest.inputs = read.tensors(document, "inputs");
  manifest.outputs = read.tensors(document, "outputs");
  manifest.parameters = read.parameters(document);
  manifest.symbols = read.strings(document, "", "symbols");
  manifest.fallbacks = read.strings(document, "", "fallbacks");
  manifest.library = read.file_name(document, "library");
  manifest.source = read.file_name(document, "source");
  return manifest;
}

ArtifactManifest read_artifact_manifest(const std::filesystem::path& file) {
  std::error_code error;
  if (!std::filesystem::exists(file, error))
    fail("no compiled artifact in ", file.parent_path().string(), ": ", file.filename().string(), " is missing");
  return parse_artifact_manifest(read_file(file.string()), file.string());
}

std::string artifact_manifest_to_json(const ArtifactManifest& manifest) {
  json parameters = json::array();
  for (const ArtifactParameter& parameter : manifest.parameters)
    parameters.push_back({{"name", parameter.name}, {"dtype", dtype_name(parameter.dtype)}, {"shape", parameter.shape}});
  json document = {{"format", kArtifactFormat},
                   {"abi", manifest.abi},
                   {"kiln_version", manifest.kiln_version},
                   {"isa", isa_name(manifest.isa)},
                   {"key", manifest.key},
                   {"inputs", tensors_json(manifest.inputs)},
                   {"outputs", tensors_json(manifest.outputs)},
                   {"parameters", parameters},
                   {"symbols", manifest.symbols},
                   {"fallbacks", manifest.fallbacks},
                   {"library", manifest.library},
                   {"source", manifest.source}};
  return document.dump(2) + "\n";
}

void write_artifact_manifest(const std::filesystem::path& file, const ArtifactManifest& manifest) {
  write_file_atomically(file.string(), artifact_manifest_to_json(manifest));
}

}  // namespace kiln
