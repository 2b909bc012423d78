// The interface of a selection of kernels (see codegen/kernel_interface.h).
#include "codegen/kernel_interface.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace kiln::codegen {

namespace {

// The buffers a kernel reads and writes in memory.
void kernel_accesses(const ScheduledProgram& s, const Kernel& kernel, std::set<int>& reads, std::set<int>& writes) {
  for (const KernelStep& step : kernel.steps) {
    for (int b : loaded_buffers(step.body)) reads.insert(b);
    for (int b : step.outputs) writes.insert(b);
    if (step.stash_buffer >= 0) writes.insert(step.stash_buffer);
  }
  if (kernel.extern_node >= 0) {
    const ExternCall& call = s.program.nodes[size_t(kernel.extern_node)].extern_call;
    for (const StridedView& v : call.inputs) reads.insert(v.buffer);
    for (const StridedView& v : call.outputs) writes.insert(v.buffer);
  }
  for (int r : s.register_buffers) {
    reads.erase(r);
    writes.erase(r);
  }
}

// Appends the ids of `order` that are in `from` and not yet in `to`.
void add_in_order(const std::vector<int>& order, const std::set<int>& from, std::vector<int>& to) {
  for (int id : order)
    if (from.count(id) && std::find(to.begin(), to.end(), id) == to.end()) to.push_back(id);
}

}  // namespace

KernelInterface kernel_interface(const ScheduledProgram& scheduled, const std::vector<int>& selected) {
  const LoopProgram& p = scheduled.program;
  std::set<int> reads, writes, read_elsewhere;
  std::set<int> chosen(selected.begin(), selected.end());
  for (size_t k = 0; k < scheduled.kernels.size(); ++k) {
    std::set<int> r, w;
    kernel_accesses(scheduled, scheduled.kernels[k], r, w);
    if (chosen.count(int(k))) {
      reads.insert(r.begin(), r.end());
      writes.insert(w.begin(), w.end());
    } else {
      read_elsewhere.insert(r.begin(), r.end());
    }
  }
  if (chosen.size() == scheduled.kernels.size()) reads.insert(p.inputs.begin(), p.inputs.end());
  KernelInterface interface;
  std::set<int> read_only, visible;
  for (int id : reads)
    if (!writes.count(id)) read_only.insert(id);
  add_in_order(p.inputs, read_only, interface.inputs);
  add_in_order(p.parameters, read_only, interface.inputs);
  add_in_order(std::vector<int>(read_only.begin(), read_only.end()), read_only, interface.inputs);
  for (int id : writes)
    if (p.buffer(id).kind == BufferKind::Output || read_elsewhere.count(id)) visible.insert(id);
  add_in_order(p.outputs, visible, interface.outputs);
  add_in_order(std::vector<int>(visible.begin(), visible.end()), visible, interface.outputs);
  for (int id : writes)
    if (!visible.count(id)) interface.internal.push_back(id);
  return interface;
}

std::string macro_name(const std::string& entry) {
  std::string text = entry;
  for (char& c : text) c = char(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace kiln::codegen
