// Release: take the memory in prepare, drop it on the worker.
#include "runtime/vm/memory_instructions.h"

namespace kiln::vm {

void ReleaseBuffer::prepare(PrepareContext& context) {
  (void)context;
  Operand& operand = operands_[0];
  operand.storage = operand.buffer->take_storage();  // may be null: releasing twice is harmless
}

void ReleaseBuffer::execute(ExecuteContext& context) {
  (void)context;
  Operand& operand = operands_[0];
  operand.buffer->set_failure(nullptr);
  operand.storage.reset();
}

}  // namespace kiln::vm
