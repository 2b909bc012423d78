// HostCallback: a host function that reads or writes one buffer's memory (OneFlow's
// AccessBlobByCallback). It runs on the VM's host stream without the stream's order, so a host
// read waits only for the buffer's writers and a host write for every earlier access of it.
//
// `done`, when given, is told how it ended (null, or the error) and the error goes nowhere
// else: a caller blocked in sync_read / sync_write receives it there. When the buffer was
// failed by an earlier instruction, the function is not called and `done` receives that
// instruction's error. Without `done`, an error the function throws is reported like a
// kernel's, and a failed buffer skips the function silently (a dependent of the failure).
#pragma once

#include <exception>
#include <functional>

#include "runtime/vm/instruction_policy.h"

namespace kiln::vm {

using HostFn = std::function<void(Storage&)>;
using HostDoneFn = std::function<void(std::exception_ptr)>;

class HostCallback final : public InstructionPolicy {
 public:
  // A written buffer with no memory is allocated first, so a host write can fill a new buffer.
  HostCallback(const BufferPtr& buffer, AccessKind kind, HostFn fn, HostDoneFn done = {});
  const char* kind() const override { return "host callback"; }
  std::string name() const override { return operands_[0].buffer->describe(); }
  bool uses_stream_order() const override { return false; }
  void execute(ExecuteContext& context) override;

 private:
  HostFn fn_;
  HostDoneFn done_;
};

}  // namespace kiln::vm
