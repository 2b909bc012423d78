// State dicts of kiln::nn::Module: every parameter and buffer by path, loaded by copying
// into the module's own tensors after checking every key and shape (module.h).
#include "kiln/nn/module.h"
#include "kiln/error.h"
#include "kiln/safetensors.h"

namespace kiln::nn {

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> state;
  for (auto& [name, value] : named_parameters()) state.emplace(name, value);
  for (auto& [name, value] : named_buffers()) state.emplace(name, value);
  return state;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  std::map<std::string, Tensor> own = state_dict();
  std::vector<std::string> problems;
  std::string missing, unexpected;
  for (const auto& [name, value] : own) {
    auto found = state.find(name);
    if (found == state.end()) {
      missing += (missing.empty() ? "" : ", ") + name;
    } else if (found->second.sizes() != value.sizes()) {
      problems.push_back("size mismatch for " + name + ": copying a tensor of shape " +
                         sizes_to_string(found->second.sizes()) + " from the state dict, the shape in the module is " +
                         sizes_to_string(value.sizes()));
    }
  }
  for (const auto& [name, value] : state) {
    if (!own.count(name)) unexpected += (unexpected.empty() ? "" : ", ") + name;
  }
  if (strict && !missing.empty()) problems.insert(problems.begin(), "missing keys: " + missing);
  if (strict && !unexpected.empty()) problems.push_back("unexpected keys: " + unexpected);
  if (!problems.empty()) {
    std::string message = "error loading the state dict of " + type_name() + ": ";
    for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    fail(message);
  }
  for (const auto& [name, value] : own) {
    auto found = state.find(name);
    if (found != state.end()) value.copy_from(found->second);
  }
}

void Module::load_state_dict(const std::string& safetensors_path, bool strict) {
  std::map<std::string, Tensor> state = read_safetensors(safetensors_path);
  try {
    load_state_dict(state, strict);
  } catch (const Error& error) {
    fail(safetensors_path, ": ", error.what());
  }
}

}  // namespace kiln::nn
