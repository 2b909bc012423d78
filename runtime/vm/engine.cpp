// Engine: releasing, linking, fusing, dispatching and prescheduling, and out-of-memory recovery.
#include "runtime/vm/engine.h"

#include <algorithm>
#include <sstream>

#include "runtime/allocator.h"
#include "kiln/error.h"
#include "runtime/vm/error_sink.h"
#include "runtime/vm/errors.h"
#include "runtime/vm/fused_kernels.h"
#include "runtime/vm/stream.h"
#include "runtime/vm/wake_signal.h"
#include "runtime/vm/worker.h"

namespace kiln::vm {

namespace {

void bump(std::atomic<uint64_t>& counter, uint64_t amount = 1) {
  counter.fetch_add(amount, std::memory_order_relaxed);
}

constexpr size_t kStallReportLines = 32;
constexpr int kMaxRecoveryRounds = 64;

}  // namespace

// Lets a policy's prepare allocate on behalf of the instruction being dispatched.
class Engine::Preparer final : public PrepareContext {
 public:
  Preparer(Engine& engine, const Stream& stream) : engine_(engine), stream_(stream) {}
  std::shared_ptr<Storage> allocate(const Buffer& buffer, const InstructionPolicy& requester) override {
    return engine_.allocate(buffer, requester, stream_);
  }

 private:
  Engine& engine_;
  const Stream& stream_;
};

Engine::Engine(EngineOptions options, std::vector<Stream*> streams, std::vector<Worker*> workers,
               ErrorSink& errors, WakeSignal& signal)
    : options_(std::move(options)), errors_(errors), signal_(signal) {
  KILN_CHECK(streams.size() == workers.size());
  KILN_CHECK(options_.low_water <= options_.high_water);
  for (size_t i = 0; i < streams.size(); ++i) {
    KILN_CHECK(streams[i]->index() == i, "streams must be listed in index order");
    auto slot = std::find(workers_.begin(), workers_.end(), workers[i]);
    if (slot == workers_.end()) slot = workers_.insert(workers_.end(), workers[i]);
    auto state = std::make_unique<StreamState>();
    state->stream = streams[i];
    state->worker_slot = size_t(slot - workers_.begin());
    states_.push_back(std::move(state));
  }
  staged_.resize(workers_.size());
}

Engine::~Engine() {
  // A VM drains before it destroys its engine; whatever is left here never ran. Take every
  // access off its list before deleting, since buffers may outlive the engine.
  auto discard = [](Instruction* instruction) {
    for (DependenceAccess& access : instruction->accesses) access.dependence->forget(access);
    delete instruction;
  };
  while (Instruction* instruction = lively_.pop_front()) discard(instruction);
}

// ---------------------------------------------------------------- callers

void Engine::wait_for_room() {
  if (in_flight_.load(std::memory_order_acquire) < options_.high_water) return;
  std::unique_lock<std::mutex> lock(room_mutex_);
  room_waiters_.fetch_add(1, std::memory_order_seq_cst);
  room_.wait(lock, [&] {
    return in_flight_.load(std::memory_order_seq_cst) <= options_.low_water ||
           closed_flag_.load(std::memory_order_seq_cst);
  });
  room_waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

void Engine::notify_room() {
  if (room_waiters_.load(std::memory_order_seq_cst) == 0) return;
  if (in_flight_.load(std::memory_order_seq_cst) > options_.low_water) return;
  std::lock_guard<std::mutex> lock(room_mutex_);
  room_.notify_all();
}

void Engine::submit(std::vector<PendingInstruction>& instructions) {
  if (instructions.empty()) return;
  uint64_t units = 0;
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (closed_) fail("the VM is shut down: it takes no more instructions");
    for (PendingInstruction& instruction : instructions) {
      instruction.policy->set_id(next_id_++);
      units += instruction.policy->units();
    }
    in_flight_.fetch_add(units, std::memory_order_seq_cst);
    bump(counters_.submitted, units);
    if (pending_.empty()) {
      pending_.swap(instructions);
    } else {
      for (PendingInstruction& instruction : instructions) pending_.push_back(std::move(instruction));
    }
  }
  instructions.clear();
  signal_.notify();
}

void Engine::close() {
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    closed_ = true;
  }
  closed_flag_.store(true, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lock(room_mutex_);
    room_.notify_all();
  }
  signal_.notify();
}

bool Engine::idle() const {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  return pending_.empty() && local_pending_.empty() && lively_.empty();
}

void Engine::request_stall_report() {
  stall_report_requested_.store(true, std::memory_order_release);
  signal_.notify();
}

EngineStats Engine::stats() const {
  EngineStats stats;
  stats.submitted = counters_.submitted.load(std::memory_order_relaxed);
  stats.released = counters_.released.load(std::memory_order_relaxed);
  stats.in_flight = in_flight_.load(std::memory_order_relaxed);
  stats.fused_groups = counters_.fused_groups.load(std::memory_order_relaxed);
  stats.fused_kernels = counters_.fused_kernels.load(std::memory_order_relaxed);
  stats.prescheduled = counters_.prescheduled.load(std::memory_order_relaxed);
  stats.fifo_edges_skipped = counters_.fifo_edges_skipped.load(std::memory_order_relaxed);
  stats.memory_recoveries = counters_.memory_recoveries.load(std::memory_order_relaxed);
  stats.stall_reports = counters_.stall_reports.load(std::memory_order_relaxed);
  return stats;
}

// ---------------------------------------------------------------- one pass

bool Engine::schedule_once() {
  bool moved = release_finished();
  moved |= run_barriers();
  moved |= handle_pending();
  moved |= dispatch_ready();
  flush_staged();
  if (stall_report_requested_.exchange(false, std::memory_order_acq_rel)) report_stall();
  if (moved) notify_room();
  return moved;
}

bool Engine::release_finished() {
  bool released = false;
  for (size_t k = 0; k < active_.size();) {
    StreamState& state = *active_[k];
    const StreamPolicy& policy = state.stream->policy();
    while (Instruction* instruction = state.running.front()) {
      if (!policy.is_done(*instruction)) break;
      state.running.pop_front();
      release(instruction);
      released = true;
    }
    if (state.running.empty()) {
      state.active = false;
      active_[k] = active_.back();
      active_.pop_back();
    } else {
      ++k;
    }
  }
  return released;
}

void Engine::release(Instruction* instruction) {
  for (DependenceAccess& access : instruction->accesses) access.dependence->forget(access);
  for (const Instruction::Edge& edge : instruction->out_edges) {
    if (!edge.satisfied && --edge.successor->in_degree == 0) ready_.push_back(edge.successor);
  }
  lively_.erase(instruction);
  const uint64_t units = instruction->units();
  delete instruction;
  in_flight_.fetch_sub(units, std::memory_order_seq_cst);
  counters_.released.fetch_add(units, std::memory_order_release);
}

bool Engine::run_barriers() {
  bool ran = false;
  while (Instruction* barrier = barriers_.front()) {
    if (lively_.front() != barrier) break;  // something earlier is still lively
    barriers_.pop_front();
    // Released first, so whoever the function wakes (a sync) finds the barrier counted too.
    std::unique_ptr<InstructionPolicy> policy = barrier->take_policy();
    const Stream& stream = barrier->stream();
    release(barrier);
    try {
      policy->run_barrier();
    } catch (...) {
      errors_.report(attribute_failure(describe_instruction(*policy, stream), std::current_exception()));
    }
    ran = true;
  }
  return ran;
}

bool Engine::handle_pending() {
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (pending_.empty()) return false;
    local_pending_.swap(pending_);
  }
  for (size_t i = 0; i < local_pending_.size();) {
    Stream& stream = *local_pending_[i].stream;
    auto* instruction = new Instruction(stream, fuse_from(i));
    lively_.push_back(instruction);
    if (instruction->policy().is_barrier()) {
      barriers_.push_back(instruction);
      continue;
    }
    consume_dependences(instruction);
    if (instruction->in_degree == 0) ready_.push_back(instruction);
  }
  local_pending_.clear();
  return true;
}

std::unique_ptr<InstructionPolicy> Engine::fuse_from(size_t& i) {
  const Stream* stream = local_pending_[i].stream;
  std::unique_ptr<InstructionPolicy> first = std::move(local_pending_[i++].policy);
  auto joins = [&](size_t k) {
    return k < local_pending_.size() && local_pending_[k].stream == stream &&
           local_pending_[k].policy->fusable();
  };
  const size_t limit = options_.max_fused_kernels;
  if (limit < 2 || !first->fusable() || !joins(i)) return first;
  std::vector<std::unique_ptr<InstructionPolicy>> members;
  members.reserve(limit);
  members.push_back(std::move(first));
  while (members.size() < limit && joins(i)) members.push_back(std::move(local_pending_[i++].policy));
  bump(counters_.fused_groups);
  bump(counters_.fused_kernels, members.size());
  return std::make_unique<FusedKernels>(std::move(members));
}

void Engine::consume_dependences(Instruction* instruction) {
  // The accesses are already in OneFlow's order: stream order, writes, reads.
  for (DependenceAccess& access : instruction->accesses) {
    access.dependence->consume(access, [&](Instruction* earlier) { link(earlier, instruction); });
  }
}

void Engine::link(Instruction* earlier, Instruction* later) {
  if (earlier == later) return;
  if (earlier->dispatched && &earlier->stream() == &later->stream()) {
    bump(counters_.fifo_edges_skipped);  // the stream runs them in order anyway
    return;
  }
  // Edges into `later` are made only while its accesses are consumed, so a duplicate would be
  // the last edge `earlier` made.
  if (!earlier->out_edges.empty() && earlier->out_edges.back().successor == later) return;
  earlier->out_edges.push_back({later, false});
  ++later->in_degree;
}

bool Engine::dispatch_ready() {
  if (ready_.empty()) return false;
  while (Instruction* instruction = ready_.pop_front()) {
    dispatch(instruction);
    while (Instruction* next = prescheduled_.pop_front()) dispatch(next);
  }
  return true;
}

void Engine::dispatch(Instruction* instruction) {
  instruction->dispatched = true;
  Preparer preparer(*this, instruction->stream());
  instruction->policy().prepare_guarded(preparer);
  StreamState& state = *states_[instruction->stream().index()];
  state.running.push_back(instruction);
  if (!state.active) {
    state.active = true;
    active_.push_back(&state);
  }
  staged_[state.worker_slot].push_back(instruction);
  // Successors on the same stream need only come after it in the stream's queue.
  for (Instruction::Edge& edge : instruction->out_edges) {
    if (edge.satisfied || &edge.successor->stream() != &instruction->stream()) continue;
    edge.satisfied = true;
    bump(counters_.prescheduled);
    if (--edge.successor->in_degree == 0) prescheduled_.push_back(edge.successor);
  }
}

void Engine::flush_staged() {
  for (size_t slot = 0; slot < workers_.size(); ++slot) {
    if (!staged_[slot].empty()) workers_[slot]->push(staged_[slot]);
  }
}

// ---------------------------------------------------------------- memory

std::shared_ptr<Storage> Engine::allocate(const Buffer& buffer, const InstructionPolicy& requester,
                                         const Stream& requester_stream) {
  Stream& home = buffer.home_stream();
  const std::shared_ptr<BinAllocator>& allocator = home.shared_allocator();
  void* data = allocator->allocate(buffer.nbytes());
  if (data == nullptr) {
    recover_memory();
    data = allocator->allocate(buffer.nbytes());
  }
  if (data == nullptr) {
    const MemoryBackend& backend = allocator->backend();
    std::ostringstream message;
    message << "out of memory: " << describe_instruction(requester, requester_stream)
            << " needs " << buffer.nbytes() << " bytes for " << buffer.describe()
            << " from stream '" << home.name() << "' (" << home.device().to_string() << "); ";
    if (backend.limit() == SIZE_MAX) {
      message << "the device has no more memory";
    } else {
      message << backend.reserved() << " of the " << backend.limit()
              << " bytes the device may use are held";
    }
    message << " after releasing finished work, draining every stream and shrinking the caches";
    throw OutOfMemory(message.str(), buffer.nbytes());
  }
  return std::make_shared<Storage>(data, buffer.nbytes(), home.device(),
                                   [allocator](void* pointer) { allocator->deallocate(pointer); });
}

void Engine::recover_memory() {
  bump(counters_.memory_recoveries);
  for (int round = 0; round < kMaxRecoveryRounds; ++round) {
    drain();
    release_finished();
    bool dispatched_release = false;
    for (Instruction* instruction = ready_.front(); instruction != nullptr;) {
      Instruction* next = ready_.next(instruction);
      if (instruction->policy().is_release()) {
        ready_.erase(instruction);
        dispatch(instruction);
        dispatched_release = true;
      }
      instruction = next;
    }
    if (!dispatched_release) break;
  }
  std::vector<BinAllocator*> shrunk;
  for (const auto& state : states_) {
    BinAllocator* allocator = &state->stream->allocator();
    if (std::find(shrunk.begin(), shrunk.end(), allocator) != shrunk.end()) continue;
    allocator->shrink();
    shrunk.push_back(allocator);
  }
  cpu_empty_cache();  // the process-wide cache of large host blocks
}

void Engine::drain() {
  flush_staged();
  for (;;) {
    const uint64_t seen = signal_.count();
    for (Worker* worker : workers_) {
      if (!worker->threaded()) worker->run_queued();
    }
    if (all_dispatched_done()) return;
    if (stall_report_requested_.exchange(false, std::memory_order_acq_rel)) report_stall();
    signal_.wait(seen, options_.drain_spin, std::chrono::milliseconds(100));
  }
}

bool Engine::all_dispatched_done() const {
  for (const StreamState* state : active_) {
    const StreamPolicy& policy = state->stream->policy();
    // Workers finish in order, so the newest is the likeliest to be unfinished.
    if (!policy.is_done(*state->running.back())) return false;
    for (Instruction* i = state->running.front(); i != nullptr; i = state->running.next(i)) {
      if (!policy.is_done(*i)) return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------- watchdog report

std::string Engine::state_of(const Instruction& instruction) const {
  if (instruction.policy().is_barrier()) return "a barrier, waiting for every earlier instruction";
  if (!instruction.dispatched) {
    if (instruction.in_degree == 0) return "ready, not yet dispatched";
    return detail::concat("waiting for ", instruction.in_degree, " earlier instruction(s)");
  }
  switch (instruction.phase()) {
    case Phase::queued: return "queued on its stream's worker";
    case Phase::running: return "running";
    case Phase::done: return "finished, waiting to be released in stream order";
  }
  return "unknown";
}

void Engine::report_stall() {
  bump(counters_.stall_reports);
  std::ostringstream out;
  out << lively_.size() << " instruction(s) are lively (received, not yet released):";
  size_t shown = 0;
  for (Instruction* i = lively_.front(); i != nullptr && shown < kStallReportLines;
       i = lively_.next(i), ++shown) {
    out << "\n  " << describe_instruction(i->policy(), i->stream()) << ": " << state_of(*i);
  }
  if (lively_.size() > shown) out << "\n  ... and " << lively_.size() - shown << " more";
  if (options_.on_stall) options_.on_stall(out.str());
}

}  // namespace kiln::vm
