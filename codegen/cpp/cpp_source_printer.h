// The C++ backend's printer (codegen/cpp/cpp_emitter.h says what it emits): one class whose
// parts live in one file each:
//   cpp_emitter.cpp        the module's outline, kernels, pointwise loops and row steps;
//   cpp_reductions.cpp     reduction kernels: lanes, the row loops, combining the lanes;
//   cpp_column_reductions.cpp  reduction kernels over blocks of outer points (pools over
//                          channels-last values);
//   cpp_library_calls.cpp  GEMMs through CBLAS and convolutions through oneDNN (with fused
//                          epilogues), and fallback calls;
//   cpp_entry_points.cpp   the support functions and the ABI's entry points (bind, sizes, run).
// Internal to codegen/cpp.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/c_like/c_printer.h"
#include "codegen/c_like/c_source_writer.h"
#include "codegen/cpp/cpp_emitter.h"

namespace kiln::codegen {

class CppSourcePrinter : public CPrinter {
 public:
  CppSourcePrinter(const ScheduledProgram& scheduled, const CppEmitOptions& options)
      : CPrinter(scheduled, cpp_dialect()), options_(options) {}

  CppModule run();
  CppKernelParts kernel_parts();
  std::string guard_entry_points();

 private:
  static constexpr int kLanes = 16;  // reduction lanes: one AVX-512 register of f32, two of AVX2

  // The names and sizes one Reduce step's code shares (cpp_reductions.cpp).
  struct ReduceStepText {
    ReductionKind kind = ReductionKind::Sum;
    DType at = DType::f32;  // the accumulation dtype
    std::string t;          // its C type
    std::string n;          // the step's number: the suffix of its locals
    int lanes = kLanes;
    std::string L, L1;      // lanes and lanes + 1, as text
    bool arg = false, welford = false;
    std::string acc, idx, mean, m2, cnt;  // the lane arrays
  };

  // ---- cpp_emitter.cpp: shared pieces, kernels, pointwise loops, row steps
  void declare_symbols();
  void declare_buffers(const std::set<int>& ids);
  std::set<int> kernel_buffers(const Kernel& kernel);
  // The kernel function's signature (no body, no semicolon).
  std::string kernel_signature(const Kernel& kernel);
  // "#pragma omp parallel for ..." when the work can be large, else nothing.
  std::string parallel_pragma(const SymInt& work, const std::string& clauses);
  bool uses_pool() const { return options_.threading == CppEmitOptions::Threading::Pool; }
  // Whether parallel loops go through a runner of the module (the pool's or the team's) rather
  // than `#pragma omp parallel` (standalone headers).
  bool uses_runner() const { return options_.threading != CppEmitOptions::Threading::OpenMP; }
  // The runner's function (kiln_parallel_for or kiln_team_for) and its thread count, as text.
  std::string runner() const { return uses_pool() ? "kiln_parallel_for" : "kiln_team_for"; }
  std::string runner_threads() const { return uses_pool() ? "kiln_pool_threads()" : "kiln_team_threads()"; }
  // One loop of a nest: `var` runs over [0, extent) in steps of `step`.
  struct LoopDim {
    std::string var, extent;
    int64_t step = 1;
  };
  // The loops over `dims` with `body` inside, shared among threads when `work` can reach the
  // parallel threshold: an OpenMP `parallel for` with `omp_clauses` (collapse, simd, ...), or
  // chunks of the flattened nest given to the module's runner (the pool's or the team's).
  // `simd`: the nest is one loop that is also a simd loop. On the pool, where `on_team_` names a
  // flag of the generated code, the chunks go to OpenMP's team instead while that flag is set.
  void parallel_loops(const SymInt& work, const std::vector<LoopDim>& dims, const std::string& omp_clauses, bool simd,
                      const std::function<void()>& body);
  // The runner's call with `arguments` ("(kiln_n, kiln_chunk);"): on OpenMP's team instead while
  // on_team_ is set, or on whichever of the team and the pool is awake (team_beside_pool_).
  void runner_call(const std::string& arguments);
  // `#pragma omp simd` for a loop of the kernel being printed, followed by KILN_INTERLEAVE_SIMD
  // (kiln_prelude.h) when its body applies an expensive op (interleave_simd_).
  void simd_pragma();
  // The outer dims [0, count) of `outer` as loops.
  std::vector<LoopDim> loop_dims(const SymShape& outer, size_t count);
  // Stores (or keeps in a register) every output of a pointwise step, from value `v` of `from`.
  void store_outputs(const KernelStep& step, const std::string& value, DType from);
  void emit_point_step(const KernelStep& step, int number);
  // A loop nest over the inner (row) ranges; `body` writes the innermost statements.
  void inner_loops(const SymShape& inner, size_t from, const std::function<void()>& body);
  void emit_row_step(const Kernel& kernel, const KernelStep& step, int number);
  bool depends_on_row(const Expr& e, size_t inner_rank);
  Expr hoist_row_invariants(const Expr& e, size_t inner_rank, std::vector<std::pair<std::string, Expr>>& hoisted);
  void emit_kernel(const Kernel& kernel);
  void outer_loops(const SymShape& outer, size_t from, const std::function<void()>& body, bool simd_innermost);
  void emit_pointwise_kernel(const Kernel& kernel);
  // The innermost loop of a pointwise kernel split where comparisons of its variable with
  // constants change (a cat's pieces), each piece's loop with them decided; false (nothing
  // printed) when there is no such comparison or the dim is symbolic.
  bool emit_piecewise_inner_loops(const Kernel& kernel, const SymInt& work);
  // The same for the outer dims (a stack or cat along them: an unrolled recurrent layer's steps):
  // inside the outer loops, one branch per piece of each cut dim, its steps with the comparisons
  // decided, then the innermost loop (split in turn where it is cut); false (nothing printed)
  // when no outer dim is cut or the pieces would be too many.
  bool emit_piecewise_outer_dims(const Kernel& kernel, const SymInt& work);
  void emit_outer_pieces(const Kernel& kernel, const std::vector<std::vector<int64_t>>& bounds, size_t dim);
  // Pieces [bounds[i], bounds[i + 1]) of the innermost loop, each with its comparisons decided.
  void emit_inner_pieces(const Kernel& kernel, const std::vector<int64_t>& bounds);
  // The cut points strictly inside dim `dim` of the kernel's outer ranges, as piece bounds
  // {0, cuts..., extent}; empty when the dim is symbolic or uncut.
  std::vector<int64_t> piece_bounds(const Kernel& kernel, size_t dim);
  // The innermost loop of a pointwise kernel, its plain loads that do not depend on `var` (a
  // convolution's weights, a per-row scale) read once before it.
  void emit_innermost_loop(const Kernel& kernel, const SymInt& var, const std::string& extent);
  Expr hoist_invariant_loads(const Expr& e, const SymInt& var, const std::set<int>& written,
                             std::vector<std::pair<std::string, Expr>>& hoisted);
  // Whether some load walks the second-to-last loop variable contiguously and the last one with
  // a stride: a transpose, whose plain loop order reads (or writes) one element per cache line.
  bool reads_transposed(const Kernel& kernel);
  // Loops over the last two dims in square tiles, so that both the transposed reads and the
  // contiguous writes use whole cache lines while a tile is in L1.
  void emit_tiled_transpose(const Kernel& kernel, const SymInt& work, const std::function<void()>& body);
  size_t transposed_row_dims(const Kernel& kernel);

  // ---- cpp_reductions.cpp
  void emit_reduction_kernel(const Kernel& kernel);
  void emit_reduce_step(const Kernel& kernel, const KernelStep& step, int number);
  ReduceStepText reduce_step_text(const Kernel& kernel, const KernelStep& step, int number);
  // Declares and initializes the step's lanes.
  void declare_reduction_lanes(const ReduceStepText& r);
  // Folds the step's value at the current point into lane `lane` (also stashing it), or, with
  // `stashed`, the value already stashed there (that expression).
  void emit_reduction_combine(const KernelStep& step, const ReduceStepText& r, const std::string& lane,
                              const std::string& flat, const std::string& stashed = "");
  // Whether a one-lane row computes its stashed values in a loop of their own first.
  bool stashes_short_row(const KernelStep& step, const ReduceStepText& r);
  // The loops over the row from dim `dim` on; the last dim in chunks of `lanes`, then a tail.
  void emit_reduction_loops(const Kernel& kernel, const KernelStep& step, const ReduceStepText& r,
                            const std::string& flat, size_t dim);
  void emit_reduction_row(const Kernel& kernel, const KernelStep& step, const ReduceStepText& r,
                          const std::string& flat);
  // One chunk of the row's last dim (variable `rv`), each value combined into its own lane.
  void emit_reduction_chunk(const KernelStep& step, const ReduceStepText& r, const std::string& flat,
                            const std::string& rv);
  // Whether the step's lanes are one vector of 16 f32 (a max or min: emit_vector_max_min_row).
  bool vector_max_min(const KernelStep& step, const ReduceStepText& r);
  void emit_vector_max_min_row(const Kernel& kernel, const KernelStep& step, const ReduceStepText& r,
                               const std::string& rv);
  void emit_split_reduction_row(const KernelStep& step, const ReduceStepText& r, const std::string& op,
                                const std::string& flat, const std::string& rv);
  // Prefetches of the next outer point's row (the last outer variable plus one), at chunk
  // `chunk_start` of the row: one per cache line of each buffer the kernel streams along its
  // rows (index contiguous in the last row variable, moving with the last outer one).
  void emit_next_row_prefetches(const Kernel& kernel, const std::string& chunk_start, int lanes);
  // Combines the lanes into the step's results and stores them.
  void combine_reduction_lanes(const KernelStep& step, const ReduceStepText& r);
  void emit_overlapped_tail_chunk(const Kernel& kernel, const KernelStep& step, const ReduceStepText& r,
                                  const std::string& rv);
  DType accumulation_dtype(const Kernel& kernel, const KernelStep& step);
  std::string split_reduction_operator(const Kernel& kernel, const KernelStep& step);
  // The value a reduction's lanes start from (its identity), as text.
  std::string reduction_identity(const ReduceStepText& r);
  void store_reduction(const KernelStep& step, const std::vector<std::string>& values, DType from);

  // ---- cpp_column_reductions.cpp
  // Whether the kernel's reduced values lie along its last outer dim (a window or a column of a
  // channels-last value), so that reducing a block of outer points at once reads vectors.
  bool is_column_reduction(const Kernel& kernel);
  void emit_column_reduction_kernel(const Kernel& kernel);
  bool emit_column_reduction_in_parts(const Kernel& kernel, const std::vector<LoopDim>& dims, const SymInt& work);
  std::vector<ReduceStepText> declare_column_lanes(const Kernel& kernel);
  // The pass over the rows each reduction step (in texts' order) runs in: 0 for one that reads no
  // other reduction's result, else one past the last pass of those it reads (softmax's sum after
  // its max).
  std::vector<int> column_passes(const Kernel& kernel);
  // "const T v = acc[j];": reduction `r`'s result at the lane's point, as its register `buffer`.
  std::string lane_result(const ReduceStepText& r, int buffer);
  void emit_column_rows(const Kernel& kernel, const std::vector<ReduceStepText>& texts, const std::string& first_begin,
                        const std::string& first_end, const std::vector<int>& passes, int pass);
  void emit_column_stores(const Kernel& kernel, const std::vector<ReduceStepText>& texts);
  void emit_column_results(const Kernel& kernel, const std::vector<ReduceStepText>& texts);
  void merge_welford_parts(const ReduceStepText& r);
  Expr hoist_invariant_masks(const Expr& e, const SymInt& var, std::vector<std::pair<std::string, Expr>>& hoisted);

  // ---- cpp_library_calls.cpp
  void emit_extern_kernel(const Kernel& kernel);
  std::string view_pointer(const StridedView& view, const std::vector<std::string>& batch_vars);
  void emit_gemm(const Kernel& kernel, const LoopNode& node);
  void emit_folded_gemm(const Kernel& kernel, const StridedView& a, const StridedView& b, const StridedView& c,
                        const SymInt& row_stride, const SymInt& batch, const std::string& t);
  void emit_gemm_dispatch(const std::string& batch, const std::string& rows, const SymInt& macs);
  // A GEMM that runs as oneDNN's matmul (CppEmitOptions::library_matmul): its right operand a
  // parameter, prepacked once where parameters are constant, else read in place on every call.
  bool library_matmul(const LoopNode& node);
  // The bytes of the weights the module's frozen products of at most 4 rows read per call, each
  // weight once (0 without frozen parameters): where they outgrow a core's L2, such products are
  // worth a team earlier (cpp_library_calls.cpp, kFewRowsTeamMacs).
  int64_t few_rows_weight_bytes();
  void emit_library_matmul(const Kernel& kernel, const StridedView& a, const StridedView& c, const SymInt& rows,
                           const SymInt& row_stride);
  void emit_batched_library_matmul(const Kernel& kernel, const StridedView& a, const StridedView& c, const SymInt& batch,
                                   const std::vector<std::string>& vars);
  // How a batch of GEMMs walks A, B and C: runs of `run` GEMMs, `strides` apart within a run (A's,
  // B's, C's) and `outer` apart from run to run; one run, the whole batch, unless `two_level`.
  struct BatchWalk {
    SymInt run;
    std::array<SymInt, 3> strides, outer;
    bool two_level = false;
  };
  // A batch of GEMMs, each with its own right operand (attention's Q K^T and P V), whose batch
  // dims walk A, B and C at one stride each, or in runs at two (BatchWalk): one oneDNN matmul
  // over the batch, or over each run; nothing where it stays on BLAS.
  std::optional<BatchWalk> batched_runtime_matmul(const LoopNode& node, const StridedView& a, const StridedView& b,
                                                  const StridedView& c);
  void emit_batched_runtime_matmul(const Kernel& kernel, const StridedView& a, const StridedView& b, const StridedView& c,
                                   const SymInt& batch, const BatchWalk& walk);
  void emit_matmul_epilogue(const std::vector<KernelStep>& steps, const StridedView& c);
  void emit_output_epilogue(const std::vector<KernelStep>& steps, const SymShape& shape);
  void emit_batch_entry_vars(const StridedView& c, const std::vector<std::string>& vars, size_t batch_rank);
  void emit_onednn_team(const std::string& macs, const std::string& threshold);
  bool emit_matmul_blocks(const Kernel& kernel, const std::string& rows, const std::string& batch,
                          const std::string& b_pointer, const std::string& bias, const std::function<void()>& locate);
  void emit_fallback(const LoopNode& node);
  void emit_native_fallback(const LoopNode& node);
  void emit_convolution(const Kernel& kernel, const LoopNode& node);
  // Whether no kernel but `kernel`'s steps reads `buffer`, and it is no graph output.
  bool only_steps_read(const Kernel& kernel, int buffer);
  // A library call's (convolution's, matmul's) one epilogue step when it alone reads the call's
  // output (contiguous, f32), each read at the point it stores, into one buffer of the output's
  // shape; else null. The call may then write that buffer, which the step reads and overwrites.
  const KernelStep* sole_pointwise_epilogue(const Kernel& kernel, const StridedView& out);
  // The same step, wherever the memory plan put its result.
  const KernelStep* pointwise_epilogue_step(const Kernel& kernel, const StridedView& out);
  // A convolution's epilogue r = clamp?(conv + x) whose result the memory plan put in place of x
  // (MemoryPlan::in_place_of: a residual that dies there).
  struct ResidualEpilogue {
    int result = -1;
    int operand = -1;                                // x, whose bytes `result` takes
    std::optional<std::pair<double, double>> clamp;  // the clamp's bounds, where there is one
    std::optional<KernelStep> clamp_step;            // the clamp alone, over `result`, in place
  };
  std::optional<ResidualEpilogue> residual_epilogue(const Kernel& kernel, const StridedView& out);
  // A library matmul's epilogue as the matmul and the loop after it share it (matmul_epilogue).
  struct MatmulEpilogue {
    std::string bias = "nullptr";   // a vector oneDNN adds to every row of the product, or nullptr
    int destination = -1;           // the buffer the matmul writes: C's, or the sole step's output
    bool accumulate = false;        // the destination holds a residual the matmul adds to
    std::vector<KernelStep> steps;  // the loop left to run over the output (none: nothing)
  };
  // What of a library matmul's epilogue oneDNN does, writing C (the call's output view `c`, over
  // the output's own coordinates): an add of a vector along C's rows (a linear layer's bias) as
  // oneDNN's bias, where no other kernel reads C; an add of a residual whose bytes the memory plan
  // gave the result, as oneDNN's sum post-op; the sole pointwise step in place
  // (sole_pointwise_epilogue); and no loop at all when what is left copies C.
  MatmulEpilogue matmul_epilogue(const Kernel& kernel, const StridedView& c);
  // A comment line on what of the epilogue oneDNN does (none where it does nothing).
  void emit_matmul_epilogue_comment(const Kernel& kernel, const MatmulEpilogue& epilogue);
  // The activation oneDNN can apply for the convolution kernel's epilogue, and the buffer it then
  // writes (cpp_library_calls.cpp); {0, -1} when the epilogue stays Kiln's loop.
  std::pair<int, int> convolution_post_op(const Kernel& kernel, const StridedView& out);
  // The bounds [low, high] of the convolution kernel's epilogue when it is a clamp of the output
  // alone (a relu: 0 and +infinity), which oneDNN may apply as its post-op in calls whose inputs
  // are bounded where the weights are frozen and the output has a finite bound
  // (ExternCall::output_bound); else nothing.
  std::optional<std::pair<double, double>> clamp_epilogue(const Kernel& kernel, const LoopNode& node);

  // ---- cpp_entry_points.cpp
  void emit_support();
  void emit_message_helpers(bool maybe_unused);
  void emit_omp_reductions();
  void emit_blas_support(bool maybe_unused);
  void emit_bind();
  void emit_output_sizes();
  void emit_inputs_bounded();
  void emit_sizes();  // emit_output_sizes and kiln_workspace_bytes
  void emit_run();
  // A chunked program (LoopProgram::batch_chunks): kiln_run runs kiln_run_chunk once per chunk,
  // the chunks side by side on the pool's threads.
  bool chunked() const { return p_.batch_chunks.chunks > 1; }
  const SideBySide* side_by_side_at(int index) const;
  void emit_side_by_side(const SideBySide& group);
  void emit_chunked_run();
  using BatchSlice = LoopProgram::BatchChunks::Slice;
  // Where input i / output i of a chunked program holds the batch (dim -1: nowhere).
  BatchSlice input_slice(size_t i) const {
    return chunked() && i < p_.batch_chunks.inputs.size() ? p_.batch_chunks.inputs[i] : BatchSlice{};
  }
  BatchSlice output_slice(size_t i) const {
    return chunked() && i < p_.batch_chunks.outputs.size() ? p_.batch_chunks.outputs[i] : BatchSlice{};
  }
  // The shape of an input or output buffer as the caller sees it: the batch's dim times the chunks.
  SymShape outside_shape(const Buffer& b, const BatchSlice& slice) const;
  // How a chunk's part of an input or output lies in the whole tensor: `blocks` blocks, in each a
  // run of `run` elements, the chunk's the chunk-th run of each block. One block: a pointer offset;
  // more: copied through the chunk's staging memory.
  struct ChunkRuns {
    int64_t blocks = 1, run = 0;
  };
  ChunkRuns chunk_runs(const Buffer& b, const BatchSlice& slice) const;
  // Bytes of one chunk's workspace: the memory plan's peak, then the staging memory of inputs and
  // outputs whose chunk is not one block, each rounded up to 64.
  std::string chunk_workspace_bytes();
  int64_t chunk_plan_bytes();

  int hoist_counter_ = 0;
  // Whether the simd loops being printed apply an expensive op (set per pointwise kernel and
  // per row step; simd_pragma reads it).
  bool interleave_simd_ = false;
  // The Reduce step of the reduction kernel being printed that prefetches the next row (its
  // last: the row pass that runs longest in softmax, where the exp is), or null.
  const KernelStep* prefetching_step_ = nullptr;
  // LoopProgram::readers_by_buffer, made on first use (sole_pointwise_epilogue asks per
  // convolution).
  const std::vector<int>& readers_of(int buffer);
  std::optional<std::vector<std::vector<int>>> readers_;
  // Some convolution's clamp is oneDNN's post-op in calls whose inputs are bounded (within
  // +-passes::kBoundedInput; within +-passes::kSmallInput): kiln_run checks them (emit_inputs_bounded).
  bool checks_bounded_inputs_ = false;
  bool checks_small_inputs_ = false;
  // A library call's epilogue on the pool: the generated flag that says the call ran on OpenMP's
  // team, the pool's workers parked (emit_onednn_team), so the epilogue runs on that team, still
  // spinning, rather than wake them; empty elsewhere.
  std::string on_team_;
  // The module runs its loops on the pool and its library calls on OpenMP's team (both runners
  // pasted): a loop that is no library call's epilogue runs on whichever of the two is awake
  // (kiln_team_or_pool_for).
  bool team_beside_pool_ = false;
  std::optional<int64_t> few_rows_bytes_;  // few_rows_weight_bytes(), once known
  CppEmitOptions options_;
  CSourceWriter w_;
  CppModule module_;
};

}  // namespace kiln::codegen
