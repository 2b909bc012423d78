// SymSize, Shape and TensorType (kiln/shape.h, kiln/tensor_type.h) over the IR's symbolic
// integers, and their conversions (public_types.h).
#include "frontends/module/public_types.h"

#include "ir/symbolic.h"
#include "kiln/error.h"

namespace kiln {

SymSize SymSizeAccess::from_ir(const ir::SymInt& size) {
  if (std::optional<int64_t> constant = size.maybe_constant()) return SymSize(*constant);
  SymSize result;
  result.expression_ = std::make_shared<const ir::SymInt>(size);
  return result;
}

ir::SymInt SymSizeAccess::to_ir(const SymSize& size) {
  return size.expression_ ? *size.expression_ : ir::SymInt(size.constant_);
}

SymSize SymSize::symbol(const std::string& name) {
  try {
    return SymSizeAccess::from_ir(ir::SymInt::symbol(name));
  } catch (const ir::SymbolicError& e) {
    fail("kiln::SymSize::symbol: ", e.what());
  }
}

std::optional<int64_t> SymSize::constant() const {
  if (expression_) return std::nullopt;
  return constant_;
}

std::string SymSize::to_string() const { return SymSizeAccess::to_ir(*this).to_string(); }

bool operator==(const SymSize& a, const SymSize& b) { return SymSizeAccess::to_ir(a) == SymSizeAccess::to_ir(b); }

SymSize operator+(const SymSize& a, const SymSize& b) {
  return SymSizeAccess::from_ir(SymSizeAccess::to_ir(a) + SymSizeAccess::to_ir(b));
}

SymSize operator-(const SymSize& a, const SymSize& b) {
  return SymSizeAccess::from_ir(SymSizeAccess::to_ir(a) - SymSizeAccess::to_ir(b));
}

SymSize operator*(const SymSize& a, const SymSize& b) {
  return SymSizeAccess::from_ir(SymSizeAccess::to_ir(a) * SymSizeAccess::to_ir(b));
}

SymSize floordiv(const SymSize& a, const SymSize& b) {
  return SymSizeAccess::from_ir(ir::floordiv(SymSizeAccess::to_ir(a), SymSizeAccess::to_ir(b)));
}

std::string shape_to_string(const Shape& shape) { return ir::shape_string(frontends::to_ir(shape)); }

TensorType TensorType::of(const Tensor& tensor) {
  if (!tensor.defined()) fail("kiln::TensorType::of: an undefined tensor");
  return {tensor.dtype(), Shape(tensor.sizes().begin(), tensor.sizes().end()), tensor.device()};
}

std::optional<Sizes> TensorType::static_shape() const {
  Sizes sizes;
  for (const SymSize& size : shape) {
    std::optional<int64_t> constant = size.constant();
    if (!constant) return std::nullopt;
    sizes.push_back(*constant);
  }
  return sizes;
}

std::string TensorType::to_string() const { return frontends::to_ir(*this).type_string(); }

bool operator==(const TensorType& a, const TensorType& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.device == b.device;
}

namespace frontends {

ir::SymShape to_ir(const Shape& shape) {
  ir::SymShape result;
  result.reserve(shape.size());
  for (const SymSize& size : shape) result.push_back(to_ir(size));
  return result;
}

Shape from_ir(const ir::SymShape& shape) {
  Shape result;
  result.reserve(shape.size());
  for (const ir::SymInt& size : shape) result.push_back(from_ir(size));
  return result;
}

ir::TensorMeta to_ir(const TensorType& type) { return ir::TensorMeta::contiguous(type.dtype, to_ir(type.shape), type.device); }

TensorType from_ir(const ir::TensorMeta& meta) { return {meta.dtype, from_ir(meta.shape), meta.device}; }

}  // namespace frontends
}  // namespace kiln
