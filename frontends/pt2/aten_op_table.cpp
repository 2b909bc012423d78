// The ATen op table, filled from each op family's registration function.
#include "frontends/pt2/aten_op_table.h"

namespace kiln::frontends {

const AtenOpTable& AtenOpTable::global() {
  static const AtenOpTable table = [] {
    AtenOpTable built;
    register_aten_elementwise_ops(built);
    register_aten_math_ops(built);
    register_aten_composite_ops(built);
    register_aten_backward_ops(built);
    register_aten_activation_ops(built);
    register_aten_reduction_ops(built);
    register_aten_view_ops(built);
    register_aten_tensor_ops(built);
    register_aten_indexing_ops(built);
    register_aten_creation_ops(built);
    register_aten_linalg_ops(built);
    register_aten_conv_pool_ops(built);
    register_aten_normalization_ops(built);
    register_aten_attention_loss_ops(built);
    register_aten_symbolic_ops(built);
    register_aten_recurrent_ops(built);
    return built;
  }();
  return table;
}

const AtenConverter* AtenOpTable::find(std::string_view target) const {
  auto found = converters_.find(short_target(std::string(target)));
  return found == converters_.end() ? nullptr : &found->second;
}

std::vector<std::string> AtenOpTable::targets() const {
  std::vector<std::string> names;
  for (const auto& entry : converters_) names.push_back(entry.first);
  return names;
}

void AtenOpTable::add(const std::string& target, AtenConverter converter) {
  KILN_CHECK(!converters_.count(target), "ATen target ", target, " registered twice");
  converters_[target] = std::move(converter);
}

}  // namespace kiln::frontends
