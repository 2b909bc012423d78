// Input flags to tensors, and printing summaries of results.
#include "tools/model_inputs.h"

#include <charconv>
#include <random>
#include <sstream>

#include <filesystem>

#include "frontends/onnx/onnx_specialization.h"
#include "kiln/error.h"
#include "kiln/npy.h"

namespace kiln::tools {

namespace {
std::pair<std::string, std::string> split_assignment(const std::string& flag, const char* what) {
  size_t equals = flag.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == flag.size())
    fail("bad ", what, " '", flag, "': expected NAME=VALUE");
  return {flag.substr(0, equals), flag.substr(equals + 1)};
}

std::string joined_names(const std::vector<ModelInput>& placeholders) {
  std::string text;
  for (const ModelInput& input : placeholders) text += (text.empty() ? "" : ", ") + input.name;
  return text.empty() ? "none" : text;
}

Tensor random_tensor(const ir::TensorMeta& meta, const Sizes& sizes, std::mt19937_64& generator) {
  Tensor tensor = Tensor::empty(sizes, meta.dtype);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int64_t> small_int(0, 9);
  std::bernoulli_distribution coin(0.5);
  char* base = static_cast<char*>(tensor.data_ptr());
  size_t width = tensor.element_size();
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    void* address = base + size_t(i) * width;
    if (is_floating(meta.dtype)) store_double(meta.dtype, address, normal(generator));
    else if (meta.dtype == DType::boolean) store_int(meta.dtype, address, coin(generator));
    else store_int(meta.dtype, address, small_int(generator));
  }
  return tensor;
}
}  // namespace

std::map<std::string, std::string> parse_input_flags(const std::vector<std::string>& flags) {
  std::map<std::string, std::string> files;
  for (const std::string& flag : flags) {
    auto [name, path] = split_assignment(flag, "--input");
    if (!files.emplace(name, path).second) fail("--input ", name, " is given twice");
  }
  return files;
}

std::map<std::string, int64_t> parse_dim_flags(const std::vector<std::string>& flags) {
  std::map<std::string, int64_t> dims;
  for (const std::string& flag : flags) {
    auto [name, text] = split_assignment(flag, "--dim");
    int64_t value = -1;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0)
      fail("bad --dim '", flag, "': the size must be a non-negative integer");
    if (!dims.emplace(name, value).second) fail("--dim ", name, " is given twice");
  }
  return dims;
}

ir::Graph load_model_for_run(const std::string& path, std::map<std::string, std::string>& files) {
  if (std::filesystem::path(path).extension() != ".onnx") return compiler::load_model(path);
  std::error_code status;
  if (!std::filesystem::exists(path, status)) fail("model file '", path, "' does not exist");
  std::map<std::string, Tensor> given;
  for (const auto& [name, file] : files) given[name] = read_npy(file);
  frontends::OnnxSpecializedModel model(path);
  std::map<std::string, Tensor> run_inputs;
  ir::Graph graph = std::move(model.specialize(given, run_inputs).graph);
  for (const std::string& name : model.value_inputs()) files.erase(name);
  return graph;
}

std::map<std::string, Tensor> prepare_inputs(const ir::Graph& graph,
                                             const std::map<std::string, std::string>& files,
                                             const std::map<std::string, int64_t>& dims,
                                             std::optional<uint64_t> seed) {
  std::vector<ModelInput> placeholders;
  for (ir::Node* node : graph.placeholders()) placeholders.push_back({node->target(), node->value()});
  return prepare_inputs(placeholders, files, dims, seed);
}

std::map<std::string, Tensor> prepare_inputs(const std::vector<ModelInput>& placeholders,
                                             const std::map<std::string, std::string>& files,
                                             const std::map<std::string, int64_t>& dims,
                                             std::optional<uint64_t> seed) {
  for (const auto& [name, path] : files) {
    bool known = false;
    for (const ModelInput& input : placeholders) known |= input.name == name;
    if (!known) fail("--input ", name, ": the model has no input named '", name, "' (its inputs: ", joined_names(placeholders), ")");
  }
  std::map<std::string, Tensor> inputs;
  std::mt19937_64 generator(seed.value_or(0));
  for (const ModelInput& input : placeholders) {
    const ir::TensorMeta& meta = input.meta;
    auto file = files.find(input.name);
    if (file != files.end()) {
      Tensor tensor = read_npy(file->second);
      // A --dim must agree with what a given input says about its symbol.
      for (size_t d = 0; d < meta.shape.size() && int64_t(d) < tensor.dim(); ++d) {
        if (!meta.shape[d].is_symbol()) continue;
        std::string symbol = meta.shape[d].to_string();
        auto bound = dims.find(symbol);
        if (bound != dims.end() && bound->second != tensor.size(int64_t(d)))
          fail("--dim ", symbol, "=", bound->second, " contradicts input '", input.name, "' (", file->second,
               "), whose dim ", d, " is ", tensor.size(int64_t(d)));
      }
      inputs.emplace(input.name, std::move(tensor));
      continue;
    }
    if (!seed)
      fail("missing input '", input.name, "' (", meta.type_string(), "): pass --input ", input.name,
           "=FILE.npy or --random-inputs SEED");
    for (const ir::SymInt& dim : meta.shape)
      for (const std::string& symbol : dim.free_symbols())
        if (!dims.count(symbol))
          fail("input '", input.name, "' has symbolic size ", symbol, " (", meta.type_string(),
               "): pass --dim ", symbol, "=N to make random inputs");
    inputs.emplace(input.name, random_tensor(meta, meta.evaluate_shape(dims), generator));
  }
  return inputs;
}

std::string summarize_tensor(const std::string& name, const Tensor& tensor, int64_t max_values) {
  std::ostringstream out;
  out << name << ": " << dtype_name(tensor.dtype()) << sizes_to_string(tensor.sizes()) << " = [";
  int64_t count = std::min(tensor.numel(), max_values);
  for (int64_t i = 0; i < count; ++i) {
    if (i) out << ", ";
    if (is_floating(tensor.dtype())) out << tensor.flat_double(i);
    else if (tensor.dtype() == DType::boolean) out << (tensor.flat_int(i) ? "True" : "False");
    else out << tensor.flat_int(i);
  }
  if (tensor.numel() > count) out << (count ? ", " : "") << "...";
  out << "]";
  return out.str();
}

}  // namespace kiln::tools
