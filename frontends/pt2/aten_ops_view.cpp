// ATen views and shape ops as Kiln views, so that writes through them reach their base in
// functionalization: view / reshape / _unsafe_view, permute, transpose, t, expand, squeeze,
// unsqueeze, flatten / unflatten (as reshape), slice, select, narrow, split / chunk / unbind
// (lists of slices and selects), alias / detach / contiguous, as_strided, diagonal, unfold,
// movedim; and the *_copy forms of the functional IR (the view, then a clone).
#include <numeric>

#include "frontends/pt2/aten_op_helpers.h"
#include "runtime/strides.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

// A view of `x` with exactly `shape`: Kiln's view when the layout allows it, else reshape
// (Kiln's strides can differ from PyTorch's where Kiln's ops return contiguous results).
ir::Node* view_as(AtenNodeContext& c, ir::Node* x, const std::vector<SymInt>& shape) {
  if (ir::Node* view = c.try_call("view", {x, ir::Argument::sym_ints(shape)})) return view;
  return c.call("reshape", {x, ir::Argument::sym_ints(shape)});
}

// An alias of x: the same values, a view of the same storage.
ir::Node* alias_of(AtenNodeContext& c, ir::Node* x) {
  if (rank_of(x) == 0 || x->value().is_contiguous()) return view_as(c, x, shape_of(x));
  std::vector<int64_t> identity(size_t(rank_of(x)));
  std::iota(identity.begin(), identity.end(), 0);
  return c.call("permute", {x, ir::Argument::ints(identity)});
}

void convert_view(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::vector<SymInt> shape = c.sym_ints(c.find("size") ? "size" : "shape");
  c.set_output(0, view_as(c, x, shape));
}

void convert_reshape(AtenNodeContext& c) {
  c.emit(0, "reshape", {c.tensor("self"), ir::Argument::sym_ints(c.sym_ints("shape"))});
}

void convert_permute(AtenNodeContext& c) { c.emit(0, "permute", {c.tensor("self"), ir::Argument::ints(c.ints("dims"))}); }

void convert_transpose(AtenNodeContext& c) {
  c.emit(0, "transpose", {c.tensor("self"), c.int_arg(c.find("dim0") ? "dim0" : "axis0"), c.int_arg(c.find("dim1") ? "dim1" : "axis1")});
}

void convert_t(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (rank_of(x) > 2) c.fail("t() expects a tensor with <= 2 dimensions, but self is ", rank_of(x), "D");
  if (rank_of(x) < 2) return void(c.set_output(0, alias_of(c, x)));
  c.emit(0, "transpose", {x, int64_t(0), int64_t(1)});
}

void convert_expand(AtenNodeContext& c) {
  c.emit(0, "expand", {c.tensor("self"), ir::Argument::sym_ints(c.sym_ints("size"))});
}

void convert_expand_as(AtenNodeContext& c) {
  c.emit(0, "expand", {c.tensor("self"), ir::Argument::sym_ints(shape_of(c.tensor("other")))});
}

void convert_squeeze(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  ir::Argument dims;
  if (c.given("dim")) dims = ir::Argument::ints(c.ints("dim"));
  c.emit(0, "squeeze", {x, dims});
}

void convert_unsqueeze(AtenNodeContext& c) { c.emit(0, "unsqueeze", {c.tensor("self"), c.int_arg("dim")}); }

void convert_flatten(AtenNodeContext& c) {
  ir::Node* x = c.tensor(c.find("self") ? "self" : "input");
  int64_t rank = rank_of(x);
  if (rank == 0) return void(c.set_output(0, view_as(c, x, {SymInt(1)})));
  int64_t start = wrap_dim(c, c.int_arg("start_dim", 0), rank), end = wrap_dim(c, c.int_arg("end_dim", -1), rank);
  if (start > end) c.fail("flatten() has invalid args: start_dim cannot come after end_dim");
  const ir::SymShape& shape = shape_of(x);
  std::vector<SymInt> flat(shape.begin(), shape.begin() + start);
  SymInt merged = 1;
  for (int64_t d = start; d <= end; ++d) merged = merged * shape[size_t(d)];
  flat.push_back(merged);
  flat.insert(flat.end(), shape.begin() + end + 1, shape.end());
  c.set_output(0, view_as(c, x, flat));
}

void convert_unflatten(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim"), rank_of(x));
  std::vector<SymInt> sizes = c.sym_ints("sizes");
  const ir::SymShape& shape = shape_of(x);
  // One -1 is inferred.
  SymInt known = 1;
  int64_t unknown = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i].is_constant() && sizes[i].constant() == -1) unknown = int64_t(i);
    else known = known * sizes[i];
  }
  if (unknown >= 0) sizes[size_t(unknown)] = floordiv(shape[size_t(dim)], known);
  std::vector<SymInt> full(shape.begin(), shape.begin() + dim);
  full.insert(full.end(), sizes.begin(), sizes.end());
  full.insert(full.end(), shape.begin() + dim + 1, shape.end());
  c.set_output(0, view_as(c, x, full));
}

void convert_slice(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::optional<SymInt> start = c.optional_sym_int("start"), end = c.optional_sym_int("end");
  c.emit(0, "slice", {x, c.int_arg("dim", 0), start ? ir::Argument(*start) : ir::Argument(),
                      end ? ir::Argument(*end) : ir::Argument(), c.sym_int("step", SymInt(1))});
}

void convert_select(AtenNodeContext& c) { c.emit(0, "select", {c.tensor("self"), c.int_arg("dim"), c.sym_int("index")}); }

void convert_narrow(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = c.int_arg("dim");
  SymInt start = c.sym_int("start"), length = c.sym_int("length");
  if (start.is_constant() && start.constant() < 0) start = start + shape_of(x)[size_t(wrap_dim(c, dim, rank_of(x)))];
  c.emit(0, "slice", {x, dim, start, start + length});
}

// Slices of the given sizes along dim.
std::vector<ir::Node*> split_by_sizes(AtenNodeContext& c, ir::Node* x, int64_t dim, const std::vector<SymInt>& sizes) {
  std::vector<ir::Node*> parts;
  SymInt offset = 0;
  for (const SymInt& size : sizes) {
    parts.push_back(c.call("slice", {x, dim, offset, offset + size}));
    offset = offset + size;
  }
  return parts;
}

void convert_split_with_sizes(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim", 0), rank_of(x));
  c.set_output_list(0, split_by_sizes(c, x, dim, c.sym_ints("split_sizes")));
}

// split.Tensor: pieces of split_size (the last may be smaller); chunk: `chunks` pieces of
// ceil(size / chunks).
std::vector<SymInt> even_pieces(AtenNodeContext& c, const SymInt& size, int64_t piece) {
  std::optional<int64_t> total = size.maybe_constant();
  if (!total) c.fail("splitting a dim of symbolic size ", size.to_string(), " into pieces is not supported");
  if (piece <= 0 && *total > 0) c.fail("split_size can only be 0 if dimension size is 0, but got ", piece);
  std::vector<SymInt> sizes;
  for (int64_t at = 0; at < *total; at += piece) sizes.emplace_back(std::min(piece, *total - at));
  if (sizes.empty()) sizes.emplace_back(0);
  return sizes;
}

void convert_split(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim", 0), rank_of(x));
  int64_t piece = c.int_arg("split_size");
  c.set_output_list(0, split_by_sizes(c, x, dim, even_pieces(c, shape_of(x)[size_t(dim)], piece)));
}

void convert_chunk(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim", 0), rank_of(x));
  int64_t chunks = c.int_arg("chunks");
  if (chunks <= 0) c.fail("chunk expects `chunks` to be greater than 0, got: ", chunks);
  std::optional<int64_t> total = shape_of(x)[size_t(dim)].maybe_constant();
  if (!total) c.fail("chunking a dim of symbolic size is not supported");
  int64_t piece = (*total + chunks - 1) / chunks;
  c.set_output_list(0, split_by_sizes(c, x, dim, even_pieces(c, *total, std::max<int64_t>(piece, 1))));
}

void convert_unbind(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim", 0), rank_of(x));
  std::optional<int64_t> total = shape_of(x)[size_t(dim)].maybe_constant();
  if (!total) c.fail("unbind of a dim of symbolic size is not supported");
  std::vector<ir::Node*> parts;
  for (int64_t i = 0; i < *total; ++i) parts.push_back(c.call("select", {x, dim, SymInt(i)}));
  c.set_output_list(0, parts);
}

void convert_alias(AtenNodeContext& c) { c.set_output(0, alias_of(c, c.tensor("self"))); }

void convert_detach_inplace(AtenNodeContext& c) { c.set_output(0, c.tensor("self")); }

void convert_contiguous(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (x->value().is_contiguous()) return void(c.set_output(0, alias_of(c, x)));
  c.emit(0, "clone", {x});
}

void convert_clone(AtenNodeContext& c) { c.emit(0, "clone", {c.tensor("self")}); }

void convert_as_strided(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::optional<SymInt> offset = c.optional_sym_int("storage_offset");
  c.emit(0, "as_strided", {x, ir::Argument::sym_ints(c.sym_ints("size")), ir::Argument::sym_ints(c.sym_ints("stride")),
                           offset ? ir::Argument(*offset) : ir::Argument()});
}

// x, contiguous (cloned when it is not), for views built with as_strided over its layout.
ir::Node* dense(AtenNodeContext& c, ir::Node* x) { return x->value().is_contiguous() ? x : c.call("clone", {x}); }

// diagonal(offset, dim1, dim2): the diagonal elements as the last dim, an as_strided view.
void convert_diagonal(AtenNodeContext& c) {
  ir::Node* x = dense(c, c.tensor(c.find("self") ? "self" : "input"));
  int64_t rank = rank_of(x);
  int64_t dim1 = wrap_dim(c, c.int_arg("dim1", 0), rank), dim2 = wrap_dim(c, c.int_arg("dim2", 1), rank);
  if (dim1 == dim2) c.fail("diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  c.emit(0, "as_strided", diagonal_as_strided_args(c, x));
}

// unfold(dimension, size, step): windows of `size` every `step` along dimension, as a new last dim.
void convert_unfold(AtenNodeContext& c) {
  ir::Node* x = dense(c, c.tensor("self"));
  int64_t rank = rank_of(x);
  int64_t dim = wrap_dim(c, c.int_arg("dimension"), rank);
  int64_t size = c.int_arg("size"), step = c.int_arg("step");
  if (step <= 0) c.fail("step is ", step, " but must be > 0");
  const ir::SymShape& shape = shape_of(x);
  ir::SymShape strides = contiguous_strides(shape);
  std::vector<SymInt> sizes = shape, new_strides = strides;
  if (rank == 0) {
    sizes = {SymInt(1)};
    new_strides = {SymInt(1)};
  } else {
    sizes[size_t(dim)] = floordiv(shape[size_t(dim)] - SymInt(size), SymInt(step)) + SymInt(1);
    new_strides[size_t(dim)] = strides[size_t(dim)] * SymInt(step);
    sizes.emplace_back(size);
    new_strides.push_back(strides[size_t(dim)]);
  }
  c.emit(0, "as_strided", {x, ir::Argument::sym_ints(sizes), ir::Argument::sym_ints(new_strides), SymInt(0)});
}

void convert_movedim(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t rank = rank_of(x);
  std::vector<int64_t> source = wrap_dims(c, c.ints("source"), rank), destination = wrap_dims(c, c.ints("destination"), rank);
  if (source.size() != destination.size()) c.fail("movedim: Invalid source or destination dims");
  std::vector<int64_t> order(size_t(rank), -1);
  std::vector<bool> used(size_t(rank), false);
  for (size_t i = 0; i < source.size(); ++i) {
    order[size_t(destination[i])] = source[i];
    used[size_t(source[i])] = true;
  }
  int64_t next = 0;
  for (int64_t& slot : order) {
    if (slot >= 0) continue;
    while (used[size_t(next)]) ++next;
    slot = next++;
  }
  c.emit(0, "permute", {x, ir::Argument::ints(order)});
}

// The *_copy ops of the functional IR: the view's values as a fresh tensor.
AtenConverter copy_of(AtenConverter view) {
  return [view](AtenNodeContext& c) {
    view(c);
    // The view set output 0 (or a list); clone each result.
    const ExportArgument& out = c.node().outputs.at(0);
    if (out.kind == "as_tensors") return;  // split_copy etc.: slices are read-only values here
    ir::Node* value = c.state().values.at(c.output_name(0)).node;
    c.set_output(0, c.call("clone", {value}));
  };
}

}  // namespace

void register_aten_view_ops(AtenOpTable& table) {
  std::vector<std::pair<std::string, std::pair<std::string, AtenConverter>>> views = {
      {"view", {"default", convert_view}},
      {"_unsafe_view", {"default", convert_view}},
      {"_reshape_alias", {"default", convert_view}},
      {"permute", {"default", convert_permute}},
      {"transpose", {"int", convert_transpose}},
      {"t", {"default", convert_t}},
      {"expand", {"default", convert_expand}},
      {"squeeze", {"default", convert_squeeze}},
      {"squeeze", {"dim", convert_squeeze}},
      {"squeeze", {"dims", convert_squeeze}},
      {"unsqueeze", {"default", convert_unsqueeze}},
      {"slice", {"Tensor", convert_slice}},
      {"select", {"int", convert_select}},
      {"alias", {"default", convert_alias}},
      {"detach", {"default", convert_alias}},
      {"as_strided", {"default", convert_as_strided}},
      {"diagonal", {"default", convert_diagonal}},
      {"unfold", {"default", convert_unfold}},
      {"split_with_sizes", {"default", convert_split_with_sizes}},
      {"split", {"Tensor", convert_split}},
      {"unbind", {"int", convert_unbind}},
  };
  for (const auto& [name, entry] : views) {
    add_op(table, name, entry.first, entry.second);
    add_op(table, name + "_copy", entry.first, copy_of(entry.second));
  }
  add_op(table, "reshape", "default", convert_reshape);
  add_op(table, "expand_as", "default", convert_expand_as);
  add_op(table, "swapaxes", "default", convert_transpose);
  add_op(table, "swapdims", "default", convert_transpose);
  add_op(table, "flatten", "using_ints", convert_flatten);
  add_op(table, "unflatten", "int", convert_unflatten);
  add_op(table, "narrow", "default", convert_narrow);
  add_op(table, "chunk", "default", convert_chunk);
  add_op(table, "unsafe_chunk", "default", convert_chunk);
  add_op(table, "unsafe_split", "Tensor", convert_split);
  add_op(table, "narrow_copy", "default", copy_of(convert_narrow));
  add_op(table, "view_as", "default", [](AtenNodeContext& c) {
    c.set_output(0, view_as(c, c.tensor("self"), shape_of(c.tensor("other"))));
  });
  add_op(table, "reshape_as", "default", [](AtenNodeContext& c) {
    c.emit(0, "reshape", {c.tensor("self"), ir::Argument::sym_ints(shape_of(c.tensor("other")))});
  });
  add_op(table, "ravel", "default", [](AtenNodeContext& c) { c.emit(0, "reshape", {c.tensor("self"), ir::Argument::ints({-1})}); });
  add_op(table, "detach_", "default", convert_detach_inplace);
  add_op(table, "contiguous", "default", convert_contiguous);
  add_op(table, "clone", "default", convert_clone);
  add_op(table, "lift_fresh_copy", "default", convert_clone);
  add_op(table, "lift_fresh", "default", convert_alias);
  add_op(table, "movedim", "int", convert_movedim);
  add_op(table, "movedim", "intlist", convert_movedim);
  add_op(table, "moveaxis", "intlist", convert_movedim);
}

}  // namespace kiln::frontends
