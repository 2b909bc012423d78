// VirtualMachine: streams, threads, submission, syncs, the watchdog and shutdown.
#include "runtime/vm/virtual_machine.h"

#include <algorithm>
#include <iostream>
#include <map>

#include "kiln/error.h"

namespace kiln::vm {

namespace {

// A caller blocked until an instruction or barrier says how it ended. Shared with the callback
// that finishes it, so the waiter may return (and drop its reference) as soon as it is woken.
class Completion {
 public:
  void finish(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::move(error);
    done_ = true;
    finished_.notify_all();
  }
  std::exception_ptr wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_; });
    return error_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  std::exception_ptr error_;
};

void check_options(const VmOptions& options) {
  if (options.streams.empty()) fail("a VM needs at least one stream");
  for (size_t i = 0; i < options.streams.size(); ++i) {
    const StreamSpec& spec = options.streams[i];
    if (spec.name.empty()) fail("VM stream ", i, " has no name");
    if (spec.name == "host") fail("VM stream name 'host' is reserved for the host stream");
    for (size_t j = 0; j < i; ++j) {
      if (options.streams[j].name == spec.name) fail("two VM streams are named '", spec.name, "'");
    }
    if (!spec.device.is_cpu()) {
      fail("VM stream '", spec.name, "' is on ", spec.device.to_string(),
           ", but Kiln's CUDA backend does not exist yet: only CPU streams are available");
    }
  }
  if (options.low_water > options.high_water) {
    fail("VM low water (", options.low_water, ") is above high water (", options.high_water, ")");
  }
}

}  // namespace

VirtualMachine::VirtualMachine(VmOptions options) : options_(std::move(options)) {
  check_options(options_);
  const bool threaded = !options_.single_thread;
  const auto worker_spin = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.worker_spin);
  auto memory = std::make_shared<CpuMemoryBackend>(options_.memory_limit);  // the one device: cpu

  std::map<int, Worker*> worker_of_group;
  std::vector<Worker*> stream_workers;
  auto add_stream = [&](const std::string& name, int group) {
    auto allocator = std::make_shared<BinAllocator>(memory, options_.allocator);
    streams_.push_back(std::make_unique<Stream>(name, streams_.size(),
                                                std::make_unique<CpuStreamPolicy>(), allocator));
    Worker* worker = group >= 0 ? worker_of_group[group] : nullptr;
    if (worker == nullptr) {
      workers_.push_back(std::make_unique<Worker>("worker for " + name, threaded, worker_spin,
                                                  errors_, scheduler_signal_));
      worker = workers_.back().get();
      if (group >= 0) worker_of_group[group] = worker;
    }
    stream_workers.push_back(worker);
  };
  for (const StreamSpec& spec : options_.streams) add_stream(spec.name, spec.worker_group);
  add_stream("host", -1);

  EngineOptions engine_options;
  engine_options.max_fused_kernels = std::max<size_t>(options_.max_fused_kernels, 1);
  engine_options.high_water = options_.high_water;
  engine_options.low_water = options_.low_water;
  engine_options.drain_spin = options_.scheduler_spin;
  engine_options.on_stall = [timeout = options_.watchdog_timeout.count(),
                             user = options_.on_stall](const std::string& report) {
    std::string text = detail::concat("kiln VM watchdog: no instruction was released for ",
                                      timeout, " ms; ", report);
    if (user) {
      user(text);
    } else {
      std::cerr << text << std::endl;
    }
  };
  std::vector<Stream*> streams;
  for (const auto& stream : streams_) streams.push_back(stream.get());
  engine_ = std::make_unique<Engine>(std::move(engine_options), std::move(streams),
                                     std::move(stream_workers), errors_, scheduler_signal_);

  if (threaded) {
    scheduler_ = std::thread([this] { scheduler_loop(); });
    if (options_.watchdog_timeout.count() > 0) watchdog_ = std::thread([this] { watchdog_loop(); });
  }
}

VirtualMachine::~VirtualMachine() { shutdown(); }

void VirtualMachine::shutdown() {
  std::call_once(shutdown_once_, [&] {
    engine_->close();
    if (scheduler_.joinable()) scheduler_.join();  // it leaves once everything is released
    for (const auto& worker : workers_) worker->stop();
    if (watchdog_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(watchdog_mutex_);
        watchdog_stop_ = true;
      }
      watchdog_wakeup_.notify_all();
      watchdog_.join();
    }
    // A destructor cannot throw: say what no sync reported rather than drop it silently.
    if (std::exception_ptr error = errors_.take(); error != nullptr) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& failure) {
        std::cerr << "kiln VM: shut down with a failure no sync reported: " << failure.what() << std::endl;
      } catch (...) {
        std::cerr << "kiln VM: shut down with a failure no sync reported" << std::endl;
      }
    }
  });
}

Stream& VirtualMachine::stream(size_t index) const {
  if (index >= num_streams()) fail("the VM has ", num_streams(), " streams; there is no stream ", index);
  return *streams_[index];
}

Stream& VirtualMachine::stream(std::string_view name) const {
  for (const auto& stream : streams_) {
    if (stream->name() == name) return *stream;
  }
  std::string names;
  for (const auto& stream : streams_) names += (names.empty() ? "'" : ", '") + stream->name() + "'";
  fail("the VM has no stream named '", name, "'; its streams are ", names);
}

bool VirtualMachine::owns(const Stream& stream) const {
  return stream.index() < streams_.size() && streams_[stream.index()].get() == &stream;
}

BufferPtr VirtualMachine::new_buffer(size_t nbytes, Stream& home) {
  if (!owns(home)) fail("stream '", home.name(), "' belongs to another VM");
  return std::make_shared<Buffer>(nbytes, home);
}

BufferPtr VirtualMachine::wrap_storage(std::shared_ptr<Storage> storage, Stream& home) {
  if (!owns(home)) fail("stream '", home.name(), "' belongs to another VM");
  return std::make_shared<Buffer>(std::move(storage), home);
}

// ---------------------------------------------------------------- submitting

void VirtualMachine::physical_run(const std::function<void(InstructionsBuilder&)>& build) {
  InstructionsBuilder builder(*this);
  build(builder);
  submit(builder);
}

void VirtualMachine::submit(InstructionsBuilder& builder) {
  if (builder.size() == 0) return;
  if (!options_.single_thread) {
    if (!on_vm_thread()) engine_->wait_for_room();
    engine_->submit(builder.instructions());
    return;
  }
  if (on_vm_thread()) {  // submitted from inside an instruction: the running loop picks it up
    engine_->submit(builder.instructions());
    return;
  }
  std::lock_guard<std::mutex> lock(inline_mutex_);
  engine_->submit(builder.instructions());
  run_inline();
}

void VirtualMachine::run_inline() {
  set_on_vm_thread(true);
  for (;;) {
    bool moved = engine_->schedule_once();
    for (const auto& worker : workers_) moved |= worker->run_queued();
    if (!moved) break;
  }
  set_on_vm_thread(false);
  KILN_CHECK(engine_->idle(), "single-thread VM: instructions are left that can never run");
}

// ---------------------------------------------------------------- syncs

void VirtualMachine::check_not_on_vm_thread(const char* what) const {
  if (on_vm_thread()) {
    fail(what, " was called from inside a VM instruction or callback, where waiting for the VM "
               "would deadlock");
  }
}

void VirtualMachine::rethrow_pending_error() {
  if (std::exception_ptr error = errors_.take(); error != nullptr) std::rethrow_exception(error);
}

void VirtualMachine::sync() {
  check_not_on_vm_thread("VirtualMachine::sync()");
  auto completion = std::make_shared<Completion>();
  physical_run([&](InstructionsBuilder& builder) {
    builder.barrier([completion] { completion->finish(nullptr); });
  });
  completion->wait();
  rethrow_pending_error();
}

void VirtualMachine::host_access(const BufferPtr& buffer, AccessKind kind, HostFn fn) {
  auto completion = std::make_shared<Completion>();
  physical_run([&](InstructionsBuilder& builder) {
    builder.host_callback(buffer, kind, std::move(fn),
                          [completion](std::exception_ptr error) { completion->finish(error); });
  });
  if (std::exception_ptr error = completion->wait(); error != nullptr) {
    errors_.forget(error);  // thrown here; the next sync need not throw it again
    std::rethrow_exception(error);
  }
  rethrow_pending_error();
}

void VirtualMachine::sync_read(const BufferPtr& buffer,
                               const std::function<void(const Storage&)>& fn) {
  check_not_on_vm_thread("VirtualMachine::sync_read()");
  host_access(buffer, AccessKind::read, [&fn](Storage& storage) { fn(storage); });
}

void VirtualMachine::sync_write(const BufferPtr& buffer, const std::function<void(Storage&)>& fn) {
  check_not_on_vm_thread("VirtualMachine::sync_write()");
  host_access(buffer, AccessKind::write, [&fn](Storage& storage) { fn(storage); });
}

VmStats VirtualMachine::stats() const {
  VmStats stats;
  static_cast<EngineStats&>(stats) = engine_->stats();
  stats.suppressed_errors = errors_.suppressed();
  return stats;
}

// ---------------------------------------------------------------- threads

void VirtualMachine::scheduler_loop() {
  set_on_vm_thread(true);
  const auto spin = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.scheduler_spin);
  for (;;) {
    const uint64_t seen = scheduler_signal_.count();
    if (engine_->schedule_once()) continue;
    if (engine_->closed() && engine_->idle()) return;
    scheduler_signal_.wait(seen, spin);
  }
}

void VirtualMachine::watchdog_loop() {
  using Clock = std::chrono::steady_clock;
  const auto timeout = options_.watchdog_timeout;
  const auto period = std::max<std::chrono::milliseconds>(timeout / 4, std::chrono::milliseconds(1));
  uint64_t last_progress = engine_->progress();
  auto last_change = Clock::now();
  bool reported = false;  // once per stall
  std::unique_lock<std::mutex> lock(watchdog_mutex_);
  while (!watchdog_wakeup_.wait_for(lock, period, [&] { return watchdog_stop_; })) {
    const auto now = Clock::now();
    const uint64_t progress = engine_->progress();
    if (progress != last_progress || engine_->in_flight() == 0) {
      last_progress = progress;
      last_change = now;
      reported = false;
    } else if (!reported && now - last_change >= timeout) {
      engine_->request_stall_report();
      reported = true;
    }
  }
}

}  // namespace kiln::vm
