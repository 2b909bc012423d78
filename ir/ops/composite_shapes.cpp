// Shape/dtype rules of the composite ops (decomposed before lowering): linear, addmm,
// softmax, log_softmax, the norms, the activations, dropout, embedding, attention, the
// losses, tril/triu, flatten, stack, split. Their checks are PyTorch's, so that a model
// fails here, at capture time, with the message PyTorch would have given.
#include <algorithm>

#include "ir/ops/shape_helpers.h"
#include "ir/ops/shape_rules.h"

namespace kiln::ir {

namespace {

void require_floating(const OpCall& call, const TensorMeta& meta, const char* what = "input") {
  if (!is_floating(meta.dtype))
    call.fail(call.op().name(), " expects a floating-point ", what, ", but got ", dtype_name(meta.dtype));
}

void require_same_dtype(const OpCall& call, const TensorMeta& a, const TensorMeta& b) {
  if (a.dtype != b.dtype)
    call.fail("expected m1 and m2 to have the same dtype, but got: ", dtype_name(a.dtype), " != ", dtype_name(b.dtype));
}

// A result of the same shape and dtype as argument 0, laid out contiguously.
NodeMeta like_self(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  return single(TensorMeta::contiguous(self.dtype, self.shape, self.device));
}

NodeMeta linear_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  const TensorMeta& weight = call.tensor(1);
  if (input.rank() == 0) call.fail("linear(): input must have at least 1 dim, but got ", input.type_string());
  if (weight.rank() != 1 && weight.rank() != 2)
    call.fail("linear(): weight must be 1-D or 2-D, but got ", weight.type_string());
  require_same_dtype(call, input, weight);
  const SymInt& in_features = weight.rank() == 2 ? weight.shape[1] : weight.shape[0];
  if (!(input.shape.back() == in_features)) {
    SymInt rows = product(input.shape, 0, input.shape.size() - 1);
    std::string out = weight.rank() == 2 ? weight.shape[0].to_string() : "1";
    call.fail_unequal(input.shape.back(), in_features, "mat1 and mat2 shapes cannot be multiplied (", rows, "x",
                      input.shape.back(), " and ", in_features, "x", out, ")");
  }
  SymShape shape(input.shape.begin(), input.shape.end() - 1);
  if (weight.rank() == 2) shape.push_back(weight.shape[0]);
  if (!call.is_none(2)) {
    const TensorMeta& bias = call.tensor(2);
    require_same_dtype(call, input, bias);
    if (!broadcasts_to(bias.shape, shape))
      call.fail("linear(): bias of shape ", shape_string(bias.shape), " cannot be broadcast to the output shape ",
                shape_string(shape));
  }
  return single(TensorMeta::contiguous(input.dtype, std::move(shape), input.device));
}

NodeMeta addmm_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  const TensorMeta& mat1 = call.tensor(1);
  const TensorMeta& mat2 = call.tensor(2);
  if (mat1.rank() != 2) call.fail("mat1 must be a matrix, got ", mat1.rank(), "-D tensor");
  if (mat2.rank() != 2) call.fail("mat2 must be a matrix, got ", mat2.rank(), "-D tensor");
  require_same_dtype(call, mat1, mat2);
  require_same_dtype(call, self, mat1);
  if (!(mat1.shape[1] == mat2.shape[0]))
    call.fail_unequal(mat1.shape[1], mat2.shape[0], "mat1 and mat2 shapes cannot be multiplied (", mat1.shape[0], "x",
                      mat1.shape[1], " and ", mat2.shape[0], "x", mat2.shape[1], ")");
  SymShape shape = {mat1.shape[0], mat2.shape[1]};
  if (!broadcasts_to(self.shape, shape))
    call.fail("addmm(): self of shape ", shape_string(self.shape), " cannot be broadcast to the product's shape ",
              shape_string(shape));
  for (size_t index : {3, 4})
    if (call.arg(index).is_float() && !is_floating(self.dtype))
      call.fail("For integral input tensors, argument ", call.op().schema.params[index].name,
                " must not be a floating point number.");
  return single(TensorMeta::contiguous(self.dtype, std::move(shape), self.device));
}

NodeMeta softmax_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  wrap_dim(call, call.int_arg(1), self.rank());
  DType dtype = call.is_none(2) ? self.dtype : call.dtype_arg(2);
  if (!is_floating(dtype))
    call.fail(call.op().name(), " expects a floating-point input or dtype, but got ", dtype_name(dtype));
  return single(TensorMeta::contiguous(dtype, self.shape, self.device));
}

// The trailing dims of `input` must equal `normalized_shape` (layer_norm, rms_norm).
void check_normalized_shape(const OpCall& call, const TensorMeta& input, const SymShape& normalized) {
  if (normalized.empty())
    call.fail("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but "
              "got normalized_shape = []");
  bool matches = input.shape.size() >= normalized.size() &&
                 std::equal(normalized.begin(), normalized.end(), input.shape.end() - long(normalized.size()));
  if (!matches) {
    std::string trailing = shape_string(normalized);
    call.fail("Given normalized_shape=", trailing, ", expected input with shape [*, ",
              trailing.substr(1, trailing.size() - 2), "], but got input of size", shape_string(input.shape));
  }
  for (size_t index : {2, 3}) {
    if (index >= call.args().size() || call.op().schema.params[index].type != ParamType::optional_tensor ||
        call.is_none(index))
      continue;
    const TensorMeta& param = call.tensor(index);
    if (param.shape != normalized)
      call.fail("Expected ", call.op().schema.params[index].name, " to be of same shape as normalized_shape, but got ",
                call.op().schema.params[index].name, " of shape ", shape_string(param.shape),
                " and normalized_shape = ", shape_string(normalized));
  }
}

NodeMeta norm_over_trailing_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  require_floating(call, input);
  check_normalized_shape(call, input, call.syms(1));
  return like_self(call);
}

NodeMeta batch_norm_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  require_floating(call, input);
  if (input.rank() < 2)
    call.fail("batch_norm expects an input of at least 2 dims (N, C, ...), but got ", input.type_string());
  const SymInt& channels = input.shape[1];
  for (size_t index = 1; index <= 4; ++index) {
    if (call.is_none(index)) continue;
    const TensorMeta& param = call.tensor(index);
    if (param.rank() != 1 || !(param.shape[0] == channels))
      call.fail(call.op().schema.params[index].name, " should contain ", channels, " elements not ",
                param.numel(), " (shape ", shape_string(param.shape), ")");
  }
  bool training = call.bool_arg(5);
  if (!training) {
    if (call.is_none(3)) call.fail("running_mean must be defined in evaluation mode");
    if (call.is_none(4)) call.fail("running_var must be defined in evaluation mode");
  } else {
    SymInt per_channel = product(input.shape, 0, 1) * product(input.shape, 2);
    if (is_one(per_channel))
      call.fail("Expected more than 1 value per channel when training, got input size ", shape_string(input.shape));
  }
  return like_self(call);
}

NodeMeta group_norm_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  require_floating(call, input);
  if (input.rank() < 2)
    call.fail("group_norm expects an input of at least 2 dims (N, C, ...), but got ", input.type_string());
  int64_t groups = call.int_arg(1);
  if (groups <= 0) call.fail("num_groups must be positive, but got num_groups=", groups);
  const SymInt& channels = input.shape[1];
  if (!(mod(channels, SymInt(groups)) == SymInt(0)))
    call.fail("Expected number of channels in input to be divisible by num_groups, but got input of shape ",
              shape_string(input.shape), " and num_groups=", groups);
  for (size_t index : {2, 3}) {
    if (call.is_none(index)) continue;
    const TensorMeta& param = call.tensor(index);
    if (param.rank() != 1 || !(param.shape[0] == channels))
      call.fail("Expected ", call.op().schema.params[index].name,
                " to be a vector of size equal to the number of channels in input, but got ",
                call.op().schema.params[index].name, " of shape ", shape_string(param.shape), " and input of shape ",
                shape_string(input.shape));
  }
  return like_self(call);
}

NodeMeta activation_rule(const OpCall& call) {
  require_floating(call, call.tensor(0));
  return like_self(call);
}

NodeMeta gelu_rule(const OpCall& call) {
  const std::string& approximate = call.string_arg(1);
  if (approximate != "none" && approximate != "tanh")
    call.fail("approximate argument must be either none or tanh, but got '", approximate, "'");
  return activation_rule(call);
}

void check_probability(const OpCall& call, size_t index, const char* what) {
  double p = call.float_arg(index);
  if (!(p >= 0 && p <= 1)) call.fail(what, " has to be between 0 and 1, but got ", float_repr(p));
}

NodeMeta dropout_rule(const OpCall& call) {
  check_probability(call, 1, "dropout probability");
  return like_self(call);
}

NodeMeta embedding_rule(const OpCall& call) {
  const TensorMeta& weight = call.tensor(0);
  const TensorMeta& indices = call.tensor(1);
  if (weight.rank() != 2) call.fail("'weight' must be 2-D, but got ", weight.type_string());
  if (indices.dtype != DType::i64 && indices.dtype != DType::i32)
    call.fail("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got ",
              dtype_name(indices.dtype), " instead");
  int64_t padding_idx = call.int_arg(2);
  if (weight.shape[0].is_constant() && padding_idx != -1) {
    int64_t rows = weight.shape[0].constant();
    if (padding_idx < -rows || padding_idx >= rows)
      call.fail("Padding_idx must be within num_embeddings (", rows, "), but got ", padding_idx);
  }
  SymShape shape = indices.shape;
  shape.push_back(weight.shape[1]);
  return single(TensorMeta::contiguous(weight.dtype, std::move(shape), weight.device));
}

NodeMeta attention_rule(const OpCall& call) {
  const TensorMeta& query = call.tensor(0);
  const TensorMeta& key = call.tensor(1);
  const TensorMeta& value = call.tensor(2);
  for (const TensorMeta* meta : {&query, &key, &value})
    if (meta->rank() < 2)
      call.fail("Expected query, key and value to have at least 2 dims ([..., L, E]), but got query ",
                query.type_string(), ", key ", key.type_string(), " and value ", value.type_string());
  if (query.dtype != key.dtype || query.dtype != value.dtype)
    call.fail("Expected query, key, and value to have the same dtype, but got query.dtype: ", dtype_name(query.dtype),
              " key.dtype: ", dtype_name(key.dtype), " and value.dtype: ", dtype_name(value.dtype), " instead.");
  require_floating(call, query, "query");
  const SymShape& q = query.shape;
  const SymShape& k = key.shape;
  const SymShape& v = value.shape;
  if (!(q.back() == k.back()))
    call.fail("Expected query and key to have the same embedding size (last dim), but got query ", shape_string(q),
              " and key ", shape_string(k));
  if (!(k[k.size() - 2] == v[v.size() - 2]))
    call.fail("Expected key and value to have the same sequence length (dim -2), but got key ", shape_string(k),
              " and value ", shape_string(v));
  SymShape batch = broadcast_shapes(call, SymShape(q.begin(), q.end() - 2), SymShape(k.begin(), k.end() - 2));
  batch = broadcast_shapes(call, batch, SymShape(v.begin(), v.end() - 2));
  check_probability(call, 4, "dropout_p");
  if (!call.is_none(3)) {
    if (call.bool_arg(5))
      call.fail("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
    const TensorMeta& mask = call.tensor(3);
    if (mask.dtype != DType::boolean && mask.dtype != query.dtype)
      call.fail("Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: ",
                dtype_name(mask.dtype), " and query.dtype: ", dtype_name(query.dtype), " instead.");
    SymShape weights = batch;
    weights.push_back(q[q.size() - 2]);
    weights.push_back(k[k.size() - 2]);
    if (!broadcasts_to(mask.shape, weights))
      call.fail("attn_mask of shape ", shape_string(mask.shape), " cannot be broadcast to the attention weights' shape ",
                shape_string(weights));
  }
  SymShape shape = batch;
  shape.push_back(q[q.size() - 2]);
  shape.push_back(v.back());
  return single(TensorMeta::contiguous(query.dtype, std::move(shape), query.device));
}

void check_reduction(const OpCall& call, const std::string& reduction) {
  if (reduction != "none" && reduction != "mean" && reduction != "sum")
    call.fail("'", reduction, "' is not a valid value for reduction (expected 'none', 'mean' or 'sum')");
}

// nll_loss and cross_entropy: input [C], [N, C] or [N, C, d1, ...]; target class indices
// (i64) of shape [], [N] or [N, d1, ...]; or (cross_entropy only) class probabilities of
// the input's shape. Returns the per-element loss shape (reduction 'none').
SymShape class_loss_shape(const OpCall& call, bool allow_probabilities) {
  const TensorMeta& input = call.tensor(0);
  const TensorMeta& target = call.tensor(1);
  require_floating(call, input);
  if (input.rank() == 0) call.fail("input tensor should be 1D or more, but got ", input.type_string());
  const SymInt& classes = input.rank() == 1 ? input.shape[0] : input.shape[1];
  SymShape expected = input.shape;
  expected.erase(expected.begin() + (input.rank() == 1 ? 0 : 1));
  if (allow_probabilities && is_floating(target.dtype)) {
    if (target.shape != input.shape)
      call.fail("Expected target of class probabilities to have the input's shape ", shape_string(input.shape),
                ", but got ", shape_string(target.shape));
    if (target.dtype != input.dtype)
      call.fail("Expected target of class probabilities to have the input's dtype ", dtype_name(input.dtype),
                ", but got ", dtype_name(target.dtype));
  } else {
    if (target.dtype != DType::i64)
      call.fail("Expected target to hold class indices of dtype i64", allow_probabilities ? " (or class probabilities "
                "of a floating dtype)" : "", ", but got ", dtype_name(target.dtype));
    if (input.rank() == 2 && target.rank() == 1 && !(target.shape[0] == input.shape[0]))
      call.fail("Expected input batch_size (", input.shape[0], ") to match target batch_size (", target.shape[0], ").");
    if (target.shape != expected)
      call.fail("Expected target size ", shape_string(expected), ", got ", shape_string(target.shape));
  }
  if (!call.is_none(2)) {
    const TensorMeta& weight = call.tensor(2);
    if (weight.rank() != 1 || !(weight.shape[0] == classes))
      call.fail("weight tensor should be defined either for all ", classes,
                " classes or no classes but got weight tensor of shape: ", shape_string(weight.shape));
    if (weight.dtype != input.dtype)
      call.fail("expected weight to have the input's dtype ", dtype_name(input.dtype), ", but got ",
                dtype_name(weight.dtype));
  }
  return expected;
}

NodeMeta class_loss_meta(const OpCall& call, SymShape elementwise) {
  const std::string& reduction = call.string_arg(3);
  check_reduction(call, reduction);
  const TensorMeta& input = call.tensor(0);
  SymShape shape = reduction == "none" ? std::move(elementwise) : SymShape{};
  return single(TensorMeta::contiguous(input.dtype, std::move(shape), input.device));
}

NodeMeta cross_entropy_rule(const OpCall& call) {
  double smoothing = call.float_arg(5);
  if (!(smoothing >= 0 && smoothing <= 1))
    call.fail("label_smoothing must be between 0.0 and 1.0. Got: ", float_repr(smoothing));
  return class_loss_meta(call, class_loss_shape(call, true));
}

NodeMeta nll_loss_rule(const OpCall& call) { return class_loss_meta(call, class_loss_shape(call, false)); }

NodeMeta mse_loss_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  const TensorMeta& target = call.tensor(1);
  const std::string& reduction = call.string_arg(2);
  check_reduction(call, reduction);
  PromotionOperand operands[] = {PromotionOperand::tensor(self.dtype, self.rank()),
                                 PromotionOperand::tensor(target.dtype, target.rank())};
  DType dtype = result_type(operands);
  if (!is_floating(dtype)) call.fail("mse_loss expects floating-point inputs, but got ", dtype_name(dtype));
  SymShape shape = broadcast_shapes(call, self.shape, target.shape);
  if (reduction != "none") shape.clear();
  return single(TensorMeta::contiguous(dtype, std::move(shape), self.device));
}

NodeMeta triangle_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  if (self.rank() < 2)
    call.fail(call.op().name(), ": input tensor must have at least 2 dimensions, but got ", self.type_string());
  return like_self(call);
}

NodeMeta flatten_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  int64_t start = wrap_dim(call, call.int_arg(1), self.rank());
  int64_t end = wrap_dim(call, call.int_arg(2), self.rank());
  if (start > end) call.fail("flatten() has invalid args: start_dim cannot come after end_dim");
  if (self.rank() == 0) return single(TensorMeta::contiguous(self.dtype, {SymInt(1)}, self.device));
  SymShape shape(self.shape.begin(), self.shape.begin() + start);
  shape.push_back(product(self.shape, size_t(start), size_t(end) + 1));
  shape.insert(shape.end(), self.shape.begin() + end + 1, self.shape.end());
  return single(TensorMeta::contiguous(self.dtype, std::move(shape), self.device));
}

NodeMeta stack_rule(const OpCall& call) {
  std::vector<const TensorMeta*> tensors = call.tensors(0);
  if (tensors.empty()) call.fail("stack expects a non-empty TensorList");
  const TensorMeta& first = *tensors[0];
  std::vector<PromotionOperand> operands;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i]->shape != first.shape)
      call.fail("stack expects each tensor to be equal size, but got ", shape_string(first.shape),
                " at entry 0 and ", shape_string(tensors[i]->shape), " at entry ", i);
    operands.push_back(PromotionOperand::tensor(tensors[i]->dtype, 1));
  }
  int64_t dim = wrap_dim(call, call.int_arg(1), first.rank() + 1);
  SymShape shape = first.shape;
  shape.insert(shape.begin() + dim, SymInt(int64_t(tensors.size())));
  return single(TensorMeta::contiguous(result_type(operands), std::move(shape), first.device));
}

NodeMeta split_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  if (self.rank() == 0) call.fail("split expects at least a 1-dimensional tensor");
  size_t dim = size_t(wrap_dim(call, call.int_arg(2), self.rank()));
  const SymInt& size = self.shape[dim];
  const Argument& sizes_arg = call.arg(1);
  std::vector<SymInt> pieces;
  if (!sizes_arg.is_list()) {
    // One split size: chunks of that size, the last one smaller (torch.split(x, 2)).
    SymInt split = sizes_arg.symint();
    std::optional<int64_t> split_constant = split.maybe_constant();
    if (split_constant && *split_constant < 0)
      call.fail("split expects split_size be non-negative, but got split_size=", *split_constant);
    if (split == size) {
      pieces.push_back(size);
    } else if (size.is_constant() && split_constant) {
      int64_t total = size.constant(), chunk = *split_constant;
      if (chunk == 0 && total != 0)
        call.fail("split_size can only be 0 if dimension size is 0, but got dimension size of ", total);
      if (total == 0) pieces.push_back(SymInt(0));
      for (int64_t start = 0; start < total; start += chunk) pieces.push_back(SymInt(std::min(chunk, total - start)));
    } else {
      call.fail("split of dimension ", dim, " of size ", size, " into chunks of ", split,
                ": the number of outputs would depend on a symbolic size; pass the list of sizes");
    }
  } else {
    pieces = call.syms(1);
    SymInt total(0);
    for (const SymInt& piece : pieces) {
      if (piece.is_constant() && piece.constant() < 0)
        call.fail("split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
                  shape_string(pieces));
      total = total + piece;
    }
    if (!(total == size))
      call.fail("split_with_sizes expects split_sizes to sum exactly to ", size, " (input tensor's size at dimension ",
                dim, "), but got split_sizes=", shape_string(pieces));
  }
  std::vector<TensorMeta> outputs;
  for (const SymInt& piece : pieces) {
    SymShape shape = self.shape;
    shape[dim] = piece;
    outputs.push_back(TensorMeta::contiguous(self.dtype, std::move(shape), self.device));
  }
  return tuple_of(std::move(outputs));
}

}  // namespace

void attach_composite_shape_rules(ShapeRuleTable& rules) {
  rules["linear"] = linear_rule;
  rules["addmm"] = addmm_rule;
  rules["softmax"] = softmax_rule;
  rules["log_softmax"] = softmax_rule;
  rules["layer_norm"] = norm_over_trailing_rule;
  rules["rms_norm"] = norm_over_trailing_rule;
  rules["batch_norm"] = batch_norm_rule;
  rules["group_norm"] = group_norm_rule;
  rules["gelu"] = gelu_rule;
  for (const char* name : {"silu", "leaky_relu", "elu", "hardsigmoid", "hardswish", "softplus"})
    rules[name] = activation_rule;
  rules["dropout"] = dropout_rule;
  rules["embedding"] = embedding_rule;
  rules["scaled_dot_product_attention"] = attention_rule;
  rules["cross_entropy"] = cross_entropy_rule;
  rules["nll_loss"] = nll_loss_rule;
  rules["mse_loss"] = mse_loss_rule;
  rules["tril"] = triangle_rule;
  rules["triu"] = triangle_rule;
  rules["flatten"] = flatten_rule;
  rules["stack"] = stack_rule;
  rules["split"] = split_rule;
}

}  // namespace kiln::ir
