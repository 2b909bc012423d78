// The scheduled program: the loop IR grouped into kernels, with loop order and a memory plan.
// This is what every backend prints (codegen/cpp, codegen/cuda); it is backend-neutral.
//
// The scheduler (codegen/scheduler.cpp runs the stages; codegen/schedule_stages.h lists the
// files that implement them):
//   1. inlines pointwise nodes into their readers (vertical fusion, and pointwise producers into
//      reduction loads) unless the value must exist in memory (a graph output, an extern's input,
//      an expensive value read by several nodes, or a read the index analysis cannot invert);
//   2. groups what remains into kernels: a reduction kernel iterates its outer range and runs
//      several row loops per outer point (reductions over the same ranges, pointwise consumers over
//      the row or over the outer point) so softmax and layer_norm are one kernel each; pointwise
//      nodes over the same range share a kernel (vertical and horizontal fusion); a pointwise node
//      that reads only a GEMM's output becomes that GEMM's epilogue, applied per block of rows
//      while the block is in cache;
//   3. stashes: when a row step recomputes exactly the value an earlier reduction of the kernel
//      reduced, and that value is expensive (it applies an op of the loop op table's expensive
//      cost class, codegen/loop_ops.h), the reduction stores it in the row step's output and the
//      row step reads it back (softmax computes each exp once, as ATen's kernel does); before
//      that, an exp of a value minus its max reduced in the same kernel becomes exp_nonpositive
//      (its argument is <= 0 or NaN: no overflow select), 1 + erf(a) one_plus_erf(a) (GELU's,
//      one exp where erf takes two branches), and 1 + tanh(a) 2 sigmoid(2a) (GELU's tanh form,
//      one exp where tanh takes two branches);
//   4. coalesces dims that every access walks contiguously, drops size-1 dims, and splits a
//      pointwise kernel's dim where its indices divide it (a copy out of a permuted view);
//   5. where the target asks (SideBySideOptions), orders runs of small independent kernels (the
//      directions of a bidirectional recurrent layer) into groups of two lanes that run side by
//      side, each on one thread;
//   6. plans memory: every intermediate buffer that still exists gets an offset in one workspace
//      by liveness (buffers whose lifetimes do not overlap share bytes); a library call's
//      epilogue writes its result over an operand that dies there (a residual), in place.
// KILN_LOG=fusion prints each decision that kept two nodes apart and why.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/loop_ir.h"

namespace kiln::codegen {

enum class KernelKind { Pointwise, Reduction, Extern };

// One loop of a kernel. Expressions and the store index are over the kernel's variables:
// outer x0..x{outer-1} and inner (row) r0..r{inner-1}.
struct KernelStep {
  enum class Kind {
    Reduce,      // a reduction over the inner range, once per outer point
    StoreInner,  // a pointwise loop over the inner range, once per outer point
    StoreOuter,  // one value per outer point (a pointwise kernel has only these)
  };
  Kind kind = Kind::StoreOuter;
  int node = -1;             // the loop node this step computes
  Expr body;                 // value per point (Reduce: per inner point, accumulated)
  ReductionKind reduction = ReductionKind::Sum;
  std::vector<int> outputs;  // buffers (Welford: {mean, m2})
  SymInt store_index;        // where each output element goes (contiguous over the node's ranges)
  // Reduce only: also store each value reduced into `stash_buffer` at `stash_index` (a later
  // row step of the kernel reads it back instead of computing it again: softmax's exp).
  int stash_buffer = -1;
  SymInt stash_index;
};

struct Kernel {
  int id = -1;
  std::string name;  // kernel3_softmax: a C identifier
  KernelKind kind = KernelKind::Pointwise;
  SymShape outer;    // outer ranges, after coalescing (parallelized)
  SymShape inner;    // inner (row) ranges of a reduction kernel
  std::vector<KernelStep> steps;
  int extern_node = -1;             // Extern: the loop node of the library call
  std::vector<int> nodes;           // loop nodes fused into this kernel, in order
  std::vector<std::string> origins;  // graph nodes computed here
};

// When a planned buffer is alive: from the kernel that makes it to the last kernel that reads it
// (kernel ids), and the bytes it takes in the workspace (its size rounded up to 64).
struct BufferLifetime {
  int first_kernel = -1;
  int last_kernel = -1;
  SymInt bytes;
};

struct MemoryPlan {
  // Intermediate buffers that exist in memory: their byte offset in the workspace (64-aligned).
  std::map<int, SymInt> offsets;
  std::map<int, BufferLifetime> lifetimes;  // the same buffers: the liveness the offsets were planned by
  SymInt peak_bytes;  // workspace size
  SymInt naive_bytes;  // the sum of every planned buffer's size: what no reuse would need
  // A library call's epilogue result -> the operand whose bytes it takes (codegen/memory_plan.cpp):
  // the epilogue reads that operand only at the point it stores, and nothing reads it after.
  std::map<int, int> in_place_of;
};

// Kernels that run side by side (codegen/schedule_side_by_side.cpp): kernels [first, first + lane0)
// on one thread and [first + lane0, first + lane0 + lane1) on another, at the same time, each
// kernel on its thread alone (the directions of a bidirectional recurrent layer at batch 1). No
// kernel of one lane reads or writes a buffer that a kernel of the other writes, and the memory
// plan keeps every buffer that a group's kernels touch alive over the whole group. Run one after
// the other, in order, they compute the same.
struct SideBySide {
  int first = 0;
  int lane0 = 0;
  int lane1 = 0;
};

struct ScheduledProgram {
  LoopProgram program;  // the loop program after inlining (inlined nodes are gone from kernels)
  std::vector<Kernel> kernels;
  std::vector<SideBySide> side_by_side;  // in kernel order; empty unless ScheduleOptions asked
  MemoryPlan memory;
  // Buffers that live only in registers inside one kernel (reduction results and values consumed
  // where they are made): never stored.
  std::vector<int> register_buffers;
  std::vector<std::string> fusion_log;  // why nodes were kept apart (KILN_LOG=fusion prints it)
};

// Whether and when the scheduler may put kernels side by side: a target whose generated code runs
// two kernels at once on two threads (the CPU), and the work below which that target runs a loop
// or a GEMM on one thread anyway (such kernels, up to a few times that, may take a lane).
struct SideBySideOptions {
  bool enabled = false;
  int64_t loop_work = 32768;   // points, each expensive op (exp, tanh, ...) counted 8 more
  int64_t gemm_macs = 262144;  // multiply-adds
};

struct ScheduleOptions {
  bool fuse = true;  // false: one kernel per loop node, nothing inlined (for tests and debugging)
  SideBySideOptions side_by_side;
};

ScheduledProgram schedule(LoopProgram program, const ScheduleOptions& options = {});

// `kiln dump --stage scheduled`: each kernel with its ranges, steps and the graph nodes fused in,
// the groups side by side, then the memory plan.
// With `sources` (--show-source), each kernel's "fuses" line says where its nodes come from.
std::string print_schedule(const ScheduledProgram& scheduled, const std::map<std::string, std::string>* sources = nullptr);

}  // namespace kiln::codegen
