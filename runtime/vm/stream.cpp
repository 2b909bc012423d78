// Stream and the CPU stream policy.
#include "runtime/vm/stream.h"

#include "runtime/vm/instruction.h"

namespace kiln::vm {

void CpuStreamPolicy::run(Instruction& instruction, ErrorSink& errors) {
  instruction.execute(errors);
  instruction.mark_done();  // the last touch: the scheduler may release it from here on
}

bool CpuStreamPolicy::is_done(const Instruction& instruction) const {
  return instruction.phase() == Phase::done;
}

Stream::Stream(std::string name, size_t index, std::unique_ptr<StreamPolicy> policy,
               std::shared_ptr<BinAllocator> allocator)
    : name_(std::move(name)),
      index_(index),
      policy_(std::move(policy)),
      allocator_(std::move(allocator)) {}

}  // namespace kiln::vm
