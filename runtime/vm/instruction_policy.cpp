// InstructionPolicy: operands, the default prepare (take or allocate memory) and the default
// execute (report, skip or compute).
#include "runtime/vm/instruction_policy.h"

#include "kiln/error.h"
#include "runtime/vm/error_sink.h"
#include "runtime/vm/errors.h"
#include "runtime/vm/stream.h"

namespace kiln::vm {

void ExecuteContext::report(std::exception_ptr error) const { errors_.report(std::move(error)); }

std::string ExecuteContext::describe(const InstructionPolicy& policy) const {
  return describe_instruction(policy, stream_);
}

std::string describe_instruction(const InstructionPolicy& policy, const Stream& stream) {
  std::string name = policy.name();
  std::string text = policy.kind();
  if (!name.empty()) text += " '" + name + "'";
  return detail::concat(text, " (instruction #", policy.id(), " on stream '", stream.name(), "')");
}

size_t InstructionPolicy::add_operand(const BufferPtr& buffer, AccessKind kind) {
  if (buffer == nullptr) kiln::fail("a null buffer was passed to a ", this->kind(), " instruction");
  for (size_t i = 0; i < operands_.size(); ++i) {
    if (operands_[i].buffer == buffer) {
      if (kind == AccessKind::write) operands_[i].kind = AccessKind::write;
      return i;
    }
  }
  operands_.push_back(Operand{buffer, &buffer->dependence(), kind, nullptr, false});
  return operands_.size() - 1;
}

void InstructionPolicy::add_event_operand(Dependence& dependence, AccessKind kind) {
  operands_.push_back(Operand{nullptr, &dependence, kind, nullptr, false});
}

void InstructionPolicy::prepare_guarded(PrepareContext& context) {
  try {
    prepare(context);
  } catch (...) {
    prepare_error_ = std::current_exception();
  }
}

void InstructionPolicy::prepare(PrepareContext& context) {
  for (Operand& operand : operands_) {
    if (operand.buffer == nullptr) continue;
    Buffer& buffer = *operand.buffer;
    if (buffer.storage() == nullptr) {
      if (operand.kind == AccessKind::read) {
        kiln::fail("it reads ", buffer.describe(),
             ", which holds no memory: nothing wrote it since it was created or released");
      }
      buffer.set_storage(context.allocate(buffer, *this));
      operand.allocated = true;
    }
    operand.storage = buffer.storage();
  }
}

void InstructionPolicy::execute(ExecuteContext& context) {
  clear_failures_of_allocated();
  if (std::exception_ptr failure = operand_failure(); failure != nullptr) {
    // A dependent of a failed instruction: skipped. Its own prepare error, if any (say, a
    // buffer with no memory because the allocation failed), is a consequence of that failure.
    mark_written_failed(failure);
  } else if (prepare_error_ != nullptr) {
    report_failure(context, attribute_failure(context.describe(*this), prepare_error_));
  } else {
    try {
      compute(context);
    } catch (...) {
      report_failure(context, attribute_failure(context.describe(*this), std::current_exception()));
    }
  }
  drop_memory();
}

std::exception_ptr InstructionPolicy::operand_failure() const {
  for (const Operand& operand : operands_) {
    if (operand.buffer != nullptr && operand.buffer->failure() != nullptr) {
      return operand.buffer->failure();
    }
  }
  return nullptr;
}

void InstructionPolicy::mark_written_failed(const std::exception_ptr& error) {
  for (Operand& operand : operands_) {
    if (operand.buffer != nullptr && operand.kind == AccessKind::write) {
      operand.buffer->set_failure(error);
    }
  }
}

void InstructionPolicy::clear_failures_of_allocated() {
  for (Operand& operand : operands_) {
    if (operand.allocated) operand.buffer->set_failure(nullptr);
  }
}

void InstructionPolicy::drop_memory() {
  for (Operand& operand : operands_) operand.storage.reset();
}

void InstructionPolicy::report_failure(ExecuteContext& context, std::exception_ptr error) {
  mark_written_failed(error);
  context.report(std::move(error));
}

}  // namespace kiln::vm
