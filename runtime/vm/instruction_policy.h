// InstructionPolicy: what one kind of instruction does (OneFlow's InstructionPolicy). A policy
// declares its operands (the buffers and events it reads or writes), what it needs from the
// scheduler thread before it runs (prepare: take the buffers' memory, allocate what it writes
// and nobody allocated yet), and what it does on its stream's worker (execute).
//
// Failures follow the data. A policy whose compute throws marks every buffer it writes failed
// with its error and reports the error (the caller's next sync rethrows it). A policy that
// finds one of its operands failed is a dependent of the failed instruction: it is skipped and
// marks what it writes failed with the same error, so sync_read of any buffer downstream
// names the instruction that failed first. Skipped instructions are still released. A buffer
// stays failed until it is released or given fresh memory (which has no history): a kernel
// that only overwrites a failed buffer is skipped too, since the VM cannot tell it from one
// that reads and updates it.
//
// The Instruction around a policy carries the DAG state; policies never see it.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "runtime/vm/buffer.h"
#include "runtime/vm/dependence.h"

namespace kiln::vm {

class ErrorSink;
class InstructionPolicy;
class Stream;

struct Operand {
  BufferPtr buffer;                  // null for an event operand
  Dependence* dependence = nullptr;  // the buffer's or the event's
  AccessKind kind = AccessKind::read;
  std::shared_ptr<Storage> storage;  // taken in prepare, dropped once executed
  bool allocated = false;            // prepare allocated this memory
};

// What prepare may ask of the scheduler.
class PrepareContext {
 public:
  virtual ~PrepareContext() = default;
  // Memory for `buffer` from its home stream's allocator. When that runs out: releases what
  // is ready, drains the streams, shrinks the caches and retries once; then throws
  // kiln::OutOfMemory naming `requester`.
  virtual std::shared_ptr<Storage> allocate(const Buffer& buffer,
                                            const InstructionPolicy& requester) = 0;
};

// What execute may use on the worker thread.
class ExecuteContext {
 public:
  ExecuteContext(Stream& stream, ErrorSink& errors) : stream_(stream), errors_(errors) {}
  Stream& stream() const { return stream_; }
  // Leaves `error` for the caller's next sync.
  void report(std::exception_ptr error) const;
  // "kernel 'relu' (instruction #12 on stream 'compute')".
  std::string describe(const InstructionPolicy& policy) const;

 private:
  Stream& stream_;
  ErrorSink& errors_;
};

std::string describe_instruction(const InstructionPolicy& policy, const Stream& stream);

class InstructionPolicy {
 public:
  virtual ~InstructionPolicy() = default;
  InstructionPolicy(const InstructionPolicy&) = delete;
  InstructionPolicy& operator=(const InstructionPolicy&) = delete;

  virtual const char* kind() const = 0;  // "kernel", "graph", "release", ...
  virtual std::string name() const { return {}; }
  // Set when submitted: the instruction's number, in submission order.
  uint64_t id() const { return id_; }
  void set_id(uint64_t id) { id_ = id; }
  // How many submitted instructions this one stands for (a fused group: its members).
  virtual size_t units() const { return 1; }

  const std::vector<Operand>& operands() const { return operands_; }

  virtual bool fusable() const { return false; }     // a kernel call
  virtual bool is_barrier() const { return false; }  // runs after every earlier instruction
  virtual bool is_release() const { return false; }  // frees a buffer's memory
  // Whether the instruction follows every earlier instruction of its stream (the stream's
  // order dependence). Host callbacks do not: a host read waits for its buffer's writers only.
  virtual bool uses_stream_order() const { return true; }

  // Scheduler thread, when the instruction is dispatched. An error is kept and reported when
  // the instruction executes, in stream order.
  void prepare_guarded(PrepareContext& context);
  // Scheduler thread, for a barrier, once every earlier instruction is released.
  virtual void run_barrier() {}
  // Worker thread. The default: report a prepare error, or skip when an operand failed, or
  // compute; then drop the memory references taken in prepare.
  virtual void execute(ExecuteContext& context);

 protected:
  InstructionPolicy() = default;

  // The default prepare: takes the memory of every buffer operand; a written buffer with no
  // memory is allocated; a read one is an error.
  virtual void prepare(PrepareContext& context);
  virtual void compute(ExecuteContext& context) { (void)context; }

  // Adds `buffer` unless already an operand (then a write wins over a read); returns its index.
  size_t add_operand(const BufferPtr& buffer, AccessKind kind);
  void add_event_operand(Dependence& dependence, AccessKind kind);

  // The error of the first failed buffer operand, or null.
  std::exception_ptr operand_failure() const;
  void mark_written_failed(const std::exception_ptr& error);
  // A fresh allocation has no history: forget the failures of buffers prepare allocated.
  void clear_failures_of_allocated();
  void drop_memory();
  // Reports `error` (raised by this instruction) and marks what it writes failed.
  void report_failure(ExecuteContext& context, std::exception_ptr error);

  std::vector<Operand> operands_;
  std::exception_ptr prepare_error_;

 private:
  uint64_t id_ = 0;
};

}  // namespace kiln::vm
