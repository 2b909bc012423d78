// Shape/stride rules of the view ops: reshape, view, permute, transpose, expand, squeeze,
// unsqueeze, slice, select, as_strided. A view's strides are computed from its input's
// strides (symbolically), so a transpose followed by a view is checked and strided as in
// PyTorch. reshape returns a view when the strides allow one and a contiguous copy otherwise;
// view fails instead.
//
// Symbolic sizes. reshape/view infer a -1 by cancelling equal symbolic factors of the input
// and the requested shape and dividing what is left (s0*784 into [-1, 784] gives s0); a size
// that cannot be derived that way is an error, as is a requested shape whose element count
// is not provably the input's. slice clamps start/end exactly like Python, with min/max
// expressions where a symbolic size leaves the clamp undecided.
#include <algorithm>
#include <limits>
#include <optional>

#include "ir/ops/shape_helpers.h"
#include "ir/ops/shape_rules.h"
#include "runtime/strides.h"

namespace kiln::ir {

namespace {

TensorMeta view_of(const TensorMeta& self, SymShape shape, SymShape strides) {
  TensorMeta meta = self;
  meta.shape = std::move(shape);
  meta.strides = std::move(strides);
  return meta;
}

// The -1 of a reshape when sizes are symbolic: cancel symbolic factors shared by the input's
// dims and the requested dims, then divide the rest. nullopt when that leaves no exact quotient.
std::optional<SymInt> infer_symbolic_size(const SymShape& input, const SymShape& requested) {
  std::vector<SymInt> input_factors;
  SymInt input_constant(1), requested_rest(1);
  for (const SymInt& size : input) {
    if (size.is_constant()) input_constant = input_constant * size;
    else input_factors.push_back(size);
  }
  for (const SymInt& size : requested) {
    auto match = std::find(input_factors.begin(), input_factors.end(), size);
    if (!size.is_constant() && match != input_factors.end()) input_factors.erase(match);
    else requested_rest = requested_rest * size;
  }
  SymInt remaining = input_constant;
  for (const SymInt& factor : input_factors) remaining = remaining * factor;
  if (remaining == requested_rest) return SymInt(1);
  SymInt quotient = floordiv(remaining, requested_rest);
  if (quotient * requested_rest == remaining) return quotient;
  return std::nullopt;
}

// PyTorch's infer_size: checks the requested shape against the input's element count and
// fills in a -1.
SymShape infer_size(const OpCall& call, SymShape shape, const TensorMeta& self) {
  SymInt numel = self.numel();
  std::optional<size_t> inferred;
  SymInt known(1);
  SymShape known_dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    std::optional<int64_t> constant = shape[i].maybe_constant();
    if (constant == -1) {
      if (inferred) call.fail("only one dimension can be inferred");
      inferred = i;
    } else if (constant && *constant < 0) {
      call.fail("invalid shape dimension ", *constant);
    } else {
      known = known * shape[i];
      known_dims.push_back(shape[i]);
    }
  }
  bool symbolic = !numel.is_constant() || !known.is_constant();
  if (!inferred) {
    if (!(numel == known))
      call.fail_unequal(numel, known, "shape '", shape_string(shape), "' is invalid for input of size ", numel,
                        symbolic ? " (the element counts are not provably equal)" : "");
    return shape;
  }
  if (is_zero(known)) {
    if (is_zero(numel))
      call.fail("cannot reshape tensor of 0 elements into shape ", shape_string(shape),
                " because the unspecified dimension size -1 can be any value and is ambiguous");
    call.fail("shape '", shape_string(shape), "' is invalid for input of size ", numel);
  }
  if (!symbolic) {
    if (numel.constant() % known.constant() != 0)
      call.fail("shape '", shape_string(shape), "' is invalid for input of size ", numel);
    shape[*inferred] = SymInt(numel.constant() / known.constant());
    return shape;
  }
  std::optional<SymInt> size = infer_symbolic_size(self.shape, known_dims);
  if (!size)
    call.fail("shape '", shape_string(shape), "' is invalid for input of size ", numel,
              " (the size of dimension ", *inferred, " cannot be derived symbolically)");
  shape[*inferred] = *size;
  return shape;
}

ShapeRule reshape_like(bool must_view) {
  return [must_view](const OpCall& call) {
    const TensorMeta& self = call.tensor(0);
    SymShape shape = infer_size(call, call.syms(1), self);
    if (self.is_contiguous()) return single(view_of(self, shape, contiguous_strides(shape)));
    std::optional<SymShape> strides = view_strides(self.shape, self.strides, shape);
    if (strides) return single(view_of(self, std::move(shape), std::move(*strides)));
    if (must_view)
      call.fail("view size is not compatible with input tensor's size and stride (at least one dimension spans "
                "across two contiguous subspaces). Use .reshape(...) instead.");
    return single(TensorMeta::contiguous(self.dtype, std::move(shape), self.device));
  };
}

NodeMeta permute_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  std::vector<int64_t> dims = call.ints(1);
  if (int64_t(dims.size()) != self.rank())
    call.fail("permute(): number of dimensions in the tensor input does not match the length of the desired "
              "ordering of dimensions i.e. input.dim() = ", self.rank(), " is not equal to len(dims) = ", dims.size());
  SymShape shape, strides;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t dim : dims) {
    int64_t wrapped = wrap_dim(call, dim, self.rank());
    if (self.rank() == 0) continue;
    if (seen[size_t(wrapped)]) call.fail("permute(): duplicate dims are not allowed.");
    seen[size_t(wrapped)] = true;
    shape.push_back(self.shape[size_t(wrapped)]);
    strides.push_back(self.strides[size_t(wrapped)]);
  }
  return single(view_of(self, std::move(shape), std::move(strides)));
}

NodeMeta transpose_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  int64_t dim0 = wrap_dim(call, call.int_arg(1), self.rank());
  int64_t dim1 = wrap_dim(call, call.int_arg(2), self.rank());
  TensorMeta meta = self;
  if (self.rank() > 0) {
    std::swap(meta.shape[size_t(dim0)], meta.shape[size_t(dim1)]);
    std::swap(meta.strides[size_t(dim0)], meta.strides[size_t(dim1)]);
  }
  return single(std::move(meta));
}

NodeMeta expand_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  SymShape sizes = call.syms(1);
  int64_t count = int64_t(sizes.size());
  if (count < self.rank())
    call.fail("expand: the number of sizes provided (", count, ") must be greater or equal to the number of "
              "dimensions in the tensor (", self.rank(), ")");
  SymShape shape(sizes.size()), strides(sizes.size());
  for (int64_t i = count - 1; i >= 0; --i) {
    int64_t offset = i - (count - self.rank());
    SymInt target = sizes[size_t(i)];
    std::optional<int64_t> constant = target.maybe_constant();
    if (offset < 0) {
      if (constant == -1)
        call.fail("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension ", i);
      if (constant && *constant < 0)
        call.fail("Trying to create tensor with negative dimension ", *constant, ": ", shape_string(sizes));
      shape[size_t(i)] = target;
      strides[size_t(i)] = SymInt(0);
      continue;
    }
    const SymInt& size = self.shape[size_t(offset)];
    SymInt stride = self.strides[size_t(offset)];
    if (constant == -1) {
      target = size;
    } else if (constant && *constant < 0) {
      call.fail("Trying to create tensor with negative dimension ", *constant, ": ", shape_string(sizes));
    } else if (!(size == target)) {
      if (!is_one(size))
        call.fail("The expanded size of the tensor (", target, ") must match the existing size (", size,
                  ") at non-singleton dimension ", i, ".  Target sizes: ", shape_string(sizes),
                  ".  Tensor sizes: ", shape_string(self.shape));
      stride = SymInt(0);
    }
    shape[size_t(i)] = target;
    strides[size_t(i)] = stride;
  }
  return single(view_of(self, std::move(shape), std::move(strides)));
}

NodeMeta squeeze_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  std::vector<bool> candidate(self.shape.size(), call.is_none(1));
  if (!call.is_none(1))
    for (int64_t dim : wrap_dims(call, call.ints(1), self.rank()))
      if (self.rank() > 0) candidate[size_t(dim)] = true;
  SymShape shape, strides;
  for (size_t i = 0; i < self.shape.size(); ++i) {
    // A symbolic size is never squeezed: it is not known to be 1.
    if (candidate[i] && is_one(self.shape[i])) continue;
    shape.push_back(self.shape[i]);
    strides.push_back(self.strides[i]);
  }
  return single(view_of(self, std::move(shape), std::move(strides)));
}

NodeMeta unsqueeze_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  size_t dim = size_t(wrap_dim(call, call.int_arg(1), self.rank() + 1));
  SymShape shape = self.shape, strides = self.strides;
  SymInt stride = dim >= self.shape.size() ? SymInt(1) : self.shape[dim] * self.strides[dim];
  shape.insert(shape.begin() + long(dim), SymInt(1));
  strides.insert(strides.begin() + long(dim), stride);
  return single(view_of(self, std::move(shape), std::move(strides)));
}

// A slice bound after Python's clamping into [0, size]: a constant counted from the start
// (min(c, size)), from the end (max(size - c, 0)), or a symbolic bound (min(bound, size)).
struct SliceBound {
  enum class Kind { from_start, from_end, symbolic } kind;
  int64_t offset = 0;
  SymInt value;
};

SliceBound clamp_bound(const SymInt& bound, const SymInt& size) {
  std::optional<int64_t> constant = bound.maybe_constant();
  if (!constant) return {SliceBound::Kind::symbolic, 0, min(bound, size)};
  // sys.maxsize and friends mean "to the end", whatever the size is.
  if (*constant >= std::numeric_limits<int64_t>::max() / 2) return {SliceBound::Kind::from_end, 0, size};
  if (*constant >= 0) return {SliceBound::Kind::from_start, *constant, min(bound, size)};
  return {SliceBound::Kind::from_end, -*constant, max(size + bound, SymInt(0))};
}

// max(end - start, 0), written so that common slices of a symbolic size stay readable
// (x[1:] has max(s0 - 1, 0) elements, x[-2:] has min(s0, 2)).
SymInt slice_length(const SliceBound& start, const SliceBound& end, const SymInt& size) {
  using Kind = SliceBound::Kind;
  int64_t a = start.offset, b = end.offset;
  if (start.kind == Kind::from_start && end.kind == Kind::from_start)
    return b <= a ? SymInt(0) : min(max(size - SymInt(a), SymInt(0)), SymInt(b - a));
  if (start.kind == Kind::from_end && end.kind == Kind::from_end)
    return b >= a ? SymInt(0) : min(max(size - SymInt(b), SymInt(0)), SymInt(a - b));
  if (start.kind == Kind::from_start && end.kind == Kind::from_end) return max(size - SymInt(a + b), SymInt(0));
  return max(end.value - start.value, SymInt(0));
}

NodeMeta slice_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  if (self.rank() == 0) call.fail("slice() cannot be applied to a 0-dim tensor.");
  size_t dim = size_t(wrap_dim(call, call.int_arg(1), self.rank()));
  SymInt step = call.sym(4);
  std::optional<int64_t> constant_step = step.maybe_constant();
  if (!constant_step) call.fail("slice step must be a constant, but got ", step);
  if (*constant_step == 0) call.fail("slice step cannot be zero");
  if (*constant_step < 0) call.fail("slice step must be positive, but got ", *constant_step);
  const SymInt& size = self.shape[dim];
  SliceBound start = call.is_none(2) ? SliceBound{SliceBound::Kind::from_start, 0, SymInt(0)} : clamp_bound(call.sym(2), size);
  SliceBound end = call.is_none(3) ? SliceBound{SliceBound::Kind::from_end, 0, size} : clamp_bound(call.sym(3), size);
  TensorMeta meta = self;
  meta.shape[dim] = floordiv(slice_length(start, end, size) + step - SymInt(1), step);
  meta.strides[dim] = self.strides[dim] * step;
  return single(std::move(meta));
}

NodeMeta select_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  if (self.rank() == 0) call.fail("select() cannot be applied to a 0-dim tensor.");
  size_t dim = size_t(wrap_dim(call, call.int_arg(1), self.rank()));
  SymInt index = call.sym(2);
  const SymInt& size = self.shape[dim];
  std::optional<int64_t> constant_index = index.maybe_constant();
  std::optional<int64_t> constant_size = size.maybe_constant();
  if (constant_index && constant_size && (*constant_index < -*constant_size || *constant_index >= *constant_size))
    call.fail("select(): index ", *constant_index, " out of range for tensor of size ", shape_string(self.shape),
              " at dimension ", dim);
  SymShape shape = self.shape, strides = self.strides;
  shape.erase(shape.begin() + long(dim));
  strides.erase(strides.begin() + long(dim));
  return single(view_of(self, std::move(shape), std::move(strides)));
}

// The node that allocated the storage `node`'s value lives in: back through view ops to an input,
// a parameter or an op that returns a new tensor; nullptr when the chain reaches an op that may
// return its input's storage (in-place ops and mutations return self, getitem a tuple's item, a
// composite op whatever its decomposition returns).
const Node* storage_base(const Node* node) {
  while (node && node->op() == OpKind::call_function) {
    const OpInfo* op = OpRegistry::global().find(node->target());
    if (!op || op->is_inplace() || op->has_tag("mutation") || op->composite || op->name() == "getitem") return nullptr;
    if (!op->is_view) return node;
    if (node->args().empty() || !node->args()[0].is_node()) return nullptr;
    node = node->args()[0].node();
  }
  return node && (node->op() == OpKind::placeholder || node->op() == OpKind::get_attr) ? node : nullptr;
}

// Elements [lowest, highest] that a view of constant sizes, strides and offset reaches;
// std::nullopt when it is empty, or when a size, stride or offset is symbolic; `overflow` is set
// when a reach does not fit int64.
struct Reach {
  int64_t lowest = 0, highest = 0;
  bool overflow = false;
};
std::optional<Reach> constant_reach(const SymShape& shape, const SymShape& strides, const SymInt& offset) {
  if (!offset.is_constant()) return std::nullopt;
  Reach reach{offset.constant(), offset.constant()};
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d].is_constant() || !strides[d].is_constant()) return std::nullopt;
    if (shape[d].constant() == 0) return std::nullopt;
    int64_t step = 0;
    reach.overflow = reach.overflow || __builtin_mul_overflow(shape[d].constant() - 1, strides[d].constant(), &step) ||
                     __builtin_add_overflow(step >= 0 ? reach.highest : reach.lowest, step,
                                            step >= 0 ? &reach.highest : &reach.lowest);
  }
  return reach;
}

NodeMeta as_strided_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  SymShape shape = call.syms(1), strides = call.syms(2);
  if (shape.size() != strides.size())
    call.fail("mismatch in length of strides and shape: ", shape_string(shape), " and ", shape_string(strides));
  check_sizes_nonnegative(call, shape);
  for (const SymInt& stride : strides)
    if (stride.is_constant() && stride.constant() < 0)
      call.fail("as_strided: Negative strides are not supported at the moment, got strides: ", shape_string(strides));
  if (!call.is_none(3)) {
    SymInt offset = call.sym(3);
    if (offset.is_constant() && offset.constant() < 0)
      call.fail("as_strided: negative storage offset ", offset.constant());
  }
  // PyTorch checks the view against its storage when it runs; the storage is known here when
  // the view chain starts at a node of constant sizes (a compiled model allocates exactly what
  // that node's value reaches), so a view past it is an error now, on every target alike.
  const Node* base = call.arg(0).is_node() ? storage_base(call.arg(0).node()) : nullptr;
  if (base && base->meta.values.size() == 1 && !base->meta.is_tuple) {
    const TensorMeta& stored = base->value();
    std::optional<Reach> base_reach = constant_reach(stored.shape, stored.strides, SymInt(0));
    bool base_known = base_reach.has_value() || std::any_of(stored.shape.begin(), stored.shape.end(), [](const SymInt& d) {
                        return d.is_constant() && d.constant() == 0;
                      });
    std::optional<Reach> view_reach = constant_reach(shape, strides, call.is_none(3) ? SymInt(0) : call.sym(3));
    if (base_known && view_reach && !(base_reach && base_reach->overflow)) {
      int64_t capacity = base_reach ? base_reach->highest + 1 : 0;
      if (view_reach->overflow || view_reach->lowest < 0 || view_reach->highest >= capacity)
        call.fail("as_strided: view of sizes ", shape_string(shape), " strides ", shape_string(strides), " offset ",
                  call.is_none(3) ? SymInt(0).to_string() : call.sym(3).to_string(), " reaches outside the storage of %",
                  base->name(), ", ", capacity, " elements");
    }
  }
  return single(view_of(self, std::move(shape), std::move(strides)));
}

}  // namespace

void attach_view_shape_rules(ShapeRuleTable& rules) {
  rules["reshape"] = reshape_like(false);
  rules["view"] = reshape_like(true);
  rules["permute"] = permute_rule;
  rules["transpose"] = transpose_rule;
  rules["expand"] = expand_rule;
  rules["squeeze"] = squeeze_rule;
  rules["unsqueeze"] = unsqueeze_rule;
  rules["slice"] = slice_rule;
  rules["select"] = select_rule;
  rules["as_strided"] = as_strided_rule;
}

}  // namespace kiln::ir
