// Kernel calls and graph runs: operand slots per role and the CallContext over them.
#include "runtime/vm/call_instruction.h"

#include "kiln/error.h"
#include "runtime/strides.h"

namespace kiln::vm {

namespace {

using Role = CallInstruction::Role;

const char* role_name(Role role) {
  switch (role) {
    case Role::input: return "input";
    case Role::output: return "output";
    case Role::parameter: return "parameter";
  }
  return "operand";
}

Tensor view_of(const std::shared_ptr<Storage>& storage, Role role, size_t i, const Sizes& sizes,
               DType dtype) {
  const size_t needed = size_t(numel_of(sizes)) * dtype_size(dtype);
  if (needed > storage->nbytes()) {
    fail("cannot view ", role_name(role), " ", i, " (", storage->nbytes(), " bytes) as ",
         dtype_name(dtype), sizes_to_string(sizes), ", which needs ", needed, " bytes");
  }
  return Tensor(storage, sizes, contiguous_strides(sizes), 0, dtype);
}

}  // namespace

CallInstruction::CallInstruction(const char* kind, std::string name, BufferList inputs,
                                 BufferList outputs, BufferList parameters, CallFn fn)
    : kind_(kind), name_(std::move(name)), fn_(std::move(fn)) {
  if (!fn_) fail(kind_, " '", name_, "' has no callable to run");
  counts_[0] = uint32_t(inputs.size());
  counts_[1] = uint32_t(outputs.size());
  counts_[2] = uint32_t(parameters.size());
  slots_.reserve(inputs.size() + outputs.size() + parameters.size());
  operands_.reserve(inputs.size() + outputs.size() + parameters.size());
  // A buffer listed twice is one operand; when either use writes, the operand is a write.
  for (const BufferPtr& buffer : inputs) slots_.push_back(uint32_t(add_operand(buffer, AccessKind::read)));
  for (const BufferPtr& buffer : outputs) slots_.push_back(uint32_t(add_operand(buffer, AccessKind::write)));
  for (const BufferPtr& buffer : parameters) slots_.push_back(uint32_t(add_operand(buffer, AccessKind::write)));
}

size_t CallInstruction::count(Role role) const { return counts_[size_t(role)]; }

const Operand& CallInstruction::operand_of(Role role, size_t i) const {
  const size_t role_index = size_t(role);
  if (i >= counts_[role_index]) {
    fail(kind_, " '", name_, "' has ", counts_[role_index], " ", role_name(role), "s; asked for ",
         role_name(role), " ", i);
  }
  size_t offset = 0;
  for (size_t r = 0; r < role_index; ++r) offset += counts_[r];
  return operands_[slots_[offset + i]];
}

void CallInstruction::compute(ExecuteContext& context) {
  CallContext call(*this, context.stream());
  fn_(call);
}

size_t CallContext::num_inputs() const { return call_.count(Role::input); }
size_t CallContext::num_outputs() const { return call_.count(Role::output); }
size_t CallContext::num_parameters() const { return call_.count(Role::parameter); }

const std::shared_ptr<Storage>& CallContext::input_storage(size_t i) const {
  return call_.operand_of(Role::input, i).storage;
}
const std::shared_ptr<Storage>& CallContext::output_storage(size_t i) const {
  return call_.operand_of(Role::output, i).storage;
}
const std::shared_ptr<Storage>& CallContext::parameter_storage(size_t i) const {
  return call_.operand_of(Role::parameter, i).storage;
}

Tensor CallContext::input_tensor(size_t i, const Sizes& sizes, DType dtype) const {
  return view_of(input_storage(i), Role::input, i, sizes, dtype);
}
Tensor CallContext::output_tensor(size_t i, const Sizes& sizes, DType dtype) const {
  return view_of(output_storage(i), Role::output, i, sizes, dtype);
}
Tensor CallContext::parameter_tensor(size_t i, const Sizes& sizes, DType dtype) const {
  return view_of(parameter_storage(i), Role::parameter, i, sizes, dtype);
}

}  // namespace kiln::vm
