// Event: a marker one stream records and other streams wait on (OneFlow's record/wait-event
// instructions, CUDA events). Recording writes the event's dependence object, waiting reads
// it, and both follow their stream's order; so a wait makes its stream's later work follow
// everything its recording stream did before the latest record submitted ahead of the wait.
// Waiting on an event no one recorded waits for nothing, as in CUDA.
//
// On CPU streams the ordering is all in the dependence DAG and the instructions do no work but
// count completed records. On CUDA streams (later) they become cudaEventRecord and
// cudaStreamWaitEvent.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "runtime/vm/dependence.h"
#include "runtime/vm/instruction_policy.h"

namespace kiln::vm {

class Event {
 public:
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Any thread: how many record instructions on this event have completed.
  uint64_t completed_records() const { return completed_records_.load(std::memory_order_acquire); }

  // Scheduler thread.
  Dependence& dependence() { return dependence_; }
  // Worker thread.
  void mark_recorded() { completed_records_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  Dependence dependence_;
  std::atomic<uint64_t> completed_records_{0};
};

using EventPtr = std::shared_ptr<Event>;

class RecordEvent final : public InstructionPolicy {
 public:
  explicit RecordEvent(EventPtr event);
  const char* kind() const override { return "record event"; }

 protected:
  void compute(ExecuteContext& context) override;

 private:
  EventPtr event_;
};

class WaitEvent final : public InstructionPolicy {
 public:
  explicit WaitEvent(EventPtr event);
  const char* kind() const override { return "wait event"; }

 private:
  EventPtr event_;
};

}  // namespace kiln::vm
