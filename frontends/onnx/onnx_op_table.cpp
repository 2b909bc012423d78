// The ONNX op table, filled from each op family's registration function.
#include "frontends/onnx/onnx_op_table.h"

#include "kiln/error.h"

namespace kiln::frontends {

const OnnxOpTable& OnnxOpTable::global() {
  static const OnnxOpTable table = [] {
    OnnxOpTable built;
    register_onnx_elementwise_ops(built);
    register_onnx_nn_ops(built);
    register_onnx_normalization_ops(built);
    register_onnx_reduction_ops(built);
    register_onnx_resize_ops(built);
    register_onnx_einsum_ops(built);
    register_onnx_shape_ops(built);
    register_onnx_tensor_ops(built);
    register_onnx_loss_ops(built);
    register_onnx_math_ops(built);
    register_onnx_indexing_ops(built);
    register_onnx_spatial_ops(built);
    register_onnx_quantization_ops(built);
    register_onnx_signal_ops(built);
    register_onnx_control_flow_ops(built);
    register_onnx_recurrent_ops(built);
    register_onnx_text_ops(built);
    register_onnx_ml_ops(built);
    register_onnx_sequence_ops(built);
    return built;
  }();
  return table;
}

std::string qualified_op_type(const onnx::NodeProto& node) {
  bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
  return default_domain ? node.op_type() : node.domain() + "." + node.op_type();
}

OnnxConverter OnnxOpTable::find(std::string_view op_type) const {
  auto found = converters_.find(op_type);
  return found == converters_.end() ? nullptr : found->second;
}

std::vector<std::string> OnnxOpTable::op_types() const {
  std::vector<std::string> names;
  for (const auto& entry : converters_) names.push_back(entry.first);
  return names;
}

void OnnxOpTable::add(const std::string& op_type, OnnxConverter converter) {
  KILN_CHECK(!converters_.count(op_type), "ONNX op ", op_type, " registered twice");
  converters_[op_type] = converter;
}

}  // namespace kiln::frontends
