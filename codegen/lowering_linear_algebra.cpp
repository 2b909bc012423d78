// Lowering of matmul and bmm to ExternKind::Gemm calls (f32 and f64; other dtypes go to the
// Fallback): operands as StridedViews [batch..., m, k] and [batch..., k, n] (a 1-d operand
// gains a dim of size 1 as in PyTorch; batch dims broadcast with stride 0); each matrix must
// have a unit stride in one of its last two dims and a leading stride that covers the other
// (size-1 dims take whatever stride makes that so), otherwise the operand is first copied
// contiguous by a Pointwise node, as is an operand whose accessor is not affine. The output
// is the node's contiguous buffer viewed as [batch..., m, n]. A batch of GEMMs that share the
// right operand but whose left operand's rows do not walk memory as one dim is copied contiguous
// too (worth_folding). Convolution, which also lowers to GEMMs, is in lowering_convolution.cpp.
#include <algorithm>

#include "codegen/lowering_context.h"
#include "kiln/error.h"
#include "runtime/strides.h"

namespace kiln::codegen::lowering {
namespace {

bool gemm_dtype(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

// `value` (rank >= 1) as a Gemm operand of batch shape `batch`: a 1-d value becomes [1, k]
// (left operand) or [k, 1] (right operand); nullopt when its accessor is not affine or, with
// `need_layout`, when its matrix dims have no usable layout.
std::optional<StridedView> try_operand(Lowerer& lowerer, const Accessor& value, bool left, const SymShape& batch,
                                       bool need_layout) {
  std::optional<StridedView> view = lowerer.strided_view(value);
  if (!view) return std::nullopt;
  if (view->shape.size() == 1) {
    auto at = left ? view->shape.begin() : view->shape.end();
    view->shape.insert(at, SymInt(1));
    view->strides.insert(left ? view->strides.begin() : view->strides.end(), SymInt(1));
  }
  size_t own_batch = view->shape.size() - 2;
  SymShape shape = batch, strides;
  for (size_t d = 0; d < batch.size(); ++d) {
    size_t lead = batch.size() - own_batch;
    if (d < lead || (view->shape[d - lead] == SymInt(1) && !(batch[d] == SymInt(1)))) {
      strides.push_back(SymInt(0));
    } else {
      strides.push_back(view->strides[d - lead]);
    }
  }
  for (size_t d = own_batch; d < view->shape.size(); ++d) {
    shape.push_back(view->shape[d]);
    strides.push_back(view->strides[d]);
  }
  view->shape = shape;
  view->strides = strides;
  if (!make_matrix_layout(*view) && need_layout) return std::nullopt;
  return view;
}

StridedView gemm_operand(Lowerer& lowerer, const Accessor& value, bool left, const SymShape& batch,
                         const std::string& name) {
  if (std::optional<StridedView> view = try_operand(lowerer, value, left, batch, true)) return *view;
  // A contiguous copy is row-major (only an empty matrix can miss the layout check).
  std::optional<StridedView> view = try_operand(lowerer, lowerer.contiguous(value, name), left, batch, false);
  KILN_CHECK(view, "gemm operand: a contiguous copy is not affine");
  return *view;
}

// A GEMM this narrow does too little per element of its left operand to pay for copying it.
constexpr int64_t kFoldCopyMinColumns = 16;

// Whether a batch of GEMMs that share the right operand (x @ w, x of rank 3 or more) should copy
// its left operand contiguous first, so that the batch folds into the rows of one GEMM
// (gemm_folded_row_stride): x read batch-first from a time-major tensor (an RNN's states under
// its output layer, a sequence-first transformer's activations) walks its rows with two strides,
// and ran as a GEMM per batch entry, each streaming w again, through oneDNN's kernel for strided
// rows (LSTM LM b8, 2 threads: its 4000-wide output layer 3.9 ms as 8 GEMMs of 64 rows; one of
// 512 rows after a copy of its 512 x 256 input is oneDNN's blocked kernel). The copy moves rows x
// k elements for the GEMM's rows x k x n multiply-adds, and fuses into the producer where that
// is Kiln's own kernel (a gather, a stack of states) that then writes the rows in order.
bool worth_folding(const StridedView& left, const StridedView& right) {
  const size_t rank = left.shape.size();
  if (rank < 3 || gemm_folded_row_stride(left, right)) return false;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (left.shape[d] == SymInt(1)) continue;
    // Not shared; or x broadcast along the batch, whose copy would repeat its rows.
    if (!(right.strides[d] == SymInt(0)) && !(right.shape[d] == SymInt(1))) return false;
    if (left.strides[d] == SymInt(0)) return false;
  }
  const std::optional<int64_t> n = right.shape[rank - 1].maybe_constant();
  return !n || *n >= kFoldCopyMinColumns;
}

}  // namespace

bool make_matrix_layout(StridedView& view) {
  size_t rows = view.shape.size() - 2, cols = view.shape.size() - 1;
  for (bool row_major : {true, false}) {
    StridedView candidate = view;
    size_t unit = row_major ? cols : rows, lead = row_major ? rows : cols;
    if (candidate.shape[unit] == SymInt(1)) candidate.strides[unit] = SymInt(1);
    if (!(candidate.strides[unit] == SymInt(1))) continue;
    if (candidate.shape[lead] == SymInt(1)) candidate.strides[lead] = candidate.shape[unit];
    if (!provably_le(candidate.shape[unit], candidate.strides[lead])) continue;
    view = candidate;
    return true;
  }
  return false;
}

void add_gemm(Lowerer& lowerer, const std::string& name, StridedView a, StridedView b, StridedView out) {
  LoopNode node;
  node.kind = NodeKind::Extern;
  node.name = name;
  node.ranges = out.shape;
  node.outputs = {out.buffer};
  node.extern_call.kind = ExternKind::Gemm;
  node.extern_call.inputs = {std::move(a), std::move(b)};
  node.extern_call.outputs = {std::move(out)};
  lowerer.add_node(std::move(node));
}

namespace {

// PyTorch's broadcast of two batch shapes (the shape rule checked they broadcast).
SymShape broadcast_batch(const SymShape& a, const SymShape& b) {
  SymShape result(std::max(a.size(), b.size()));
  for (size_t i = 0; i < result.size(); ++i) {
    const SymInt* x = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const SymInt* y = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    result[result.size() - 1 - i] = !x ? *y : !y ? *x : (*x == SymInt(1) ? *y : *x);
  }
  return result;
}

void lower_matmul(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& a = lowerer.tensor(call, 0);
  const Accessor& b = lowerer.tensor(call, 1);
  const ir::TensorMeta& meta = node.value();
  if (!gemm_dtype(meta.dtype) || a.shape.empty() || b.shape.empty()) {
    lowerer.lower_fallback(node, call);
    return;
  }
  SymShape batch_a(a.shape.begin(), a.shape.end() - std::min<long>(2, long(a.shape.size())));
  SymShape batch_b(b.shape.begin(), b.shape.end() - std::min<long>(2, long(b.shape.size())));
  SymShape batch = broadcast_batch(batch_a, batch_b);
  StridedView left = gemm_operand(lowerer, a, true, batch, node.name() + "_a");
  StridedView right = gemm_operand(lowerer, b, false, batch, node.name() + "_b");
  if (worth_folding(left, right))
    left = gemm_operand(lowerer, lowerer.contiguous(a, node.name() + "_a"), true, batch, node.name() + "_a");
  SymShape out_shape = batch;
  out_shape.push_back(left.shape[left.shape.size() - 2]);
  out_shape.push_back(right.shape.back());
  int buffer = lowerer.new_buffer(node.name(), meta.dtype, meta.shape);
  add_gemm(lowerer, node.name(), left, right, StridedView{buffer, SymInt(0), out_shape, contiguous_strides(out_shape)});
  lowerer.define(node, lowerer.whole(buffer));
}

}  // namespace

void register_linear_algebra_lowerings(LoweringTable& table) {
  table["matmul"] = lower_matmul;
  table["bmm"] = lower_matmul;
}

}  // namespace kiln::codegen::lowering
