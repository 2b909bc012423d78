// ATen ops that copy, combine or rearrange tensors: cat / stack, padding (constant_pad_nd,
// pad, reflection / replication pads), repeat, flip, roll, tril / triu, dtype conversion
// (_to_copy, to, type_as), copy / copy_ / fill / fill_ / zero_, masked_fill; the shuffles
// (pixel_shuffle, pixel_unshuffle, channel_shuffle), tile, repeat_interleave by a count and
// rot90, as reshapes, permutes and expands.
#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

void convert_cat(AtenNodeContext& c) {
  std::vector<ir::Node*> parts = c.tensors("tensors");
  std::vector<ir::Argument> args(parts.begin(), parts.end());
  c.emit(0, "cat", {ir::Argument(args), c.int_arg("dim", 0)});
}

void convert_stack(AtenNodeContext& c) {
  std::vector<ir::Node*> parts = c.tensors("tensors");
  if (parts.empty()) c.fail("stack expects a non-empty TensorList");
  int64_t dim = wrap_dim(c, c.int_arg("dim", 0), rank_of(parts[0]) + 1);
  std::vector<ir::Argument> args;
  for (ir::Node* part : parts) args.emplace_back(c.call("unsqueeze", {part, dim}));
  c.emit(0, "cat", {ir::Argument(args), dim});
}

void convert_constant_pad(AtenNodeContext& c) {
  ir::Node* x = c.tensor(c.find("self") ? "self" : "input");
  std::vector<SymInt> pad = c.sym_ints("pad");
  double value = c.float_arg("value", 0.0);
  c.emit(0, "pad", {x, ir::Argument::sym_ints(pad), std::string("constant"), value});
}

void convert_pad(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::vector<SymInt> pad = c.sym_ints("pad");
  std::string mode = c.string_arg("mode", "constant");
  std::optional<double> value = c.optional_float("value");
  if (mode != "constant" && value && *value != 0.0) c.fail("padding mode '", mode, "' doesn't take in value argument");
  c.emit(0, "pad", {x, ir::Argument::sym_ints(pad), mode, mode == "constant" ? ir::Argument(value.value_or(0.0)) : ir::Argument()});
}

AtenConverter mode_pad(std::string mode) {
  return [mode](AtenNodeContext& c) {
    c.emit(0, "pad", {c.tensor("self"), ir::Argument::sym_ints(c.sym_ints("padding")), mode});
  };
}

// repeat(repeats): each dim tiled; new leading dims for extra repeats.
// x repeated `repeats` times along each dim (more counts than dims: leading dims of 1 first):
// a size-1 dim unsqueezed before every dim, expanded to the count, and merged.
ir::Node* repeated(AtenNodeContext& c, ir::Node* x, const std::vector<SymInt>& repeats) {
  int64_t rank = rank_of(x);
  if (int64_t(repeats.size()) < rank)
    c.fail("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  size_t extra = repeats.size() - size_t(rank);
  std::vector<SymInt> padded(extra, SymInt(1));
  for (const SymInt& size : shape_of(x)) padded.push_back(size);
  std::vector<SymInt> interleaved, expanded, result;
  for (size_t i = 0; i < padded.size(); ++i) {
    interleaved.insert(interleaved.end(), {SymInt(1), padded[i]});
    expanded.insert(expanded.end(), {repeats[i], padded[i]});
    result.push_back(repeats[i] * padded[i]);
  }
  ir::Node* y = c.call("reshape", {x, ir::Argument::sym_ints(interleaved)});
  y = c.call("expand", {y, ir::Argument::sym_ints(expanded)});
  return c.call("reshape", {y, ir::Argument::sym_ints(result)});
}

void convert_repeat(AtenNodeContext& c) { c.set_output(0, repeated(c, c.tensor("self"), c.sym_ints("repeats"))); }

// The positions size-1, ..., 0 along a dim of `size`.
ir::Node* reversed_positions(AtenNodeContext& c, const SymInt& size) {
  ir::Node* forward = c.call("iota", {size});
  if (size.is_constant()) return c.call("sub", {size.constant() - 1, forward});
  return c.call("sub", {c.sym_int_tensor(size - SymInt(1)), forward});
}

// x reversed along each of `dims` (wrapped); a copy when there are none.
ir::Node* flipped(AtenNodeContext& c, ir::Node* x, const std::vector<int64_t>& dims) {
  ir::Node* y = x;
  for (int64_t dim : wrap_dims(c, dims, rank_of(x))) {
    if (rank_of(x) == 0) break;
    y = c.call("index_select", {y, dim, reversed_positions(c, shape_of(x)[size_t(dim)])});
  }
  return y == x ? c.call("clone", {x}) : y;
}

void convert_flip(AtenNodeContext& c) { c.set_output(0, flipped(c, c.tensor("self"), c.ints("dims"))); }

// roll(shifts, dims): each dim's last `shift` elements move to the front (cat of two slices);
// without dims, the flattened tensor rolls and is reshaped back.
void convert_roll(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::vector<int64_t> shifts = c.ints("shifts");
  std::vector<int64_t> dims = c.ints("dims", std::vector<int64_t>{});
  ir::Node* y = x;
  bool flat = dims.empty();
  if (flat) {
    if (shifts.size() != 1) c.fail("roll without dims takes one shift");
    SymInt total = 1;
    for (const SymInt& size : shape_of(x)) total = total * size;
    y = c.call("reshape", {x, ir::Argument::sym_ints({total})});
    dims = {0};
  }
  if (shifts.size() != dims.size()) c.fail("shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t dim = wrap_dim(c, dims[i], rank_of(y));
    std::optional<int64_t> size = shape_of(y)[size_t(dim)].maybe_constant();
    if (!size) c.fail("roll along a dim of symbolic size is not supported");
    if (*size == 0) continue;
    int64_t shift = ((shifts[i] % *size) + *size) % *size;
    if (shift == 0) continue;
    ir::Node* tail = c.call("slice", {y, dim, SymInt(*size - shift), SymInt(*size)});
    ir::Node* head = c.call("slice", {y, dim, SymInt(0), SymInt(*size - shift)});
    y = c.call("cat", {std::vector<ir::Argument>{tail, head}, dim});
  }
  if (flat) y = c.call("reshape", {y, ir::Argument::sym_ints(shape_of(x))});
  c.set_output(0, y == x ? c.call("clone", {x}) : y);
}

AtenConverter triangle(std::string op) {
  return [op](AtenNodeContext& c) { c.result(op, {c.tensor("self"), c.int_arg("diagonal", 0)}); };
}

// _to_copy / to: a cast (a fresh copy even when the dtype is the same, for _to_copy).
void convert_to_copy(AtenNodeContext& c) {
  c.require_cpu("device");
  ir::Node* x = c.tensor("self");
  std::optional<DType> dtype = c.dtype_arg("dtype");
  if (!dtype || *dtype == dtype_of(x)) return void(c.emit(0, "clone", {x}));
  c.emit(0, "cast", {x, *dtype});
}

void convert_to(AtenNodeContext& c) {
  c.require_cpu("device");
  ir::Node* x = c.tensor("self");
  std::optional<DType> dtype = c.dtype_arg("dtype");
  if (c.find("other")) dtype = dtype_of(c.tensor("other"));
  bool copy = c.bool_arg("copy", false);
  if (!dtype || *dtype == dtype_of(x)) {
    if (copy) return void(c.emit(0, "clone", {x}));
    return void(c.set_output(0, x));
  }
  c.emit(0, "cast", {x, *dtype});
}

void convert_type_as(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  DType dtype = dtype_of(c.tensor("other"));
  if (dtype == dtype_of(x)) return void(c.set_output(0, x));
  c.emit(0, "cast", {x, dtype});
}

// copy(self, src): src broadcast to self's shape and cast to its dtype, as a fresh tensor.
void convert_copy(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  ir::Node* src = c.tensor("src");
  ir::Node* value = cast_to(c, src, dtype_of(self));
  if (!(shape_of(value) == shape_of(self))) value = c.call("expand", {value, ir::Argument::sym_ints(shape_of(self))});
  c.emit(0, "clone", {value});
}

void convert_copy_(AtenNodeContext& c) { c.emit(0, "copy_", {c.tensor("self"), c.tensor("src")}); }

void convert_fill(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  if (c.is_scalar("value")) {
    ir::Argument value = c.scalar("value");
    if (value.is_node()) return void(c.emit(0, "clone", {c.call("expand", {cast_to(c, value.node(), dtype_of(self)), ir::Argument::sym_ints(shape_of(self))})}));
    return void(c.emit(0, "full_like", {self, value}));
  }
  ir::Node* value = cast_to(c, c.tensor("value"), dtype_of(self));
  c.emit(0, "clone", {c.call("expand", {value, ir::Argument::sym_ints(shape_of(self))})});
}

void convert_fill_(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  if (c.is_scalar("value")) {
    ir::Argument value = c.scalar("value");
    if (!value.is_node()) return void(c.emit(0, "fill_", {self, value}));
    return void(c.emit(0, "copy_", {self, value}));
  }
  c.emit(0, "copy_", {self, c.tensor("value")});
}

void convert_zero_(AtenNodeContext& c) { c.emit(0, "fill_", {c.tensor("self"), int64_t(0)}); }
void convert_zero(AtenNodeContext& c) { c.emit(0, "full_like", {c.tensor("self"), int64_t(0)}); }

void convert_masked_fill(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  ir::Node* mask = c.tensor("mask");
  ir::Argument value = c.tensor_or_scalar("value");
  if (value.is_node()) value = cast_to(c, value.node(), dtype_of(self));
  ir::Node* filled = c.call("where", {mask, value, self});
  if (c.inplace() && !(shape_of(filled) == shape_of(self)))
    c.fail("masked_fill_: the mask of shape ", ir::shape_string(shape_of(mask)), " broadcasts beyond self's shape ",
           ir::shape_string(shape_of(self)));
  c.result_node(cast_to(c, filled, dtype_of(self)));
}

// x [*, C, H, W] as [*, C / r^2, H * r, W * r] (shuffle) or back (unshuffle): a reshape that
// splits the moved factor out, a permute that interleaves it with the rows and columns, and a
// reshape that merges them.
AtenConverter pixel_shuffle(bool unshuffle) {
  return [unshuffle](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    int64_t r = c.int_arg(unshuffle ? "downscale_factor" : "upscale_factor");
    int64_t rank = rank_of(x);
    if (rank < 3) c.fail(unshuffle ? "pixel_unshuffle" : "pixel_shuffle", " needs at least 3 dims, got ", x->value().type_string());
    if (r < 1) c.fail("the factor must be positive, got ", r);
    const ir::SymShape& shape = shape_of(x);
    std::vector<SymInt> batch(shape.begin(), shape.end() - 3);
    SymInt channels = shape[size_t(rank - 3)], height = shape[size_t(rank - 2)], width = shape[size_t(rank - 1)];
    int64_t b = int64_t(batch.size());
    std::vector<SymInt> split = batch, merged = batch;
    std::vector<int64_t> order;
    for (int64_t i = 0; i < b; ++i) order.push_back(i);
    if (!unshuffle) {
      std::optional<int64_t> known = channels.maybe_constant();
      if (known && *known % (r * r) != 0)
        c.fail("pixel_shuffle expects its input's channels (", *known, ") to be divisible by upscale_factor^2 = ", r * r);
      SymInt out_channels = floordiv(channels, SymInt(r * r));
      split.insert(split.end(), {out_channels, SymInt(r), SymInt(r), height, width});
      for (int64_t i : {0, 3, 1, 4, 2}) order.push_back(b + i);  // C, H, r, W, r
      merged.insert(merged.end(), {out_channels, height * SymInt(r), width * SymInt(r)});
    } else {
      for (const SymInt& size : {height, width}) {
        std::optional<int64_t> known = size.maybe_constant();
        if (known && *known % r != 0)
          c.fail("pixel_unshuffle expects the height and width of ", x->value().type_string(),
                 " to be divisible by downscale_factor = ", r);
      }
      SymInt rows = floordiv(height, SymInt(r)), columns = floordiv(width, SymInt(r));
      split.insert(split.end(), {channels, rows, SymInt(r), columns, SymInt(r)});
      for (int64_t i : {0, 2, 4, 1, 3}) order.push_back(b + i);  // C, r, r, H, W
      merged.insert(merged.end(), {channels * SymInt(r * r), rows, columns});
    }
    ir::Node* y = c.call("reshape", {x, ir::Argument::sym_ints(split)});
    y = c.call("permute", {y, ir::Argument::ints(order)});
    c.emit(0, "reshape", {y, ir::Argument::sym_ints(merged)});
  };
}

// x [N, C, *] with its channels in `groups` groups read group-interleaved: [N, g, C / g, *]
// transposed to [N, C / g, g, *].
void convert_channel_shuffle(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t groups = c.int_arg("groups");
  if (rank_of(x) < 3) c.fail("channel_shuffle expects its input to have at least 3 dims, got ", x->value().type_string());
  if (groups <= 0) c.fail("channel_shuffle: number of groups must be positive, got ", groups);
  const ir::SymShape& shape = shape_of(x);
  std::optional<int64_t> channels = shape[1].maybe_constant();
  if (channels && *channels % groups != 0)
    c.fail("channel_shuffle: number of channels (", *channels, ") must be divisible by groups (", groups, ")");
  std::vector<SymInt> split = {shape[0], SymInt(groups), floordiv(shape[1], SymInt(groups))};
  split.insert(split.end(), shape.begin() + 2, shape.end());
  ir::Node* y = c.call("reshape", {x, ir::Argument::sym_ints(split)});
  y = c.call("transpose", {y, int64_t(1), int64_t(2)});
  c.emit(0, "reshape", {y, ir::Argument::sym_ints(std::vector<SymInt>(shape.begin(), shape.end()))});
}

// tile: repeat with the counts padded by leading 1s to x's rank (or x's shape by leading 1s
// to theirs).
void convert_tile(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::vector<SymInt> repeats = c.sym_ints("dims");
  while (int64_t(repeats.size()) < rank_of(x)) repeats.insert(repeats.begin(), SymInt(1));
  c.set_output(0, repeated(c, x, repeats));
}

// repeat_interleave(self, repeats: int, dim): each element `repeats` times in a row along dim
// (along the flattened tensor without dim): an unsqueeze after dim, an expand, a merge.
void convert_repeat_interleave_count(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  SymInt repeats = c.sym_int("repeats");
  if (std::optional<int64_t> known = repeats.maybe_constant(); known && *known < 0)
    c.fail("repeats can not be negative, got ", *known);
  std::optional<int64_t> given_dim = c.optional_int("dim");
  if (!given_dim) x = c.call("reshape", {x, ir::Argument::ints({-1})});
  if (rank_of(x) == 0) x = c.call("reshape", {x, ir::Argument::ints({1})});
  int64_t dim = given_dim ? wrap_dim(c, *given_dim, rank_of(x)) : 0;
  std::vector<SymInt> shape(shape_of(x).begin(), shape_of(x).end()), expanded = shape, merged = shape;
  expanded.insert(expanded.begin() + dim + 1, repeats);
  merged[size_t(dim)] = shape[size_t(dim)] * repeats;
  ir::Node* y = c.call("unsqueeze", {x, dim + 1});
  y = c.call("expand", {y, ir::Argument::sym_ints(expanded)});
  c.emit(0, "reshape", {y, ir::Argument::sym_ints(merged)});
}

// rot90(self, k, dims): k quarter turns from dims[0] towards dims[1]; one turn is a flip of
// dims[1] and a transpose, two turns flip both, three a transpose and a flip of dims[1].
void convert_rot90(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t rank = rank_of(x);
  std::vector<int64_t> dims = c.ints("dims", std::vector<int64_t>{0, 1});
  if (dims.size() != 2) c.fail("expected total rotation dims == 2, but got dims = ", dims.size());
  if (rank < 2) c.fail("expected total dims >= 2, but got total dims = ", rank);
  int64_t a = wrap_dim(c, dims[0], rank), b = wrap_dim(c, dims[1], rank);
  if (a == b) c.fail("expected rotation dims to be different, but got dim0 = ", a, " and dim1 = ", b);
  int64_t k = ((c.int_arg("k", 1) % 4) + 4) % 4;
  ir::Node* y = x;
  if (k == 0) y = c.call("clone", {x});
  if (k == 1) y = c.call("transpose", {flipped(c, x, {b}), a, b});
  if (k == 2) y = flipped(c, x, {a, b});
  if (k == 3) y = flipped(c, c.call("transpose", {x, a, b}), {b});
  c.set_output(0, y);
}

}  // namespace

void register_aten_tensor_ops(AtenOpTable& table) {
  add_op(table, "cat", "default", convert_cat);
  add_op(table, "concat", "default", convert_cat);
  add_op(table, "concatenate", "default", convert_cat);
  add_op(table, "stack", "default", convert_stack);
  add_op(table, "constant_pad_nd", "default", convert_constant_pad);
  add_op(table, "pad", "default", convert_pad);
  for (const char* rank : {"1d", "2d", "3d"}) {
    add_op(table, std::string("reflection_pad") + rank, "default", mode_pad("reflect"));
    add_op(table, std::string("replication_pad") + rank, "default", mode_pad("replicate"));
  }
  add_op(table, "_pad_circular", "default", mode_pad("circular"));
  add_op(table, "repeat", "default", convert_repeat);
  add_op(table, "flip", "default", convert_flip);
  add_op(table, "roll", "default", convert_roll);
  add_op(table, "pixel_shuffle", "default", pixel_shuffle(false));
  add_op(table, "pixel_unshuffle", "default", pixel_shuffle(true));
  add_op(table, "channel_shuffle", "default", convert_channel_shuffle);
  add_op(table, "native_channel_shuffle", "default", convert_channel_shuffle);
  add_op(table, "tile", "default", convert_tile);
  add_op(table, "repeat_interleave", "self_int", convert_repeat_interleave_count);
  add_op(table, "rot90", "default", convert_rot90);
  add_op_and_inplace(table, "tril", "default", triangle("tril"));
  add_op_and_inplace(table, "triu", "default", triangle("triu"));
  add_op(table, "_to_copy", "default", convert_to_copy);
  for (const char* overload : {"dtype", "dtype_layout", "device", "other"}) add_op(table, "to", overload, convert_to);
  add_op(table, "type_as", "default", convert_type_as);
  add_op(table, "copy", "default", convert_copy);
  add_op(table, "copy_", "default", convert_copy_);
  add_op(table, "fill", "Scalar", convert_fill);
  add_op(table, "fill", "Tensor", convert_fill);
  add_op(table, "fill_", "Scalar", convert_fill_);
  add_op(table, "fill_", "Tensor", convert_fill_);
  add_op(table, "zero_", "default", convert_zero_);
  add_op(table, "zero", "default", convert_zero);
  add_op_and_inplace(table, "masked_fill", "Scalar", convert_masked_fill);
  add_op_and_inplace(table, "masked_fill", "Tensor", convert_masked_fill);
}

}  // namespace kiln::frontends
