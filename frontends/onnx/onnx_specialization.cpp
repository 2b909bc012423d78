// Specializing an ONNX model on the values of its shape-deciding inputs (see
// onnx_specialization.h).
#include "frontends/onnx/onnx_specialization.h"

#include <algorithm>

#include "ir/interpreter.h"
#include "kiln/error.h"

namespace kiln::frontends {

namespace {

OnnxSpecializedModel::Runner interpret(const ir::Graph& graph) {
  return [&graph](const std::map<std::string, Tensor>& inputs) { return ir::interpret(graph, inputs); };
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "'" : ", '") + name + "'";
  return text;
}

}  // namespace

OnnxSpecializedModel::OnnxSpecializedModel(std::string path, Compile compile, size_t max_specializations)
    : path_(std::move(path)), compile_(compile ? std::move(compile) : Compile(interpret)),
      max_specializations_(max_specializations) {}

std::vector<Tensor> OnnxSpecializedModel::run(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> run_inputs;
  Specialization& specialization = specialize(inputs, run_inputs);
  if (!specialization.runner) specialization.runner = compile_(specialization.graph);
  return specialization.runner(run_inputs);
}

OnnxSpecializedModel::Specialization& OnnxSpecializedModel::specialize(const std::map<std::string, Tensor>& inputs,
                                                                       std::map<std::string, Tensor>& run_inputs) {
  Specialization* specialization = nullptr;
  if (imported_once_) {
    auto found = specializations_.find(key_of(inputs));
    if (found != specializations_.end()) specialization = found->second.get();
  }
  if (!specialization) specialization = &import_for(inputs);
  run_inputs.clear();
  for (const auto& [name, value] : inputs)
    if (!std::binary_search(value_inputs_.begin(), value_inputs_.end(), name)) run_inputs.emplace(name, value);
  return *specialization;
}

std::string OnnxSpecializedModel::key_of(const std::map<std::string, Tensor>& inputs) const {
  std::string key;
  // Sequence and optional inputs: which tensors are fed for them (their lengths) and their types.
  for (const std::string& base : collection_inputs_) {
    auto add = [&](const std::string& name) {
      auto found = inputs.find(name);
      if (found == inputs.end()) return false;
      key += name + '\0' + std::string(dtype_name(found->second.dtype())) + sizes_to_string(found->second.sizes()) + '\0';
      return true;
    };
    add(base);
    for (size_t k = 0; add(base + "_" + std::to_string(k)); ++k) {
    }
    key += '\1';
  }
  for (const std::string& name : value_inputs_) {
    auto found = inputs.find(name);
    if (found == inputs.end())
      fail("'", path_, "': input '", name, "' decides shapes in this model (its value is needed to compile it), but it "
           "was not given");
    Tensor value = found->second.contiguous();
    key += name + '\0' + std::string(dtype_name(value.dtype())) + sizes_to_string(value.sizes()) + '\0';
    key.append(static_cast<const char*>(value.data_ptr()), value.nbytes());
  }
  return key;
}

OnnxSpecializedModel::Specialization& OnnxSpecializedModel::import_for(const std::map<std::string, Tensor>& inputs) {
  while (true) {
    std::string key = key_of(inputs);  // fails when a value input is missing
    if (auto found = specializations_.find(key); found != specializations_.end()) return *found->second;
    OnnxImportOptions options;
    options.fed_types.emplace();
    for (const auto& [name, value] : inputs)
      (*options.fed_types)[name] = ir::TensorMeta::contiguous(value.dtype(), ir::SymShape(value.sizes().begin(), value.sizes().end()));
    std::vector<std::string> collections;
    options.collection_inputs = &collections;
    std::map<std::string, Tensor> values;
    for (const std::string& name : value_inputs_) {
      values[name] = inputs.at(name);
      options.input_values[onnx_names_.at(name)] = inputs.at(name);
    }
    if (specializations_.size() >= max_specializations_)
      fail("'", path_, "' has been specialized on ", specializations_.size(), " different values of its input",
           value_inputs_.size() == 1 ? " " : "s ", quoted_list(value_inputs_),
           " already, the most kept: every new value compiles the model again");
    try {
      ir::Graph graph = import_onnx(path_, options);
      imported_once_ = true;
      if (collections != collection_inputs_) {  // learnt on the first import: the key covers them
        collection_inputs_ = collections;
        key = key_of(inputs);
        if (auto found = specializations_.find(key); found != specializations_.end()) return *found->second;
      }
      auto made = std::make_unique<Specialization>(Specialization{key, std::move(values), std::move(graph), nullptr});
      return *(specializations_[key] = std::move(made));
    } catch (const OnnxInputValuesNeeded& needed) {
      bool widened = false;
      for (const std::string& onnx_name : needed.inputs()) {
        std::string name = onnx_value_name(onnx_name);
        if (std::binary_search(value_inputs_.begin(), value_inputs_.end(), name)) continue;
        if (!inputs.count(name))
          fail(needed.what(), "; the input '", name, "' was not given");
        value_inputs_.insert(std::upper_bound(value_inputs_.begin(), value_inputs_.end(), name), name);
        onnx_names_[name] = onnx_name;
        widened = true;
      }
      if (!widened) throw;  // the inputs named are specialized on already: their values do not help
    }
  }
}

}  // namespace kiln::frontends
