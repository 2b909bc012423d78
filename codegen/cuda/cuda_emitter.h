// The CUDA backend's code generator: prints a scheduled program (codegen/schedule.h) as one
// CUDA C++ source for NVRTC, and says how the host runs it, step by step. It shares the C-like
// printing of codegen/c_like/ with the C++ backend and differs where the targets differ:
//   - one `extern "C" __global__` function per scheduled kernel, named as the kernel;
//   - pointwise kernels: grid-stride loops over the flattened range; when the range is one
//     contiguous dim, 128-bit loads and stores (float4/int4 of 4-byte types) where every
//     pointer is 16-byte aligned (checked at run time), and a scalar tail;
//   - reduction kernels: one block per row (softmax, layer_norm, every StoreInner/StoreOuter
//     step of the row); each thread reduces a strided slice of the row, then warp shuffles and
//     a block reduction through shared memory give every thread the result
//     (codegen/cuda/kiln_cuda_reductions.h: sums, products, max/min, argmax/argmin, Welford);
//   - a whole-tensor reduction of at least `split_min_elements` runs as two kernels: `<name>_partial`
//     over a grid of blocks, each storing one partial state in the scratch area, then `<name>`
//     in one block combining them in order and finishing the kernel's steps;
//   - f16/bf16 are stored as __half/__nv_bfloat16 and computed in f32;
//   - GEMMs and fallback nodes are library calls made by the host (cuBLAS; the reference
//     kernel), never kernels; a GEMM's fused epilogue becomes a pointwise kernel run after it,
//     unless it is one cuBLASLt fuses into the product (bias, relu, GELU tanh:
//     codegen/cuda/gemm_epilogue.h): then the library step carries it and no kernel is emitted.
//
// How the host runs a module (the runtime's contract):
//   - compile `source` with NVRTC with `nvrtc_options` (plus -I<CUDA include dir> when
//     `uses_half`, for cuda_fp16.h / cuda_bf16.h), and look every launch's `name` up;
//   - bind the shape symbols (as the C++ backend's kiln_bind does), allocate the outputs and a
//     workspace of `workspace_bytes`; intermediate buffer b lives at workspace +
//     scheduled.memory.offsets[b]; the scratch area at workspace + `scratch_offset`;
//   - clear the module globals kiln_fault_zero_division and kiln_fault_index (int) before the
//     steps and, after them, report a set one as the C++ backend does (ZeroDivisionError /
//     IndexError);
//   - run `steps` in order on one stream: a Kernel step launches grid (x only, evaluated over
//     the symbols; skip the launch when it is 0) x block threads with `shared_bytes` of
//     dynamic shared memory and its arguments, each a pointer (void*) or an int64_t, packed as
//     cuLaunchKernel's kernelParams; a Library step runs the loop node's ExternCall: a Gemm
//     (row-major strided views, batch dims broadcast by stride 0) or a Fallback (the graph
//     node's reference kernel on the host, as the C++ backend's fallback handler does). A Gemm
//     step with an `epilogue` runs as one cuBLASLt call with that epilogue, writing
//     epilogue->output (through the GEMM output's view) instead of the GEMM's output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/gemm_epilogue.h"
#include "codegen/schedule.h"

namespace kiln::codegen::cuda {

struct CudaEmitOptions {
  std::string title = "model";      // named in the source's first comment
  int block_threads = 256;          // threads per block (a multiple of 32, at most 1024)
  int64_t max_grid_blocks = 65536;  // grid-stride kernels use at most this many blocks
  // A reduction kernel with no outer range whose row has at least this many elements splits
  // its row across up to `split_blocks` blocks.
  int64_t split_min_elements = 65536;
  int64_t split_blocks = 512;
};

// One kernel parameter, in order.
struct KernelArgument {
  enum class Kind {
    Buffer,   // the pointer of buffer `buffer` (input, parameter, output, or in the workspace)
    Symbol,   // the value of shape symbol `symbol`, as int64_t
    Scratch,  // workspace + CudaModule::scratch_offset
  };
  Kind kind = Kind::Buffer;
  int buffer = -1;
  std::string symbol;
};

struct KernelLaunch {
  std::string name;          // the extern "C" __global__ function
  SymInt grid;               // blocks in x, over the shape symbols
  int block = 256;           // threads in x
  int64_t shared_bytes = 0;  // dynamic shared memory
  std::vector<KernelArgument> arguments;
};

struct LaunchStep {
  enum class Kind { Kernel, Library };
  Kind kind = Kind::Kernel;
  int kernel = -1;      // the scheduled kernel (ScheduledProgram::kernels) this step belongs to
  KernelLaunch launch;  // Kernel
  int loop_node = -1;   // Library: the Extern loop node whose extern_call to run
  std::optional<FusedGemmEpilogue> epilogue;  // Library, Gemm only: run fused by cuBLASLt
};

struct CudaModule {
  std::string source;  // for NVRTC
  std::vector<std::string> nvrtc_options;
  bool uses_half = false;  // includes cuda_fp16.h and cuda_bf16.h
  std::vector<LaunchStep> steps;
  SymInt scratch_offset;   // bytes: where the scratch area starts in the workspace
  SymInt workspace_bytes;  // the memory plan's peak plus the scratch area
  std::vector<std::string> fallbacks;  // graph nodes the host runs on reference kernels, in step order
};

CudaModule emit_cuda(const ScheduledProgram& scheduled, const CudaEmitOptions& options = {});

// The launch steps as text, one line each: `launch name<<<grid, block, shared>>>(arguments)`
// or `library call: loop node N` (plus `, cublasLt epilogue E, bias bB at C, into bO` when
// fused), then the workspace size.
std::string launch_plan_text(const CudaModule& module);
// The module's source from its first kernel on (what follows the preludes): for dumps and goldens.
std::string kernels_text(const CudaModule& module);

// The module as host C++ for the CPU emulation (codegen/cuda/kiln_cuda_emulation.h): the
// emulation header, the source, and per kernel an entry point
//   extern "C" int kiln_emulate_<name>(unsigned grid, unsigned block, size_t shared_bytes,
//                                      void** params, char* error, size_t error_capacity)
// that runs it as cuLaunchKernel would (params as kernelParams); non-zero with a message in
// `error` when the emulation finds a fault (a missed barrier, a bad shuffle, ...).
std::string emulation_source(const CudaModule& module);

}  // namespace kiln::codegen::cuda
