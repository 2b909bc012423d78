// PlanRunner: runs a launch plan (runtime/cuda/launch_plan.h) on a PlanDevice
// (runtime/cuda/plan_device.h), with runtime/ types only. A run:
//   1. checks the inputs against the plan (count, dtype, rank, every size, each symbol within its
//      range; GuardError names the input, the dim and both values) and binds the shape symbols
//      from them (bind_launch_plan: no device needed);
//   2. places every buffer: inputs uploaded (contiguous copies), parameters uploaded at their
//      first use and kept on the device (parameter_changed() refreshes one), outputs and one
//      workspace allocated (intermediates at their offsets in it, the scratch area at
//      scratch_offset);
//   3. clears the module's fault flags (kiln_fault_zero_division, kiln_fault_index: the
//      generated code's contract, codegen/cuda/cuda_emitter.h), then runs the steps in order:
//      kernel launches (a grid of 0 blocks is skipped), GEMMs as the calls of
//      runtime/cuda/gemm_plan.h's plan_strided_gemm (one fused call for a gemm_lt step), and
//      fallback nodes on the host through the FallbackHandler (the buffers they touch copied to
//      the host and back);
//   4. downloads the outputs, and reports a set fault flag as the generated C++ does
//      (ZeroDivisionError, IndexError).
// The run's device memory is freed however it ends (after the stream drains; not when the
// device failed, as its memory is then unsafe to reuse). One run at a time per runner.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/artifact.h"
#include "runtime/cuda/launch_plan.h"
#include "runtime/cuda/plan_device.h"
#include "kiln/tensor.h"

namespace kiln::cuda {

// Step 1 of a run: the shape symbols' values for `inputs` (plan.symbols order). Throws
// GuardError (kiln/error.h) for an input the plan does not take, kiln::Error for a wrong count,
// an undefined input or one that is not on the host.
std::vector<int64_t> bind_launch_plan(const LaunchPlan& plan, const std::vector<Tensor>& inputs);

class PlanRunner {
 public:
  // `plan` and `device` must outlive the runner.
  PlanRunner(const LaunchPlan& plan, PlanDevice& device);
  ~PlanRunner();  // frees the parameters' device copies
  PlanRunner(const PlanRunner&) = delete;
  PlanRunner& operator=(const PlanRunner&) = delete;

  // `inputs` in plan.inputs order (any strides), `parameters` in plan.parameters order (each of
  // exactly its buffer's dtype and shape); returns fresh contiguous host outputs in plan.outputs
  // order. `fallback` is required when the plan has fallback steps.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                          const FallbackHandler& fallback);

  // Parameter `index`'s host value changed: it is uploaded again at the next run.
  void parameter_changed(size_t index);

  // The device's time for the last run's steps (PlanDevice::steps_milliseconds).
  double last_steps_milliseconds() const { return last_steps_milliseconds_; }

  // bind_launch_plan(plan, inputs).
  std::vector<int64_t> bind(const std::vector<Tensor>& inputs) const;

 private:
  const LaunchPlan& plan_;
  PlanDevice& device_;
  std::vector<CUdeviceptr> parameters_;  // device copies by parameter position; 0: not uploaded
  double last_steps_milliseconds_ = -1;
};

}  // namespace kiln::cuda
