// Stream: an ordered lane of instructions on one device (OneFlow's Stream), and StreamPolicy:
// what differs between kinds of stream.
//
// A stream runs its instructions in the order they were dispatched to it, on the worker thread
// of its stream group; its order dependence makes every instruction that uses it follow the
// stream's previous one. Each stream has a caching allocator; buffers whose home it is take
// memory from it.
//
// StreamPolicy is the seam between the scheduler and a device:
//  - run(): on the worker thread, start the instruction's work;
//  - is_done(): on the scheduler thread, whether that work has finished, so the instruction can
//    be released (in dispatch order per stream).
// A CPU stream computes synchronously, so it is done when compute returns. A CUDA stream will be
// built with the CUDA backend: run() launches on its cudaStream_t and records an event, is_done()
// queries that event; record/wait-event instructions become cudaEventRecord and
// cudaStreamWaitEvent; its allocator's MemoryBackend takes device memory.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kiln/device.h"
#include "runtime/vm/bin_allocator.h"
#include "runtime/vm/dependence.h"

namespace kiln::vm {

class ErrorSink;
class Instruction;

class StreamPolicy {
 public:
  virtual ~StreamPolicy() = default;
  virtual Device device() const = 0;
  // Worker thread. Must not touch `instruction` once it may count as done: the scheduler
  // releases and deletes a done instruction at any moment.
  virtual void run(Instruction& instruction, ErrorSink& errors) = 0;
  // Scheduler thread.
  virtual bool is_done(const Instruction& instruction) const = 0;
};

// Instructions run to completion on the worker: done when compute returns.
class CpuStreamPolicy final : public StreamPolicy {
 public:
  Device device() const override { return Device::cpu(); }
  void run(Instruction& instruction, ErrorSink& errors) override;
  bool is_done(const Instruction& instruction) const override;
};

class Stream {
 public:
  Stream(std::string name, size_t index, std::unique_ptr<StreamPolicy> policy,
         std::shared_ptr<BinAllocator> allocator);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const std::string& name() const { return name_; }
  size_t index() const { return index_; }  // within its VirtualMachine
  Device device() const { return policy_->device(); }
  StreamPolicy& policy() const { return *policy_; }
  BinAllocator& allocator() const { return *allocator_; }
  const std::shared_ptr<BinAllocator>& shared_allocator() const { return allocator_; }
  // Scheduler thread: orders the instructions that use stream order.
  Dependence& order_dependence() { return order_; }

 private:
  std::string name_;
  size_t index_;
  std::unique_ptr<StreamPolicy> policy_;
  std::shared_ptr<BinAllocator> allocator_;
  Dependence order_;
};

}  // namespace kiln::vm
