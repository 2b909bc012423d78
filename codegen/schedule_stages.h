// The scheduler's stages and the state they share, for the files that implement them (each
// stage's guarantee is stated in codegen/schedule.h): inlining (schedule_inlining.cpp), kernel
// formation (schedule_fusion.cpp), register buffers (schedule_registers.cpp), exps of values
// minus their max (schedule_shifted_exps.cpp), the complements of erf and tanh
// (schedule_erf_complements.cpp, schedule_tanh_complements.cpp), stashes
// (schedule_stashes.cpp), range simplification (schedule_ranges.cpp), direct loop indices
// (schedule_direct_indices.cpp), kernels side by side (schedule_side_by_side.cpp) and the memory plan
// (memory_plan.cpp).
// codegen/scheduler.cpp runs them in order. Internal to codegen/.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/schedule.h"

namespace kiln::codegen::scheduling {

// Where a buffer is produced: its kernel and the kind of step that stores it.
struct Placement {
  int kernel = -1;
  KernelStep::Kind kind = KernelStep::Kind::StoreOuter;
};

struct SchedulingState {
  ScheduledProgram result;            // the program being scheduled and the kernels formed so far
  std::vector<bool> alive;            // per loop node: false once inlined into its readers
  std::map<int, Placement> produced;  // buffer id -> where it is produced (kernel formation sets it)
  bool log_to_stderr = false;         // KILN_LOG=fusion

  LoopProgram& program() { return result.program; }
  // Records why two nodes were kept apart (and prints it when logging).
  void note(const std::string& message);
};

// 1. Inlines pointwise nodes into their readers where every read maps back to its elements.
void inline_pointwise(SchedulingState& state);
// 2. Groups the live nodes into kernels (with fusion unless `fuse` is false); sets `produced`.
void form_kernels(SchedulingState& state, bool fuse);
// Buffers that live only in registers inside one kernel.
void find_register_buffers(SchedulingState& state);
// Whether two expressions compute the same value the same way (equal trees; schedule_stashes.cpp).
bool same_expr(const Expr& a, const Expr& b);

// Spells exp(v - max(v)), where the max is a reduction of the same kernel, as exp_nonpositive.
void mark_shifted_exps(Kernel& kernel);
// Whether `expr` is the floating constant 1 (the complements below are of 1 + f(a) and 1 - f(a)).
inline bool is_float_one(const Expr& expr) {
  return expr->kind == ExprKind::Constant && is_floating(expr->dtype) && expr->float_value == 1.0;
}
// Spells 1 + erf(a) as one_plus_erf(a) and 1 - erf(a) as one_plus_erf(-a).
void spell_erf_complements(Kernel& kernel);
// Spells 1 + tanh(a) as 2 sigmoid(2a) and 1 - tanh(a) as 2 sigmoid(-2a).
void spell_tanh_complements(Kernel& kernel);
// 3. Lets a row step read back the values an earlier reduction of `kernel` computed.
void stash_reduced_values(const LoopProgram& program, Kernel& kernel);
// 4. Drops size-1 dims and merges dims every access walks contiguously.
void simplify_ranges(Kernel& kernel);
// Loads through an index that is the loop variable itself, within the indexed dim, become direct.
void read_loop_indices_directly(const LoopProgram& program, Kernel& kernel);
// 5. Orders independent small kernels into groups that run side by side (ScheduledProgram::
// side_by_side); renumbers the kernels and `produced` to the new order.
void place_side_by_side(SchedulingState& state, const SideBySideOptions& options);
// 6. Places every intermediate buffer in memory in the workspace by liveness.
void plan_memory(SchedulingState& state);

}  // namespace kiln::codegen::scheduling
