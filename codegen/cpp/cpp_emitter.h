// The C++ backend: prints a scheduled program (codegen/schedule.h) as one C++ source file that
// implements the compiled-artifact ABI (runtime/compiled_abi.h): one function per kernel,
// outer loops shared among threads when the work is large (the module's thread pool, or OpenMP), `omp simd` inner loops (the ISA is chosen by the
// compiler flags: AVX-512, AVX2 or scalar), reductions in 16 vector lanes, GEMMs through CBLAS
// with fused epilogues applied per block of rows, channels-last convolutions through oneDNN
// with fused epilogues, and a wrapper that checks guards, binds
// symbols, places buffers in the workspace and calls the kernels in order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codegen/schedule.h"

namespace kiln::codegen {

struct CppEmitOptions {
  std::string title = "model";  // named in the file's first comment
  // A loop nest with fewer elements of work than this runs on one thread (no parallel region).
  int64_t parallel_threshold = 32768;
  // Row blocking of GEMM epilogues: rows per block. Each block is one BLAS call, which packs the
  // whole right operand again, so blocks are large: the epilogue reads a block back from L2/L3.
  int64_t gemm_block_rows = 1024;
  // The parameters never change between calls (the model was compiled with frozen parameters):
  // library calls may keep derived copies of them (convolution weights prepacked once).
  bool constant_parameters = false;
  // The module may call oneDNN (LoopProgram::library_matmul: Kiln was built with it, and a
  // package asked for it): an f32 GEMM whose right operand is a parameter calls oneDNN's matmul
  // (codegen/cpp/kiln_dnnl.h) instead of OpenBLAS: with constant_parameters that operand is
  // prepacked once (OpenBLAS packs it again on every call); without, oneDNN reads it in place on
  // every call, where the GEMM has kTeamMacs multiply-adds or more (OpenBLAS below that).
  bool library_matmul = false;
  // How parallel loops run: on the module's own thread pool (codegen/cpp/kiln_thread_pool.h:
  // the caller takes chunks and never waits for a worker that has not started; GEMMs are split
  // into row blocks, each a one-thread BLAS call); on OpenMP's team through the module's own
  // runner (codegen/cpp/kiln_openmp_team.h: libgomp's ABI, no OpenMP lowering asked of the
  // compiler); or as `#pragma omp parallel` regions (one per loop; standalone kernel headers,
  // which must build without either runner, with or without -fopenmp). emit_cpp turns Pool into
  // Team for a module whose library calls are mostly oneDNN convolutions, or mostly frozen GEMMs
  // that oneDNN's team runs whole (cpp_emitter.cpp).
  // Modules (Pool, Team) ask only `omp simd` of the compiler (-fopenmp-simd).
  enum class Threading { Pool, Team, OpenMP };
  Threading threading = Threading::Pool;
  // Team because the module's frozen GEMMs all run whole on the team (emit_cpp): they run as
  // oneDNN's matmul there. A convolution network's team keeps its few GEMMs (squeeze-and-excitation
  // layers of one row, a classifier) on BLAS: as oneDNN's matmul MobileNet-v3 small b1 took
  // 1.05-1.14 against 1.02-1.04 ms.
  bool team_library_matmul = false;
};

struct CppModule {
  std::string source;
  // source[fixed_begin, fixed_end): the text every module of this threading starts with, the
  // same for all of them (prelude, runner, op layer; the title line before it is the model's),
  // which a build may take from a precompiled header instead (compiler/targets/cpu_target.cpp).
  size_t fixed_begin = 0, fixed_end = 0;
  // Where the module's parts are, so that a build may compile its kernels in several translation
  // units at once: source[fixed_end, kernels_begin) is what every unit needs besides the fixed
  // text (support functions, the oneDNN glue), each kernel's function a span with a declaration
  // for the unit that calls it, and source[entries_begin, end) the entry points (kiln_run calls
  // the kernels). Kernels have external linkage, hidden in the module, and the state that loops
  // share (the thread pool) is one inline variable, so that units link into one module.
  struct KernelSpan {
    size_t begin = 0, end = 0;
    std::string declaration;  // "int32_t kernel0_x(void* const*, const int64_t*, const KilnRunArgs*);"
  };
  size_t kernels_begin = 0, entries_begin = 0;
  std::vector<KernelSpan> kernel_spans;
  std::vector<std::string> fallbacks;  // graph nodes run by the host's reference kernels, in ABI order
  bool uses_blas = false;
  bool uses_dnnl = false;  // the module calls oneDNN (codegen/cpp/kiln_dnnl.h): link it
};

CppModule emit_cpp(const ScheduledProgram& scheduled, const CppEmitOptions& options = {});

// What a standalone kernel header (codegen/cpp/kernel_header.h) takes from the module emit_cpp
// prints: each kernel's function exactly as the module has it, and the support text kernels
// call, in forms that a header can define in every translation unit that includes it (static
// inline helpers; no declaration of OpenMP's or the ABI's functions).
struct CppKernelParts {
  std::string reductions;              // the OpenMP reductions that reduction kernels name
  std::string blas;                    // GEMM kernels' support: messages, CBLAS declarations, layouts
  std::vector<std::string> kernels;    // one function per kernel of `scheduled`, in order
};

CppKernelParts emit_cpp_kernel_parts(const ScheduledProgram& scheduled, const CppEmitOptions& options = {});

// The host side of the compiled-artifact ABI (runtime/compiled_abi.h) for `scheduled`, exactly as
// a module prints it, for code that runs its kernels elsewhere (a CUDA package's host code,
// codegen/package/cuda_package_sources.h): the size arithmetic (kiln_imax, kiln_imin,
// kiln_floordiv, kiln_mod), kiln_message and the dtype names, then kiln_abi_version, kiln_bind
// (every guard: dtypes, ranks, sizes, symbol ranges, strides) and kiln_output_sizes. It
// declares the ABI's types no more than it defines kiln_workspace_bytes or kiln_run.
std::string emit_cpp_guard_entry_points(const ScheduledProgram& scheduled);

}  // namespace kiln::codegen
