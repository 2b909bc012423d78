// OnnxValue's dtype, shape and construction from known integer elements.
#include "frontends/onnx/onnx_value.h"

#include "kiln/error.h"

namespace kiln::frontends {

OnnxValue OnnxValue::of_ints(const ir::SymShape& elements, bool scalar, DType dtype) {
  KILN_CHECK(!scalar || elements.size() == 1, "a scalar has one element");
  bool all_constant = true;
  for (const ir::SymInt& element : elements) all_constant = all_constant && element.is_constant();
  if (all_constant) {
    Sizes sizes = scalar ? Sizes{} : Sizes{int64_t(elements.size())};
    Tensor tensor = Tensor::empty(sizes, dtype);
    for (size_t i = 0; i < elements.size(); ++i)
      store_int(dtype, static_cast<char*>(tensor.data_ptr()) + i * dtype_size(dtype), elements[i].constant());
    return of_constant(tensor);
  }
  OnnxValue value;
  value.symbolic = elements;
  value.symbolic_scalar = scalar;
  value.symbolic_dtype = dtype;
  return value;
}

std::string OnnxValue::kind_text() const {
  if (is_sequence) return "a sequence of " + std::to_string(elements.size()) + " tensors";
  return is_none ? "an empty optional" : "a tensor";
}

DType OnnxValue::dtype() const {
  KILN_CHECK(is_tensor(), "the dtype of ", kind_text());
  if (node) return node->value().dtype;
  if (constant) return constant->dtype();
  KILN_CHECK(symbolic, "an OnnxValue is a node, a constant or symbolic");
  return symbolic_dtype;
}

ir::SymShape OnnxValue::shape() const {
  KILN_CHECK(is_tensor(), "the shape of ", kind_text());
  if (node) return node->value().shape;
  if (constant) return ir::SymShape(constant->sizes().begin(), constant->sizes().end());
  KILN_CHECK(symbolic, "an OnnxValue is a node, a constant or symbolic");
  if (symbolic_scalar) return {};
  return {ir::SymInt(int64_t(symbolic->size()))};
}

}  // namespace kiln::frontends
