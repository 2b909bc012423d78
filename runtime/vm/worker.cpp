// Worker: a queue, a thread, and the loop that drains one into the other.
#include "runtime/vm/worker.h"

#include "runtime/vm/instruction.h"
#include "runtime/vm/stream.h"

namespace kiln::vm {

Worker::Worker(std::string name, bool threaded, std::chrono::nanoseconds spin, ErrorSink& errors,
               WakeSignal& scheduler)
    : name_(std::move(name)), threaded_(threaded), spin_(spin), errors_(errors), scheduler_(scheduler) {
  if (threaded_) thread_ = std::thread([this] { loop(); });
}

Worker::~Worker() { stop(); }

void Worker::push(std::vector<Instruction*>& batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.insert(queue_.end(), batch.begin(), batch.end());
  }
  batch.clear();
  if (threaded_) signal_.notify();
}

void Worker::run(Instruction* instruction) {
  instruction->stream().policy().run(*instruction, errors_);
  scheduler_.notify();  // `instruction` may be gone by now
}

bool Worker::run_queued() {
  std::vector<Instruction*> batch;
  bool ran = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batch.swap(queue_);
    }
    if (batch.empty()) return ran;
    for (Instruction* instruction : batch) run(instruction);
    batch.clear();
    ran = true;
  }
}

void Worker::loop() {
  set_on_vm_thread(true);
  std::vector<Instruction*> batch;
  for (;;) {
    const uint64_t seen = signal_.count();
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batch.swap(queue_);
      stopping = stopping_;
    }
    if (batch.empty()) {
      if (stopping) return;
      signal_.wait(seen, spin_);
      continue;
    }
    for (Instruction* instruction : batch) run(instruction);
    batch.clear();
  }
}

void Worker::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  signal_.notify();
  thread_.join();
}

}  // namespace kiln::vm
