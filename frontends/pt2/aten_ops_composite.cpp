// Pre-dispatch ATen ops that the training IR keeps and that are short compositions of Kiln ops:
// broadcast_to / broadcast_tensors / meshgrid, atleast_1d/2d/3d, the stacks (hstack, vstack,
// dstack, column_stack), the splits (tensor_split, hsplit, vsplit, dsplit), fliplr / flipud,
// numpy_T / matrix_H, diag / diag_embed / diagflat, diff, dist, cross, addbmm, cdist,
// pairwise_distance, cosine_similarity,
// cartesian_prod, combinations, block_diag, bit shifts, bucketize / searchsorted, angle, the
// conjugate no-ops of real tensors, _softmax_backward_data.
#include <cmath>
#include <numbers>

#include "frontends/pt2/aten_op_helpers.h"
#include "ir/type_promotion.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

SymInt numel(const ir::SymShape& shape) {
  SymInt total = 1;
  for (const SymInt& size : shape) total = total * size;
  return total;
}

void convert_broadcast_to(AtenNodeContext& c) {
  c.emit(0, "expand", {c.tensor("self"), ir::Argument::sym_ints(c.sym_ints("size"))});
}

ir::SymShape broadcast_shape(const std::vector<ir::Node*>& tensors) {
  ir::SymShape shape;
  for (ir::Node* t : tensors) shape = broadcast_shapes(shape, shape_of(t));
  return shape;
}

void convert_broadcast_tensors(AtenNodeContext& c) {
  std::vector<ir::Node*> tensors = c.tensors("tensors");
  ir::SymShape shape = broadcast_shape(tensors);
  std::vector<ir::Node*> results;
  for (ir::Node* t : tensors) results.push_back(c.call("expand", {t, ir::Argument::sym_ints(shape)}));
  c.set_output_list(0, results);
}

void convert_meshgrid(AtenNodeContext& c) {
  std::vector<ir::Node*> tensors = c.tensors("tensors");
  bool xy = c.string_arg("indexing", "ij") == "xy";
  std::vector<SymInt> shape;
  for (ir::Node* t : tensors) shape.push_back(rank_of(t) == 0 ? SymInt(1) : shape_of(t)[0]);
  if (xy && shape.size() >= 2) std::swap(shape[0], shape[1]);
  std::vector<ir::Node*> results;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<SymInt> view(shape.size(), SymInt(1));
    size_t place = i;
    if (xy && tensors.size() >= 2 && i < 2) place = 1 - i;
    view[place] = shape[place];
    results.push_back(c.call("expand", {reshape_to(c, tensors[i], view), ir::Argument::sym_ints(shape)}));
  }
  c.set_output_list(0, results);
}

// x with at least `rank` dims: 0-d -> [1]... ; 1-d -> [1, n] (2d) / [1, n, 1] (3d); 2-d -> [m, n, 1].
ir::Node* at_least(AtenNodeContext& c, ir::Node* x, int rank) {
  const ir::SymShape& s = shape_of(x);
  if (int64_t(s.size()) >= rank) return x;
  std::vector<SymInt> shape;
  if (s.empty()) shape.assign(size_t(rank), SymInt(1));
  else if (s.size() == 1) shape = rank == 2 ? std::vector<SymInt>{1, s[0]} : std::vector<SymInt>{1, s[0], 1};
  else shape = {s[0], s[1], 1};
  return reshape_to(c, x, shape);
}

AtenConverter atleast(int rank) {
  return [rank](AtenNodeContext& c) {
    if (c.find("tensors")) {
      std::vector<ir::Node*> results;
      for (ir::Node* t : c.tensors("tensors")) results.push_back(at_least(c, t, rank));
      c.set_output_list(0, results);
      return;
    }
    ir::Node* x = c.tensor("self");
    ir::Node* y = at_least(c, x, rank);
    c.set_output(0, y == x ? c.call("clone", {x}) : y);
  };
}

// stacks: cat of the inputs made at least k-d, along a dim.
AtenConverter stack_kind(int rank, int64_t dim, bool columns) {
  return [rank, dim, columns](AtenNodeContext& c) {
    std::vector<ir::Argument> parts;
    std::vector<ir::Node*> tensors = c.tensors("tensors");
    bool all_1d = true;
    for (ir::Node* t : tensors) all_1d &= rank_of(t) <= 1;
    for (ir::Node* t : tensors) {
      ir::Node* part = t;
      if (columns && rank_of(t) <= 1) part = reshape_to(c, t, {rank_of(t) == 0 ? SymInt(1) : shape_of(t)[0], SymInt(1)});
      else part = at_least(c, t, rank);
      parts.emplace_back(part);
    }
    int64_t along = (rank == 1 && all_1d) ? 0 : dim;
    c.emit(0, "cat", {ir::Argument(parts), along});
  };
}

// tensor_split into `sections` pieces (the first size % sections one larger) or at indices.
std::vector<ir::Node*> split_at(AtenNodeContext& c, ir::Node* x, int64_t dim, const std::vector<int64_t>& bounds) {
  std::vector<ir::Node*> parts;
  std::optional<int64_t> size = shape_of(x)[size_t(dim)].maybe_constant();
  if (!size) c.fail("splitting a dim of symbolic size is not supported");
  int64_t start = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    int64_t end = i < bounds.size() ? std::clamp<int64_t>(bounds[i], 0, *size) : *size;
    int64_t from = std::min(start, *size);
    parts.push_back(c.call("slice", {x, dim, SymInt(from), SymInt(std::max(from, end))}));
    start = std::max(start, end);
  }
  return parts;
}

std::vector<int64_t> section_bounds(AtenNodeContext& c, const ir::Node* x, int64_t dim, int64_t sections) {
  if (sections <= 0) c.fail("number of sections must be larger than 0, got ", sections);
  std::optional<int64_t> size = shape_of(x)[size_t(dim)].maybe_constant();
  if (!size) c.fail("splitting a dim of symbolic size is not supported");
  std::vector<int64_t> bounds;
  int64_t base = *size / sections, extra = *size % sections, at = 0;
  for (int64_t i = 0; i + 1 < sections; ++i) bounds.push_back(at += base + (i < extra ? 1 : 0));
  return bounds;
}

void convert_tensor_split(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim", 0), rank_of(x));
  std::vector<int64_t> bounds = c.find("sections") ? section_bounds(c, x, dim, c.int_arg("sections")) : c.ints("indices");
  c.set_output_list(0, split_at(c, x, dim, bounds));
}

AtenConverter directional_split(int64_t dim, int minimum_rank) {
  return [dim, minimum_rank](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    if (rank_of(x) < minimum_rank) c.fail("the input needs at least ", minimum_rank, " dims, got ", rank_of(x));
    int64_t along = (dim == 1 && rank_of(x) == 1) ? 0 : dim;
    std::vector<int64_t> bounds;
    if (c.find("sections")) {
      int64_t sections = c.int_arg("sections");
      std::optional<int64_t> size = shape_of(x)[size_t(along)].maybe_constant();
      if (size && sections > 0 && *size % sections != 0)
        c.fail("the size of dim ", along, " (", *size, ") is not divisible by sections ", sections);
      bounds = section_bounds(c, x, along, sections);
    } else {
      bounds = c.ints("indices");
    }
    c.set_output_list(0, split_at(c, x, along, bounds));
  };
}

AtenConverter flip_dim(int64_t dim) {
  return [dim](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    const SymInt& size = shape_of(x)[size_t(dim)];
    ir::Node* positions = c.call("sub", {size.is_constant() ? ir::Argument(size.constant() - 1) : ir::Argument(c.sym_int_tensor(size - SymInt(1))),
                                         c.call("iota", {size})});
    c.emit(0, "index_select", {x, dim, positions});
  };
}

void convert_numpy_t(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::vector<int64_t> dims;
  for (int64_t d = rank_of(x) - 1; d >= 0; --d) dims.push_back(d);
  c.emit(0, "permute", {x, ir::Argument::ints(dims)});
}

void convert_matrix_h(AtenNodeContext& c) { c.emit(0, "transpose", {c.tensor("self"), int64_t(-2), int64_t(-1)}); }

// A [n + |offset|]^2 matrix with v on the offset diagonal (v 1-d), built by scattering.
ir::Node* embed_diagonal(AtenNodeContext& c, ir::Node* v, int64_t offset) {
  std::optional<int64_t> n = shape_of(v)[0].maybe_constant();
  if (!n) c.fail("diag of a symbolic size is not supported");
  int64_t size = *n + std::abs(offset);
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < *n; ++i) positions.push_back(offset >= 0 ? i * size + i + offset : (i - offset) * size + i);
  ir::Node* flat = c.call("full", {ir::Argument::ints({size * size}), 0}, {{"dtype", dtype_of(v)}});
  ir::Node* index = c.constant(Tensor::from_vector({*n}, positions, DType::i64), "diagonal");
  flat = c.call("scatter", {flat, int64_t(0), index, v});
  return reshape_to(c, flat, {SymInt(size), SymInt(size)});
}

ir::Node* diagonal_of(AtenNodeContext& c, ir::Node* m, int64_t offset) {
  std::optional<int64_t> rows = shape_of(m)[0].maybe_constant(), columns = shape_of(m)[1].maybe_constant();
  if (!rows || !columns) c.fail("diag of a symbolic size is not supported");
  int64_t length = offset >= 0 ? std::max<int64_t>(0, std::min(*rows, *columns - offset)) : std::max<int64_t>(0, std::min(*rows + offset, *columns));
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < length; ++i) positions.push_back(offset >= 0 ? i * *columns + i + offset : (i - offset) * *columns + i);
  ir::Node* flat = reshape_to(c, m, {SymInt(*rows * *columns)});
  return c.call("index_select", {flat, int64_t(0), c.constant(Tensor::from_vector({length}, positions, DType::i64), "diagonal")});
}

void convert_diag(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t offset = c.int_arg("diagonal", 0);
  if (rank_of(x) == 1) return void(c.set_output(0, embed_diagonal(c, x, offset)));
  if (rank_of(x) != 2) c.fail("diag(): Supports 1D or 2D tensors. Got ", rank_of(x), "D");
  c.set_output(0, diagonal_of(c, x, offset));
}

void convert_diagflat(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  c.set_output(0, embed_diagonal(c, reshape_to(c, x, {numel(shape_of(x))}), c.int_arg("offset", 0)));
}

// diag_embed: the last dim becomes the diagonal of a new pair of dims (dim1, dim2).
void convert_diag_embed(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t offset = c.int_arg("offset", 0);
  int64_t rank = rank_of(x) + 1;
  int64_t dim1 = wrap_dim(c, c.int_arg("dim1", -2), rank), dim2 = wrap_dim(c, c.int_arg("dim2", -1), rank);
  std::optional<int64_t> n = shape_of(x).back().maybe_constant();
  if (!n) c.fail("diag_embed of a symbolic size is not supported");
  int64_t size = *n + std::abs(offset);
  // eye-like mask [n, size, size] picking position i on the diagonal: x[..., i] * E_i
  std::vector<double> pattern(size_t(*n * size * size), 0.0);
  for (int64_t i = 0; i < *n; ++i) {
    int64_t row = offset >= 0 ? i : i - offset, column = offset >= 0 ? i + offset : i;
    pattern[size_t(i * size * size + row * size + column)] = 1.0;
  }
  ir::Node* basis = c.constant(Tensor::from_vector({*n, size * size}, pattern, dtype_of(x)), "diagonal_basis");
  ir::Node* flat = c.call("matmul", {x, basis});  // [..., size * size]
  std::vector<SymInt> shape(shape_of(x).begin(), shape_of(x).end() - 1);
  shape.insert(shape.end(), {SymInt(size), SymInt(size)});
  ir::Node* square = reshape_to(c, flat, shape);
  // The pair of new dims sits last; move it to (dim1, dim2).
  std::vector<int64_t> order(size_t(rank), -1);
  order[size_t(dim1)] = rank - 2;
  order[size_t(dim2)] = rank - 1;
  int64_t next = 0;
  for (int64_t& slot : order)
    if (slot < 0) slot = next++;
  c.emit(0, "permute", {square, ir::Argument::ints(order)});
}

void convert_diff(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim", -1), rank_of(x));
  int64_t n = c.int_arg("n", 1);
  if (n == 0) return void(c.set_output(0, c.call("clone", {x})));  // prepend and append unused
  std::vector<ir::Argument> parts;
  if (ir::Node* prepend = c.optional_tensor("prepend")) parts.emplace_back(prepend);
  parts.emplace_back(x);
  if (ir::Node* append = c.optional_tensor("append")) parts.emplace_back(append);
  ir::Node* y = parts.size() > 1 ? c.call("cat", {ir::Argument(parts), dim}) : x;
  for (int64_t k = 0; k < n; ++k) {
    std::optional<int64_t> size = shape_of(y)[size_t(dim)].maybe_constant();
    if (!size) c.fail("diff along a symbolic dim is not supported");
    if (*size == 0) break;
    ir::Node* later = c.call("slice", {y, dim, SymInt(1), SymInt(*size)});
    ir::Node* earlier = c.call("slice", {y, dim, SymInt(0), SymInt(*size - 1)});
    y = dtype_of(y) == DType::boolean ? c.call("logical_xor", {later, earlier}) : c.call("sub", {later, earlier});
  }
  c.set_output(0, y == x ? c.call("clone", {x}) : y);
}

void convert_dist(AtenNodeContext& c) {
  ir::Node* d = c.call("abs", {c.call("sub", {c.tensor("self"), c.tensor("other")})});
  double p = c.float_arg("p", 2.0);
  ir::Node* result;
  if (std::isinf(p)) result = c.call(p > 0 ? "amax" : "amin", {d, ir::Argument::ints({}), false});
  else if (p == 0) result = c.call("sum", {c.call("cast", {c.call("ne", {d, 0.0}), dtype_of(d)})});
  else if (p == 1) result = c.call("sum", {d});
  else result = c.call("pow", {c.call("sum", {c.call("pow", {d, p})}), 1.0 / p});
  c.set_output(0, result);
}

// cross product along a dim of size 3.
void convert_cross(AtenNodeContext& c) {
  ir::Node* a = c.tensor("self");
  ir::Node* b = c.tensor("other");
  ir::SymShape shape = broadcast_shape({a, b});
  a = c.call("expand", {a, ir::Argument::sym_ints(shape)});
  b = c.call("expand", {b, ir::Argument::sym_ints(shape)});
  int64_t rank = int64_t(shape.size());
  int64_t dim;
  if (std::optional<int64_t> given = c.optional_int("dim")) {
    dim = wrap_dim(c, *given, rank);
  } else {
    dim = -1;
    for (int64_t d = 0; d < rank && dim < 0; ++d)
      if (shape[size_t(d)].is_constant() && shape[size_t(d)].constant() == 3) dim = d;
    if (dim < 0) c.fail("no dimension of size 3 in input");
  }
  auto at = [&](ir::Node* t, int64_t i) { return c.call("slice", {t, dim, SymInt(i), SymInt(i + 1)}); };
  auto term = [&](int64_t i, int64_t j) { return c.call("sub", {c.call("mul", {at(a, i), at(b, j)}), c.call("mul", {at(a, j), at(b, i)})}); };
  std::vector<ir::Argument> parts = {term(1, 2), term(2, 0), term(0, 1)};
  c.emit(0, "cat", {ir::Argument(parts), dim});
}

void convert_addbmm(AtenNodeContext& c) {
  ir::Node* product = c.call("sum", {c.call("bmm", {c.tensor("batch1"), c.tensor("batch2")}), ir::Argument::ints({0}), false});
  ir::Argument beta = c.scalar("beta", int64_t(1)), alpha = c.scalar("alpha", int64_t(1));
  if (!(alpha.is_number() && alpha.floating() == 1)) product = c.call("mul", {product, alpha});
  if (beta.is_number() && beta.floating() == 0) return void(c.result_node(cast_to(c, product, dtype_of(c.tensor("self")))));
  ir::Node* self = c.tensor("self");
  ir::Node* base = beta.is_number() && beta.floating() == 1 ? self : c.call("mul", {self, beta});
  c.result_node(c.call("add", {base, product}));
}

void convert_cdist(AtenNodeContext& c) {
  ir::Node* difference = c.call("sub", {c.call("unsqueeze", {c.tensor("x1"), int64_t(-2)}), c.call("unsqueeze", {c.tensor("x2"), int64_t(-3)})});
  c.set_output(0, vector_norm(c, difference, c.float_arg("p", 2.0), ir::Argument::ints({-1}), false));
}

// pairwise_distance(x1, x2, p, eps, keepdim): the p-norm of x1 - x2 + eps over the last dim.
void convert_pairwise_distance(AtenNodeContext& c) {
  ir::Node* x1 = c.tensor("x1");
  ir::Node* x2 = c.tensor("x2");
  ir::Node* difference = c.call("add", {c.call("sub", {x1, x2}), c.float_arg("eps", 1e-6)});
  bool keepdim = c.bool_arg("keepdim", false);
  if (rank_of(difference) == 0) difference = c.call("reshape", {difference, ir::Argument::ints({1})});
  c.set_output(0, vector_norm(c, difference, c.float_arg("p", 2.0), ir::Argument::ints({-1}), keepdim));
}

// cosine_similarity(x1, x2, dim, eps): sum over dim of (x1 / max(|x1|, eps)) (x2 / max(|x2|, eps)),
// the norms over dim, as ATen computes it.
void convert_cosine_similarity(AtenNodeContext& c) {
  ir::Node* x1 = c.tensor("x1");
  ir::Node* x2 = c.tensor("x2");
  ir::SymShape shape = broadcast_shapes(shape_of(x1), shape_of(x2));
  if (shape_of(x1) != shape) x1 = c.call("expand", {x1, ir::Argument::sym_ints(shape)});
  if (shape_of(x2) != shape) x2 = c.call("expand", {x2, ir::Argument::sym_ints(shape)});
  int64_t dim = wrap_dim(c, c.int_arg("dim", 1), int64_t(shape.size()));
  double eps = c.float_arg("eps", 1e-8);
  ir::Argument dims = ir::Argument::ints({dim});
  auto normalized = [&](ir::Node* x) {
    ir::Node* norm = c.call("sqrt", {c.call("sum", {c.call("mul", {x, x}), dims, true})});
    return c.call("div", {x, c.call("clamp", {norm, eps, ir::Argument()})});
  };
  c.set_output(0, c.call("sum", {c.call("mul", {normalized(x1), normalized(x2)}), dims, false}));
}

// Rows of static indices into a 1-d tensor, stacked as columns: [count, columns].
ir::Node* index_rows(AtenNodeContext& c, const std::vector<ir::Node*>& sources, const std::vector<std::vector<int64_t>>& rows) {
  std::vector<ir::Argument> columns;
  for (size_t k = 0; k < sources.size(); ++k) {
    std::vector<int64_t> picks;
    for (const auto& row : rows) picks.push_back(row[k]);
    ir::Node* index = c.constant(Tensor::from_vector({int64_t(picks.size())}, picks, DType::i64), "combination");
    columns.emplace_back(c.call("unsqueeze", {c.call("index_select", {sources[k], int64_t(0), index}), int64_t(1)}));
  }
  return c.call("cat", {ir::Argument(columns), int64_t(1)});
}

void convert_cartesian_prod(AtenNodeContext& c) {
  std::vector<ir::Node*> tensors = c.tensors("tensors");
  if (tensors.size() == 1) return void(c.set_output(0, c.call("clone", {tensors[0]})));
  std::vector<int64_t> sizes;
  for (ir::Node* t : tensors) {
    std::optional<int64_t> n = shape_of(t)[0].maybe_constant();
    if (!n) c.fail("cartesian_prod of symbolic sizes is not supported");
    sizes.push_back(*n);
  }
  std::vector<std::vector<int64_t>> rows = {{}};
  for (int64_t n : sizes) {
    std::vector<std::vector<int64_t>> longer;
    for (const auto& row : rows)
      for (int64_t i = 0; i < n; ++i) {
        longer.push_back(row);
        longer.back().push_back(i);
      }
    rows = std::move(longer);
  }
  c.set_output(0, index_rows(c, tensors, rows));
}

void convert_combinations(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t r = c.int_arg("r", 2);
  bool replacement = c.bool_arg("with_replacement", false);
  std::optional<int64_t> n = shape_of(x)[0].maybe_constant();
  if (!n) c.fail("combinations of a symbolic size is not supported");
  std::vector<std::vector<int64_t>> rows;
  std::vector<int64_t> row;
  std::function<void(int64_t)> extend = [&](int64_t start) {
    if (int64_t(row.size()) == r) return void(rows.push_back(row));
    for (int64_t i = start; i < *n; ++i) {
      row.push_back(i);
      extend(replacement ? i : i + 1);
      row.pop_back();
    }
  };
  if (r > 0) extend(0);
  if (rows.empty()) return void(c.set_output(0, c.call("full", {ir::Argument::ints({0, r}), 0}, {{"dtype", dtype_of(x)}})));
  c.set_output(0, index_rows(c, std::vector<ir::Node*>(size_t(r), x), rows));
}

void convert_block_diag(AtenNodeContext& c) {
  std::vector<ir::Node*> tensors = c.tensors("tensors");
  std::vector<ir::Node*> blocks;
  int64_t width = 0;
  DType dtype = DType::boolean;
  for (ir::Node* t : tensors) {
    ir::Node* m = rank_of(t) == 2 ? t : reshape_to(c, t, {SymInt(1), rank_of(t) == 0 ? SymInt(1) : shape_of(t)[0]});
    std::optional<int64_t> columns = shape_of(m)[1].maybe_constant();
    if (!columns) c.fail("block_diag of symbolic sizes is not supported");
    width += *columns;
    blocks.push_back(m);
    dtype = blocks.size() == 1 ? dtype_of(m) : ir::promote_types(dtype, dtype_of(m));
  }
  std::vector<ir::Argument> rows;
  int64_t left = 0;
  for (ir::Node* m : blocks) {
    int64_t columns = shape_of(m)[1].constant();
    std::vector<SymInt> pad = {SymInt(left), SymInt(width - left - columns)};
    rows.emplace_back(c.call("pad", {cast_to(c, m, dtype), ir::Argument::sym_ints(pad), std::string("constant"), 0.0}));
    left += columns;
  }
  c.emit(0, "cat", {ir::Argument(rows), int64_t(0)});
}

// x << y == x * 2^y and x >> y == floor(x / 2^y) on integers.
AtenConverter shift(bool left) {
  return [left](AtenNodeContext& c) {
    ir::Argument x = c.tensor_or_scalar("self"), y = c.tensor_or_scalar("other");
    ir::Node* power = c.call("pow", {int64_t(2), y.is_node() ? y : ir::Argument(c.call("full", {ir::Argument::ints({}), y}, {{"dtype", DType::i64}}))});
    ir::Node* result = left ? c.call("mul", {x, power}) : c.call("div", {x, power}, {{"rounding_mode", std::string("floor")}});
    DType dtype = x.is_node() ? dtype_of(x.node()) : dtype_of(y.node());
    c.set_output(0, cast_to(c, result, dtype));
  };
}

// bucketize / searchsorted: how many boundaries are below x (right: at or below). The
// boundaries are 1-d, or (searchsorted) n-d with x of the same rank and leading dims, searched
// row by row: [..., K, 1] against [..., 1, M], counted over M. A sorter (the permutation that
// sorts an unsorted sequence) gathers the sequence first.
void bucket(AtenNodeContext& c, ir::Node* boundaries, ir::Argument x, bool right, bool out_int32) {
  ir::Node* values = x.is_node() ? x.node() : c.call("full", {ir::Argument::ints({}), x}, {{"dtype", dtype_of(boundaries)}});
  int64_t rank = rank_of(boundaries);
  if (rank == 0) c.fail("the boundaries (sorted_sequence) must have at least 1 dim, but got a 0-d tensor");
  if (rank > 1) {
    const ir::SymShape& b = shape_of(boundaries);
    const ir::SymShape& v = shape_of(values);
    bool same_leading = rank_of(values) == rank;
    for (size_t d = 0; same_leading && d + 1 < size_t(rank); ++d) same_leading = b[d] == v[d];
    if (!same_leading)
      c.fail("n-d boundaries (sorted_sequence) ", ir::shape_string(b), " need values with the same leading dims, but got ",
             ir::shape_string(v));
    boundaries = c.call("unsqueeze", {boundaries, int64_t(-2)});
  }
  ir::Node* expanded = c.call("unsqueeze", {values, int64_t(-1)});
  ir::Node* below = c.call(right ? "le" : "lt", {boundaries, expanded});
  ir::Node* count = c.call("sum", {below, ir::Argument::ints({-1}), false});
  c.set_output(0, cast_to(c, count, out_int32 ? DType::i32 : DType::i64));
}

void convert_bucketize(AtenNodeContext& c) {
  ir::Node* boundaries = c.tensor("boundaries");
  if (rank_of(boundaries) != 1) c.fail("the boundaries of bucketize must be 1-d, but got ", rank_of(boundaries), " dims");
  bucket(c, boundaries, c.tensor_or_scalar("self"), c.bool_arg("right", false), c.bool_arg("out_int32", false));
}

void convert_searchsorted(AtenNodeContext& c) {
  ir::Node* sequence = c.tensor("sorted_sequence");
  std::string side = c.string_arg("side", "");
  bool right = c.bool_arg("right", false);
  if (!side.empty() && side != "left" && side != "right") c.fail("side must be 'left' or 'right', but got '", side, "'");
  if (side == "left" && right) c.fail("side and right can't be set to opposites, got side of left while right was True");
  if (ir::Node* sorter = c.optional_tensor("sorter")) {
    if (shape_of(sorter) != shape_of(sequence)) c.fail("the sorter must have the sorted_sequence's shape");
    sequence = c.call("gather", {sequence, int64_t(-1), sorter});
  }
  bucket(c, sequence, c.tensor_or_scalar("self"), right || side == "right", c.bool_arg("out_int32", false));
}

void convert_angle(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  ir::Node* xf = is_floating(dtype_of(x)) ? x : c.call("cast", {x, DType::f32});
  ir::Node* angle = c.call("where", {c.call("lt", {xf, 0.0}), std::numbers::pi, 0.0});
  c.set_output(0, c.call("where", {c.call("isnan", {xf}), xf, angle}));
}

void convert_real_identity(AtenNodeContext& c) { c.set_output(0, c.call("clone", {c.tensor("self")})); }

// The gradient of softmax: y * (g - sum(g * y, dim)).
void convert_softmax_backward(AtenNodeContext& c) {
  ir::Node* grad = c.tensor("grad_output");
  ir::Node* y = c.tensor("output");
  int64_t dim = c.int_arg("dim");
  ir::Node* dot = c.call("sum", {c.call("mul", {grad, y}), ir::Argument::ints({dim}), true});
  c.set_output(0, c.call("mul", {y, c.call("sub", {grad, dot})}));
}

}  // namespace

void register_aten_composite_ops(AtenOpTable& table) {
  add_op(table, "broadcast_to", "default", convert_broadcast_to);
  add_op(table, "broadcast_tensors", "default", convert_broadcast_tensors);
  add_op(table, "meshgrid", "default", convert_meshgrid);
  add_op(table, "meshgrid", "indexing", convert_meshgrid);
  for (int rank : {1, 2, 3}) {
    std::string name = "atleast_" + std::to_string(rank) + "d";
    add_op(table, name, "default", atleast(rank));
    add_op(table, name, "Sequence", atleast(rank));
  }
  add_op(table, "hstack", "default", stack_kind(1, 1, false));
  add_op(table, "vstack", "default", stack_kind(2, 0, false));
  add_op(table, "row_stack", "default", stack_kind(2, 0, false));
  add_op(table, "dstack", "default", stack_kind(3, 2, false));
  add_op(table, "column_stack", "default", stack_kind(2, 1, true));
  add_op(table, "tensor_split", "sections", convert_tensor_split);
  add_op(table, "tensor_split", "indices", convert_tensor_split);
  add_op(table, "hsplit", "int", directional_split(1, 1));
  add_op(table, "hsplit", "array", directional_split(1, 1));
  add_op(table, "vsplit", "int", directional_split(0, 2));
  add_op(table, "vsplit", "array", directional_split(0, 2));
  add_op(table, "dsplit", "int", directional_split(2, 3));
  add_op(table, "dsplit", "array", directional_split(2, 3));
  add_op(table, "fliplr", "default", flip_dim(1));
  add_op(table, "flipud", "default", flip_dim(0));
  add_op(table, "numpy_T", "default", convert_numpy_t);
  add_op(table, "matrix_H", "default", convert_matrix_h);
  add_op(table, "mT", "default", convert_matrix_h);
  add_op(table, "mH", "default", convert_matrix_h);  // real tensors: the conjugate is the tensor
  add_op(table, "diag", "default", convert_diag);
  add_op(table, "diagflat", "default", convert_diagflat);
  add_op(table, "diag_embed", "default", convert_diag_embed);
  add_op(table, "diff", "default", convert_diff);
  add_op(table, "dist", "default", convert_dist);
  add_op(table, "cross", "default", convert_cross);
  add_op(table, "linalg_cross", "default", convert_cross);
  add_op_and_inplace(table, "addbmm", "default", convert_addbmm);
  add_op(table, "cdist", "default", convert_cdist);
  add_op(table, "pairwise_distance", "default", convert_pairwise_distance);
  add_op(table, "cosine_similarity", "default", convert_cosine_similarity);
  add_op(table, "cartesian_prod", "default", convert_cartesian_prod);
  add_op(table, "combinations", "default", convert_combinations);
  add_op(table, "block_diag", "default", convert_block_diag);
  for (const char* overload : {"Tensor", "Tensor_Scalar", "Scalar_Tensor"}) {
    add_op(table, "bitwise_left_shift", overload, shift(true));
    add_op(table, "bitwise_right_shift", overload, shift(false));
  }
  for (const char* overload : {"Tensor", "Scalar"}) {
    add_python_operator(table, "lshift", overload, shift(true));
    add_python_operator(table, "rshift", overload, shift(false));
  }
  add_op(table, "bucketize", "Tensor", convert_bucketize);
  add_op(table, "bucketize", "Scalar", convert_bucketize);
  add_op(table, "searchsorted", "Tensor", convert_searchsorted);
  add_op(table, "searchsorted", "Scalar", convert_searchsorted);
  add_op(table, "angle", "default", convert_angle);
  for (const char* op : {"conj_physical", "_conj", "resolve_conj", "resolve_neg", "conj"}) add_op(table, op, "default", convert_real_identity);
  add_op(table, "_softmax_backward_data", "default", convert_softmax_backward);
}

}  // namespace kiln::frontends
