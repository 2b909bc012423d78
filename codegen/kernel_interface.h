// The interface of some kernels of a scheduled program taken out on their own (`kiln kernel`'s
// standalone headers, codegen/cpp/kernel_header.h and codegen/cuda/cuda_kernel_header.h): which
// buffers the caller passes in, which it gets back, and which live only inside the selection.
// Backend-neutral: it reads the kernels' steps and library calls, never generated text.
#pragma once

#include <string>
#include <vector>

#include "codegen/schedule.h"

namespace kiln::codegen {

struct KernelInterface {
  // Read by the selection and written by none of its kernels: graph inputs in placeholder order
  // (every one when the selection is the whole program, used or not), parameters, then values
  // other kernels make, by id.
  std::vector<int> inputs;
  // Written by the selection and needed outside it: graph outputs in output order, then values
  // later kernels read, by id.
  std::vector<int> outputs;
  // Written and read only inside the selection (a workspace holds them), by id.
  std::vector<int> internal;
};

// `selected`: indices into scheduled.kernels. Registers (ScheduledProgram::register_buffers)
// are never part of an interface.
KernelInterface kernel_interface(const ScheduledProgram& scheduled, const std::vector<int>& selected);

// The entry's name in upper case, for the header's macros ("fused_gelu" -> "FUSED_GELU").
std::string macro_name(const std::string& entry);

}  // namespace kiln::codegen
