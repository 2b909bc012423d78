// ONNX ops that select or place elements by index: GatherND and ScatterND (a linear index into
// the flattened leading dims, then index_select / scatter), OneHot and Hardmax (a comparison
// with an iota), EyeLike, ReverseSequence (a gather by a constant index), TopK (Kiln's topk),
// and the ops whose output shape depends on data values: Compress, NonZero, Unique and
// NonMaxSuppression, which
// need those values at import time (the importer asks for them: OnnxInputValuesNeeded) and
// become constants or constant index lists.
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;
using ir::SymShape;

// The static sizes of `shape`, failing with `what` when one is symbolic.
std::vector<int64_t> static_sizes(const OnnxNodeContext& context, const SymShape& shape, std::string_view what) {
  std::vector<int64_t> sizes;
  for (const SymInt& size : shape) {
    if (!size.is_constant()) context.fail(what, " must have static sizes, but its shape is ", ir::shape_string(shape));
    sizes.push_back(size.constant());
  }
  return sizes;
}

int64_t product(const std::vector<int64_t>& sizes, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end && i < sizes.size(); ++i) result *= sizes[i];
  return result;
}

Tensor i64_tensor(const Sizes& sizes, const std::vector<int64_t>& values) {
  return Tensor::from_vector(sizes, values, DType::i64);
}

// The index tuples of input `index` (last dim k) as linear positions in the leading k dims of
// `dims` (negatives counted from the end of each dim): [indices.shape[:-1]], i64.
ir::Node* linear_positions(OnnxNodeContext& context, size_t index, const std::vector<int64_t>& dims) {
  ir::Node* indices = context.tensor(index);
  if (!is_integral(indices->value().dtype)) context.fail("indices must be integers");
  if (indices->value().dtype != DType::i64) indices = context.call("cast", {indices, DType::i64});
  int64_t k = int64_t(dims.size());
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t j = k - 2; j >= 0; --j) strides[size_t(j)] = strides[size_t(j + 1)] * dims[size_t(j + 1)];
  ir::Node* sizes = context.constant_node(i64_tensor({k}, dims));
  ir::Node* wrapped = context.call("where", {context.call("lt", {indices, int64_t(0)}), context.call("add", {indices, sizes}), indices});
  ir::Node* weighted = context.call("mul", {wrapped, context.constant_node(i64_tensor({k}, strides))});
  return context.call("sum", {weighted, ir::Argument::ints({-1})});
}

void convert_gather_nd(OnnxNodeContext& context) {
  int64_t batch = context.int_attribute("batch_dims", 0);
  std::vector<int64_t> data = static_sizes(context, context.shape(0), "the data");
  SymShape index_shape = context.shape(1);
  int64_t q = int64_t(index_shape.size()), r = int64_t(data.size());
  if (q < 1 || !index_shape.back().is_constant()) context.fail("the indices need a static last dim");
  int64_t k = index_shape.back().constant();
  if (batch < 0 || batch >= std::min(q, r) || k < 1 || batch + k > r)
    context.fail("batch_dims ", batch, " and index tuples of ", k, " do not fit data of rank ", r, " and indices of rank ", q);
  std::vector<int64_t> indices = static_sizes(context, index_shape, "the indices");
  std::vector<int64_t> picked(data.begin() + batch, data.begin() + batch + k);
  ir::Node* positions = linear_positions(context, 1, picked);  // [indices.shape[:-1]]
  int64_t per_batch = product(data, size_t(batch), size_t(batch + k));
  if (batch > 0) {
    // Each batch element's block starts at batch_index * per_batch.
    int64_t batches = product(data, 0, size_t(batch));
    std::vector<int64_t> offsets(static_cast<size_t>(batches));
    for (int64_t b = 0; b < batches; ++b) offsets[size_t(b)] = b * per_batch;
    Sizes offset_shape(indices.begin(), indices.begin() + batch);
    offset_shape.resize(size_t(q - 1), 1);
    positions = context.call("add", {positions, context.constant_node(i64_tensor(offset_shape, offsets))});
  }
  int64_t rest = product(data, size_t(batch + k), data.size());
  ir::Node* flat = context.call("reshape", {context.tensor(0), ir::Argument::ints({product(data, 0, data.size()) / rest, rest})});
  ir::Node* rows = context.call("index_select", {flat, int64_t(0), context.call("reshape", {positions, ir::Argument::ints({-1})})});
  std::vector<int64_t> out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + batch + k, data.end());
  context.emit(0, "reshape", {rows, ir::Argument::ints(out)});
}

void convert_scatter_nd(OnnxNodeContext& context) {
  std::vector<int64_t> data = static_sizes(context, context.shape(0), "the data");
  std::vector<int64_t> indices = static_sizes(context, context.shape(1), "the indices");
  if (indices.empty() || indices.back() < 1 || indices.back() > int64_t(data.size()))
    context.fail("index tuples of ", indices.empty() ? 0 : indices.back(), " do not fit data of rank ", data.size());
  int64_t k = indices.back();
  std::string reduction = context.string_attribute("reduction", "none");
  static const std::map<std::string, std::string> kReductions = {{"add", "sum"}, {"mul", "prod"}, {"max", "amax"}, {"min", "amin"}};
  ir::Kwargs kwargs;
  if (reduction != "none") {
    auto found = kReductions.find(reduction);
    if (found == kReductions.end()) context.fail("reduction '", reduction, "' is not one of none, add, mul, max, min");
    kwargs.emplace_back("reduce", found->second);
  }
  int64_t count = product(indices, 0, indices.size() - 1), rest = product(data, size_t(k), data.size());
  std::vector<int64_t> picked(data.begin(), data.begin() + k);
  ir::Node* positions = context.call("reshape", {linear_positions(context, 1, picked), ir::Argument::ints({count, 1})});
  ir::Node* index = context.call("expand", {positions, ir::Argument::ints({count, rest})});
  ir::Node* flat = context.call("reshape", {context.tensor(0), ir::Argument::ints({product(data, 0, size_t(k)), rest})});
  ir::Node* updates = context.call("reshape", {context.tensor(2), ir::Argument::ints({count, rest})});
  ir::Node* scattered = context.call("scatter", {flat, int64_t(0), index, updates}, kwargs);
  context.emit(0, "reshape", {scattered, ir::Argument::ints(data)});
}

// [1, .., n, .., 1] (n at `axis` of `rank` dims) holding 0..n-1 in `dtype`.
ir::Node* iota_along(OnnxNodeContext& context, const SymInt& n, int64_t axis, int64_t rank, DType dtype) {
  ir::Node* values = context.call("iota", {n}, {{"dtype", is_floating(dtype) ? DType::i64 : dtype}});
  if (is_floating(dtype)) values = context.call("cast", {values, dtype});
  SymShape shape(size_t(rank), SymInt(1));
  shape[size_t(axis)] = n;
  return context.call("reshape", {values, ir::Argument::sym_ints(shape)});
}

void convert_one_hot(OnnxNodeContext& context) {
  double depth_value = context.constant_scalar(1, "depth");
  int64_t depth = int64_t(depth_value);
  if (depth < 1 || double(depth) != depth_value) context.fail("depth must be a positive integer, but it is ", depth_value);
  ir::Node* indices = context.tensor(0);
  DType index_dtype = indices->value().dtype;
  if (index_dtype == DType::boolean) context.fail("indices must be numbers");
  int64_t rank = indices->value().rank() + 1;
  int64_t axis = context.wrap_axis(context.int_attribute("axis", -1), rank);
  // ONNX counts negative indices from the end: index mod depth (Python's %).
  ir::Node* wrapped = context.call("remainder", {indices, scalar_argument(double(depth), index_dtype)});
  ir::Node* hot = context.call("eq", {context.call("unsqueeze", {wrapped, axis}), iota_along(context, SymInt(depth), axis, rank, index_dtype)});
  ir::Node* values = context.tensor(2);
  if (values->value().rank() != 1 || !(values->value().shape[0] == SymInt(2)))
    context.fail("values must hold two elements (off, on), but its shape is ", ir::shape_string(values->value().shape));
  ir::Node* off = context.call("select", {values, int64_t(0), int64_t(0)});
  ir::Node* on = context.call("select", {values, int64_t(0), int64_t(1)});
  context.emit(0, "where", {hot, on, off});
}

void convert_hardmax(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  SymShape shape = x->value().shape;
  int64_t rank = int64_t(shape.size());
  DType dtype = x->value().dtype;
  if (context.opset() < 13) {
    // Before opset 13: the input as a matrix [d0 * .. * d(axis-1), d(axis) * .. ], one-hot per row.
    int64_t axis = context.int_attribute("axis", 1);
    if (axis < -rank || axis > rank) context.fail("axis ", axis, " is out of range for rank ", rank);
    if (axis < 0) axis += rank;
    SymInt outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= shape[size_t(d)];
    ir::Node* matrix = context.call("reshape", {x, ir::Argument::sym_ints({outer, inner})});
    ir::Node* top = context.call("argmax", {matrix, int64_t(1), true});
    ir::Node* hot = context.call("eq", {top, iota_along(context, inner, 1, 2, DType::i64)});
    context.emit(0, "reshape", {context.call("cast", {hot, dtype}), ir::Argument::sym_ints(shape)});
    return;
  }
  int64_t axis = context.wrap_axis(context.int_attribute("axis", -1), rank);
  ir::Node* top = context.call("argmax", {x, axis, true});
  ir::Node* hot = context.call("eq", {top, iota_along(context, shape[size_t(axis)], axis, rank, DType::i64)});
  context.emit(0, "cast", {hot, dtype});
}

void convert_eye_like(OnnxNodeContext& context) {
  std::vector<int64_t> shape = static_sizes(context, context.shape(0), "the input");
  if (shape.size() != 2) context.fail("the input must have rank 2, but it has rank ", shape.size());
  DType dtype = context.dtype(0);
  if (const auto* attribute = context.attribute("dtype")) {
    std::optional<DType> wanted = dtype_from_onnx(int32_t(attribute->i()));
    if (!wanted) context.fail("dtype ", onnx_type_name(int32_t(attribute->i())), " is not supported");
    dtype = *wanted;
  }
  int64_t k = context.int_attribute("k", 0);
  Tensor eye = Tensor::zeros({shape[0], shape[1]}, dtype);
  for (int64_t i = 0; i < shape[0]; ++i)
    if (i + k >= 0 && i + k < shape[1])
      store_double(dtype, static_cast<char*>(eye.data_ptr()) + size_t(i * shape[1] + i + k) * eye.element_size(), 1.0);
  context.set_output(0, OnnxValue::of_constant(eye));
}

// Each batch entry's first sequence_lens[b] steps along the time axis, reversed.
void convert_reverse_sequence(OnnxNodeContext& context) {
  std::vector<int64_t> shape = static_sizes(context, context.shape(0), "the input");
  int64_t rank = int64_t(shape.size());
  int64_t batch_axis = context.wrap_axis(context.int_attribute("batch_axis", 1), rank);
  int64_t time_axis = context.wrap_axis(context.int_attribute("time_axis", 0), rank);
  if (rank < 2 || batch_axis == time_axis) context.fail("needs distinct batch and time axes of an input of rank >= 2");
  const Tensor& lengths = context.constant_input(1, "sequence_lens");
  if (lengths.numel() != shape[size_t(batch_axis)])
    context.fail("sequence_lens has ", lengths.numel(), " entries for a batch of ", shape[size_t(batch_axis)]);
  std::vector<int64_t> index(static_cast<size_t>(numel_of(shape)));
  std::vector<int64_t> position(size_t(rank), 0);
  for (size_t flat = 0; flat < index.size(); ++flat) {
    int64_t t = position[size_t(time_axis)], length = lengths.flat_int(position[size_t(batch_axis)]);
    if (length < 0 || length > shape[size_t(time_axis)])
      context.fail("sequence length ", length, " is outside 0..", shape[size_t(time_axis)]);
    index[flat] = t < length ? length - 1 - t : t;
    for (int64_t d = rank - 1; d >= 0 && ++position[size_t(d)] == shape[size_t(d)]; --d) position[size_t(d)] = 0;
  }
  ir::Node* gather_index = context.constant_node(i64_tensor(shape, index));
  context.emit(0, "gather", {context.tensor(0), time_axis, gather_index});
}

void convert_top_k(OnnxNodeContext& context) {
  std::vector<int64_t> k = context.constant_ints(1, "K");
  if (k.size() != 1) context.fail("K must hold one value");
  int64_t axis = context.wrap_axis(context.int_attribute("axis", -1), context.rank(0));
  bool largest = context.int_attribute("largest", 1) != 0;
  ir::Node* top = context.call("topk", {context.tensor(0), k[0], axis, largest, true});
  context.emit(0, "getitem", {top, int64_t(0)});
  if (context.output_used(1)) context.emit(1, "getitem", {top, int64_t(1)});
}

// ---- data-dependent shapes: computed from values known at import time ----

void convert_compress(OnnxNodeContext& context) {
  const Tensor& condition = context.constant_input(1, "condition");
  if (condition.dim() != 1) context.fail("condition must have rank 1");
  ir::Node* x = context.tensor(0);
  int64_t axis = 0;
  if (context.attribute("axis")) {
    axis = context.wrap_axis(context.int_attribute("axis", 0), context.rank(0));
  } else {
    x = context.call("reshape", {x, ir::Argument::ints({-1})});
  }
  const SymInt& size = x->value().shape[size_t(axis)];
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < condition.numel(); ++i) {
    if (condition.flat_double(i) == 0) continue;
    if (size.is_constant() && i >= size.constant())
      context.fail("condition selects index ", i, " of a dim of size ", size.constant());
    kept.push_back(i);
  }
  ir::Node* index = context.constant_node(i64_tensor({int64_t(kept.size())}, kept));
  context.emit(0, "index_select", {x, axis, index});
}

void convert_non_zero(OnnxNodeContext& context) {
  const Tensor& x = context.constant_input(0, "X");
  int64_t rank = x.dim();
  std::vector<int64_t> coordinates, position(size_t(rank), 0);
  std::vector<std::vector<int64_t>> by_dim(static_cast<size_t>(rank));
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    if (x.flat_double(flat) != 0)
      for (int64_t d = 0; d < rank; ++d) by_dim[size_t(d)].push_back(position[size_t(d)]);
    for (int64_t d = rank - 1; d >= 0 && ++position[size_t(d)] == x.size(d); --d) position[size_t(d)] = 0;
  }
  int64_t count = rank == 0 ? 0 : int64_t(by_dim[0].size());
  for (const auto& row : by_dim) coordinates.insert(coordinates.end(), row.begin(), row.end());
  context.set_output(0, OnnxValue::of_constant(i64_tensor({rank, count}, coordinates)));
}

// Unique over the flattened input or along an axis (slices compared element by element),
// sorted ascending or in order of first occurrence; outputs Y, first indices, inverse
// indices, counts.
void convert_unique(OnnxNodeContext& context) {
  const Tensor& x = context.constant_input(0, "X");
  bool sorted = context.int_attribute("sorted", 1) != 0;
  bool by_axis = context.attribute("axis") != nullptr;
  Tensor source = by_axis ? x : x.reshape({x.numel()});
  int64_t axis = by_axis ? context.wrap_axis(context.int_attribute("axis", 0), x.dim()) : 0;
  Tensor moved = source.transpose(0, axis).contiguous();  // slices along axis 0
  int64_t slices = moved.dim() == 0 ? 1 : moved.size(0), width = slices ? moved.numel() / std::max<int64_t>(slices, 1) : 0;
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t i = 0; i < width; ++i) {
      double u = moved.flat_double(a * width + i), v = moved.flat_double(b * width + i);
      if (u != v) return u < v;
    }
    return false;
  };
  auto equal = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };
  std::vector<int64_t> firsts;  // first occurrence of each distinct slice, in occurrence order
  std::vector<int64_t> inverse(static_cast<size_t>(slices));
  for (int64_t s = 0; s < slices; ++s) {
    auto found = std::find_if(firsts.begin(), firsts.end(), [&](int64_t f) { return equal(f, s); });
    inverse[size_t(s)] = found - firsts.begin();
    if (found == firsts.end()) firsts.push_back(s);
  }
  std::vector<int64_t> order(firsts.size());  // output position -> distinct slice
  std::iota(order.begin(), order.end(), 0);
  if (sorted) std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return less(firsts[size_t(a)], firsts[size_t(b)]); });
  std::vector<int64_t> rank_of(order.size()), indices, counts(order.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) rank_of[size_t(order[i])] = int64_t(i);
  for (int64_t& value : inverse) value = rank_of[size_t(value)];
  for (int64_t value : inverse) ++counts[size_t(value)];
  for (int64_t distinct : order) indices.push_back(firsts[size_t(distinct)]);
  Tensor picked = Tensor::empty({int64_t(indices.size()), width}, x.dtype());
  size_t row_bytes = size_t(width) * moved.element_size();
  for (size_t i = 0; i < indices.size(); ++i)
    std::memcpy(static_cast<char*>(picked.data_ptr()) + i * row_bytes,
                static_cast<const char*>(moved.data_ptr()) + size_t(indices[i]) * row_bytes, row_bytes);
  Sizes y_sizes = moved.sizes();
  if (y_sizes.empty()) y_sizes = {1};
  y_sizes[0] = int64_t(indices.size());
  Tensor y = picked.reshape(y_sizes).transpose(0, axis).contiguous();
  int64_t distinct = int64_t(indices.size());
  context.set_output(0, OnnxValue::of_constant(y));
  if (context.output_used(1)) context.set_output(1, OnnxValue::of_constant(i64_tensor({distinct}, indices)));
  if (context.output_used(2)) context.set_output(2, OnnxValue::of_constant(i64_tensor({slices}, inverse)));
  if (context.output_used(3)) context.set_output(3, OnnxValue::of_constant(i64_tensor({distinct}, counts)));
}

// Whether two boxes overlap by more than `threshold` (intersection over union), as ONNX's
// reference computes it: corners [y1, x1, y2, x2] in any order, or [x, y, width, height].
bool overlaps(const double* a, const double* b, bool center_point, double threshold) {
  auto extent = [center_point](const double* box, int axis, double& low, double& high) {
    if (center_point) {  // axis 0: x (index 0, width 2); axis 1: y (index 1, height 3)
      low = box[axis] - box[axis + 2] / 2;
      high = box[axis] + box[axis + 2] / 2;
    } else {  // axis 0: x (indices 1, 3); axis 1: y (indices 0, 2)
      low = std::min(box[1 - axis], box[3 - axis]);
      high = std::max(box[1 - axis], box[3 - axis]);
    }
  };
  double area_a = 1, area_b = 1, intersection = 1;
  for (int axis = 0; axis < 2; ++axis) {
    double a_low, a_high, b_low, b_high;
    extent(a, axis, a_low, a_high);
    extent(b, axis, b_low, b_high);
    double low = std::max(a_low, b_low), high = std::min(a_high, b_high);
    if (high <= low) return false;
    intersection *= high - low;
    area_a *= a_high - a_low;
    area_b *= b_high - b_low;
  }
  double union_area = area_a + area_b - intersection;
  if (intersection <= 0 || area_a <= 0 || area_b <= 0 || union_area <= 0) return false;
  return intersection / union_area > threshold;
}

// NonMaxSuppression: per batch and class, boxes by descending score (over score_threshold when
// given), each kept unless it overlaps a kept one by more than iou_threshold, up to
// max_output_boxes_per_class; [selected, 3] of (batch, class, box).
void convert_non_max_suppression(OnnxNodeContext& context) {
  const Tensor& boxes = context.constant_input(0, "boxes");
  const Tensor& scores = context.constant_input(1, "scores");
  if (boxes.dim() != 3 || boxes.size(2) != 4 || scores.dim() != 3 || scores.size(0) != boxes.size(0) ||
      scores.size(2) != boxes.size(1))
    context.fail("boxes must be [batches, boxes, 4] and scores [batches, classes, boxes]");
  auto optional_value = [&](size_t index, const char* what) -> std::optional<double> {
    if (!context.has_input(index)) return std::nullopt;
    const Tensor& value = context.constant_input(index, what);
    if (value.numel() == 0) return std::nullopt;
    return value.flat_double(0);
  };
  // max_output_boxes_per_class is an int64 read as one: torchvision's export gives INT64_MAX,
  // which as a double converts back past int64's range (to 0 boxes).
  std::optional<int64_t> max_boxes;
  if (context.has_input(2)) {
    const Tensor& value = context.constant_input(2, "max_output_boxes_per_class");
    if (!is_integral(value.dtype()))
      context.fail("max_output_boxes_per_class must be an int64 tensor, not ", dtype_name(value.dtype()));
    if (value.numel() != 0) max_boxes = value.flat_int(0);
  }
  double iou_threshold = optional_value(3, "iou_threshold").value_or(0);
  std::optional<double> score_threshold = optional_value(4, "score_threshold");
  bool center_point = context.int_attribute("center_point_box", 0) != 0;
  int64_t limit = max_boxes ? std::max<int64_t>(0, *max_boxes) : 0;
  std::vector<double> box_values(static_cast<size_t>(boxes.numel())), score_values(size_t(scores.numel()));
  for (int64_t i = 0; i < boxes.numel(); ++i) box_values[size_t(i)] = boxes.flat_double(i);
  for (int64_t i = 0; i < scores.numel(); ++i) score_values[size_t(i)] = scores.flat_double(i);
  int64_t batches = boxes.size(0), count = boxes.size(1), classes = scores.size(1);
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const double* class_scores = &score_values[size_t((b * classes + c) * count)];
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < count; ++i)
        if (!score_threshold || class_scores[i] > *score_threshold) candidates.push_back(i);
      std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t x, int64_t y) { return class_scores[x] > class_scores[y]; });
      std::vector<int64_t> kept;
      for (int64_t candidate : candidates) {
        if (int64_t(kept.size()) >= limit) break;
        const double* box = &box_values[size_t((b * count + candidate) * 4)];
        bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t other) {
          return overlaps(box, &box_values[size_t((b * count + other) * 4)], center_point, iou_threshold);
        });
        if (suppressed) continue;
        kept.push_back(candidate);
        selected.insert(selected.end(), {b, c, candidate});
      }
    }
  context.set_output(0, OnnxValue::of_constant(i64_tensor({int64_t(selected.size() / 3), 3}, selected)));
}

}  // namespace

void register_onnx_indexing_ops(OnnxOpTable& table) {
  table.add("NonMaxSuppression", convert_non_max_suppression);
  table.add("GatherND", convert_gather_nd);
  table.add("ScatterND", convert_scatter_nd);
  table.add("OneHot", convert_one_hot);
  table.add("Hardmax", convert_hardmax);
  table.add("EyeLike", convert_eye_like);
  table.add("ReverseSequence", convert_reverse_sequence);
  table.add("TopK", convert_top_k);
  table.add("Compress", convert_compress);
  table.add("NonZero", convert_non_zero);
  table.add("Unique", convert_unique);
}

}  // namespace kiln::frontends
