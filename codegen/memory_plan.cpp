// Stage 5 of the scheduler (codegen/schedule.h): the memory plan. Every intermediate buffer that
// still exists in memory gets a 64-byte-aligned offset in one workspace by liveness (from the
// kernel that makes it to the last kernel that reads it): with static sizes, greedily by size,
// each buffer at the lowest offset free over its lifetime; with symbolic sizes, a slot is reused
// only by a later buffer of the very same size expression.
#include <algorithm>
#include <set>

#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

void plan_memory(SchedulingState& state) {
  const LoopProgram& p = state.program();
  struct Lifetime {
    int buffer;
    int first;
    int last;
    SymInt bytes;
  };
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
    lifetimes.push_back({b.id, made->second.kernel, last, bytes});
    state.result.memory.lifetimes[b.id] = {made->second.kernel, last, bytes};
  }
  SymInt naive = 0;
  bool all_static = true;
  for (const Lifetime& l : lifetimes) {
    naive = naive + l.bytes;
    all_static = all_static && l.bytes.is_constant();
  }
  state.result.memory.naive_bytes = naive;
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
      state.result.memory.offsets[l.buffer] = offset;
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
      state.result.memory.offsets[l.buffer] = reuse->offset;
    } else {
      slots.push_back({end, l.bytes, l.last});
      state.result.memory.offsets[l.buffer] = end;
      end = end + l.bytes;
    }
  }
  state.result.memory.peak_bytes = end;
}

}  // namespace kiln::codegen::scheduling
