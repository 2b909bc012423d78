// The table of ONNX ops Kiln imports: op type -> converter. Each onnx_ops_*.cpp file holds
// the converters of one op family and registers them (explicitly, from the table's
// construction, so that a static library cannot drop them).
//
// A converter reads its node through OnnxNodeContext and sets every output the node
// produces; it handles each opset from kMinOnnxOpset to kMaxOnnxOpset (attributes that
// became inputs, changed defaults). What it cannot convert (an attribute value, an optional
// output, a data-dependent shape) is a kiln::Error naming the node.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/onnx/onnx_node_context.h"

namespace kiln::frontends {

using OnnxConverter = void (*)(OnnxNodeContext& context);

// A node's op as the table keys it: its type in the default domain ("" or "ai.onnx"), else
// "domain.Type".
std::string qualified_op_type(const onnx::NodeProto& node);

class OnnxOpTable {
 public:
  static const OnnxOpTable& global();

  // nullptr when the op is not supported. Ops of the default domain are keyed by their type
  // ("Relu"), others by "domain.Type" ("ai.onnx.ml.Binarizer"): qualified_op_type.
  OnnxConverter find(std::string_view op_type) const;
  std::vector<std::string> op_types() const;  // sorted

  void add(const std::string& op_type, OnnxConverter converter);

 private:
  std::map<std::string, OnnxConverter, std::less<>> converters_;
};

// The op families, one file each.
void register_onnx_elementwise_ops(OnnxOpTable& table);  // onnx_ops_elementwise.cpp
void register_onnx_nn_ops(OnnxOpTable& table);           // onnx_ops_nn.cpp
void register_onnx_normalization_ops(OnnxOpTable& table);  // onnx_ops_normalization.cpp
void register_onnx_reduction_ops(OnnxOpTable& table);    // onnx_ops_reduction.cpp
void register_onnx_resize_ops(OnnxOpTable& table);       // onnx_ops_resize.cpp
void register_onnx_einsum_ops(OnnxOpTable& table);       // onnx_ops_einsum.cpp
void register_onnx_shape_ops(OnnxOpTable& table);        // onnx_ops_shape.cpp
void register_onnx_tensor_ops(OnnxOpTable& table);       // onnx_ops_tensor.cpp
void register_onnx_loss_ops(OnnxOpTable& table);         // onnx_ops_loss.cpp
void register_onnx_math_ops(OnnxOpTable& table);         // onnx_ops_math.cpp
void register_onnx_indexing_ops(OnnxOpTable& table);     // onnx_ops_indexing.cpp
void register_onnx_spatial_ops(OnnxOpTable& table);      // onnx_ops_spatial.cpp
void register_onnx_quantization_ops(OnnxOpTable& table); // onnx_ops_quantization.cpp
void register_onnx_signal_ops(OnnxOpTable& table);       // onnx_ops_signal.cpp
void register_onnx_control_flow_ops(OnnxOpTable& table); // onnx_ops_control_flow.cpp
void register_onnx_recurrent_ops(OnnxOpTable& table);    // onnx_ops_recurrent.cpp
void register_onnx_text_ops(OnnxOpTable& table);         // onnx_ops_text.cpp
void register_onnx_ml_ops(OnnxOpTable& table);           // onnx_ops_ml.cpp
void register_onnx_sequence_ops(OnnxOpTable& table);     // onnx_ops_sequence.cpp

}  // namespace kiln::frontends
