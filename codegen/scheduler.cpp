// The scheduler's driver: runs the stages of codegen/schedule.h in order (inlining, kernel
// formation, register buffers, stashes, range simplification, kernels side by side, the memory
// plan) over one SchedulingState (codegen/schedule_stages.h), and the fusion log they write.
#include <cstdlib>
#include <iostream>

#include "codegen/schedule.h"
#include "codegen/schedule_stages.h"
#include "runtime/log.h"

namespace kiln::codegen {

namespace scheduling {

void SchedulingState::note(const std::string& message) {
  result.fusion_log.push_back(message);
  if (log_to_stderr) std::cerr << "kiln[fusion]: " << message << "\n";
}

}  // namespace scheduling

namespace {

bool fusion_log_enabled() { return log_enabled("fusion"); }

}  // namespace

ScheduledProgram schedule(LoopProgram program, const ScheduleOptions& options) {
  scheduling::SchedulingState state;
  state.result.program = std::move(program);
  state.log_to_stderr = fusion_log_enabled();
  state.alive.assign(state.program().nodes.size(), true);
  if (options.fuse) scheduling::inline_pointwise(state);
  scheduling::form_kernels(state, options.fuse);
  scheduling::find_register_buffers(state);
  for (Kernel& kernel : state.result.kernels) scheduling::mark_shifted_exps(kernel);
  for (Kernel& kernel : state.result.kernels) scheduling::spell_erf_complements(kernel);
  for (Kernel& kernel : state.result.kernels) scheduling::spell_tanh_complements(kernel);
  for (Kernel& kernel : state.result.kernels) scheduling::stash_reduced_values(state.program(), kernel);
  for (Kernel& kernel : state.result.kernels) scheduling::simplify_ranges(kernel);
  for (Kernel& kernel : state.result.kernels) scheduling::read_loop_indices_directly(state.program(), kernel);
  if (options.side_by_side.enabled && state.program().batch_chunks.chunks <= 1)
    scheduling::place_side_by_side(state, options.side_by_side);
  scheduling::plan_memory(state);
  return std::move(state.result);
}

}  // namespace kiln::codegen
