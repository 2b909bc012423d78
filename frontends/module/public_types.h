// The public API's value types (kiln/shape.h, kiln/tensor_type.h) to and from the IR's
// (ir::SymInt, ir::SymShape, ir::TensorMeta): what Kiln's own code calls at the boundary
// between a user's values and the graph.
#pragma once

#include "ir/graph.h"
#include "kiln/shape.h"
#include "kiln/tensor_type.h"

namespace kiln {

// The one reader and writer of SymSize's representation.
struct SymSizeAccess {
  static SymSize from_ir(const ir::SymInt& size);
  static ir::SymInt to_ir(const SymSize& size);
};

namespace frontends {

inline ir::SymInt to_ir(const SymSize& size) { return SymSizeAccess::to_ir(size); }
inline SymSize from_ir(const ir::SymInt& size) { return SymSizeAccess::from_ir(size); }
ir::SymShape to_ir(const Shape& shape);
Shape from_ir(const ir::SymShape& shape);
// A contiguous ir::TensorMeta of the type.
ir::TensorMeta to_ir(const TensorType& type);
TensorType from_ir(const ir::TensorMeta& meta);

}  // namespace frontends
}  // namespace kiln
