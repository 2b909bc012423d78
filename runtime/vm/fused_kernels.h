// FusedKernels: consecutive kernel calls on one stream, fused by the scheduler into one
// instruction so the per-instruction cost is paid once (OneFlow fuses up to 10).
//
// Its operands are the union of its members' (a buffer any member writes is written), so it is
// ordered against other instructions as the whole run of members would be; the members run in
// submission order inside it, each preparing, checking failures and reporting errors exactly as
// it would alone. Fusing only neighbours in the submission order keeps the DAG acyclic.
#pragma once

#include <memory>
#include <vector>

#include "runtime/vm/instruction_policy.h"

namespace kiln::vm {

class FusedKernels final : public InstructionPolicy {
 public:
  explicit FusedKernels(std::vector<std::unique_ptr<InstructionPolicy>> members);
  const char* kind() const override { return "fused kernels"; }
  std::string name() const override;
  size_t units() const override { return members_.size(); }
  void execute(ExecuteContext& context) override;

 protected:
  void prepare(PrepareContext& context) override;

 private:
  std::vector<std::unique_ptr<InstructionPolicy>> members_;
};

}  // namespace kiln::vm
