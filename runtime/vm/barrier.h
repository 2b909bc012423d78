// Barrier: a function the scheduler runs once every instruction submitted before it has been
// released (OneFlow's barrier instruction). It touches no buffer and no stream order, so later
// instructions are not held back by it. sync() is a barrier that wakes the caller. The function
// runs on the scheduler thread (inline in single-thread mode) and must be short; an exception
// it throws is reported at the caller's next sync.
#pragma once

#include <functional>

#include "kiln/error.h"
#include "runtime/vm/instruction_policy.h"

namespace kiln::vm {

class Barrier final : public InstructionPolicy {
 public:
  explicit Barrier(std::function<void()> fn) : fn_(std::move(fn)) {
    if (!fn_) fail("a barrier has no function to call");
  }
  const char* kind() const override { return "barrier"; }
  bool is_barrier() const override { return true; }
  bool uses_stream_order() const override { return false; }
  void run_barrier() override { fn_(); }

 private:
  std::function<void()> fn_;
};

}  // namespace kiln::vm
