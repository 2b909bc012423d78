// Instruction: accesses in OneFlow's order (stream order, writes, reads) and execution.
#include "runtime/vm/instruction.h"

#include "runtime/vm/stream.h"

namespace kiln::vm {

Instruction::Instruction(Stream& stream, std::unique_ptr<InstructionPolicy> policy)
    : stream_(&stream), policy_(std::move(policy)), units_(policy_->units()) {
  const auto& operands = policy_->operands();
  // Reserved once: the accesses are linked into lists by address and must never move.
  accesses.reserve(operands.size() + 1);
  auto add = [&](Dependence* dependence, AccessKind kind) {
    DependenceAccess& access = accesses.emplace_back();
    access.instruction = this;
    access.dependence = dependence;
    access.kind = kind;
  };
  if (policy_->uses_stream_order()) add(&stream.order_dependence(), AccessKind::write);
  for (const Operand& operand : operands) {
    if (operand.kind == AccessKind::write) add(operand.dependence, AccessKind::write);
  }
  for (const Operand& operand : operands) {
    if (operand.kind == AccessKind::read) add(operand.dependence, AccessKind::read);
  }
}

void Instruction::execute(ErrorSink& errors) {
  phase_.store(Phase::running, std::memory_order_relaxed);
  ExecuteContext context(*stream_, errors);
  policy_->execute(context);
}

}  // namespace kiln::vm
