// Lowering of convolution (1-3 spatial dims, groups, stride, padding, dilation), two ways:
//
// im2col + GEMM (f32 and f64): an im2col Pointwise node over
// [N, groups, C/groups, kernel..., out...] (masked loads where padding reaches outside the
// input) writes a buffer [N, groups, C/groups * prod(kernel), prod(out)], then a Gemm with
// batch dims [N, groups]: weight [groups, O/groups, C/groups * prod(kernel)] (broadcast over N)
// times the columns, into [N, groups, O/groups, prod(out)], which is the output [N, O, out...]
// in memory; a bias is added by a Pointwise node. A 1x1, stride-1, unpadded convolution
// multiplies the (contiguous) input directly.
//
// A library call (LoweringOptions::library_convolution; f32, 1 to 3 spatial dims): an
// ExternKind::Convolution node reading the input channels-last [N, H, W, C] (the input's own
// buffer when it already is channels-last, else a Pointwise copy), the weight [O, C/groups, KH,
// KW] and the bias contiguous, and writing the output channels-last [N, OH, OW, O]; the node's
// value is that buffer read as [N, O, OH, OW] (Lowerer::channels_last). The layout then flows
// on through the pointwise nodes and pools that read it (codegen/lowering_layout.cpp). A 1-d
// convolution is the same over [N, W, C] (oneDNN runs it as the 2-d one of height 1): audio
// encoders' strided convolutions ran as im2col + GEMM, whose columns are kernel-size times the
// input. A 3-d one (video models' and volumes' 3x3x3 and (2+1)-d layers) is the same over
// [N, D, H, W, C]: as im2col + GEMM its columns were 27 times the input (ResNet3D-18 on 8
// frames of 112 x 112, bench/README.md).
//
// A fully connected layer written as a convolution (f32 and f64; 1x1 kernel, no padding, one
// group, a 1x1 output: squeeze-and-excitation's two layers, classifier heads on pooled features)
// reads one position of each image, and is one GEMM [N, C] @ [C, O] whatever the input's layout
// (its StridedView, picked at position (0, 0)): the batch is the GEMM's rows and the weight its
// right operand, which the C++ backend hands to oneDNN's matmul (prepacked when frozen) or
// BLAS. As a library convolution it cost ~10 us of oneDNN's set-up per call for ~1 us of work
// (EfficientNet-B0 at batch 1: 32 of them, 4% of its time; bench/README.md).
//
// A direct convolution (f32 and f64; stride 1, at most kDirectMaxOutChannels output channels of
// at most kDirectMaxTaps taps each, a kernel of 2x2 or more: LeNet's first layer, 1 -> 6 channels
// 5x5): a library kernel vectorizes over the output channels, and 6 of them leave 10 of 16 lanes
// empty (oneDNN ran LeNet's at 16% of a core's peak). It is Kiln's own loop instead, vectorized
// along the image's width: a Pointwise copy frames the input (its padding written out and one
// more row of zeros) as [N, C, (H + 2p + 1) * (W + 2p)], and a Pointwise node computes every
// output channel over [N, O, OH * (W + 2p)], each point the sum of its taps, loads at constant
// offsets from its flat position: one contiguous loop per image and channel, the columns past OW
// (which wrap into the next row) computed and never read. The node's value is that buffer read
// with rows of W + 2p (NCHW), which the pools and pointwise nodes after it read in place; the
// scheduler keeps it stored (a stencil, codegen/schedule_inlining.cpp).
//
// A transposed convolution (f32 and f64, any number of spatial dims; weight [C, O/groups,
// kernel...]) as GEMM + col2im, as ONNX Runtime and PyTorch's slow path run it, so that it does
// the convolution's multiplies and no more (inserting zeros between the input's points and
// convolving would do stride^spatial times as many): without groups, a Gemm of the input as
// [N, prod(in), C] (read where it is, channels-last as it is, NCHW transposed, when its spatial
// dims flatten to one stride) times the weight [C, O * prod(kernel)] read in place as the right
// operand (a frozen one prepacked by the library's matmul), into columns [N, in..., O, kernel...];
// with groups, a Gemm with batch dims [N, groups] of the weight read transposed, [groups,
// O/groups * prod(kernel), C/groups], times the input as [N, groups, C/groups, prod(in)], into
// columns [N, O, kernel..., in...]. Then a Pointwise node
// gathers, at each output point, the columns of the taps that reach it: output position
// o = i * stride - padding + k * dilation, so tap k reads input point
// i = (o + padding - k * dilation) / stride where that divides exactly and lies inside the
// input (a masked load). With strides, each phase of the output (its points o = q * stride + r)
// is a Pointwise node of its own that sums only the taps that reach it, their input points known
// while lowering (lowered_as_transposed), and the output reads each point from its phase's node.
// The taps are summed in a tree, with the bias; kernels of more
// than kTransposedMaxTaps points (or of symbolic size) go to the Fallback. Measured on a UNet's
// 2x upsampling (128 -> 64 channels, kernel 4, 16x16 -> 32x32): 104 ms as the Fallback, 0.57 ms
// so, ONNX Runtime 0.53-0.72 ms (bench/README.md).
//
// Other dtypes go to the Fallback.
#include <algorithm>

#include "codegen/lowering_context.h"
#include "kiln/error.h"
#include "runtime/strides.h"

namespace kiln::codegen::lowering {
namespace {

struct Geometry {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

// Direct convolutions (the header). Measured against oneDNN 2.6 (bench/README.md): 1 -> 6 and
// 3 -> 8 channels ran 1.1-2.5x faster direct, 3 -> 12 and 3 -> 15 level, 1 -> 15 5x5 1.75x
// slower; a row narrower than kDirectMinWidth fills no vector. A kernel of fewer than
// kDirectMinArea points (a 1x1 projection: a GEMM, which the library runs well) is no stencil
// the scheduler keeps stored (codegen/schedule_inlining.cpp), and stays the library's.
constexpr int64_t kDirectMaxOutChannels = 8, kDirectMinArea = 4, kDirectMaxTaps = 32, kDirectMinWidth = 8;
// The most taps (points of the kernel) a transposed convolution's gather sums in one expression.
constexpr int64_t kTransposedMaxTaps = 64;

// The sum of `terms` (at least one) as a tree of pairs, so that a vector of outputs has several
// chains of adds in flight.
Expr pairwise_sum(std::vector<Expr> terms) {
  while (terms.size() > 1) {
    std::vector<Expr> sums;
    for (size_t i = 0; i + 1 < terms.size(); i += 2) sums.push_back(binary(LoopOp::add, terms[i], terms[i + 1]));
    if (terms.size() % 2) sums.push_back(terms.back());
    terms = std::move(sums);
  }
  return terms[0];
}

std::vector<int64_t> expanded(const std::vector<int64_t>& values, size_t count) {
  if (values.size() == 1) return std::vector<int64_t>(count, values[0]);
  return values;
}


// The bias of a convolution whose GEMM wrote `product` (the node's shape), added by a Pointwise
// node that defines the node; without a bias, `product` is the node's value.
void add_bias(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call, int product) {
  const ir::TensorMeta& meta = node.value();
  if (call.is_none(2)) {
    lowerer.define(node, lowerer.whole(product));
    return;
  }
  Expr sum = binary(LoopOp::add, lowerer.load(lowerer.whole(product), vars_of(meta.shape)),
                    cast(lowerer.load(lowerer.tensor(call, 2), {loop_var(1)}), meta.dtype));
  lowerer.define_pointwise(node, sum);
}

void lower_im2col_convolution(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call, const Geometry& g) {
  const ir::TensorMeta& meta = node.value();
  const Accessor& input = lowerer.tensor(call, 0);
  const Accessor& weight = lowerer.tensor(call, 1);
  size_t spatial = weight.shape.size() - 2;
  const std::vector<int64_t>&stride = g.stride, &padding = g.padding, &dilation = g.dilation;
  int64_t groups = g.groups;
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
      Expr inside = index_within(position, input.shape[2 + s]);
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
  add_bias(lowerer, node, call, product);
}


// Lowers the convolution as one GEMM where it is a fully connected layer (the header), else
// returns false.
bool lowered_as_fully_connected(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call, const Geometry& g) {
  const ir::TensorMeta& meta = node.value();
  const Accessor& weight = lowerer.tensor(call, 1);
  auto one = [](const SymInt& size) { return size == SymInt(1); };
  if (g.groups != 1 || !std::all_of(weight.shape.begin() + 2, weight.shape.end(), one) ||
      !std::all_of(meta.shape.begin() + 2, meta.shape.end(), one) ||
      !std::all_of(g.padding.begin(), g.padding.end(), [](int64_t p) { return p == 0; }))
    return false;
  const Accessor& input = lowerer.tensor(call, 0);
  std::optional<StridedView> source = lowerer.strided_view(input);
  if (!source) return false;
  // Image n's channels at spatial position 0: the first two dims of the input's view.
  StridedView a{source->buffer, source->offset, {input.shape[0], input.shape[1]},
                {source->strides[0], source->strides[1]}};
  if (!make_matrix_layout(a)) return false;
  Accessor dense_weight = lowerer.contiguous(weight, node.name() + "_weight");
  const SymInt &out_channels = weight.shape[0], &channels = weight.shape[1];
  StridedView b{lowerer.resolve(dense_weight), SymInt(0), {channels, out_channels}, {SymInt(1), channels}};
  bool has_bias = !call.is_none(2);
  int product = lowerer.new_buffer(has_bias ? node.name() + "_gemm" : node.name(), meta.dtype, meta.shape);
  add_gemm(lowerer, has_bias ? node.name() + "_gemm" : node.name(), a, b,
           StridedView{product, SymInt(0), {input.shape[0], out_channels}, {out_channels, SymInt(1)}});
  add_bias(lowerer, node, call, product);
  return true;
}

// Lowers the convolution as Kiln's own direct loop where few output channels, each a sum of few
// taps, would leave a library kernel vectorizing over channels mostly empty lanes (the header),
// else returns false.
bool lowered_as_direct(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call, const Geometry& g) {
  const ir::TensorMeta& meta = node.value();
  const Accessor& input = lowerer.tensor(call, 0);
  const Accessor& weight = lowerer.tensor(call, 1);
  if (weight.shape.size() != 4 || g.stride[0] != 1 || g.stride[1] != 1) return false;
  std::optional<int64_t> out_channels = weight.shape[0].maybe_constant(),
                         channels_per_group = weight.shape[1].maybe_constant(),
                         kernel_h = weight.shape[2].maybe_constant(), kernel_w = weight.shape[3].maybe_constant(),
                         out_width = meta.shape[3].maybe_constant();
  if (!out_channels || !channels_per_group || !kernel_h || !kernel_w || !out_width) return false;
  int64_t taps = *channels_per_group * *kernel_h * *kernel_w;
  if (*out_channels > kDirectMaxOutChannels || *kernel_h * *kernel_w < kDirectMinArea || taps > kDirectMaxTaps ||
      *out_width < kDirectMinWidth)
    return false;

  // The input framed: its padding written out and one more row of zeros below, read as one
  // flat row per image and channel, so that every tap is a plain load at a constant offset from
  // the output's flat position.
  const SymInt &batch = input.shape[0], &channels = input.shape[1];
  SymInt padded_width = input.shape[3] + SymInt(2 * g.padding[1]);
  SymShape framed = {batch, channels, input.shape[2] + SymInt(2 * g.padding[0] + 1), padded_width};
  std::vector<SymInt> index = {loop_var(0), loop_var(1)};
  Expr mask;
  for (size_t s = 0; s < 2; ++s) {
    SymInt position = loop_var(2 + s) - SymInt(g.padding[s]);
    index.push_back(position);
    Expr inside = index_within(position, input.shape[2 + s]);
    mask = mask ? binary(LoopOp::logical_and, mask, inside) : inside;
  }
  int framed_buffer = lowerer.emit_pointwise(node.name() + "_framed", input.dtype, framed,
                                             lowerer.load_masked(input, index, mask, 0));
  SymInt frame = framed[2] * padded_width;
  Accessor source = lowerer.whole(framed_buffer, SymShape{batch, channels, frame});
  SymInt group_first_channel = SymInt(0);
  if (g.groups != 1) group_first_channel = floordiv(loop_var(1), SymInt(*out_channels / g.groups)) * SymInt(*channels_per_group);
  // Each row of taps a chain of multiply-adds along the kernel's width; the rows summed pairwise,
  // so that a vector of outputs has several chains in flight.
  std::vector<Expr> rows;
  for (int64_t c = 0; c < *channels_per_group; ++c) {
    for (int64_t ky = 0; ky < *kernel_h; ++ky) {
      Expr row;
      for (int64_t kx = 0; kx < *kernel_w; ++kx) {
        Expr w = cast(lowerer.load(weight, {loop_var(1), SymInt(c), SymInt(ky), SymInt(kx)}), meta.dtype);
        Expr x = cast(lowerer.load(source, {loop_var(0), group_first_channel + SymInt(c),
                                            loop_var(2) + SymInt(ky * g.dilation[0]) * padded_width +
                                                SymInt(kx * g.dilation[1])}),
                      meta.dtype);
        Expr product = binary(LoopOp::mul, w, x);
        row = row ? binary(LoopOp::add, row, product) : product;
      }
      rows.push_back(row);
    }
  }
  Expr sum = pairwise_sum(std::move(rows));
  if (!call.is_none(2)) sum = binary(LoopOp::add, sum, cast(lowerer.load(lowerer.tensor(call, 2), {loop_var(1)}), meta.dtype));
  // Computed at every column of the padded width (the last columns of a row, which wrap into the
  // next input row, are never read): one contiguous loop per image and channel.
  const SymInt& out_height = meta.shape[2];
  SymInt plane = out_height * padded_width;
  int output = lowerer.emit_pointwise(node.name(), meta.dtype, SymShape{batch, meta.shape[1], plane}, sum);
  Accessor value = lowerer.whole(output);
  value.shape = meta.shape;
  value.index = loop_var(0) * (meta.shape[1] * plane) + loop_var(1) * plane + loop_var(2) * padded_width + loop_var(3);
  lowerer.define(node, value);
  return true;
}

void lower_library_convolution(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call, const Geometry& g) {
  const ir::TensorMeta& meta = node.value();
  const Accessor& input = lowerer.tensor(call, 0);
  const Accessor& weight = lowerer.tensor(call, 1);
  int source = lowerer.channels_last_buffer(input, node.name() + "_input");
  Accessor dense_weight = lowerer.contiguous(weight, node.name() + "_weight");
  LoopNode conv;
  conv.kind = NodeKind::Extern;
  conv.name = node.name();
  ExternCall& extern_call = conv.extern_call;
  extern_call.kind = ExternKind::Convolution;
  extern_call.convolution = ConvolutionGeometry{g.stride, g.padding, g.dilation, g.groups};
  if (lowerer.options().frozen_parameters) {
    extern_call.output_bound = lowerer.value_bounds().of(node);
    extern_call.small_input_output_bound = lowerer.small_input_bounds().of(node);
    extern_call.output_bound_note = lowerer.small_input_bounds().unknown_reason(node);
  }
  SymShape source_shape = Lowerer::channels_last_shape(input.shape);
  extern_call.inputs.push_back(StridedView{source, SymInt(0), source_shape, contiguous_strides(source_shape)});
  extern_call.inputs.push_back(StridedView{lowerer.resolve(dense_weight), SymInt(0), weight.shape,
                                           contiguous_strides(weight.shape)});
  if (!call.is_none(2)) {
    Accessor bias = lowerer.contiguous(lowerer.tensor(call, 2), node.name() + "_bias");
    extern_call.inputs.push_back(
        StridedView{lowerer.resolve(bias), SymInt(0), bias.shape, contiguous_strides(bias.shape)});
  }
  SymShape out_shape = Lowerer::channels_last_shape(meta.shape);
  int buffer = lowerer.new_buffer(node.name(), meta.dtype, out_shape);
  lowerer.note_bound(buffer, node);
  extern_call.outputs.push_back(StridedView{buffer, SymInt(0), out_shape, contiguous_strides(out_shape)});
  conv.ranges = out_shape;
  conv.outputs = {buffer};
  lowerer.add_node(std::move(conv));
  lowerer.define(node, lowerer.channels_last(buffer, meta.shape));
}

// The input of a transposed convolution as the GEMM's right operand [N, groups, C/groups,
// prod(in)]: its own buffer where its spatial dims flatten to one stride and the channels and
// points make a matrix layout (NCHW or channels-last), else a contiguous copy.
StridedView transposed_convolution_input(Lowerer& lowerer, const Accessor& input, int64_t groups,
                                         const std::string& name) {
  const SymInt& batch = input.shape[0];
  SymInt channels_per_group = floordiv(input.shape[1], SymInt(groups));
  SymShape spatial(input.shape.begin() + 2, input.shape.end());
  SymShape shape = {batch, SymInt(groups), channels_per_group, numel(spatial)};
  if (std::optional<StridedView> view = lowerer.strided_view(input)) {
    bool flattens = true;
    for (size_t d = 2; d + 1 < view->shape.size(); ++d)
      flattens = flattens && view->strides[d] == view->strides[d + 1] * view->shape[d + 1];
    if (flattens) {
      StridedView b{view->buffer, view->offset, shape,
                    {view->strides[0], view->strides[1] * channels_per_group, view->strides[1], view->strides.back()}};
      if (make_matrix_layout(b)) return b;
    }
  }
  Accessor dense = lowerer.contiguous(input, name);
  return StridedView{lowerer.resolve(dense), SymInt(0), shape, contiguous_strides(shape)};
}

// The input of a transposed convolution without groups as the GEMM's left operand [N, 1, prod(in),
// C]: its own buffer where its spatial dims flatten to one stride (channels-last: row-major; NCHW:
// read transposed), else a contiguous copy read transposed.
StridedView transposed_convolution_rows(Lowerer& lowerer, const Accessor& input, const std::string& name) {
  const SymInt& batch = input.shape[0];
  const SymInt& channels = input.shape[1];
  SymShape spatial(input.shape.begin() + 2, input.shape.end());
  SymInt points = numel(spatial);
  SymShape shape = {batch, SymInt(1), points, channels};
  if (std::optional<StridedView> view = lowerer.strided_view(input)) {
    bool flattens = true;
    for (size_t d = 2; d + 1 < view->shape.size(); ++d)
      flattens = flattens && view->strides[d] == view->strides[d + 1] * view->shape[d + 1];
    if (flattens) {
      StridedView a{view->buffer, view->offset, shape, {view->strides[0], SymInt(0), view->strides.back(), view->strides[1]}};
      if (make_matrix_layout(a)) return a;
    }
  }
  Accessor dense = lowerer.contiguous(input, name);
  return StridedView{lowerer.resolve(dense), SymInt(0), shape, {channels * points, SymInt(0), SymInt(1), points}};
}

// Lowers a transposed convolution as GEMM + col2im (the header), or returns false where its
// kernel is symbolic or has more than kTransposedMaxTaps points.
bool lowered_as_transposed(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call, const Geometry& g) {
  const ir::TensorMeta& meta = node.value();
  const Accessor& input = lowerer.tensor(call, 0);
  const Accessor& weight = lowerer.tensor(call, 1);
  size_t spatial = weight.shape.size() - 2;
  std::vector<int64_t> kernel;
  for (size_t s = 0; s < spatial; ++s) {
    std::optional<int64_t> size = weight.shape[2 + s].maybe_constant();
    if (!size) return false;
    kernel.push_back(*size);
  }
  int64_t taps = 1;
  for (int64_t k : kernel) taps *= k;
  if (taps > kTransposedMaxTaps || taps == 0) return false;

  const SymInt& batch = input.shape[0];
  SymInt channels_per_group = floordiv(input.shape[1], SymInt(g.groups));
  const SymInt& out_per_group = weight.shape[1];
  SymShape in_spatial(input.shape.begin() + 2, input.shape.end());
  SymInt in_volume = numel(in_spatial), rows = out_per_group * SymInt(taps);
  Accessor dense_weight = lowerer.contiguous(weight, node.name() + "_weight");
  // Without groups the weight [C, O * taps] is the GEMM's right operand, read in place (a frozen
  // one prepacked once by the library's matmul, where OpenBLAS packed it again on every call:
  // 35% of a DCGAN generator's samples): columns [N, prod(in), O * taps] = input^T [N, prod(in),
  // C] @ weight. With groups, columns [N, groups, O/groups * taps, prod(in)] = the weight
  // [groups, C/groups, O/groups * taps] read transposed @ the input [N, groups, C/groups, prod(in)].
  const bool rows_first = g.groups == 1;
  int columns = -1;
  if (rows_first) {
    StridedView b{lowerer.resolve(dense_weight), SymInt(0), {batch, SymInt(1), input.shape[1], rows},
                  {SymInt(0), SymInt(0), rows, SymInt(1)}};
    KILN_CHECK(make_matrix_layout(b), "transposed convolution: the weight has no matrix layout");
    StridedView a = transposed_convolution_rows(lowerer, input, node.name() + "_input");
    SymShape columns_shape = {batch, SymInt(1), in_volume, rows};
    columns = lowerer.new_buffer(node.name() + "_columns", meta.dtype, columns_shape);
    add_gemm(lowerer, node.name() + "_columns", a, b,
             StridedView{columns, SymInt(0), columns_shape, contiguous_strides(columns_shape)});
  } else {
    StridedView a{lowerer.resolve(dense_weight), SymInt(0), {batch, SymInt(g.groups), rows, channels_per_group},
                  {SymInt(0), channels_per_group * rows, SymInt(1), rows}};
    KILN_CHECK(make_matrix_layout(a), "transposed convolution: the weight has no matrix layout");
    StridedView b = transposed_convolution_input(lowerer, input, g.groups, node.name() + "_input");
    SymShape columns_shape = {batch, SymInt(g.groups), rows, in_volume};
    columns = lowerer.new_buffer(node.name() + "_columns", meta.dtype, columns_shape);
    add_gemm(lowerer, node.name() + "_columns", a, b,
             StridedView{columns, SymInt(0), columns_shape, contiguous_strides(columns_shape)});
  }

  // col2im: each output point sums the columns of the taps that reach it. Output point o (per
  // dim) = i * stride - padding + k * dilation, so tap k reaches it from input point
  // i = (o + padding - k * dilation) / stride where that divides exactly.
  // The columns as [N, O, kernel..., in...] (with groups) or [N, in..., O, kernel...].
  SymShape columns_view = {batch};
  if (rows_first) columns_view.insert(columns_view.end(), in_spatial.begin(), in_spatial.end());
  columns_view.push_back(meta.shape[1]);
  for (int64_t k : kernel) columns_view.push_back(SymInt(k));
  if (!rows_first) columns_view.insert(columns_view.end(), in_spatial.begin(), in_spatial.end());
  Accessor columns_accessor = lowerer.whole(columns, columns_view);
  // The sum over the taps of `tap_points` (per dim: each tap's kernel index and its input point), each
  // load masked where its point is outside the input, plus the bias.
  auto tap_sum = [&](const std::vector<std::vector<std::pair<int64_t, SymInt>>>& tap_points) {
    std::vector<Expr> terms;
    std::vector<size_t> at(spatial, 0);
    const bool none = std::any_of(tap_points.begin(), tap_points.end(), [](const auto& dim) { return dim.empty(); });
    while (!none) {
      std::vector<SymInt> taps_at, points;
      Expr mask;
      for (size_t d = 0; d < spatial; ++d) {
        const auto& [k, point] = tap_points[d][at[d]];
        taps_at.push_back(SymInt(k));
        points.push_back(point);
        Expr inside = index_within(point, in_spatial[d]);
        mask = mask ? binary(LoopOp::logical_and, mask, inside) : inside;
      }
      std::vector<SymInt> index = {loop_var(0)};
      if (rows_first) index.insert(index.end(), points.begin(), points.end());
      index.push_back(loop_var(1));
      index.insert(index.end(), taps_at.begin(), taps_at.end());
      if (!rows_first) index.insert(index.end(), points.begin(), points.end());
      terms.push_back(lowerer.load_masked(columns_accessor, index, mask, 0));
      size_t d = spatial;  // the next combination, the last dim fastest
      while (d > 0 && ++at[d - 1] == tap_points[d - 1].size()) at[--d] = 0;
      if (d == 0) break;
    }
    if (!call.is_none(2)) terms.push_back(cast(lowerer.load(lowerer.tensor(call, 2), {loop_var(1)}), meta.dtype));
    if (terms.empty()) terms.push_back(constant(0, meta.dtype));
    return pairwise_sum(std::move(terms));
  };
  const bool strided = std::any_of(g.stride.begin(), g.stride.end(), [](int64_t stride) { return stride > 1; });
  if (!strided) {
    std::vector<std::vector<std::pair<int64_t, SymInt>>> tap_points(spatial);
    for (size_t d = 0; d < spatial; ++d)
      for (int64_t k = 0; k < kernel[d]; ++k) tap_points[d].push_back({k, loop_var(2 + d) + SymInt(g.padding[d] - k * g.dilation[d])});
    lowerer.define_pointwise(node, tap_sum(tap_points));
    return true;
  }
  // With strides, phase by phase: output points o = q * stride + r of one phase r (per dim) are
  // reached by the taps k with (r + padding - k * dilation) divisible by the stride, from input
  // point q + (r + padding - k * dilation) / stride, known while lowering. So each phase is a
  // Pointwise node of its own over [N, O, ceil(out / stride)...] that sums only its taps (a
  // kernel 4, stride 2 layer's 4 of 16, and no test of divisibility per point), and the output
  // reads each point from its phase's node. Measured on a DCGAN layer (128 -> 64, kernel 4,
  // stride 2, [4, 128, 16, 16]), bench/README.md.
  SymShape phase_shape = {batch, meta.shape[1]};
  for (size_t d = 0; d < spatial; ++d)
    phase_shape.push_back(floordiv(meta.shape[2 + d] + SymInt(g.stride[d] - 1), SymInt(g.stride[d])));
  int64_t phase_count = 1;
  for (int64_t stride : g.stride) phase_count *= stride;
  std::vector<int> phases;  // their buffers, the last dim's phase fastest
  for (int64_t p = 0; p < phase_count; ++p) {
    std::vector<int64_t> r(spatial);
    int64_t rest = p;
    for (size_t d = spatial; d-- > 0;) {
      r[d] = rest % g.stride[d];
      rest /= g.stride[d];
    }
    std::vector<std::vector<std::pair<int64_t, SymInt>>> tap_points(spatial);
    std::string suffix;
    for (size_t d = 0; d < spatial; ++d) {
      suffix += "_" + std::to_string(r[d]);
      for (int64_t k = 0; k < kernel[d]; ++k) {
        const int64_t reach = r[d] + g.padding[d] - k * g.dilation[d];
        if (reach % g.stride[d] != 0) continue;
        tap_points[d].push_back({k, loop_var(2 + d) + SymInt(reach / g.stride[d])});  // exact
      }
    }
    phases.push_back(lowerer.emit_pointwise(node.name() + "_phase" + suffix, meta.dtype, phase_shape, tap_sum(tap_points)));
  }
  // Each output point from its phase's node, chosen by o % stride per dim.
  std::vector<SymInt> index = {loop_var(0), loop_var(1)};
  for (size_t d = 0; d < spatial; ++d) index.push_back(floordiv(loop_var(2 + d), SymInt(g.stride[d])));
  Expr value = lowerer.load(lowerer.whole(phases.back()), index);
  for (int64_t p = phase_count - 1; p-- > 0;) {
    Expr condition;
    int64_t rest = p;
    for (size_t d = spatial; d-- > 0;) {
      const int64_t r = rest % g.stride[d];
      rest /= g.stride[d];
      if (g.stride[d] == 1) continue;
      Expr is_phase = binary(LoopOp::eq, index_value(mod(loop_var(2 + d), SymInt(g.stride[d])), DType::i64),
                             constant(r, DType::i64));
      condition = condition ? binary(LoopOp::logical_and, condition, is_phase) : is_phase;
    }
    value = where(condition, lowerer.load(lowerer.whole(phases[size_t(p)]), index), value);
  }
  lowerer.define_pointwise(node, value);
  return true;
}

void lower_convolution(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const ir::TensorMeta& meta = node.value();
  const Accessor& weight = lowerer.tensor(call, 1);
  bool transposed = call.bool_arg(6);
  bool gemm_dtype = meta.dtype == DType::f32 || meta.dtype == DType::f64;
  if (!gemm_dtype || weight.shape.size() < 3) {
    lowerer.lower_fallback(node, call);
    return;
  }
  size_t spatial = weight.shape.size() - 2;
  Geometry g{expanded(call.ints(3), spatial), expanded(call.ints(4), spatial), expanded(call.ints(5), spatial),
             call.int_arg(8)};
  if (transposed) {
    bool same_dtypes = lowerer.tensor(call, 0).dtype == meta.dtype && weight.dtype == meta.dtype;
    if (!same_dtypes || !lowered_as_transposed(lowerer, node, call, g)) lowerer.lower_fallback(node, call);
    return;
  }
  if (lowered_as_fully_connected(lowerer, node, call, g)) return;
  if (spatial == 2 && lowered_as_direct(lowerer, node, call, g)) return;
  bool library = lowerer.options().library_convolution && meta.dtype == DType::f32 && spatial <= 3 &&
                 lowerer.tensor(call, 1).dtype == DType::f32 && lowerer.tensor(call, 0).dtype == DType::f32 &&
                 (call.is_none(2) || lowerer.tensor(call, 2).dtype == DType::f32);
  if (library) {
    lower_library_convolution(lowerer, node, call, g);
  } else {
    lower_im2col_convolution(lowerer, node, call, g);
  }
}

}  // namespace

void register_convolution_lowerings(LoweringTable& table) { table["convolution"] = lower_convolution; }

}  // namespace kiln::codegen::lowering
