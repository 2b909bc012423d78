// Instruction: one node of the VM's dependence DAG (OneFlow's Instruction). It wraps a policy
// (what to do) with where it runs (a stream) and the scheduler's bookkeeping: its accesses to
// dependence objects, its edges to the instructions that must wait for it, how many edges
// still hold it back, and the lists it sits on. Its phase (queued, running, done) is the one
// field a worker writes; everything else belongs to the scheduler thread.
//
// Callers submit PendingInstructions (a policy and a stream); the scheduler makes the
// Instruction when it takes them, after fusing neighbours, so DAG nodes are allocated and
// freed on one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "runtime/vm/dependence.h"
#include "runtime/vm/instruction_policy.h"
#include "runtime/vm/intrusive_list.h"
#include "runtime/vm/small_vector.h"

namespace kiln::vm {

class ErrorSink;
class Stream;

enum class Phase : uint8_t { queued, running, done };

class Instruction {
 public:
  // Builds the accesses: the stream's order dependence first (when the policy uses it), then
  // every write, then every read.
  Instruction(Stream& stream, std::unique_ptr<InstructionPolicy> policy);
  Instruction(const Instruction&) = delete;
  Instruction& operator=(const Instruction&) = delete;

  Stream& stream() const { return *stream_; }
  InstructionPolicy& policy() const { return *policy_; }
  std::unique_ptr<InstructionPolicy> take_policy() { return std::move(policy_); }
  uint64_t id() const { return policy_->id(); }
  size_t units() const { return units_; }  // the policy's, kept after take_policy()

  // Worker side. execute() runs the policy; a stream policy calls it, then mark_done() (or,
  // for an asynchronous device, arranges for is_done() to become true later).
  void execute(ErrorSink& errors);
  void mark_done() { phase_.store(Phase::done, std::memory_order_release); }
  Phase phase() const { return phase_.load(std::memory_order_acquire); }

  // --- Scheduler-thread state, owned by the Engine. ---
  struct Edge {
    Instruction* successor;
    bool satisfied;  // by stream order (prescheduled) before this instruction was released
  };
  // On one of: the ready list, the barrier list, the prescheduled list, or its stream's
  // running list.
  ListHook list_hook;
  ListHook lively_hook;  // on the lively list from receipt to release
  SmallVector<DependenceAccess, 4> accesses;  // never moved once linked
  SmallVector<Edge, 2> out_edges;
  uint32_t in_degree = 0;  // unsatisfied edges from earlier instructions
  bool dispatched = false;

 private:
  Stream* stream_;
  std::unique_ptr<InstructionPolicy> policy_;
  size_t units_;
  std::atomic<Phase> phase_{Phase::queued};
};

using InstructionList = IntrusiveList<Instruction, &Instruction::list_hook>;

// What a caller submits: a policy and the stream it will run on.
struct PendingInstruction {
  Stream* stream;
  std::unique_ptr<InstructionPolicy> policy;
};
using LivelyList = IntrusiveList<Instruction, &Instruction::lively_hook>;

}  // namespace kiln::vm
