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
#pragma once

#include <optional>
#include <string>

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
  DType dtype() const;
  ir::SymShape shape() const;
};

}  // namespace kiln::frontends
