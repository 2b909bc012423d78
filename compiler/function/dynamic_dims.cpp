// Automatic dynamic shapes and the symbolic placeholder types of a trace
// (compiler/function/dynamic_dims.h).
#include "compiler/function/dynamic_dims.h"

#include <algorithm>

#include "frontends/module/trace_graph.h"
#include "kiln/error.h"
#include "runtime/strides.h"

namespace kiln::compiler {

std::vector<std::string> DynamicDims::note_sizes(const std::vector<Tensor>& inputs,
                                                 const std::vector<std::string>& names) {
  std::vector<std::string> notes;
  if (first_sizes_.empty()) {
    for (const Tensor& input : inputs) first_sizes_.push_back(input.sizes());
    return notes;
  }
  for (size_t i = 0; i < inputs.size() && i < first_sizes_.size(); ++i) {
    if (first_sizes_[i].size() != inputs[i].sizes().size()) continue;
    for (size_t d = 0; d < first_sizes_[i].size(); ++d) {
      if (first_sizes_[i][d] == inputs[i].sizes()[d] || contains(i, int64_t(d))) continue;
      mark(i, int64_t(d));
      notes.push_back(names[i] + ".size(" + std::to_string(d) + ") changed from " + std::to_string(first_sizes_[i][d]) +
                      " to " + std::to_string(inputs[i].sizes()[d]) + ": made dynamic");
    }
  }
  return notes;
}

void DynamicDims::check_marked(const std::vector<Tensor>& inputs, const std::string& who) const {
  for (const auto& [dim, range] : dims_) {
    if (dim.first >= inputs.size() || dim.second >= inputs[dim.first].dim())
      fail(who, ": dim ", dim.second, " of input ", dim.first, " was marked dynamic, but the call has ", inputs.size(),
           " inputs",
           dim.first < inputs.size() ? " and that input has rank " + std::to_string(inputs[dim.first].dim()) : "");
  }
}

std::vector<ir::TensorMeta> DynamicDims::input_types(const std::vector<Tensor>& inputs,
                                                     const std::vector<std::string>& names, DynamicShapes policy,
                                                     bool dynamic, SymbolRanges& ranges,
                                                     std::vector<std::string>& specializations) const {
  std::vector<ir::TensorMeta> types;
  std::map<std::pair<int64_t, std::pair<int64_t, int64_t>>, std::string> symbols;  // (size, range) -> name
  for (size_t i = 0; i < inputs.size(); ++i) {
    ir::TensorMeta type = example_meta(inputs[i]);
    type.device = inputs[i].device();
    for (size_t d = 0; dynamic && d < type.shape.size(); ++d) {
      int64_t size = inputs[i].sizes()[d];
      DimRange range;
      auto marked = dims_.find({i, int64_t(d)});
      if (marked != dims_.end()) range = marked->second;
      else if (policy != DynamicShapes::always) continue;
      std::string where = names[i] + ".size(" + std::to_string(d) + ")";
      if (size < 2 || size < range.min || size > range.max) {
        specializations.push_back(where + " is " + std::to_string(size) + ": specialized (" +
                                  (size < 2 ? "sizes 0 and 1 are never symbolic" : "outside its marked range") + ")");
        continue;
      }
      auto [it, fresh] = symbols.emplace(std::make_pair(size, std::make_pair(range.min, range.max)),
                                         "s" + std::to_string(symbols.size()));
      if (fresh) ranges[it->second] = {std::max<int64_t>(2, range.min), range.max};  // 0 and 1: static variants
      type.shape[d] = ir::SymInt::symbol(it->second);
    }
    type.strides = contiguous_strides(type.shape);
    types.push_back(std::move(type));
  }
  return types;
}

}  // namespace kiln::compiler
