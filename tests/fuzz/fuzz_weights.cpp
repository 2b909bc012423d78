// Parameters synthesized from the written types of a fuzzed graph's get_attr nodes.
#include "tests/fuzz/fuzz_weights.h"

#include <optional>

#include "ir/parser.h"
#include "kiln/error.h"

namespace kiln::fuzz {

namespace {

std::optional<Tensor> tensor_for(const ir::TensorMeta& meta, uint64_t seed) {
  std::optional<Sizes> sizes = meta.static_shape();
  if (!sizes) return std::nullopt;
  int64_t elements = 1;
  for (int64_t size : *sizes) {
    if (size < 0 || (size > 0 && elements > kMaxParameterElements / size)) return std::nullopt;
    elements *= size;
  }
  return fuzz_tensor(*sizes, meta.dtype, seed);
}

// The meta of a type written in IR text ("f32[2, 3]"), through the parser itself.
std::optional<ir::TensorMeta> parse_written_type(std::string_view type) {
  std::string text = "graph():\n    %p : " + std::string(type) + " = placeholder[target=p]\n    return (p,)\n";
  try {
    ir::Graph graph = ir::parse_graph(text, "type");
    return graph.find("p")->value();
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

Tensor fuzz_tensor(const Sizes& sizes, DType dtype, uint64_t seed) {
  Tensor tensor = Tensor::empty(sizes, dtype);
  char* base = static_cast<char*>(tensor.data_ptr());
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t bits = state >> 33;
    void* address = base + size_t(i) * tensor.element_size();
    if (is_floating(dtype)) store_double(dtype, address, double(bits % 4001) / 1000.0 - 2.0);
    else if (dtype == DType::boolean) store_int(dtype, address, int64_t(bits & 1));
    else store_int(dtype, address, int64_t(bits % 5));
  }
  return tensor;
}

Parameters parameters_for_text(std::string_view text) {
  Parameters parameters;
  uint64_t seed = 0;
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    size_t marker = line.find("= get_attr[target=");
    size_t colon = line.find(':');
    if (marker == std::string_view::npos || colon == std::string_view::npos || colon > marker) continue;
    size_t target_start = marker + std::string_view("= get_attr[target=").size();
    size_t target_end = line.find(']', target_start);
    if (target_end == std::string_view::npos) continue;
    std::string target(line.substr(target_start, target_end - target_start));
    std::string_view type = line.substr(colon + 1, marker - colon - 1);
    if (size_t users = type.find("[num_users"); users != std::string_view::npos) type = type.substr(0, users);
    if (parameters.count(target)) continue;
    std::optional<ir::TensorMeta> meta = parse_written_type(type);
    if (!meta) continue;
    if (std::optional<Tensor> tensor = tensor_for(*meta, ++seed)) parameters.emplace(target, *tensor);
  }
  return parameters;
}

Parameters parameters_for_json(const nlohmann::json& document) {
  Parameters parameters;
  if (!document.is_object() || !document.contains("nodes") || !document["nodes"].is_array()) return parameters;
  uint64_t seed = 0;
  for (const nlohmann::json& node : document["nodes"]) {
    if (!node.is_object() || node.value("op", nlohmann::json()) != "get_attr") continue;
    if (!node.contains("target") || !node["target"].is_string() || !node.contains("meta")) continue;
    const nlohmann::json& meta = node["meta"];
    if (!meta.is_object() || !meta.contains("values") || !meta["values"].is_array() || meta["values"].size() != 1)
      continue;
    const nlohmann::json& value = meta["values"][0];
    if (!value.is_object() || !value.contains("dtype") || !value["dtype"].is_string() || !value.contains("shape") ||
        !value["shape"].is_array())
      continue;
    std::optional<DType> dtype = parse_dtype(value["dtype"].get<std::string>());
    if (!dtype) continue;
    ir::TensorMeta tensor_meta;
    tensor_meta.dtype = *dtype;
    bool static_shape = true;
    for (const nlohmann::json& dim : value["shape"]) {
      if (!dim.is_number_integer()) {
        static_shape = false;
        break;
      }
      tensor_meta.shape.emplace_back(dim.get<int64_t>());
    }
    if (!static_shape) continue;
    std::string target = node["target"].get<std::string>();
    if (parameters.count(target)) continue;
    if (std::optional<Tensor> tensor = tensor_for(tensor_meta, ++seed)) parameters.emplace(target, *tensor);
  }
  return parameters;
}

}  // namespace kiln::fuzz
