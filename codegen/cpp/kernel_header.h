// Standalone kernel headers (`kiln kernel`): some kernels of a scheduled program as one
// self-contained C++ header with a single entry function, for pasting into a project that does
// not use Kiln. The header holds the C++ backend's prelude, its op layer and the kernels' functions
// exactly as the compiled module prints them (codegen/cpp/cpp_emitter.h: emit_cpp_kernel_parts),
// all inside a namespace of the entry's name, so that several headers (and the same header in
// several translation units) link into one program; then the entry function, `static inline`,
// which lays out the buffers and calls the kernels in order.
//
// The entry's pointers: every buffer the selected kernels read and do not write (inputs,
// parameters, values other kernels made), then every buffer they write that a graph output is or
// another kernel reads; values made and read only inside the selection live in a caller-provided
// workspace (<name>_workspace_bytes says how large). Every symbolic size the code uses is an
// int64_t parameter. The comment block above the entry documents each of them, the layout
// assumed (contiguous, element alignment), the threads (OpenMP with -fopenmp, else the calling
// thread) and the instruction set (the loops are `omp simd` loops the compiler vectorizes for the
// ISA its flags enable: scalar, AVX2, AVX-512; <name>_isa names the one it chose).
#pragma once

#include <string>
#include <vector>

#include "codegen/schedule.h"

namespace kiln::codegen {

struct KernelHeaderOptions {
  std::string name;                  // the entry function: a C identifier (checked by the caller)
  std::vector<int> kernels;          // indices into scheduled.kernels, in order; empty: every kernel
  std::vector<std::string> description;  // the first comment's lines: what the header computes
  // The entry's name for the pointer of each graph output (by output position), where given.
  std::vector<std::string> output_names;
};

// Throws kiln::Error for a selection the header cannot hold: a convolution through oneDNN or a
// node run by the host's reference kernel (a fallback).
std::string emit_kernel_header(const ScheduledProgram& scheduled, const KernelHeaderOptions& options);

}  // namespace kiln::codegen
