// InstructionsBuilder: collects a list of instructions for VirtualMachine::physical_run, which
// submits the list in one move once the caller's function returns (OneFlow's
// InstructionsBuilder / PhysicalRun). Nothing runs while the list is being built; if the
// function throws, nothing is submitted.
//
//     vm.physical_run([&](InstructionsBuilder& b) {
//       b.kernel(vm.stream(0), "add", {x, y}, {z}, add_fn);   // reads x, y; writes z
//       b.release(x);
//     });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/vm/buffer.h"
#include "runtime/vm/call_instruction.h"
#include "runtime/vm/event.h"
#include "runtime/vm/host_callback.h"
#include "runtime/vm/instruction.h"

namespace kiln::vm {

class VirtualMachine;

class InstructionsBuilder {
 public:
  explicit InstructionsBuilder(VirtualMachine& vm) : vm_(vm) {}
  InstructionsBuilder(const InstructionsBuilder&) = delete;
  InstructionsBuilder& operator=(const InstructionsBuilder&) = delete;

  // A kernel call on `stream`: runs after the last writers of `inputs` and after every earlier
  // access of `outputs`. Outputs with no memory are allocated first. Consecutive kernel calls
  // on one stream may be fused into one instruction.
  void kernel(Stream& stream, std::string name, BufferList inputs, BufferList outputs, CallFn fn);
  // A compiled graph as one instruction: reads `inputs`, writes `outputs` and `parameters`.
  void run_graph(Stream& stream, std::string name, BufferList inputs, BufferList outputs,
                 BufferList parameters, CallFn fn);
  // Memory for `buffer` now (on its home stream), rather than at its first writer.
  void allocate(const BufferPtr& buffer);
  // Frees `buffer`'s memory once every earlier access is done (on its home stream).
  void release(const BufferPtr& buffer);
  // `fn` on the host stream with read or write access to `buffer`; see host_callback.h.
  void host_callback(const BufferPtr& buffer, AccessKind kind, HostFn fn, HostDoneFn done = {});
  void record_event(Stream& stream, const EventPtr& event);
  void wait_event(Stream& stream, const EventPtr& event);
  // `fn` on the scheduler once every instruction submitted before it is released.
  void barrier(std::function<void()> fn);
  // Any other policy.
  void append(Stream& stream, std::unique_ptr<InstructionPolicy> policy);

  size_t size() const { return instructions_.size(); }
  VirtualMachine& vm() const { return vm_; }
  // For VirtualMachine::physical_run.
  std::vector<PendingInstruction>& instructions() { return instructions_; }

 private:
  void check_stream(const Stream& stream) const;
  void check_buffers(BufferList buffers) const;

  VirtualMachine& vm_;
  std::vector<PendingInstruction> instructions_;
};

}  // namespace kiln::vm
