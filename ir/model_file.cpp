// Loading and saving .kiln / .json model files with their safetensors weights.
#include "ir/model_file.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/json_format.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "kiln/safetensors.h"

namespace kiln::ir {

namespace {

enum class ModelFormat { text, json };

ModelFormat format_of(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".kiln") return ModelFormat::text;
  if (extension == ".json") return ModelFormat::json;
  std::string found = extension.empty() ? "no extension" : "the extension '" + extension + "'";
  fail("'", path, "' has ", found, "; supported model files: .kiln (text IR), .json (JSON IR)");
}

}  // namespace

std::string weights_path_for(const std::string& model_path) {
  return std::filesystem::path(model_path).replace_extension(".safetensors").string();
}

Graph load_model(const std::string& path) {
  std::error_code status;
  if (!std::filesystem::exists(path, status)) fail("model file '", path, "' does not exist");
  ModelFormat format = format_of(path);
  std::string text = read_file(path);

  ParseOptions options;
  options.file_name = path;
  options.weights_file = weights_path_for(path);
  if (std::filesystem::exists(options.weights_file, status)) {
    for (auto& [name, tensor] : read_safetensors(options.weights_file)) options.parameters.emplace(name, tensor);
  } else {
    options.weights_file_missing = true;
  }

  if (format == ModelFormat::text) return parse_graph(text, options);
  return parse_graph_json(text, options);
}

void save_model(const Graph& graph, const std::string& path, bool overwrite) {
  ModelFormat format = format_of(path);
  std::string weights = weights_path_for(path);
  bool has_weights = !graph.parameters().empty();
  std::error_code status;
  if (!overwrite) {
    if (std::filesystem::exists(path, status))
      fail("'", path, "' already exists; refusing to overwrite it (ask for overwrite explicitly)");
    if (has_weights && std::filesystem::exists(weights, status))
      fail("the weights file '", weights,
           "' already exists; refusing to overwrite it (ask for overwrite explicitly)");
  }

  std::string contents;
  if (format == ModelFormat::text) {
    contents = print_graph(graph);
  } else {
    try {
      contents = graph_to_json(graph).dump(2) + "\n";
    } catch (const nlohmann::json::exception& error) {
      fail("cannot write '", path, "' as JSON: ", error.what());
    }
  }
  // Weights first: a model file never names weights that are not there yet.
  if (has_weights) {
    std::map<std::string, Tensor> tensors(graph.parameters().begin(), graph.parameters().end());
    write_safetensors(weights, tensors);
  }
  write_file_atomically(path, contents, overwrite);
}

}  // namespace kiln::ir
