// OnnxValue: what the importer knows about one named ONNX value while it builds the graph.
// A value is one of
//  - a node of the graph being built (a placeholder, or the result of converted ops);
//  - a constant: a tensor known at import time (an initializer, a Constant, or a node whose
//    inputs were all constants, folded);
//  - a symbolic integer vector or scalar: an integer tensor of rank 0 or 1 whose elements
//    are known at import time as symbolic sizes (Shape of a tensor with a dim_param dim, and
//    the arithmetic, Gather, Concat, ... that export code builds from it). Reshape, Expand,
//    ConstantOfShape and friends read these as sizes, so dynamic shapes stay symbolic.
// A constant or symbolic value becomes a node only when an op needs it as a tensor
// (OnnxNodeContext::tensor); the node is then kept with the value for later readers.
// Beyond tensors, a value may be
//  - a sequence (ONNX's seq(tensor)), resolved when the model is imported into its list of
//    element values (static specialization, as TorchDynamo specializes a Python list on its
//    length): every sequence op (SequenceInsert, SplitToSequence, ...) runs at import time on
//    the list, and only the elements become graph nodes;
//  - an empty optional (`none`: Optional without an input, an optional graph input fed
//    nothing). An optional that holds a value is that value itself.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::frontends {

struct OnnxValue {
  std::string name;  // the ONNX value name
  ir::Node* node = nullptr;
  std::optional<Tensor> constant;
  std::optional<ir::SymShape> symbolic;  // the elements of a symbolic integer value
  bool symbolic_scalar = false;          // rank 0 (one element) rather than rank 1
  DType symbolic_dtype = DType::i64;
  bool is_sequence = false;
  std::vector<OnnxValue> elements;     // a sequence's elements, in order
  std::optional<DType> element_dtype;  // a sequence's element type (known even when it is empty)
  bool is_none = false;                // an empty optional

  static OnnxValue sequence(std::vector<OnnxValue> elements, std::optional<DType> element_dtype) {
    OnnxValue value;
    value.is_sequence = true;
    value.elements = std::move(elements);
    value.element_dtype = element_dtype;
    return value;
  }
  static OnnxValue none() {
    OnnxValue value;
    value.is_none = true;
    return value;
  }
  bool is_tensor() const { return !is_sequence && !is_none; }
  // "a sequence", "an empty optional" or "a tensor", for messages.
  std::string kind_text() const;

  static OnnxValue of_node(ir::Node* node) {
    OnnxValue value;
    value.node = node;
    return value;
  }
  static OnnxValue of_constant(Tensor tensor) {
    OnnxValue value;
    value.constant = std::move(tensor);
    return value;
  }
  // Integer elements known at import time: a constant when every element is a constant.
  static OnnxValue of_ints(const ir::SymShape& elements, bool scalar, DType dtype = DType::i64);

  bool is_constant() const { return constant.has_value(); }
  bool is_symbolic() const { return symbolic.has_value(); }
  DType dtype() const;       // of a tensor
  ir::SymShape shape() const;  // of a tensor
};

}  // namespace kiln::frontends
