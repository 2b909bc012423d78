// Lowering of matmul, bmm and convolution to ExternKind::Gemm calls (f32 and f64; other
// dtypes and transposed convolution go to the Fallback).
//
// matmul/bmm: operands as StridedViews [batch..., m, k] and [batch..., k, n] (a 1-d operand
// gains a dim of size 1 as in PyTorch; batch dims broadcast with stride 0); each matrix must
// have a unit stride in one of its last two dims and a leading stride that covers the other
// (size-1 dims take whatever stride makes that so), otherwise the operand is first copied
// contiguous by a Pointwise node, as is an operand whose accessor is not affine. The output
// is the node's contiguous buffer viewed as [batch..., m, n].
//
// convolution (1-3 spatial dims, groups, stride, padding, dilation): an im2col Pointwise node
// over [N, groups, C/groups, kernel..., out...] (masked loads where padding reaches outside
// the input) writes a buffer [N, groups, C/groups * prod(kernel), prod(out)], then a Gemm with
// batch dims [N, groups]: weight [groups, O/groups, C/groups * prod(kernel)] (broadcast over N)
// times the columns, into [N, groups, O/groups, prod(out)], which is the output [N, O, out...]
// in memory; a bias is added by a Pointwise node. A 1x1, stride-1, unpadded convolution
// multiplies the (contiguous) input directly.
#include <algorithm>

#include "codegen/lowering_context.h"
#include "runtime/error.h"

namespace kiln::codegen::lowering {
namespace {

bool gemm_dtype(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

// Makes the last two dims of `view` a BLAS-usable matrix layout: a unit stride in one dim and
// a leading stride at least the other dim's size (an emitter clamps a zero leading stride of
// an empty matrix to 1). Adjusts the strides of size-1 dims, which address nothing. False when
// no such layout exists.
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
  SymShape out_shape = batch;
  out_shape.push_back(left.shape[left.shape.size() - 2]);
  out_shape.push_back(right.shape.back());
  int buffer = lowerer.new_buffer(node.name(), meta.dtype, meta.shape);
  add_gemm(lowerer, node.name(), left, right, StridedView{buffer, SymInt(0), out_shape, contiguous_strides(out_shape)});
  lowerer.define(node, lowerer.whole(buffer));
}

std::vector<int64_t> expanded(const std::vector<int64_t>& values, size_t count) {
  if (values.size() == 1) return std::vector<int64_t>(count, values[0]);
  return values;
}

void lower_convolution(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const ir::TensorMeta& meta = node.value();
  const Accessor& input = lowerer.tensor(call, 0);
  const Accessor& weight = lowerer.tensor(call, 1);
  bool transposed = call.bool_arg(6);
  if (transposed || !gemm_dtype(meta.dtype) || weight.shape.size() < 3) {
    lowerer.lower_fallback(node, call);
    return;
  }
  size_t spatial = weight.shape.size() - 2;
  std::vector<int64_t> stride = expanded(call.ints(3), spatial);
  std::vector<int64_t> padding = expanded(call.ints(4), spatial);
  std::vector<int64_t> dilation = expanded(call.ints(5), spatial);
  int64_t groups = call.int_arg(8);
  const SymInt &batch = input.shape[0], &channels_per_group = weight.shape[1];
  SymInt out_per_group = floordiv(weight.shape[0], SymInt(groups));
  SymShape kernel(weight.shape.begin() + 2, weight.shape.end());
  SymShape out_spatial(meta.shape.begin() + 2, meta.shape.end());
  SymInt kernel_volume = numel(kernel), out_volume = numel(out_spatial);
  SymInt columns = channels_per_group * kernel_volume;

  // The weight as [groups, O/groups, C/groups * prod(kernel)], the same for every image.
  Accessor dense_weight = lowerer.contiguous(weight, node.name() + "_weight");
  StridedView a{lowerer.resolve(dense_weight), SymInt(0), {batch, SymInt(groups), out_per_group, columns},
                {SymInt(0), out_per_group * columns, columns, SymInt(1)}};

  bool pointwise_kernel = std::all_of(kernel.begin(), kernel.end(), [](const SymInt& k) { return k == SymInt(1); }) &&
                          std::all_of(stride.begin(), stride.end(), [](int64_t s) { return s == 1; }) &&
                          std::all_of(padding.begin(), padding.end(), [](int64_t p) { return p == 0; });
  StridedView b;
  SymShape b_shape = {batch, SymInt(groups), columns, out_volume};
  if (pointwise_kernel) {
    Accessor dense_input = lowerer.contiguous(input, node.name() + "_input");
    b = StridedView{lowerer.resolve(dense_input), SymInt(0), b_shape, contiguous_strides(b_shape)};
  } else {
    // im2col over [N, groups, C/groups, kernel..., out...].
    SymShape ranges = {batch, SymInt(groups), channels_per_group};
    ranges.insert(ranges.end(), kernel.begin(), kernel.end());
    ranges.insert(ranges.end(), out_spatial.begin(), out_spatial.end());
    std::vector<SymInt> index = {loop_var(0), loop_var(1) * channels_per_group + loop_var(2)};
    Expr mask;
    for (size_t s = 0; s < spatial; ++s) {
      SymInt position = loop_var(3 + spatial + s) * stride[s] - padding[s] + loop_var(3 + s) * dilation[s];
      index.push_back(position);
      if (padding[s] == 0) continue;
      const SymInt& size = input.shape[2 + s];
      Expr inside =
          binary(LoopOp::logical_and, binary(LoopOp::ge, index_value(position, DType::i64), constant(0, DType::i64)),
                 binary(LoopOp::lt, index_value(position, DType::i64), index_value(size, DType::i64)));
      mask = mask ? binary(LoopOp::logical_and, mask, inside) : inside;
    }
    Expr body = mask ? lowerer.load_masked(input, index, mask, 0) : lowerer.load(input, index);
    int column_buffer = lowerer.new_buffer(node.name() + "_columns", input.dtype, b_shape);
    LoopNode im2col;
    im2col.kind = NodeKind::Pointwise;
    im2col.name = node.name() + "_columns";
    im2col.ranges = ranges;
    im2col.outputs = {column_buffer};
    im2col.body = body;
    lowerer.add_node(std::move(im2col));
    b = StridedView{column_buffer, SymInt(0), b_shape, contiguous_strides(b_shape)};
  }

  SymShape out_shape = {batch, SymInt(groups), out_per_group, out_volume};
  bool has_bias = !call.is_none(2);
  int product = lowerer.new_buffer(has_bias ? node.name() + "_gemm" : node.name(), meta.dtype, meta.shape);
  add_gemm(lowerer, has_bias ? node.name() + "_gemm" : node.name(), a, b,
           StridedView{product, SymInt(0), out_shape, contiguous_strides(out_shape)});
  if (!has_bias) {
    lowerer.define(node, lowerer.whole(product));
    return;
  }
  Expr sum = binary(LoopOp::add, lowerer.load(lowerer.whole(product), vars_of(meta.shape)),
                    cast(lowerer.load(lowerer.tensor(call, 2), {loop_var(1)}), meta.dtype));
  lowerer.define_pointwise(node, sum);
}

}  // namespace

void register_linear_algebra_lowerings(LoweringTable& table) {
  table["matmul"] = lower_matmul;
  table["bmm"] = lower_matmul;
  table["convolution"] = lower_convolution;
}

}  // namespace kiln::codegen::lowering
