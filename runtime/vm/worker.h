// Worker: the thread that runs the instructions of one stream group (OneFlow's ThreadCtx).
// The scheduler pushes dispatched instructions in batches; the worker runs them in the order
// pushed, through each instruction's stream policy, and wakes the scheduler after each one so
// it can release it and dispatch what waited on it. The worker spins a while on an empty queue
// before sleeping.
//
// In single-thread mode a Worker has no thread: the VM calls run_queued() on the thread that
// submitted, which makes every run deterministic.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/vm/wake_signal.h"

namespace kiln::vm {

class ErrorSink;
class Instruction;

class Worker {
 public:
  Worker(std::string name, bool threaded, std::chrono::nanoseconds spin, ErrorSink& errors,
         WakeSignal& scheduler);
  ~Worker();  // stops and joins
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  const std::string& name() const { return name_; }
  bool threaded() const { return threaded_; }
  // Appends `batch` to the queue and clears it.
  void push(std::vector<Instruction*>& batch);
  // Single-thread mode: runs everything queued; answers whether anything ran.
  bool run_queued();
  // Lets the thread finish what is queued, then joins it.
  void stop();

 private:
  void loop();
  void run(Instruction* instruction);

  std::string name_;
  bool threaded_;
  std::chrono::nanoseconds spin_;
  ErrorSink& errors_;
  WakeSignal& scheduler_;
  WakeSignal signal_;
  std::mutex mutex_;
  std::vector<Instruction*> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kiln::vm
