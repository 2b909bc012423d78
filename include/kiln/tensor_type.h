// kiln::TensorType: what is known of a tensor before it exists: its dtype, its shape (each dim
// a known size or a symbolic one: kiln/shape.h) and its device. The type of a graph's or a
// compiled model's inputs and outputs, and what kiln::trace takes instead of example tensors
// when a dim must stay dynamic:
//
//   kiln::trace(model, {kiln::TensorType{kiln::DType::f32, {kiln::SymSize::symbol("s0"), 784}}});
#pragma once

#include <string>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/shape.h"
#include "kiln/tensor.h"

namespace kiln {

struct TensorType {
  DType dtype = DType::f32;
  Shape shape{};
  Device device = Device::cpu();

  // The type of a defined tensor: its dtype, static shape and device.
  static TensorType of(const Tensor& tensor);
  int64_t rank() const { return int64_t(shape.size()); }
  // The sizes when no dim is symbolic.
  std::optional<Sizes> static_shape() const;
  // "f32[s0, 784]" (a 0-d tensor: "f32[]").
  std::string to_string() const;
  friend bool operator==(const TensorType& a, const TensorType& b);
};

}  // namespace kiln
