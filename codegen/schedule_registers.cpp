// The scheduler's register buffers (codegen/schedule.h): an intermediate buffer stored by a
// step over the outer point (or reduced) and read only inside its own kernel never goes to
// memory; backends keep it in a local.
#include <algorithm>

#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

void find_register_buffers(SchedulingState& state) {
  const LoopProgram& p = state.program();
  const std::vector<std::vector<int>> readers = p.readers_by_buffer();
  for (const Kernel& kernel : state.result.kernels) {
    if (kernel.kind == KernelKind::Extern) continue;
    for (const KernelStep& step : kernel.steps) {
      if (step.kind == KernelStep::Kind::StoreInner) continue;
      for (int b : step.outputs) {
        if (p.buffer(b).kind != BufferKind::Intermediate) continue;
        bool only_here = true;
        for (int reader : readers[size_t(b)]) {
          if (!state.alive[size_t(reader)]) continue;
          if (std::find(kernel.nodes.begin(), kernel.nodes.end(), reader) == kernel.nodes.end()) only_here = false;
        }
        if (only_here) state.result.register_buffers.push_back(b);
      }
    }
  }
}

}  // namespace kiln::codegen::scheduling
