// VirtualMachine: Kiln's instruction VM, after OneFlow's. Callers build lists of instructions
// (InstructionsBuilder) and submit them; each instruction runs on a stream, ordered only by the
// buffers and events it reads and writes, so an application pipelines work across streams
// without writing any synchronization.
//
// Threads: the callers; one scheduler thread (the Engine's passes); one worker per stream
// group (plus one for the host stream, where host callbacks run); a watchdog that reports the
// lively instructions when nothing is released for `watchdog_timeout`. In single-thread mode
// there are no threads at all: physical_run runs everything it submitted to completion on the
// calling thread, in a deterministic order.
//
// Errors: an instruction that fails (a kernel throws, an allocation is out of memory even after
// recovery) fails the instructions that depend on its data; they are skipped and released. The
// first error is rethrown at the caller's next sync() (or sync_read/sync_write), then forgotten;
// the VM stays usable. sync_read/sync_write of a failed buffer throw that buffer's error.
//
// Shutdown (the destructor): takes no new work, drains everything submitted, joins every thread,
// and writes to standard error any failure no sync reported.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kiln/device.h"
#include "runtime/vm/bin_allocator.h"
#include "runtime/vm/buffer.h"
#include "runtime/vm/engine.h"
#include "runtime/vm/error_sink.h"
#include "runtime/vm/event.h"
#include "runtime/vm/instructions_builder.h"
#include "runtime/vm/stream.h"
#include "runtime/vm/wake_signal.h"
#include "runtime/vm/worker.h"

namespace kiln::vm {

struct StreamSpec {
  std::string name;
  Device device = Device::cpu();
  // Streams with the same group share one worker thread; -1 gives the stream its own.
  int worker_group = -1;
};

struct VmOptions {
  std::vector<StreamSpec> streams = {StreamSpec{"compute"}};
  bool single_thread = false;
  size_t max_fused_kernels = 10;  // 1 turns fusion off
  size_t high_water = 40000;      // backpressure: submitters block above this many in flight
  size_t low_water = 20000;       // ... until this many
  std::chrono::microseconds scheduler_spin{200};
  std::chrono::microseconds worker_spin{50};
  // Report the lively instructions when none was released for this long (0: never). Reports
  // go to on_stall (default: standard error) from the scheduler thread; nothing is aborted.
  std::chrono::milliseconds watchdog_timeout{30000};
  std::function<void(const std::string&)> on_stall;
  // Bytes each device may hand to its streams' allocators, all together.
  size_t memory_limit = SIZE_MAX;
  BinAllocatorOptions allocator;
};

struct VmStats : EngineStats {
  uint64_t suppressed_errors = 0;  // failures reported while an earlier one was still held
};

class VirtualMachine {
 public:
  explicit VirtualMachine(VmOptions options = {});
  ~VirtualMachine();
  VirtualMachine(const VirtualMachine&) = delete;
  VirtualMachine& operator=(const VirtualMachine&) = delete;

  size_t num_streams() const { return options_.streams.size(); }
  Stream& stream(size_t index) const;
  Stream& stream(std::string_view name) const;
  Stream& host_stream() const { return *streams_.back(); }
  // Whether `stream` is one of this VM's (its host stream included).
  bool owns(const Stream& stream) const;
  bool single_thread() const { return options_.single_thread; }

  // A buffer of `nbytes` with no memory yet, whose memory will come from `home`'s allocator.
  BufferPtr new_buffer(size_t nbytes, Stream& home);
  BufferPtr new_buffer(size_t nbytes) { return new_buffer(nbytes, stream(0)); }
  // A buffer over existing memory (for example a Tensor's storage).
  BufferPtr wrap_storage(std::shared_ptr<Storage> storage, Stream& home);
  EventPtr new_event() const { return std::make_shared<Event>(); }

  // Builds a list with `build` and submits it. Blocks while too many instructions are in
  // flight (backpressure). In single-thread mode, runs the list to completion before returning.
  void physical_run(const std::function<void(InstructionsBuilder&)>& build);
  // Waits until everything submitted before it is done; rethrows the first error since the
  // last sync.
  void sync();
  // Calls `fn` with `buffer`'s memory once its writers are done, blocking the caller until then
  // (and only until then: unrelated work keeps running). Throws the buffer's error if a failed
  // instruction left it invalid, else the first pending error if any.
  void sync_read(const BufferPtr& buffer, const std::function<void(const Storage&)>& fn);
  // Like sync_read, with write access: waits for every earlier access of `buffer`, allocating
  // it first if it has no memory.
  void sync_write(const BufferPtr& buffer, const std::function<void(Storage&)>& fn);

  VmStats stats() const;
  // What shutdown does; the destructor calls it. Idempotent.
  void shutdown();

 private:
  void submit(InstructionsBuilder& builder);
  void run_inline();
  void scheduler_loop();
  void watchdog_loop();
  void host_access(const BufferPtr& buffer, AccessKind kind, HostFn fn);
  void check_not_on_vm_thread(const char* what) const;
  void rethrow_pending_error();

  VmOptions options_;
  ErrorSink errors_;
  WakeSignal scheduler_signal_;
  std::vector<std::unique_ptr<Stream>> streams_;  // the user's, then the host stream
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Engine> engine_;

  std::mutex inline_mutex_;  // single-thread mode: one submitter runs the engine at a time
  std::thread scheduler_;
  std::thread watchdog_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wakeup_;
  bool watchdog_stop_ = false;
  std::once_flag shutdown_once_;
};

}  // namespace kiln::vm
