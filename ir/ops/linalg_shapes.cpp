// Shape/dtype rules of matmul (torch.matmul's 1-d and batched broadcasting cases), bmm and
// det (the determinant of the last two dims, floating only).
// Both operands must have the same dtype (PyTorch does not promote in matrix products).
#include "ir/ops/shape_helpers.h"
#include "ir/ops/shape_rules.h"

namespace kiln::ir {

namespace {

void check_same_dtype(const OpCall& call, const TensorMeta& a, const TensorMeta& b) {
  if (a.dtype != b.dtype)
    call.fail("expected m1 and m2 to have the same dtype, but got: ", dtype_name(a.dtype), " != ", dtype_name(b.dtype));
  if (a.dtype == DType::boolean) call.fail(call.op().name(), " is not implemented for bool tensors");
}

// "2x3" for the last two dims of a shape (or "1x3" for a vector used as a row).
std::string matrix_string(const SymShape& shape) {
  std::string rows = shape.size() >= 2 ? shape[shape.size() - 2].to_string() : "1";
  return rows + "x" + shape.back().to_string();
}

NodeMeta matmul_rule(const OpCall& call) {
  const TensorMeta& a = call.tensor(0);
  const TensorMeta& b = call.tensor(1);
  if (a.rank() == 0 || b.rank() == 0)
    call.fail("both arguments to matmul need to be at least 1D, but they are ", a.rank(), "D and ", b.rank(), "D");
  check_same_dtype(call, a, b);
  const SymShape& sa = a.shape;
  const SymShape& sb = b.shape;
  const SymInt& k_a = sa.back();
  const SymInt& k_b = b.rank() >= 2 ? sb[sb.size() - 2] : sb[0];
  if (!(k_a == k_b)) {
    if (a.rank() == 1 && b.rank() == 1)
      call.fail("inconsistent tensor size, expected tensor ", shape_string(sa), " and src ", shape_string(sb),
                " to have the same number of elements, but got ", k_a, " and ", k_b, " elements respectively");
    if (a.rank() == 2 && b.rank() == 1)
      call.fail("size mismatch, got input (", sa[0], "), mat (", matrix_string(sa), "), vec (", sb[0], ")");
    std::string rhs = b.rank() >= 2 ? matrix_string(sb) : sb[0].to_string() + "x1";
    call.fail_unequal(k_a, k_b, "mat1 and mat2 shapes cannot be multiplied (", matrix_string(sa), " and ", rhs, ")");
  }
  SymShape batch_a(sa.begin(), sa.end() - std::min<long>(2, long(sa.size())));
  SymShape batch_b(sb.begin(), sb.end() - std::min<long>(2, long(sb.size())));
  SymShape shape = broadcast_shapes(call, batch_a, batch_b);
  if (a.rank() >= 2) shape.push_back(sa[sa.size() - 2]);
  if (b.rank() >= 2) shape.push_back(sb.back());
  return single(TensorMeta::contiguous(a.dtype, std::move(shape), a.device));
}

NodeMeta bmm_rule(const OpCall& call) {
  const TensorMeta& a = call.tensor(0);
  const TensorMeta& b = call.tensor(1);
  if (a.rank() != 3) call.fail("batch1 must be a 3D tensor, but got ", a.type_string());
  if (b.rank() != 3) call.fail("batch2 must be a 3D tensor, but got ", b.type_string());
  check_same_dtype(call, a, b);
  if (!(a.shape[0] == b.shape[0]) || !(a.shape[2] == b.shape[1]))
    call.fail("Expected size for first two dimensions of batch2 tensor to be: [", a.shape[0], ", ", a.shape[2],
              "] but got: [", b.shape[0], ", ", b.shape[1], "].");
  return single(TensorMeta::contiguous(a.dtype, {a.shape[0], a.shape[1], b.shape[2]}, a.device));
}

NodeMeta det_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  if (!is_floating(self.dtype)) call.fail("linalg.det: expected a floating point tensor, but got ", dtype_name(self.dtype));
  if (self.rank() < 2 || !known_equal(self.shape[self.shape.size() - 1], self.shape[self.shape.size() - 2]))
    call.fail("linalg.det: A must be batches of square matrices, but they are ", self.type_string());
  SymShape shape(self.shape.begin(), self.shape.end() - 2);
  return single(TensorMeta::contiguous(self.dtype, std::move(shape), self.device));
}

}  // namespace

void attach_linalg_shape_rules(ShapeRuleTable& rules) {
  rules["det"] = det_rule;
  rules["matmul"] = matmul_rule;
  rules["bmm"] = bmm_rule;
}

}  // namespace kiln::ir
