// ATen indexing ops: advanced indexing (index.Tensor, through a linear index into the
// indexed dims and index_select), index_put, index_select, gather, scatter and its
// reductions, the *_scatter ops (select / slice / diagonal / as_strided, written as a copy_
// into a view of a clone), embedding, take, masked_scatter, index_add / index_copy /
// index_fill; one_hot (rows of an identity matrix, so that a class out of range fails as an
// index does); take_along_dim (a gather of the two broadcast against each other); embedding_bag
// (rows gathered, then scatter-reduced into their bags).
#include <cmath>
#include <limits>
#include <numeric>

#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

// An index tensor as i64 with negative positions wrapped by `size`.
ir::Node* wrapped_index(AtenNodeContext& c, ir::Node* index, const SymInt& size) {
  ir::Node* i = cast_to(c, index, DType::i64);
  ir::Argument bound = size.is_constant() ? ir::Argument(size.constant()) : ir::Argument(c.sym_int_tensor(size));
  return c.call("where", {c.call("lt", {i, int64_t(0)}), c.call("add", {i, bound}), i});
}

// x[indices]: PyTorch's advanced indexing with integer index tensors (None keeps a dim).
void convert_index(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::vector<ir::Node*> indices = c.optional_tensors("indices");
  int64_t rank = rank_of(x);
  if (int64_t(indices.size()) > rank) c.fail("too many indices for tensor of dimension ", rank);
  std::vector<int64_t> indexed, kept;
  for (int64_t d = 0; d < rank; ++d) {
    bool has = size_t(d) < indices.size() && indices[size_t(d)];
    if (has && (dtype_of(indices[size_t(d)]) == DType::boolean || dtype_of(indices[size_t(d)]) == DType::u8))
      c.fail("indexing with a boolean mask gives a result whose size depends on the mask's values; Kiln compiles "
             "static shapes (use torch.where, or masked_fill, in the model)");
    (has ? indexed : kept).push_back(d);
  }
  if (indexed.empty()) return void(c.set_output(0, c.call("clone", {x})));
  const ir::SymShape& shape = shape_of(x);
  // The linear position into the indexed dims, broadcast over every index's shape.
  ir::Node* linear = nullptr;
  SymInt stride = 1;
  for (auto it = indexed.rbegin(); it != indexed.rend(); ++it) {
    ir::Node* position = wrapped_index(c, indices[size_t(*it)], shape[size_t(*it)]);
    if (!stride.is_constant() || stride.constant() != 1)
      position = c.call("mul", {position, stride.is_constant() ? ir::Argument(stride.constant()) : ir::Argument(c.sym_int_tensor(stride))});
    linear = linear ? c.call("add", {position, linear}) : position;
    stride = stride * shape[size_t(*it)];
  }
  ir::SymShape broadcast = shape_of(linear);
  SymInt count = 1;
  for (const SymInt& size : broadcast) count = count * size;
  // x with the indexed dims first, merged into one.
  std::vector<int64_t> order = indexed;
  order.insert(order.end(), kept.begin(), kept.end());
  ir::Node* front = c.call("permute", {x, ir::Argument::ints(order)});
  std::vector<SymInt> merged = {stride};
  for (int64_t d : kept) merged.push_back(shape[size_t(d)]);
  front = c.call("reshape", {front, ir::Argument::sym_ints(merged)});
  ir::Node* flat = c.call("reshape", {linear, ir::Argument::sym_ints({count})});
  ir::Node* gathered = c.call("index_select", {front, int64_t(0), flat});
  std::vector<SymInt> result = broadcast;
  for (int64_t d : kept) result.push_back(shape[size_t(d)]);
  ir::Node* y = c.call("reshape", {gathered, ir::Argument::sym_ints(result)});
  // Adjacent indexed dims keep their place; separated ones go first (PyTorch's rule).
  bool adjacent = indexed.back() - indexed.front() + 1 == int64_t(indexed.size());
  int64_t place = indexed.front();
  if (adjacent && place > 0) {
    int64_t b = int64_t(broadcast.size());
    std::vector<int64_t> back;
    for (int64_t k = 0; k < place; ++k) back.push_back(b + k);
    for (int64_t k = 0; k < b; ++k) back.push_back(k);
    for (int64_t k = place; k < int64_t(kept.size()); ++k) back.push_back(b + k);
    y = c.call("permute", {y, ir::Argument::ints(back)});
  }
  c.set_output(0, y);
}

void convert_index_put(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  std::vector<ir::Node*> indices = c.optional_tensors("indices");
  std::vector<ir::Argument> index_args(indices.size());
  for (size_t i = 0; i < indices.size(); ++i)
    if (indices[i]) index_args[i] = indices[i];
  ir::Node* values = cast_to(c, c.tensor("values"), dtype_of(self));
  std::vector<ir::Argument> args(4);
  args[0] = self;
  args[1] = ir::Argument(std::move(index_args));
  args[2] = values;
  args[3] = c.bool_arg("accumulate", false);
  c.result("index_put", std::move(args));
}

void convert_index_select(AtenNodeContext& c) {
  c.emit(0, "index_select", {c.tensor("self"), c.int_arg("dim"), c.tensor("index")});
}

void convert_gather(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  ir::Node* index = c.tensor("index");
  // An empty index gives an empty result whatever its rank (PyTorch checks nothing then).
  for (const SymInt& size : shape_of(index))
    if (size.is_constant() && size.constant() == 0)
      return void(c.emit(0, "full", {ir::Argument::sym_ints(shape_of(index)), 0}, {{"dtype", dtype_of(self)}}));
  c.emit(0, "gather", {self, c.int_arg("dim"), cast_to(c, index, DType::i64)});
}

std::string kiln_reduce(AtenNodeContext& c, const std::string& reduce) {
  if (reduce == "add" || reduce == "sum") return "sum";
  if (reduce == "multiply" || reduce == "prod") return "prod";
  if (reduce == "amax" || reduce == "amin") return reduce;
  c.fail("reduce '", reduce, "' is not supported");
}

// scatter.src / .value / .reduce / .value_reduce, scatter_add
AtenConverter scatter(std::optional<std::string> fixed_reduce) {
  return [fixed_reduce](AtenNodeContext& c) {
    ir::Node* self = c.tensor("self");
    ir::Argument src = c.find("src") ? c.tensor_or_scalar("src") : c.scalar("value");
    if (src.is_node()) src = cast_to(c, src.node(), dtype_of(self));
    ir::Kwargs kwargs;
    std::optional<std::string> reduce = fixed_reduce ? fixed_reduce : c.optional_string("reduce");
    if (reduce) kwargs.emplace_back("reduce", kiln_reduce(c, *reduce));
    ir::Node* index = cast_to(c, c.tensor("index"), DType::i64);
    int64_t dim = c.int_arg("dim");
    if (rank_of(self) == 0) {
      // PyTorch scatters into a 0-d self as into a 1-element 1-d one.
      wrap_dim(c, dim, 0);
      auto as_1d = [&](ir::Node* x) { return rank_of(x) == 0 ? reshape_to(c, x, {ir::SymInt(1)}) : x; };
      if (src.is_node()) src = as_1d(src.node());
      ir::Node* scattered = c.call("scatter", {as_1d(self), int64_t(0), as_1d(index), src}, std::move(kwargs));
      return void(c.result_node(reshape_to(c, scattered, {})));
    }
    c.result("scatter", {self, dim, index, src}, std::move(kwargs));
  };
}

// scatter_reduce.two(self, dim, index, src, reduce, include_self): the reductions Kiln's
// scatter has; mean as a sum divided by a count; include_self=False by first overwriting the
// scattered-to positions with the reduction's identity.
void convert_scatter_reduce(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  int64_t dim = c.int_arg("dim");
  ir::Node* index = c.tensor("index");
  ir::Node* src = cast_to(c, c.tensor("src"), dtype_of(self));
  std::string reduce = c.string_arg("reduce");
  bool include_self = c.bool_arg("include_self", true);
  bool mean = reduce == "mean";
  std::string kiln = mean ? "sum" : kiln_reduce(c, reduce);
  ir::Node* base = self;
  if (!include_self) {
    double identity = kiln == "sum" ? 0.0 : kiln == "prod" ? 1.0 : kiln == "amax" ? -std::numeric_limits<double>::infinity()
                                                                                  : std::numeric_limits<double>::infinity();
    if (!is_floating(dtype_of(self)) && std::isinf(identity))
      identity = kiln == "amax" ? double(std::numeric_limits<int64_t>::min()) : double(std::numeric_limits<int64_t>::max());
    base = c.call("scatter", {self, dim, index, identity});
  }
  ir::Node* reduced = c.call("scatter", {base, dim, index, src}, {{"reduce", kiln}});
  if (!mean) return void(c.result_node(reduced));
  ir::Node* ones = c.call("full_like", {src, int64_t(1)});
  ir::Node* counts = c.call("scatter", {c.call("full_like", {self, include_self ? 1 : 0}), dim, index, ones}, {{"reduce", std::string("sum")}});
  counts = c.call("maximum", {counts, int64_t(1)});
  ir::Node* divided = is_floating(dtype_of(self)) ? c.call("div", {reduced, counts})
                                                  : c.call("div", {reduced, counts}, {{"rounding_mode", std::string("floor")}});
  c.result_node(cast_to(c, divided, dtype_of(self)));
}

// The *_scatter ops: a clone of self with a view of it overwritten by src.
AtenConverter view_scatter(std::function<ir::Node*(AtenNodeContext&, ir::Node*)> view) {
  return [view](AtenNodeContext& c) {
    ir::Node* out = c.call("clone", {c.tensor("self")});
    ir::Node* target = view(c, out);
    c.call("copy_", {target, c.tensor("src")});
    c.set_output(0, out);
  };
}

ir::Node* select_view(AtenNodeContext& c, ir::Node* x) { return c.call("select", {x, c.int_arg("dim"), c.sym_int("index")}); }

ir::Node* slice_view(AtenNodeContext& c, ir::Node* x) {
  std::optional<SymInt> start = c.optional_sym_int("start"), end = c.optional_sym_int("end");
  return c.call("slice", {x, c.int_arg("dim", 0), start ? ir::Argument(*start) : ir::Argument(),
                          end ? ir::Argument(*end) : ir::Argument(), c.sym_int("step", SymInt(1))});
}

ir::Node* diagonal_view(AtenNodeContext& c, ir::Node* x) { return c.call("as_strided", diagonal_as_strided_args(c, x)); }

ir::Node* as_strided_view(AtenNodeContext& c, ir::Node* x) {
  std::optional<SymInt> offset = c.optional_sym_int("storage_offset");
  return c.call("as_strided", {x, ir::Argument::sym_ints(c.sym_ints("size")), ir::Argument::sym_ints(c.sym_ints("stride")),
                               offset ? ir::Argument(*offset) : ir::Argument()});
}

void convert_embedding(AtenNodeContext& c) {
  c.emit(0, "embedding", {c.tensor("weight"), c.tensor("indices"), c.int_arg("padding_idx", -1)});
}

// one_hot(self, num_classes): row `self` of the num_classes x num_classes identity (int64), with
// self's shape in front. num_classes = -1 (its max + 1) depends on the data: refused.
void convert_one_hot(AtenNodeContext& c) {
  ir::Node* indices = c.tensor("self");
  int64_t classes = c.int_arg("num_classes", -1);
  if (classes < 0)
    c.fail("one_hot with num_classes = -1 takes the number of classes from the data; give num_classes to export it");
  if (dtype_of(indices) != DType::i64) c.fail("one_hot is only applicable to index tensor of type LongTensor, got ", indices->value().type_string());
  ir::Node* positions = c.call("iota", {SymInt(classes)});
  ir::Node* identity = c.call("cast", {c.call("eq", {c.call("unsqueeze", {positions, int64_t(1)}), positions}), DType::i64});
  ir::Node* rows = c.call("index_select", {identity, int64_t(0), c.call("reshape", {indices, ir::Argument::ints({-1})})});
  std::vector<SymInt> shape(shape_of(indices).begin(), shape_of(indices).end());
  shape.push_back(SymInt(classes));
  c.set_output(0, c.call("reshape", {rows, ir::Argument::sym_ints(shape)}));
}

// take_along_dim(self, indices, dim): without dim, the flattened self at the flattened indices;
// with it, negative indices wrapped, self and indices broadcast to each other's sizes outside
// dim, then gathered.
void convert_take_along_dim(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  ir::Node* indices = cast_to(c, c.tensor("indices"), DType::i64);
  std::optional<int64_t> given = c.optional_int("dim");
  if (!given) {
    ir::Node* flat = c.call("reshape", {self, ir::Argument::ints({-1})});
    return void(c.set_output(0, c.call("gather", {flat, int64_t(0), c.call("reshape", {indices, ir::Argument::ints({-1})})})));
  }
  if (rank_of(self) != rank_of(indices))
    c.fail("torch.take_along_dim(): input and indices should have the same number of dimensions, but got ", rank_of(self),
           " dimensions for input, and ", rank_of(indices), " dimensions for indices");
  int64_t dim = wrap_dim(c, *given, rank_of(self));
  // Along a dim, a negative index counts from its end (PyTorch wraps them there, not without dim).
  const SymInt& length = shape_of(self)[size_t(dim)];
  ir::Argument wrapped_length = length.is_constant() ? ir::Argument(length.constant()) : ir::Argument(c.sym_int_tensor(length));
  indices = c.call("where", {c.call("lt", {indices, int64_t(0)}), c.call("add", {indices, wrapped_length}), indices});
  ir::SymShape self_sizes = shape_of(self), index_sizes = shape_of(indices);
  self_sizes[size_t(dim)] = shape_of(indices)[size_t(dim)];
  ir::SymShape index_shape = broadcast_shapes(self_sizes, shape_of(indices));
  index_sizes[size_t(dim)] = shape_of(self)[size_t(dim)];
  ir::SymShape self_shape = broadcast_shapes(index_sizes, shape_of(self));
  if (shape_of(indices) != index_shape) indices = c.call("expand", {indices, ir::Argument::sym_ints(index_shape)});
  if (shape_of(self) != self_shape) self = c.call("expand", {self, ir::Argument::sym_ints(self_shape)});
  c.set_output(0, c.call("gather", {self, dim, indices}));
}

// embedding_bag(weight, indices [n], offsets [B], ..., mode, ..., per_sample_weights,
// include_last_offset, padding_idx): each bag (the indices from one offset to the next) reduced
// over its rows of weight: 0 sum (rows times per_sample_weights when given), 1 mean, 2 max; an
// empty bag gives 0, and indices equal to padding_idx count for nothing. Each position's bag is
// the running count of offsets at or before it (ones scattered at the offsets, cumulated), so
// bags of any sizes, given at run time, need no data-dependent shape. Only output 0 (the bags) is
// computed; offset2bag, bag_size and max_indices are refused where read.
void convert_embedding_bag(AtenNodeContext& c) {
  ir::Node* weight = c.tensor("weight");
  ir::Node* indices = cast_to(c, c.tensor("indices"), DType::i64);
  ir::Node* offsets = cast_to(c, c.tensor("offsets"), DType::i64);
  int64_t mode = c.int_arg("mode", 0);
  if (mode < 0 || mode > 2) c.fail("embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  if (rank_of(weight) != 2) c.fail("embedding_bag: weight must be 2-d, got ", weight->value().type_string());
  if (rank_of(indices) != 1 || rank_of(offsets) != 1)
    c.fail("embedding_bag: expected 1-d indices and offsets (a 2-d input arrives flattened), got ",
           indices->value().type_string(), " and ", offsets->value().type_string());
  for (size_t output = 1; output < 4; ++output)
    if (c.output_used(output))
      c.fail("embedding_bag: only the bags (output 0) are computed; output ", output,
             " (offset2bag, bag_size or max_indices) is read");
  ir::Node* per_sample = c.optional_tensor("per_sample_weights");
  if (per_sample && mode != 0) c.fail("embedding_bag: per_sample_weights is only supported for mode='sum'");
  std::optional<int64_t> padding = c.given("padding_idx") ? c.optional_int("padding_idx") : std::nullopt;
  if (padding && *padding < 0) {
    std::optional<int64_t> rows = shape_of(weight)[0].maybe_constant();
    if (!rows) c.fail("embedding_bag: a negative padding_idx needs the weight's row count, which is symbolic");
    padding = *padding + *rows;
  }
  SymInt n = shape_of(indices)[0], bags = shape_of(offsets)[0];
  if (c.bool_arg("include_last_offset", false)) bags = bags - SymInt(1);
  DType dtype = dtype_of(weight);
  // The bag of each position: ones at the offsets (an empty last bag's offset, n, in a spare slot).
  ir::Node* marks = c.call("full", {ir::Argument::sym_ints({n + SymInt(1)}), int64_t(0)}, {{"dtype", DType::i64}});
  marks = c.call("scatter", {marks, int64_t(0), offsets, int64_t(1)}, {{"reduce", std::string("sum")}});
  ir::Node* bag_of = c.call("sub", {c.call("cumsum", {c.call("slice", {marks, int64_t(0), SymInt(0), n}), int64_t(0)}), int64_t(1)});
  ir::Node* rows = c.call("index_select", {weight, int64_t(0), indices});  // [n, D]
  if (per_sample) rows = c.call("mul", {rows, c.call("unsqueeze", {cast_to(c, per_sample, dtype), int64_t(1)})});
  ir::Node* valid = padding ? c.call("ne", {indices, *padding}) : nullptr;
  const SymInt& width = shape_of(weight)[1];
  ir::Node* spread = c.call("expand", {c.call("unsqueeze", {bag_of, int64_t(1)}), ir::Argument::sym_ints({n, width})});
  double start = mode == 2 ? -std::numeric_limits<double>::infinity() : 0.0;
  if (valid) rows = c.call("where", {c.call("unsqueeze", {valid, int64_t(1)}), rows, start});
  ir::Node* totals = c.call("full", {ir::Argument::sym_ints({bags, width}), start}, {{"dtype", dtype}});
  ir::Node* result = c.call("scatter", {totals, int64_t(0), spread, rows}, {{"reduce", std::string(mode == 2 ? "amax" : "sum")}});
  if (mode != 0) {
    ir::Node* counted = valid ? c.call("cast", {valid, dtype}) : c.call("full", {ir::Argument::sym_ints({n}), 1.0}, {{"dtype", dtype}});
    ir::Node* zeros = c.call("full", {ir::Argument::sym_ints({bags}), 0.0}, {{"dtype", dtype}});
    ir::Node* counts = c.call("unsqueeze", {c.call("scatter", {zeros, int64_t(0), bag_of, counted}, {{"reduce", std::string("sum")}}), int64_t(1)});
    if (mode == 1) result = c.call("div", {result, c.call("clamp", {counts, 1.0, ir::Argument()})});
    else result = c.call("where", {c.call("eq", {counts, 0.0}), 0.0, result});
  }
  c.set_output(0, result);
}

void convert_take(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  ir::Node* index = c.tensor("index");
  SymInt total = 1;
  for (const SymInt& size : shape_of(x)) total = total * size;
  SymInt count = 1;
  for (const SymInt& size : shape_of(index)) count = count * size;
  ir::Node* flat = c.call("reshape", {x, ir::Argument::sym_ints({total})});
  ir::Node* positions = c.call("reshape", {wrapped_index(c, index, total), ir::Argument::sym_ints({count})});
  c.emit(0, "reshape", {c.call("index_select", {flat, int64_t(0), positions}), ir::Argument::sym_ints(shape_of(index))});
}

// masked_scatter(self, mask, source): the k-th true position of the (broadcast) mask takes
// source's k-th element, in row-major order (a cumulative sum of the mask numbers them).
void convert_masked_scatter(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  ir::Node* mask = c.tensor("mask");
  ir::Node* source = c.tensor("source");
  // The functional op broadcasts self and mask together.
  ir::SymShape shape = broadcast_shapes(shape_of(self), shape_of(mask));
  if (c.inplace() && !(shape == shape_of(self))) c.fail("masked_scatter_: the mask broadcasts beyond self's shape");
  if (!(shape == shape_of(self))) self = c.call("expand", {self, ir::Argument::sym_ints(shape)});
  SymInt total = 1;
  for (const SymInt& size : shape) total = total * size;
  ir::Node* full_mask = c.call("expand", {mask, ir::Argument::sym_ints(shape)});
  ir::Node* flat_mask = c.call("reshape", {full_mask, ir::Argument::sym_ints({total})});
  ir::Node* number = c.call("sub", {c.call("cumsum", {c.call("cast", {flat_mask, DType::i64}), int64_t(0)}), int64_t(1)});
  number = c.call("clamp", {number, int64_t(0), ir::Argument()});
  SymInt source_total = 1;
  for (const SymInt& size : shape_of(source)) source_total = source_total * size;
  if (source_total.is_constant() && source_total.constant() == 0) return void(c.result_node(c.call("clone", {self})));
  ir::Node* flat_source = c.call("reshape", {cast_to(c, source, dtype_of(self)), ir::Argument::sym_ints({source_total})});
  number = c.call("minimum", {number, source_total.is_constant() ? ir::Argument(source_total.constant() - 1)
                                                                 : ir::Argument(c.sym_int_tensor(source_total - SymInt(1)))});
  ir::Node* taken = c.call("index_select", {flat_source, int64_t(0), number});
  ir::Node* flat_self = c.call("reshape", {self, ir::Argument::sym_ints({total})});
  ir::Node* merged = c.call("where", {flat_mask, taken, flat_self});
  c.result_node(c.call("reshape", {merged, ir::Argument::sym_ints(shape)}));
}

// An index along `dim` expanded to `shape` (the 1-d index placed at dim, size 1 elsewhere).
ir::Node* index_along(AtenNodeContext& c, ir::Node* index, int64_t dim, ir::SymShape shape) {
  std::vector<SymInt> view(shape.size(), SymInt(1));
  SymInt count = 1;
  for (const SymInt& size : shape_of(index)) count = count * size;
  view[size_t(dim)] = count;
  shape[size_t(dim)] = count;
  ir::Node* i = c.call("reshape", {cast_to(c, index, DType::i64), ir::Argument::sym_ints(view)});
  return c.call("expand", {i, ir::Argument::sym_ints(shape)});
}

void convert_index_add(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim"), rank_of(self));
  ir::Node* source = cast_to(c, c.tensor("source"), dtype_of(self));
  if (c.given("alpha")) source = cast_to(c, c.call("mul", {source, c.scalar("alpha")}), dtype_of(self));
  if (rank_of(self) == 0) return void(c.result("add", {self, source}));
  ir::Node* index = index_along(c, c.tensor("index"), dim, shape_of(source));
  c.result("scatter", {self, dim, index, source}, {{"reduce", std::string("sum")}});
}

void convert_index_copy(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim"), rank_of(self));
  ir::Node* source = cast_to(c, c.tensor("source"), dtype_of(self));
  if (rank_of(self) == 0) return void(c.result_node(c.call("clone", {source})));
  c.result("scatter", {self, dim, index_along(c, c.tensor("index"), dim, shape_of(source)), source});
}

void convert_index_fill(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim"), rank_of(self));
  ir::Argument value = c.scalar("value");
  if (value.is_node()) c.fail("index_fill with a symbolic value is not supported");
  if (rank_of(self) == 0) return void(c.result_node(c.call("full_like", {self, value})));
  ir::Node* index = wrapped_index(c, c.tensor("index"), shape_of(self)[size_t(dim)]);
  c.result("scatter", {self, dim, index_along(c, index, dim, shape_of(self)), value});
}

}  // namespace

void register_aten_indexing_ops(AtenOpTable& table) {
  add_op(table, "index", "Tensor", convert_index);
  add_op(table, "one_hot", "default", convert_one_hot);
  add_op(table, "take_along_dim", "default", convert_take_along_dim);
  add_op(table, "embedding_bag", "padding_idx", convert_embedding_bag);
  add_op(table, "embedding_bag", "default", convert_embedding_bag);
  add_op(table, "_embedding_bag", "default", convert_embedding_bag);
  add_op(table, "_embedding_bag_forward_only", "default", convert_embedding_bag);
  add_op_and_inplace(table, "index_put", "default", convert_index_put);
  add_op(table, "_unsafe_index", "Tensor", convert_index);
  add_op(table, "_unsafe_index_put", "default", convert_index_put);
  add_op(table, "index_select", "default", convert_index_select);
  add_op(table, "gather", "default", convert_gather);
  add_op_and_inplace(table, "scatter", "src", scatter(std::nullopt));
  add_op_and_inplace(table, "scatter", "value", scatter(std::nullopt));
  add_op_and_inplace(table, "scatter", "reduce", scatter(std::nullopt));
  add_op_and_inplace(table, "scatter", "value_reduce", scatter(std::nullopt));
  add_op_and_inplace(table, "scatter_add", "default", scatter(std::string("sum")));
  add_op_and_inplace(table, "scatter_reduce", "two", convert_scatter_reduce);
  add_op(table, "select_scatter", "default", view_scatter(select_view));
  add_op(table, "slice_scatter", "default", view_scatter(slice_view));
  add_op(table, "diagonal_scatter", "default", view_scatter(diagonal_view));
  add_op(table, "as_strided_scatter", "default", view_scatter(as_strided_view));
  add_op(table, "embedding", "default", convert_embedding);
  add_op(table, "take", "default", convert_take);
  add_op_and_inplace(table, "masked_scatter", "default", convert_masked_scatter);
  add_op_and_inplace(table, "index_add", "default", convert_index_add);
  add_op_and_inplace(table, "index_copy", "default", convert_index_copy);
  add_op_and_inplace(table, "index_fill", "int_Scalar", convert_index_fill);
}

}  // namespace kiln::frontends
