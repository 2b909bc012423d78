// Stage 6 of the scheduler (codegen/schedule.h): the memory plan. Every intermediate buffer that
// still exists in memory gets a 64-byte-aligned offset in one workspace by liveness (from the
// kernel that makes it to the last kernel that reads it): with static sizes, greedily by size,
// each buffer at the lowest offset free over its lifetime; with symbolic sizes, a slot is reused
// only by a later buffer of the very same size expression.
//
// Kernels side by side (ScheduledProgram::side_by_side) run in no fixed order between lanes: every
// buffer a group's kernels touch is alive over the whole group, and no result there takes an
// operand's bytes.
//
// A library call's epilogue may write its result over an operand that dies in that kernel (a
// residual add after a block's last convolution: out = relu(conv(h) + x), x read nowhere after):
// the epilogue reads each element of the operand at the point it stores, so the result takes the
// operand's bytes (MemoryPlan::in_place_of) and the two are placed as one buffer. A backend may
// then have the library accumulate into that memory (oneDNN's sum post-op: codegen/cpp).
#include <algorithm>
#include <set>

#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

namespace {

struct Lifetime {
  int buffer;
  int first;
  int last;
  SymInt bytes;
};

// Whether `expr` loads `buffer`, and only plainly at `index` (no mask, no indirection).
bool loads_only_at(const Expr& expr, int buffer, const SymInt& index, bool& loads) {
  bool plain = true;
  visit(expr, [&](const ExprNode& node) {
    if (node.kind != ExprKind::Load || node.buffer != buffer) return;
    loads = true;
    plain = plain && !node.mask && node.indirect.empty() && node.index == index;
  });
  return plain;
}

// The epilogue outputs that take the memory of an operand dying in their kernel (see the file's
// comment): result buffer -> operand buffer. A library call's kernel with one pointwise step,
// whose output and the operand are intermediates of the same dtype and shape, the operand not an
// input of the call itself, read by the step only at the point it stores, and by no later kernel.
std::map<int, int> in_place_results(const SchedulingState& state, const std::map<int, Lifetime>& lives) {
  const LoopProgram& p = state.result.program;
  std::map<int, int> result;
  std::set<int> taken;
  auto side_by_side = [&](int kernel) {
    return std::any_of(state.result.side_by_side.begin(), state.result.side_by_side.end(), [&](const SideBySide& g) {
      return kernel >= g.first && kernel < g.first + g.lane0 + g.lane1;
    });
  };
  for (const Kernel& kernel : state.result.kernels) {
    if (kernel.kind != KernelKind::Extern || kernel.steps.size() != 1 || side_by_side(kernel.id)) continue;
    const KernelStep& step = kernel.steps[0];
    if (step.kind != KernelStep::Kind::StoreOuter || step.outputs.size() != 1 || step.stash_buffer >= 0) continue;
    const ExternCall& call = p.nodes[size_t(kernel.extern_node)].extern_call;
    if (call.kind == ExternKind::Fallback) continue;
    const int out = step.outputs[0];
    auto out_life = lives.find(out);
    if (out_life == lives.end()) continue;
    for (int operand : loaded_buffers(step.body)) {
      auto life = lives.find(operand);
      // The operand holds a value of the result's own shape (a [n] bias read along a [1, n]
      // product's row also meets the point the step stores, once its size-1 dim is gone; a library
      // call may read a bias while it writes the result, as cuBLASLt's fused epilogue does).
      if (life == lives.end() || taken.count(operand) || life->second.last != kernel.id ||
          !(life->second.bytes == out_life->second.bytes) || p.buffer(operand).dtype != p.buffer(out).dtype ||
          !(p.buffer(operand).shape == p.buffer(out).shape))
        continue;
      bool called_with = false;
      for (const StridedView& view : call.inputs) called_with = called_with || view.buffer == operand;
      for (const StridedView& view : call.outputs) called_with = called_with || view.buffer == operand;
      bool loads = false;
      if (called_with || !loads_only_at(step.body, operand, step.store_index, loads) || !loads) continue;
      result[out] = operand;
      taken.insert(operand);
      break;
    }
  }
  return result;
}

}  // namespace

void plan_memory(SchedulingState& state) {
  const LoopProgram& p = state.program();
  std::vector<Lifetime> lifetimes;
  std::set<int> registers(state.result.register_buffers.begin(), state.result.register_buffers.end());
  const std::vector<std::vector<int>> readers = p.readers_by_buffer();
  for (const Buffer& b : p.buffers) {
    if (b.kind != BufferKind::Intermediate || registers.count(b.id)) continue;
    auto made = state.produced.find(b.id);
    if (made == state.produced.end()) continue;  // inlined away
    int last = made->second.kernel;
    for (int reader : readers[size_t(b.id)]) {
      if (!state.alive[size_t(reader)]) continue;
      for (const Kernel& kernel : state.result.kernels) {
        if (std::find(kernel.nodes.begin(), kernel.nodes.end(), reader) != kernel.nodes.end()) {
          last = std::max(last, kernel.id);
        }
      }
    }
    SymInt bytes = numel(b.shape) * SymInt(int64_t(dtype_size(b.dtype)));
    bytes = floordiv(bytes + 63, 64) * 64;
    int first = made->second.kernel;
    for (const SideBySide& g : state.result.side_by_side) {
      const int g_last = g.first + g.lane0 + g.lane1 - 1;
      if (first > g_last || last < g.first) continue;
      first = std::min(first, g.first);
      last = std::max(last, g_last);
    }
    lifetimes.push_back({b.id, first, last, bytes});
    state.result.memory.lifetimes[b.id] = {first, last, bytes};
  }
  SymInt naive = 0;
  bool all_static = true;
  for (const Lifetime& l : lifetimes) {
    naive = naive + l.bytes;
    all_static = all_static && l.bytes.is_constant();
  }
  state.result.memory.naive_bytes = naive;
  // A result in place of an operand joins the operand's buffer (and a chain of them, the first
  // operand's): one lifetime from the operand's first kernel to the result's last.
  std::map<int, Lifetime> lives;
  for (const Lifetime& l : lifetimes) lives[l.buffer] = l;
  const std::map<int, int> in_place = in_place_results(state, lives);
  state.result.memory.in_place_of = in_place;
  auto root = [&](int buffer) {
    for (auto at = in_place.find(buffer); at != in_place.end(); at = in_place.find(buffer)) buffer = at->second;
    return buffer;
  };
  std::map<int, std::vector<int>> members;  // root -> the buffers placed with it
  for (Lifetime& l : lifetimes) {
    const int r = root(l.buffer);
    members[r].push_back(l.buffer);
    if (r == l.buffer) continue;
    Lifetime& joined = lives[r];
    joined.first = std::min(joined.first, l.first);
    joined.last = std::max(joined.last, l.last);
  }
  auto place = [&](int buffer, const SymInt& offset) {
    for (int member : members[buffer]) state.result.memory.offsets[member] = offset;
  };
  std::vector<Lifetime> placed_lifetimes;
  for (const Lifetime& l : lifetimes)
    if (root(l.buffer) == l.buffer) placed_lifetimes.push_back(lives[l.buffer]);
  lifetimes = std::move(placed_lifetimes);
  if (all_static) {
    // Greedy by size: the largest buffers first, each at the lowest offset free over its lifetime.
    std::vector<Lifetime> order = lifetimes;
    std::stable_sort(order.begin(), order.end(),
                     [](const Lifetime& a, const Lifetime& b) { return a.bytes.constant() > b.bytes.constant(); });
    struct Placed {
      int64_t offset, size;
      int first, last;
    };
    std::vector<Placed> placed;
    int64_t peak = 0;
    for (const Lifetime& l : order) {
      int64_t size = l.bytes.constant();
      std::vector<std::pair<int64_t, int64_t>> busy;
      for (const Placed& q : placed) {
        if (q.first <= l.last && l.first <= q.last) busy.push_back({q.offset, q.offset + q.size});
      }
      std::sort(busy.begin(), busy.end());
      int64_t offset = 0;
      for (auto [begin, end] : busy) {
        if (offset + size <= begin) break;
        offset = std::max(offset, end);
      }
      placed.push_back({offset, size, l.first, l.last});
      place(l.buffer, offset);
      peak = std::max(peak, offset + size);
    }
    state.result.memory.peak_bytes = peak;
    return;
  }
  // Symbolic sizes: a slot is reused only by a buffer of the very same size expression.
  struct Slot {
    SymInt offset, bytes;
    int free_after;
  };
  std::vector<Slot> slots;
  SymInt end = 0;
  std::vector<Lifetime> order = lifetimes;
  std::stable_sort(order.begin(), order.end(), [](const Lifetime& a, const Lifetime& b) { return a.first < b.first; });
  for (const Lifetime& l : order) {
    Slot* reuse = nullptr;
    for (Slot& slot : slots) {
      if (slot.free_after < l.first && slot.bytes == l.bytes) {
        reuse = &slot;
        break;
      }
    }
    if (reuse) {
      reuse->free_after = l.last;
      place(l.buffer, reuse->offset);
    } else {
      slots.push_back({end, l.bytes, l.last});
      place(l.buffer, end);
      end = end + l.bytes;
    }
  }
  state.result.memory.peak_bytes = end;
}

}  // namespace kiln::codegen::scheduling
