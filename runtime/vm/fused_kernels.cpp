// FusedKernels: the union of the members' operands; members prepared and executed in order.
#include "runtime/vm/fused_kernels.h"

#include "kiln/error.h"

namespace kiln::vm {

FusedKernels::FusedKernels(std::vector<std::unique_ptr<InstructionPolicy>> members)
    : members_(std::move(members)) {
  KILN_CHECK(!members_.empty());
  set_id(members_.front()->id());
  for (const auto& member : members_) {
    for (const Operand& operand : member->operands()) {
      KILN_CHECK(operand.buffer != nullptr, "only kernel calls are fused");
      add_operand(operand.buffer, operand.kind);
    }
  }
}

std::string FusedKernels::name() const {
  return detail::concat(members_.size(), " kernels, #", members_.front()->id(), " to #",
                        members_.back()->id());
}

void FusedKernels::prepare(PrepareContext& context) {
  for (auto& member : members_) member->prepare_guarded(context);
}

void FusedKernels::execute(ExecuteContext& context) {
  for (auto& member : members_) member->execute(context);
}

}  // namespace kiln::vm
