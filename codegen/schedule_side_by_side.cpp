// Stage 5 of the scheduler (codegen/schedule.h): kernels side by side. A run of small kernels, each
// at most a few times the work that a target runs on one thread (the steps of a recurrent layer at
// batch 1: a GEMM of one row and its gates, a few microseconds each), leaves the other threads idle
// or waiting at barriers; where the run holds independent chains (the two directions of a
// bidirectional layer), two of them can run at once, each on one thread.
//
// How: each maximal run of consecutive small kernels is list-scheduled, in kernel order, on two
// lanes with a cost estimate per kernel: a kernel goes to the lane where it can start first, and a
// kernel that depends on one of the other lane costs a barrier (kBarrierNs) more there; a kernel
// that depends on nothing in the run (a step's input product) goes with its first consumer. Each
// dependency across lanes then cuts the run at that kernel's start: between two cuts, each lane's
// kernels depend only on kernels of the same lane or of earlier phases, so a phase runs as two
// lanes side by side and the phases one after another. A phase whose slower lane and barrier would
// take longer than its kernels in order (each on two threads where the target runs it so) runs in
// order, as before. The kernels are reordered phase by phase (a topological order still) and
// renumbered; the memory plan then keeps the buffers a group touches alive over it. Before that, a
// large kernel that needs nothing of the run of small kernels before it moves before that run, so
// that runs join (the backward direction's input projection sits between the two directions).
//
// Not in a lane: library calls but GEMMs (convolutions run on OpenMP's team; fallbacks call the
// host), kernels with symbolic sizes, and kernels that may raise a fault (an index read from a
// tensor, an integer division): the faults are flags the module shares, which would name the
// wrong kernel if two ran at once.
#include <algorithm>
#include <map>
#include <set>

#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

namespace {

// A lane's cost of waiting for the other at a phase's end, and of starting a parallel region in
// order (ns, estimates for a 2-thread CPU).
constexpr double kBarrierNs = 1000;
constexpr double kRegionNs = 500;
// Kernels up to this many times the target's one-thread threshold may take a lane: two lanes of
// kernels twice that size on one thread each beat each kernel on two threads with a barrier.
constexpr int64_t kLaneWorkFactor = 4;

struct Access {
  std::set<int> reads, writes;
};

Access accesses(const LoopProgram& program, const Kernel& kernel) {
  Access access;
  for (const KernelStep& step : kernel.steps) {
    for (int buffer : loaded_buffers(step.body)) access.reads.insert(buffer);
    access.writes.insert(step.outputs.begin(), step.outputs.end());
    if (step.stash_buffer >= 0) access.writes.insert(step.stash_buffer);
  }
  if (kernel.kind == KernelKind::Extern) {
    const ExternCall& call = program.nodes[size_t(kernel.extern_node)].extern_call;
    for (const StridedView& view : call.inputs) access.reads.insert(view.buffer);
    for (const StridedView& view : call.outputs) access.writes.insert(view.buffer);
  }
  return access;
}

// Whether two kernels may run in either order: neither writes what the other reads or writes.
bool independent(const Access& a, const Access& b) {
  auto meets = [](const std::set<int>& x, const std::set<int>& y) {
    return std::any_of(x.begin(), x.end(), [&](int buffer) { return y.count(buffer) > 0; });
  };
  return !meets(a.writes, b.reads) && !meets(a.writes, b.writes) && !meets(b.writes, a.reads);
}

// Whether generated code may raise one of the module's shared fault flags in `expr`: an index read
// from a tensor, or an integer division or remainder.
bool may_fault(const Expr& expr) {
  bool fault = false;
  visit(expr, [&](const ExprNode& node) {
    if (node.kind == ExprKind::Load && !node.indirect.empty()) fault = true;
    if (node.kind == ExprKind::Binary && !node.args.empty() && !is_floating(node.args[0]->dtype) &&
        (node.op == LoopOp::div || node.op == LoopOp::div_trunc || node.op == LoopOp::div_floor ||
         node.op == LoopOp::fmod || node.op == LoopOp::remainder))
      fault = true;
  });
  return fault;
}

// A kernel's estimated time (ns) on one thread, as in a lane, and in order, where the target
// runs it on two threads from its thresholds (a product of few rows over large weights from
// 65536 multiply-adds: codegen/cpp's kFewRowsTeamMacs).
struct Cost {
  double lane = 0;
  double in_order = 0;
};

Cost costs(double one_thread, bool parallel) {
  return {one_thread, parallel ? one_thread / 2 + kRegionNs : one_thread};
}

// The kernel's costs, or nothing when it may not take a lane.
std::optional<Cost> lane_cost(const LoopProgram& program, const Kernel& kernel, const SideBySideOptions& options) {
  for (const KernelStep& step : kernel.steps)
    if (may_fault(step.body)) return std::nullopt;
  size_t expensive = 0;
  for (const KernelStep& step : kernel.steps) expensive += expensive_op_count(step.body);
  if (kernel.kind == KernelKind::Extern) {
    const ExternCall& call = program.nodes[size_t(kernel.extern_node)].extern_call;
    if (call.kind != ExternKind::Gemm) return std::nullopt;
    std::optional<int64_t> elements = numel(call.outputs.at(0).shape).maybe_constant();
    std::optional<int64_t> k = call.inputs.at(0).shape.back().maybe_constant();
    if (!elements || !k) return std::nullopt;
    const int64_t macs = *elements * *k;
    if (macs >= kLaneWorkFactor * options.gemm_macs) return std::nullopt;
    const int64_t rows = *elements / std::max<int64_t>(call.outputs.at(0).shape.back().maybe_constant().value_or(1), 1);
    const bool parallel = macs >= options.gemm_macs || (rows <= 4 && macs >= 65536);
    // ~80 GFLOP/s on one core for such small products, and the epilogue over the output.
    return costs(300.0 + double(macs) / 40.0 + double(*elements * int64_t(kernel.steps.size() + 8 * expensive)) / 16.0,
                 parallel);
  }
  std::optional<int64_t> points = (numel(kernel.outer) * numel(kernel.inner)).maybe_constant();
  if (!points) return std::nullopt;
  const int64_t work = *points * (1 + 8 * int64_t(expensive));
  if (work >= kLaneWorkFactor * options.loop_work) return std::nullopt;
  return costs(100.0 + double(work) / 16.0, work >= options.loop_work);
}

// The run's kernels (ids `run`) in phases: each phase's lane 0 kernels, then its lane 1 kernels,
// in kernel order; a phase of one lane has lane1 empty.
struct Phase {
  std::vector<int> lane0, lane1;
  double cost0 = 0, cost1 = 0;  // each lane's time
  double in_order = 0;           // the phase's time with its kernels in order
};

std::vector<Phase> phases_of(const std::vector<int>& run, const std::vector<Access>& access,
                             const std::vector<Cost>& costs) {
  const size_t n = run.size();
  // Each kernel's dependencies in the run (kernels before it that write what it reads, or read
  // or write what it writes), and the first kernel that depends on each.
  std::vector<std::set<int>> deps(n);
  std::vector<int> first_consumer(n, -1);
  std::map<int, int> last_writer;           // buffer -> run index
  std::map<int, std::vector<int>> readers;  // buffer -> run indices reading it since its last write
  for (size_t i = 0; i < n; ++i) {
    const Access& a = access[size_t(run[i])];
    for (int buffer : a.reads) {
      auto w = last_writer.find(buffer);
      if (w != last_writer.end()) deps[i].insert(w->second);
    }
    for (int buffer : a.writes) {
      auto w = last_writer.find(buffer);
      if (w != last_writer.end()) deps[i].insert(w->second);
      for (int reader : readers[buffer]) deps[i].insert(reader);
    }
    for (int d : deps[i])
      if (first_consumer[size_t(d)] < 0) first_consumer[size_t(d)] = int(i);
    for (int buffer : a.reads) readers[buffer].push_back(int(i));
    for (int buffer : a.writes) {
      last_writer[buffer] = int(i);
      readers[buffer].clear();
    }
  }
  // List scheduling in kernel order. A kernel that depends on nothing in the run but feeds a later
  // one (a step's input product) waits and goes to the lane of its first consumer, just before it.
  std::vector<int> lane(n, -1);
  std::vector<double> start(n, 0), finish(n, 0);
  std::vector<bool> cut_here(n, false);
  double clock[2] = {0, 0};
  auto waits = [&](size_t i) { return deps[i].empty() && first_consumer[i] >= 0; };
  auto place = [&](size_t i, int l) {
    double ready = clock[l];
    for (int d : deps[i]) {
      ready = std::max(ready, finish[size_t(d)] + (lane[size_t(d)] == l ? 0.0 : kBarrierNs));
      cut_here[i] = cut_here[i] || lane[size_t(d)] != l;
    }
    lane[i] = l;
    start[i] = ready;
    finish[i] = ready + costs[size_t(run[i])].lane;
    clock[l] = finish[i];
  };
  for (size_t i = 0; i < n; ++i) {
    if (waits(i)) continue;
    int best_lane = 0;
    double best_start = 0;
    for (int l = 0; l < 2; ++l) {
      double ready = clock[l];
      for (int d : deps[i])
        if (lane[size_t(d)] >= 0) ready = std::max(ready, finish[size_t(d)] + (lane[size_t(d)] == l ? 0.0 : kBarrierNs));
      if (l == 0 || ready < best_start) {
        best_start = ready;
        best_lane = l;
      }
    }
    for (int d : deps[i])
      if (lane[size_t(d)] < 0) place(size_t(d), best_lane);
    place(i, best_lane);
  }
  std::vector<double> cuts;
  for (size_t i = 0; i < n; ++i)
    if (cut_here[i]) cuts.push_back(start[i]);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<Phase> phases(cuts.size() + 1);
  for (size_t i = 0; i < n; ++i) {
    // A kernel starting at a cut belongs to the phase after it.
    const size_t phase = size_t(std::upper_bound(cuts.begin(), cuts.end(), start[i]) - cuts.begin());
    (lane[i] == 0 ? phases[phase].lane0 : phases[phase].lane1).push_back(run[i]);
    (lane[i] == 0 ? phases[phase].cost0 : phases[phase].cost1) += costs[size_t(run[i])].lane;
    phases[phase].in_order += costs[size_t(run[i])].in_order;
  }
  // A phase of one lane, or whose lanes and their barrier would take longer than its kernels in
  // order, runs in kernel order (its lanes are independent: lane 0's kernels then lane 1's would
  // do as well).
  for (Phase& phase : phases) {
    if (!phase.lane0.empty() && !phase.lane1.empty() && std::max(phase.cost0, phase.cost1) + kBarrierNs < phase.in_order)
      continue;
    phase.lane0.insert(phase.lane0.end(), phase.lane1.begin(), phase.lane1.end());
    std::sort(phase.lane0.begin(), phase.lane0.end());
    phase.lane1.clear();
  }
  return phases;
}

}  // namespace

void place_side_by_side(SchedulingState& state, const SideBySideOptions& options) {
  std::vector<Kernel>& kernels = state.result.kernels;
  const LoopProgram& program = state.program();
  std::vector<Access> access;
  std::vector<Cost> cost;
  std::vector<bool> small;
  for (const Kernel& kernel : kernels) {
    access.push_back(accesses(program, kernel));
    std::optional<Cost> c = lane_cost(program, kernel, options);
    small.push_back(c.has_value());
    cost.push_back(c.value_or(Cost{}));
  }
  // A large kernel that needs nothing of the run of small kernels before it goes before that run,
  // so that runs join: the backward direction's input projection sits between the forward
  // direction's steps and its own.
  std::vector<int> hoisted;
  for (size_t i = 0; i < kernels.size(); ++i) {
    size_t at = hoisted.size();
    if (!small[i]) {
      while (at > 0 && small[size_t(hoisted[at - 1])] && independent(access[size_t(hoisted[at - 1])], access[i])) --at;
      while (at < hoisted.size() && at > 0 && small[size_t(hoisted[at - 1])]) ++at;  // past a whole run or not at all
    }
    hoisted.insert(hoisted.begin() + long(at), int(i));
  }
  std::vector<int> order;  // old kernel ids in the new order
  std::vector<SideBySide> groups;
  for (size_t i = 0; i < hoisted.size();) {
    if (!small[size_t(hoisted[i])]) {
      order.push_back(hoisted[i++]);
      continue;
    }
    std::vector<int> run;
    while (i < hoisted.size() && small[size_t(hoisted[i])]) run.push_back(hoisted[i++]);
    for (const Phase& phase : phases_of(run, access, cost)) {
      if (!phase.lane1.empty()) groups.push_back({int(order.size()), int(phase.lane0.size()), int(phase.lane1.size())});
      order.insert(order.end(), phase.lane0.begin(), phase.lane0.end());
      order.insert(order.end(), phase.lane1.begin(), phase.lane1.end());
    }
  }
  if (groups.empty()) return;
  std::vector<int> new_id(kernels.size());
  std::vector<Kernel> reordered;
  for (int old : order) {
    new_id[size_t(old)] = int(reordered.size());
    reordered.push_back(std::move(kernels[size_t(old)]));
    reordered.back().id = new_id[size_t(old)];
  }
  kernels = std::move(reordered);
  for (auto& [buffer, placement] : state.produced) placement.kernel = new_id[size_t(placement.kernel)];
  state.result.side_by_side = std::move(groups);
}

}  // namespace kiln::codegen::scheduling
