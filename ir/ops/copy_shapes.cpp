// Shape/dtype rules of the copying ops: clone, cat, pad, gather, scatter, index_select,
// index_put, getitem, and the mutations declared on their own (copy_, fill_, index_put_).
// Copies produce contiguous tensors; mutations return self's meta unchanged.
#include <algorithm>

#include "ir/ops/shape_helpers.h"
#include "ir/ops/shape_rules.h"

namespace kiln::ir {

namespace {

// a <= b where both are constants; a symbolic pair passes when equal and is not decided
// otherwise (the run-time kernels check bounds).
bool maybe_at_most(const SymInt& a, const SymInt& b) {
  if (a.is_constant() && b.is_constant()) return a.constant() <= b.constant();
  return true;
}

NodeMeta clone_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  return single(TensorMeta::contiguous(self.dtype, self.shape, self.device));
}

NodeMeta cat_rule(const OpCall& call) {
  std::vector<const TensorMeta*> tensors = call.tensors(0);
  if (tensors.empty()) call.fail("torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i]->rank() == 0) call.fail("zero-dimensional tensor (at position ", i, ") cannot be concatenated");
  // PyTorch's legacy rule: 1-d tensors of size 0 are skipped whatever the others' shapes.
  auto skipped = [](const TensorMeta* meta) { return meta->rank() == 1 && is_zero(meta->shape[0]); };
  const TensorMeta* reference = tensors[0];
  for (const TensorMeta* meta : tensors)
    if (!skipped(meta)) {
      reference = meta;
      break;
    }
  int64_t dim = wrap_dim(call, call.int_arg(1), reference->rank());
  SymShape shape = reference->shape;
  shape[size_t(dim)] = SymInt(0);
  std::vector<PromotionOperand> operands;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorMeta& meta = *tensors[i];
    operands.push_back(PromotionOperand::tensor(meta.dtype, meta.rank()));
    if (skipped(&meta) && (&meta != reference)) continue;
    if (meta.rank() != reference->rank())
      call.fail("Tensors must have same number of dimensions: got ", reference->rank(), " and ", meta.rank());
    for (size_t d = 0; d < meta.shape.size(); ++d) {
      if (int64_t(d) == dim) continue;
      if (!(meta.shape[d] == reference->shape[d]))
        call.fail_unequal(reference->shape[d], meta.shape[d], "Sizes of tensors must match except in dimension ", dim,
                          ". Expected size ", reference->shape[d],
                  " but got size ", meta.shape[d], " for tensor number ", i, " in the list.");
    }
    shape[size_t(dim)] = shape[size_t(dim)] + meta.shape[size_t(dim)];
  }
  return single(TensorMeta::contiguous(result_type(operands), std::move(shape), reference->device));
}

NodeMeta pad_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  SymShape pad = call.syms(1);
  const std::string& mode = call.string_arg(2);
  if (pad.size() % 2 != 0) call.fail("Padding length must be divisible by 2");
  int64_t padded_dims = int64_t(pad.size() / 2);
  if (padded_dims > self.rank())
    call.fail("Padding length should be less than or equal to two times the input dimension but got padding length ",
              pad.size(), " and input of dimension ", self.rank());
  if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular")
    call.fail("Unrecognised padding mode ", mode, " (expected constant, reflect, replicate or circular)");
  if (mode != "constant") {
    if (!call.is_none(3)) call.fail("Padding mode \"", mode, "\" doesn't take in value argument");
    // k padded dims (1 to 3) of an unbatched (k + 1)-d or batched (k + 2)-d input.
    if (padded_dims > 3 || (self.rank() != padded_dims + 1 && self.rank() != padded_dims + 2))
      call.fail("Padding size ", pad.size(), " is not supported for ", self.rank(), "D input tensor (mode \"", mode,
                "\" pads 1 to 3 trailing dims of a (k+1)-d or (k+2)-d input)");
  }
  SymShape shape = self.shape;
  for (int64_t i = 0; i < padded_dims; ++i) {
    size_t dim = size_t(self.rank() - 1 - i);
    const SymInt& before = pad[size_t(2 * i)];
    const SymInt& after = pad[size_t(2 * i + 1)];
    const SymInt& size = self.shape[dim];
    if (mode == "reflect" || mode == "circular") {
      bool reflect = mode == "reflect";
      for (const SymInt& amount : {before, after}) {
        bool too_large = amount.is_constant() && size.is_constant() &&
                         (reflect ? amount.constant() >= size.constant() : amount.constant() > size.constant());
        if (too_large)
          call.fail(reflect ? "Padding size should be less than the corresponding input dimension, but got: padding ("
                            : "Padding value causes wrapping around more than once: padding (",
                    before, ", ", after, ") at dimension ", dim, " of input ", shape_string(self.shape));
      }
    }
    shape[dim] = size + before + after;
    if (shape[dim].is_constant() && shape[dim].constant() < 0)
      call.fail("The input size ", size, ", plus negative padding ", before, " and ", after,
                " resulted in a negative output size, which is invalid. Check dimension ", dim, " of your input.");
  }
  return single(TensorMeta::contiguous(self.dtype, std::move(shape), self.device));
}

void check_index_dtype(const OpCall& call, const TensorMeta& index, const char* op) {
  if (index.dtype != DType::i64)
    call.fail(op, "(): Expected dtype int64 for index, but got ", dtype_name(index.dtype));
}

// For d != dim: index.size(d) <= other.size(d) (gather and scatter).
void check_index_sizes(const OpCall& call, const TensorMeta& index, const TensorMeta& other, int64_t dim,
                       const char* other_name) {
  for (size_t d = 0; d < index.shape.size() && d < other.shape.size(); ++d) {
    if (int64_t(d) == dim) continue;
    if (!maybe_at_most(index.shape[d], other.shape[d]))
      call.fail("Size does not match at dimension ", d, " expected index ", shape_string(index.shape),
                " to be no larger than ", other_name, " ", shape_string(other.shape), " apart from dimension ", dim);
  }
}

NodeMeta gather_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  const TensorMeta& index = call.tensor(2);
  int64_t dim = wrap_dim(call, call.int_arg(1), self.rank());
  check_index_dtype(call, index, "gather");
  if (std::max<int64_t>(index.rank(), 1) != std::max<int64_t>(self.rank(), 1))
    call.fail("Index tensor must have the same number of dimensions as input tensor (got ", index.rank(), " and ",
              self.rank(), ")");
  check_index_sizes(call, index, self, dim, "self");
  return single(TensorMeta::contiguous(self.dtype, index.shape, self.device));
}

NodeMeta scatter_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  const TensorMeta& index = call.tensor(2);
  int64_t dim = wrap_dim(call, call.int_arg(1), self.rank());
  check_index_dtype(call, index, "scatter");
  if (std::max<int64_t>(index.rank(), 1) != std::max<int64_t>(self.rank(), 1))
    call.fail("Index tensor must have the same number of dimensions as self tensor (got ", index.rank(), " and ",
              self.rank(), ")");
  check_index_sizes(call, index, self, dim, "self");
  if (call.is_tensor(3)) {
    const TensorMeta& src = call.tensor(3);
    if (src.dtype != self.dtype)
      call.fail("scatter(): Expected self.dtype to be equal to src.dtype, but got ", dtype_name(self.dtype), " and ",
                dtype_name(src.dtype));
    if (std::max<int64_t>(index.rank(), 1) != std::max<int64_t>(src.rank(), 1))
      call.fail("Index tensor must have the same number of dimensions as src tensor (got ", index.rank(), " and ",
                src.rank(), ")");
    for (size_t d = 0; d < index.shape.size(); ++d)
      if (!maybe_at_most(index.shape[d], src.shape[d]))
        call.fail("Expected index ", shape_string(index.shape), " to be smaller size than src ",
                  shape_string(src.shape), " at dimension ", d);
  }
  if (!call.is_none(4)) {
    const std::string& reduce = call.string_arg(4);
    if (reduce != "sum" && reduce != "prod" && reduce != "amax" && reduce != "amin")
      call.fail("reduce argument must be either 'sum', 'prod', 'amax' or 'amin', got '", reduce, "'");
  }
  return single(TensorMeta::contiguous(self.dtype, self.shape, self.device));
}

NodeMeta index_select_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  const TensorMeta& index = call.tensor(2);
  int64_t dim = wrap_dim(call, call.int_arg(1), self.rank());
  if (index.rank() > 1) call.fail("index_select(): Index is supposed to be a vector, but got ", index.type_string());
  if (index.dtype != DType::i64 && index.dtype != DType::i32)
    call.fail("index_select(): Expected dtype int32 or int64 for index, but got ", dtype_name(index.dtype));
  SymShape shape = self.shape;
  if (self.rank() > 0) shape[size_t(dim)] = index.numel();
  return single(TensorMeta::contiguous(self.dtype, std::move(shape), self.device));
}

// Checks index_put's indices and values against self (PyTorch's advanced indexing rules).
void check_index_put(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  std::vector<const TensorMeta*> indices = call.tensors(1);
  const TensorMeta& values = call.tensor(2);
  if (values.dtype != self.dtype)
    call.fail("Index put requires the source and destination dtypes match, got ", dtype_name(self.dtype),
              " for the destination and ", dtype_name(values.dtype), " for the source.");
  // Each index covers one dim of self, a mask as many as its rank.
  int64_t covered = 0;
  bool has_mask = false;
  for (size_t i = 0; i < indices.size(); ++i) {
    const TensorMeta* index = indices[i];
    if (index && (index->dtype == DType::boolean || index->dtype == DType::u8)) {
      has_mask = true;
      for (size_t d = 0; d < index->shape.size(); ++d) {
        size_t self_dim = size_t(covered) + d;
        if (self_dim < self.shape.size() && !(index->shape[d] == self.shape[self_dim]))
          call.fail("The shape of the mask ", shape_string(index->shape), " at index ", d,
                    " does not match the shape of the indexed tensor ", shape_string(self.shape), " at index ",
                    self_dim);
      }
      covered += index->rank();
    } else {
      if (index && index->dtype != DType::i64 && index->dtype != DType::i32)
        call.fail("tensors used as indices must be long, int, byte or bool tensors, but index ", i, " is ",
                  dtype_name(index->dtype));
      covered += 1;
    }
  }
  if (covered > self.rank())
    call.fail("too many indices for tensor of dimension ", self.rank(), " (got ", covered, ")");
  if (has_mask) return;  // the number of selected elements depends on the mask's values

  // The indexing result: the index tensors broadcast together; the dims they select are
  // replaced by that shape in place when the indexed dims are adjacent, else moved to the front.
  SymShape index_shape;
  std::vector<size_t> indexed;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i]) continue;
    index_shape = broadcast_shapes(call, index_shape, indices[i]->shape);
    indexed.push_back(i);
  }
  SymShape result;
  if (indexed.empty()) {
    result = self.shape;
  } else {
    bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
    if (adjacent) {
      result.assign(self.shape.begin(), self.shape.begin() + long(indexed.front()));
      result.insert(result.end(), index_shape.begin(), index_shape.end());
      result.insert(result.end(), self.shape.begin() + long(indexed.back()) + 1, self.shape.end());
    } else {
      result = index_shape;
      for (size_t d = 0; d < self.shape.size(); ++d)
        if (std::find(indexed.begin(), indexed.end(), d) == indexed.end()) result.push_back(self.shape[d]);
    }
  }
  if (!broadcasts_to(values.shape, result))
    call.fail("shape mismatch: value tensor of shape ", shape_string(values.shape),
              " cannot be broadcast to indexing result of shape ", shape_string(result));
}

NodeMeta index_put_rule(const OpCall& call) {
  check_index_put(call);
  const TensorMeta& self = call.tensor(0);
  return single(TensorMeta::contiguous(self.dtype, self.shape, self.device));
}

NodeMeta index_put_inplace_rule(const OpCall& call) {
  check_index_put(call);
  return single(call.tensor(0));
}

NodeMeta getitem_rule(const OpCall& call) {
  const Argument& source = call.arg(0);
  int64_t index = call.int_arg(1);
  if (source.is_node()) {
    const Node* producer = source.node();
    if (!producer->meta.is_tuple)
      call.fail("getitem expects a tuple-valued node, but %", producer->name(), " produces ",
                producer->meta.type_string());
  }
  std::vector<const TensorMeta*> values = call.tensors(0);
  int64_t count = int64_t(values.size());
  if (index < -count || index >= count)
    call.fail("tuple index ", index, " out of range for ", source.to_string(), " with ", count, " elements");
  const TensorMeta* value = values[size_t(index < 0 ? index + count : index)];
  if (!value) call.fail("element ", index, " of ", source.to_string(), " is None");
  return single(*value);
}

NodeMeta copy_inplace_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  const TensorMeta& src = call.tensor(1);
  SymShape shape = broadcast_shapes(call, self.shape, src.shape);
  if (shape != self.shape)
    call.fail("output with shape ", shape_string(self.shape), " doesn't match the broadcast shape ",
              shape_string(shape));
  return single(self);
}

NodeMeta fill_inplace_rule(const OpCall& call) { return single(call.tensor(0)); }

}  // namespace

void attach_copy_shape_rules(ShapeRuleTable& rules) {
  rules["clone"] = clone_rule;
  rules["cat"] = cat_rule;
  rules["pad"] = pad_rule;
  rules["gather"] = gather_rule;
  rules["scatter"] = scatter_rule;
  rules["index_select"] = index_select_rule;
  rules["index_put"] = index_put_rule;
  rules["getitem"] = getitem_rule;
  rules["copy_"] = copy_inplace_rule;
  rules["fill_"] = fill_inplace_rule;
  rules["index_put_"] = index_put_inplace_rule;
}

}  // namespace kiln::ir
