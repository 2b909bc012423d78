// Reading payload configs and the weight / constant files they point to.
#include "frontends/pt2/pt2_weights.h"

#include <nlohmann/json.hpp>

#include "frontends/pt2/pt2_dtypes.h"
#include "frontends/pt2/pt2_schema.h"
#include "frontends/pt2/torch_save_reader.h"
#include "kiln/error.h"

namespace kiln::frontends {

namespace {

int64_t static_value(const ExportSymInt& value, const std::string& where) {
  if (!value.constant) fail(where, " has a symbolic size or stride (", value.expression, "); stored tensors must be static");
  return *value.constant;
}

Tensor read_raw(const Pt2Archive& archive, const std::string& entry, const ExportTensorMeta& meta, const std::string& where) {
  std::optional<DType> dtype = dtype_from_scalar_type(meta.dtype);
  if (!dtype) fail(where, " has dtype ", scalar_type_name(meta.dtype), ", which Kiln does not support");
  if (meta.layout != 7) fail(where, " is not a strided (dense) tensor; Kiln reads dense tensors only");
  Sizes sizes, strides;
  for (const ExportSymInt& size : meta.sizes) sizes.push_back(static_value(size, where));
  for (const ExportSymInt& stride : meta.strides) strides.push_back(static_value(stride, where));
  int64_t offset = static_value(meta.storage_offset, where);
  int64_t extent = 0;  // elements the view needs: offset + 1 + sum (size - 1) * stride
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || strides[d] < 0) fail(where, " has a negative size or stride");
    empty |= sizes[d] == 0;
    extent += (sizes[d] - 1) * strides[d];
  }
  if (offset < 0) fail(where, " has a negative storage offset");
  size_t element = dtype_size(*dtype);
  if (!archive.zip().has(entry)) fail(where, ": its data file '", entry, "' is missing from the archive");
  uint64_t stored = archive.zip().size(entry);
  uint64_t needed = empty ? 0 : uint64_t(offset + extent + 1) * element;
  if (stored % element != 0 || stored < needed)
    fail(where, ": its data file '", entry, "' holds ", stored, " bytes, but a ", dtype_name(*dtype), sizes_to_string(sizes),
         " tensor (strides ", sizes_to_string(strides), ", offset ", offset, ") needs ", needed,
         stored % element ? " (and a whole number of elements)" : "");
  Tensor storage = Tensor::empty({int64_t(stored / element)}, *dtype);
  if (stored > 0) archive.zip().read_into(entry, storage.data_ptr(), stored);
  if (empty) return Tensor::empty(sizes, *dtype);
  return storage.as_strided(sizes, strides, offset).clone();
}

}  // namespace

std::map<std::string, Tensor> read_payloads(const Pt2Archive& archive, const std::string& config_entry,
                                            const std::string& folder, const std::string& what) {
  std::map<std::string, Tensor> tensors;
  if (!archive.zip().has(config_entry)) return tensors;
  const std::string label = "'" + archive.path() + "': " + config_entry;
  nlohmann::json document = nlohmann::json::parse(archive.zip().read(config_entry), nullptr, false);
  if (document.is_discarded()) fail(label, " is not valid JSON");
  auto config = document.find("config");
  if (!document.is_object() || config == document.end() || !config->is_object()) fail(label, " has no 'config' object");
  for (auto it = config->begin(); it != config->end(); ++it) {
    const std::string& fqn = it.key();
    const std::string where = "'" + archive.path() + "': " + what + " '" + fqn + "'";
    const nlohmann::json& payload = *it;
    auto path = payload.find("path_name");
    if (!payload.is_object() || path == payload.end() || !path->is_string()) fail(label, ": '", fqn, "' has no path_name");
    std::string entry = folder + path->get<std::string>();
    bool use_pickle = payload.value("use_pickle", false);
    if (use_pickle) {
      if (!archive.zip().has(entry)) fail(where, ": its data file '", entry, "' is missing from the archive");
      TorchValue value = read_torch_save(archive.zip().read(entry), where);
      if (value.kind != TorchValue::Kind::tensor) fail(where, " is a pickled ", value.kind_name(), ", not a tensor");
      tensors[fqn] = value.tensor;
      continue;
    }
    auto meta = payload.find("tensor_meta");
    if (meta == payload.end() || meta->is_null()) fail(label, ": '", fqn, "' has no tensor_meta");
    tensors[fqn] = read_raw(archive, entry, parse_export_tensor_meta(*meta, "config." + fqn + ".tensor_meta", label), where);
  }
  return tensors;
}

}  // namespace kiln::frontends
