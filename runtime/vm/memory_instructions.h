// Memory instructions: allocate a buffer's memory ahead of its first writer, and release it.
//
// Allocate writes the buffer; its prepare (on the scheduler thread) takes memory from the home
// stream's caching allocator, recovering from out-of-memory as the VM does. A buffer that already
// holds memory is left as it is.
//
// Release writes the buffer, so it runs after every earlier access (readers on other streams
// included). Its prepare takes the memory off the buffer, so later instructions see a buffer
// with no memory (a later writer allocates afresh, a later reader fails); its execute, on the
// worker, drops the memory, which returns to the allocator as soon as no running instruction
// holds it. It always runs, even on a failed buffer, and clears the failure: the contents are
// gone, so is their history.
#pragma once

#include "runtime/vm/instruction_policy.h"

namespace kiln::vm {

class AllocateBuffer final : public InstructionPolicy {
 public:
  explicit AllocateBuffer(const BufferPtr& buffer) { add_operand(buffer, AccessKind::write); }
  const char* kind() const override { return "allocate"; }
  std::string name() const override { return operands_[0].buffer->describe(); }
};

class ReleaseBuffer final : public InstructionPolicy {
 public:
  explicit ReleaseBuffer(const BufferPtr& buffer) { add_operand(buffer, AccessKind::write); }
  const char* kind() const override { return "release"; }
  std::string name() const override { return operands_[0].buffer->describe(); }
  bool is_release() const override { return true; }
  void execute(ExecuteContext& context) override;

 protected:
  void prepare(PrepareContext& context) override;
};

}  // namespace kiln::vm
