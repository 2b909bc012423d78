// Engine: the VM's scheduler state and one scheduling pass (OneFlow's VirtualMachineEngine).
//
// Lists (an instruction moves along them; `lively` holds it from receipt to release):
//   pending        policies submitted by callers, under a mutex
//   local pending  taken from pending in one move; fused, made into instructions, linked
//   ready          every edge satisfied; waiting to be dispatched
//   prescheduled   made ready by a dispatch on its own stream (stream order suffices)
//   barrier        barriers, each waiting until it is the oldest lively instruction
//   running        per stream: dispatched, not yet released, in dispatch order
//   active streams the streams whose running list is not empty
// One pass: release the finished instructions of every active stream, oldest first, stopping
// at the first unfinished one (in-order release), which satisfies their successors' edges; run
// the barriers that became the oldest; take pending instructions, fuse runs of kernel calls on
// one stream, link each after the accesses it must follow (dependence.h); dispatch the ready:
// prepare (allocate) on this thread, hand to the stream's worker, and preschedule successors on
// the same stream, whose edges stream order already satisfies. An edge from an instruction
// already dispatched on the same stream is never made.
//
// Out of memory in prepare: release finished work, dispatch ready release instructions, drain
// every stream, repeat while that freed something, shrink every caching allocator, retry once,
// then throw OutOfMemory (the instruction fails; the VM goes on).
//
// Every member is the scheduler thread's, except: the pending list (callers append under a
// mutex), the counters (atomics), and the stall-report request (an atomic flag).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/vm/instruction.h"

namespace kiln::vm {

class ErrorSink;
class Stream;
class WakeSignal;
class Worker;

struct EngineOptions {
  size_t max_fused_kernels = 10;  // 1 turns fusion off
  size_t high_water = 40000;      // submitters block above this many instructions in flight
  size_t low_water = 20000;       // and resume at this many
  std::chrono::nanoseconds drain_spin{0};  // how long a drain spins before sleeping
  std::function<void(const std::string&)> on_stall;  // receives the lively-instruction report
};

struct EngineStats {
  uint64_t submitted = 0;  // instructions, counting each member of a fused group
  uint64_t released = 0;
  uint64_t in_flight = 0;  // submitted, not yet released
  uint64_t fused_groups = 0;
  uint64_t fused_kernels = 0;
  uint64_t prescheduled = 0;        // edges satisfied by stream order at dispatch
  uint64_t fifo_edges_skipped = 0;  // edges never made: same stream, producer dispatched
  uint64_t memory_recoveries = 0;
  uint64_t stall_reports = 0;
};

class Engine {
 public:
  // `workers[i]` runs `streams[i]`; streams[i]->index() == i.
  Engine(EngineOptions options, std::vector<Stream*> streams, std::vector<Worker*> workers,
         ErrorSink& errors, WakeSignal& signal);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Caller threads.
  // Backpressure: blocks while more than high_water instructions are in flight, until low_water.
  void wait_for_room();
  // Numbers the instructions and appends them to the pending list (emptying `instructions`).
  // Throws kiln::Error once closed.
  void submit(std::vector<PendingInstruction>& instructions);
  // Takes no more submissions; wakes any caller blocked in wait_for_room.
  void close();
  bool closed() const { return closed_flag_.load(std::memory_order_acquire); }

  // Scheduler thread (in single-thread mode: the submitting thread, under the VM's lock).
  // One pass; answers whether anything moved.
  bool schedule_once();
  bool idle() const;  // nothing pending, nothing lively

  // Any thread.
  void request_stall_report();  // the next pass reports the lively instructions
  uint64_t progress() const { return counters_.released.load(std::memory_order_acquire); }
  uint64_t in_flight() const { return in_flight_.load(std::memory_order_acquire); }
  EngineStats stats() const;

 private:
  class Preparer;
  struct StreamState {
    Stream* stream;
    size_t worker_slot;
    InstructionList running;
    bool active = false;
  };
  struct Counters {
    std::atomic<uint64_t> submitted{0}, released{0}, fused_groups{0}, fused_kernels{0},
        prescheduled{0}, fifo_edges_skipped{0}, memory_recoveries{0}, stall_reports{0};
  };

  bool release_finished();
  void release(Instruction* instruction);
  bool run_barriers();
  bool handle_pending();
  // Fuses local_pending_[i] with the kernel calls after it on its stream; advances i.
  std::unique_ptr<InstructionPolicy> fuse_from(size_t& i);
  void consume_dependences(Instruction* instruction);
  void link(Instruction* earlier, Instruction* later);
  bool dispatch_ready();
  void dispatch(Instruction* instruction);
  void flush_staged();
  void notify_room();

  std::shared_ptr<Storage> allocate(const Buffer& buffer, const InstructionPolicy& requester,
                                    const Stream& requester_stream);
  void recover_memory();
  void drain();
  bool all_dispatched_done() const;

  void report_stall();
  std::string state_of(const Instruction& instruction) const;

  EngineOptions options_;
  ErrorSink& errors_;
  WakeSignal& signal_;
  std::vector<std::unique_ptr<StreamState>> states_;  // by stream index
  std::vector<Worker*> workers_;                      // distinct, by slot
  std::vector<std::vector<Instruction*>> staged_;     // by worker slot, flushed once a pass

  mutable std::mutex pending_mutex_;
  std::vector<PendingInstruction> pending_;
  uint64_t next_id_ = 1;
  bool closed_ = false;

  std::vector<PendingInstruction> local_pending_;
  InstructionList ready_;
  InstructionList prescheduled_;
  InstructionList barriers_;
  LivelyList lively_;
  std::vector<StreamState*> active_;

  std::atomic<uint64_t> in_flight_{0};
  std::atomic<bool> closed_flag_{false};
  std::mutex room_mutex_;
  std::condition_variable room_;
  std::atomic<int> room_waiters_{0};

  std::atomic<bool> stall_report_requested_{false};
  Counters counters_;
};

}  // namespace kiln::vm
