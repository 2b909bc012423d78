// dim_param names to valid, distinct symbols.
#include "frontends/onnx/onnx_symbols.h"

#include <algorithm>
#include <cctype>

namespace kiln::frontends {

std::string sanitize_symbol_name(const std::string& text) {
  std::string name;
  for (char c : text) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (name.empty()) name = "dim";
  if (std::isdigit(static_cast<unsigned char>(name.front()))) name = "d" + name;
  bool loop_variable = name.size() > 1 && (name.front() == 'x' || name.front() == 'r') &&
                       std::all_of(name.begin() + 1, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (name == "max" || name == "min" || loop_variable) name += "_";
  return name;
}

std::string OnnxSymbols::claim(const std::string& wanted) {
  std::string name = wanted;
  for (int suffix = 2; used_.count(name); ++suffix) name = wanted + "_" + std::to_string(suffix);
  used_.insert(name);
  return name;
}

ir::SymInt OnnxSymbols::resolved(const std::string& name) const {
  // Each equality was found on a graph where the symbols before it were already replaced, so
  // its value holds none of them: substituting once per equality reaches the end.
  ir::SymInt value = ir::SymInt::symbol(name);
  for (size_t i = 0; i <= equal_to_.size(); ++i) {
    ir::SymInt next = value.substitute(equal_to_);
    if (next == value) break;
    value = next;
  }
  return value;
}

ir::SymInt OnnxSymbols::for_dim_param(const std::string& dim_param) {
  auto found = by_dim_param_.find(dim_param);
  if (found == by_dim_param_.end()) found = by_dim_param_.emplace(dim_param, claim(sanitize_symbol_name(dim_param))).first;
  return resolved(found->second);
}

ir::SymInt OnnxSymbols::for_unnamed_dim(const std::string& input_name, int64_t axis) {
  return resolved(claim(sanitize_symbol_name(input_name + "_dim" + std::to_string(axis))));
}

}  // namespace kiln::frontends
