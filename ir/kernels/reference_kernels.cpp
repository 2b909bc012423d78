// The table of reference kernels (one register_* per op family), KernelCall's accessors,
// and the generated in-place variants: "<name>_" computes <name> out of place, checks that
// the result fits self (shape equal, dtype castable, as PyTorch requires), writes it into
// self's storage and returns self.
#include "ir/reference_kernels.h"

#include "ir/kernels/kernel_support.h"
#include "kiln/error.h"

namespace kiln::ir {

// ---------------------------------------------------------------- KernelCall

KernelCall::KernelCall(const OpCall& call, std::vector<std::vector<Tensor>> inputs,
                       std::map<std::string, int64_t> bindings)
    : call_(call), inputs_(std::move(inputs)), bindings_(std::move(bindings)), args_(call.args()) {
  inputs_.resize(call_.args().size());
  for (size_t i = 0; i < args_.size(); ++i) {
    ParamType type = op().schema.params.at(i).type;
    bool scalar = type == ParamType::scalar || type == ParamType::optional_scalar || type == ParamType::tensor_or_scalar;
    if (scalar && args_[i].is_symint()) args_[i] = Argument(args_[i].symint().evaluate(bindings_));
  }
}

bool KernelCall::is_none(size_t index) const { return inputs_.at(index).empty() && arg(index).is_none(); }

bool KernelCall::is_tensor(size_t index) const {
  ParamType type = op().schema.params.at(index).type;
  if (type == ParamType::tensor_list || type == ParamType::optional_tensor_list) return false;
  return !inputs_.at(index).empty() && inputs_[index][0].defined();
}

const Tensor& KernelCall::tensor(size_t index) const {
  KILN_CHECK(is_tensor(index), "argument ", index, " ('", op().schema.params.at(index).name, "') of ", op().name(),
             " is not a tensor");
  return inputs_[index][0];
}

const std::vector<Tensor>& KernelCall::tensors(size_t index) const { return inputs_.at(index); }

double KernelCall::scalar_double(size_t index) const {
  const Argument& value = arg(index);
  KILN_CHECK(value.is_number(), "argument ", index, " of ", op().name(), " is not a number: ", value.to_string());
  return value.floating();
}

int64_t KernelCall::scalar_int(size_t index) const {
  const Argument& value = arg(index);
  if (value.is_bool()) return value.boolean() ? 1 : 0;
  if (value.is_int()) return value.integer();
  if (value.is_symint()) return value.symint().evaluate(bindings_);
  fail("argument '", op().schema.params.at(index).name, "' must be an integer here, got ", value.to_string());
}

int64_t KernelCall::sym_int(size_t index) const { return arg(index).symint().evaluate(bindings_); }

std::vector<int64_t> KernelCall::sym_ints(size_t index) const {
  std::vector<int64_t> values;
  for (const SymInt& value : call_.syms(index)) values.push_back(value.evaluate(bindings_));
  return values;
}

std::optional<int64_t> KernelCall::optional_int(size_t index) const {
  if (arg(index).is_none()) return std::nullopt;
  return arg(index).symint().evaluate(bindings_);
}

std::optional<double> KernelCall::optional_float(size_t index) const {
  if (arg(index).is_none()) return std::nullopt;
  return arg(index).floating();
}

std::optional<DType> KernelCall::optional_dtype(size_t index) const {
  if (arg(index).is_none()) return std::nullopt;
  return arg(index).dtype();
}

// ---------------------------------------------------------------- the table

namespace {

bool can_write_into(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::boolean && to == DType::boolean) return false;
  return true;
}

ReferenceKernel inplace_variant(const ReferenceKernel& out_of_place) {
  return [out_of_place](const KernelCall& call) {
    std::vector<Tensor> results = out_of_place(call);
    KILN_CHECK(results.size() == 1, "in-place variant of a multi-output op ", call.op().name());
    const Tensor& self = call.tensor(0);
    const Tensor& value = results[0];
    if (value.sizes() != self.sizes())
      call.fail("output with shape ", sizes_to_string(self.sizes()), " doesn't match the broadcast shape ",
                sizes_to_string(value.sizes()));
    if (!can_write_into(value.dtype(), self.dtype()))
      call.fail("result type ", dtype_name(value.dtype()), " can't be cast to the desired output type ",
                dtype_name(self.dtype()));
    self.copy_from(value);  // writes through views into the base's storage
    return std::vector<Tensor>{self};
  };
}

kernels::KernelTable build_table() {
  kernels::KernelTable table;
  kernels::register_unary_kernels(table);
  kernels::register_binary_kernels(table);
  kernels::register_creation_kernels(table);
  kernels::register_reduction_kernels(table);
  kernels::register_view_kernels(table);
  kernels::register_copy_kernels(table);
  kernels::register_indexing_kernels(table);
  kernels::register_linalg_kernels(table);
  kernels::register_convolution_kernels(table);
  kernels::register_pooling_kernels(table);
  kernels::register_sampling_kernels(table);
  kernels::register_normalization_kernels(table);
  kernels::register_activation_kernels(table);
  kernels::register_loss_kernels(table);
  kernels::register_attention_kernels(table);
  // Generated in-place variants, unless a family registered its own (copy_, index_put_).
  for (const OpInfo* op : OpRegistry::global().all()) {
    if (!op->is_inplace() || table.count(op->name())) continue;
    auto base = table.find(op->inplace_of);
    if (base != table.end()) table.emplace(op->name(), inplace_variant(base->second));
  }
  return table;
}

const kernels::KernelTable& kernel_table() {
  static const kernels::KernelTable table = build_table();
  return table;
}

}  // namespace

const ReferenceKernel* find_reference_kernel(std::string_view op) {
  const kernels::KernelTable& table = kernel_table();
  auto found = table.find(op);
  return found == table.end() ? nullptr : &found->second;
}

std::vector<std::string> ops_without_reference_kernel() {
  std::vector<std::string> missing;
  for (const OpInfo* op : OpRegistry::global().all())
    if (!find_reference_kernel(op->name())) missing.push_back(op->name());
  return missing;
}

}  // namespace kiln::ir
