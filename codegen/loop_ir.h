// The loop IR: what lowering (codegen/lowering) produces from a graph and what the scheduler
// and every backend (codegen/cpp, codegen/cuda) consume. It is backend-neutral.
//
// A LoopProgram is a list of Buffers and a topologically ordered list of LoopNodes:
//   - Pointwise: for every point x of `ranges`, out[store(x)] = body(x).
//   - Reduction: for every x of `ranges`, out[store(x)] = reduce over r of `reduction_ranges` of body(x, r).
//   - Extern: a library call (batched GEMM, channels-last convolution) or a fallback to the reference
//     kernel of one graph node.
// Views produce no node: lowering folds them into the index expressions of the loads that read them.
//
// Index expressions are SymInts over three kinds of symbols:
//   - loop variables x0, x1, ... (one per dim of `ranges`),
//   - reduction variables r0, r1, ... (one per dim of `reduction_ranges`),
//   - the graph's shape symbols (s0, s1, ...), bound at run time from the inputs' sizes.
// Graph symbols named like loop variables (x<digits>, r<digits>) are rejected by lowering.
//
// Every buffer a node writes is contiguous over the node's `ranges` (row-major), so the store
// index of point x is sum_d x_d * contiguous_stride(ranges)_d; for a Reduction the ranges are
// the keepdim output shape (reduced dims are 1), whose row-major order equals the graph's output.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/loop_ops.h"
#include "ir/graph.h"
#include "ir/symbolic.h"
#include "kiln/dtype.h"

namespace kiln::codegen {

using ir::SymInt;
using ir::SymShape;

SymInt loop_var(size_t dim);       // x<dim>
SymInt reduction_var(size_t dim);  // r<dim>
// The variables x0..x{rank-1}, in order.
std::vector<SymInt> loop_vars(size_t rank);
// Row-major flat index of `index` in `shape`: sum_d index_d * contiguous_stride(shape)_d.
SymInt flat_index(const std::vector<SymInt>& index, const SymShape& shape);
SymInt numel(const SymShape& shape);

// ---------------------------------------------------------------- buffers

enum class BufferKind {
  Input,         // a graph placeholder; strides are the guarded input strides (contiguous)
  Parameter,     // a get_attr: read-only memory from the weights file (contiguous)
  Output,        // a graph output: contiguous, allocated by the caller
  Intermediate,  // a temporary: contiguous, placed in the workspace by the memory plan
};

struct Buffer {
  int id = -1;
  std::string name;  // readable and unique: the graph value's name ("add_1"), "buf3" when none
  BufferKind kind = BufferKind::Intermediate;
  DType dtype = DType::f32;
  SymShape shape;
  // Input: the placeholder's target; Parameter: the parameter name; Output: the output's name.
  std::string source;
  int position = -1;  // Input: placeholder index; Output: index in the graph's output tuple
  // An upper bound on |x| of every element, and that none is NaN or infinite, in calls whose
  // inputs are within passes::kBoundedInput (passes/value_bounds.h); +infinity when unknown. Set
  // where lowering computed the graph's bounds (frozen convolutions through the library).
  double bound = std::numeric_limits<double>::infinity();
  // The same for calls whose inputs are within passes::kSmallInput (at most `bound`).
  double small_input_bound = std::numeric_limits<double>::infinity();
};

// ---------------------------------------------------------------- expressions

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

enum class ExprKind {
  Constant,    // value as `dtype` (floats in float_value; ints and bools in int_value)
  Load,        // buffer[index + sum_k cast<i64>(indirect[k].value) * indirect[k].stride]
               // where mask is absent or true, else `other` (a Constant of the load's dtype)
  IndexValue,  // the value of `index` (a SymInt over loop variables) as `dtype`
  Unary,       // op(args[0]); op is a unary op of the loop op table (codegen/loop_ops.h)
  Binary,      // op(args[0], args[1]); a binary op of the table; comparisons give bool
  Where,       // args[0] (bool) ? args[1] : args[2]
  Cast,        // args[0] converted to dtype (float to int truncates toward zero; to bool: != 0)
  Random,      // Philox4x32-10 uniform [0, 1) (or normal when `normal`) at linear element index `index`
               // with `seed` and `offset`, exactly the interpreter's contract (runtime/philox.h)
};

struct IndirectTerm {
  Expr value;     // an integer expression; generated code reports values outside [0, size) as errors
  SymInt size;    // the size of the indexed dim (to wrap negatives and check bounds)
  SymInt stride;  // element stride of the indexed dim in the buffer
  // The value is proven within [0, size) (a load of a constant index table whose every element
  // is): the C-like printers read through it without the check.
  bool in_range = false;
};

struct ExprNode {
  ExprKind kind = ExprKind::Constant;
  DType dtype = DType::f32;  // the type of the value this expression yields
  // Constant
  double float_value = 0;
  int64_t int_value = 0;
  // Load / IndexValue / Random
  int buffer = -1;
  SymInt index;
  std::vector<IndirectTerm> indirect;
  Expr mask;   // Load: optional bool predicate
  Expr other;  // Load: value where mask is false
  // Unary / Binary: the op; arguments already have the computation dtype (lowering inserts casts)
  LoopOp op = LoopOp::none;
  std::vector<Expr> args;
  // Random
  int64_t seed = 0;
  int64_t offset = 0;
  bool normal = false;
};

Expr constant(double value, DType dtype);  // ints and bools are stored in int_value
Expr load(int buffer, DType dtype, SymInt index);
Expr index_value(SymInt index, DType dtype);
// A Unary or Binary expression of a table op of that arity; its dtype is the table's result rule
// (a's, or bool for comparisons, logical ops and isnan).
Expr unary(LoopOp op, Expr a);
Expr binary(LoopOp op, Expr a, Expr b);
Expr where(Expr condition, Expr a, Expr b);
Expr cast(Expr a, DType dtype);  // returns a when it already has dtype

// Calls f on every node of the expression, children first.
void visit(const Expr& expr, const std::function<void(const ExprNode&)>& f);
// A copy of the expression with every index (and indirect stride) rewritten by f.
Expr map_indices(const Expr& expr, const std::function<SymInt(const SymInt&)>& f);
// Substitutes symbols in every index of the expression.
Expr substitute(const Expr& expr, const std::map<std::string, SymInt>& replacements);
// A copy of the node (not null) with `f` applied to each of its child expressions: its args,
// its indirect terms' values, its mask and its other (f is given a null one as it is).
Expr map_children(const Expr& expr, const std::function<Expr(const Expr&)>& f);
// A copy of the expression whose loads of buffer `from` load buffer `to` (same index).
Expr with_loads_redirected(const Expr& expr, int from, int to);
// The buffers the expression loads from.
std::vector<int> loaded_buffers(const Expr& expr);
// Number of operations (nodes) in the expression.
size_t expr_size(const Expr& expr);
// Whether the expression applies an op the loop op table marks expensive (exp, erf, tanh, ...).
bool applies_expensive_op(const Expr& expr);
// How many times the expression applies such ops (a subexpression counted at each use).
size_t expensive_op_count(const Expr& expr);
// The values c at which a comparison of `var` (a bare loop variable, plus a constant) with an
// integer constant in `expr` changes its truth (x < c, x >= c: c; x <= c, x > c: c + 1), sorted and unique: the
// pieces of a cat along the dim of `var` start at them.
std::vector<int64_t> index_cuts(const Expr& expr, const SymInt& var);
// `expr` for `var` in [lo, hi) where none of its index_cuts lies strictly inside: each comparison
// of `var` with a constant folded to its truth there, and the logical ops, wheres and load masks
// that decides folded with it (a masked load whose mask is false there is its `other`).
Expr with_index_range(const Expr& expr, const SymInt& var, int64_t lo, int64_t hi);

// ---------------------------------------------------------------- nodes

enum class NodeKind { Pointwise, Reduction, Extern };

enum class ReductionKind {
  Sum,
  Prod,
  Max,     // NaN propagates
  Min,     // NaN propagates
  ArgMax,  // i64 row-major index over reduction_ranges of the first max (NaN counts as max)
  ArgMin,
  Welford,  // outputs {mean, m2}: mean and sum of squared deviations, one pass
};

// A strided view of a buffer, as library calls take it.
struct StridedView {
  int buffer = -1;
  SymInt offset;  // elements
  SymShape shape;
  SymShape strides;  // elements
};

// A Gemm's batch folds into the rows of one GEMM (x[seq, 1, d] @ w[d, n] is one call, not seq calls
// of one row) when its right operand `b` is the same matrix for every batch entry (stride 0 or one
// entry along each batch dim) and the left operand `a`'s batch and row dims walk memory as one dim.
// Returns a's folded row stride then, else nullopt.
std::optional<SymInt> gemm_folded_row_stride(const StridedView& a, const StridedView& b);

enum class ExternKind {
  Gemm,      // out[b...] = a[b...] @ b[b...]: a [batch..., m, k], b [batch..., k, n], out [batch..., m, n]
  // A 2-d convolution in channels-last layout (a convolution library's call):
  // out[n, oh, ow, o] = bias[o] + sum over (c, kh, kw) of
  //   input[n, oh * stride_h - pad_h + kh * dilation_h, ow * stride_w - pad_w + kw * dilation_w, g * C/groups + c]
  //   * weight[o, c, kh, kw], with g = o / (O / groups) and zero outside the input.
  // input [N, H, W, C], weight [O, C/groups, KH, KW], optional bias [O], out [N, OH, OW, O]; all contiguous.
  // Or a 1-d one, which is the 2-d one of height 1 (convolution_as_2d): input [N, W, C], weight
  // [O, C/groups, KW], out [N, OW, O], one stride, padding and dilation. Or a 3-d one (video,
  // volumes): input [N, D, H, W, C], weight [O, C/groups, KD, KH, KW], out [N, OD, OH, OW, O].
  Convolution,
  Fallback,  // the reference kernel of graph node `graph_node`, run by the host
};

// The geometry of a Convolution (per spatial dim: [depth,] height, then width).
struct ConvolutionGeometry {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

// "stride=[1, 1] padding=[1, 1] dilation=[1, 1] groups=1", as the printers show it.
std::string geometry_text(const ConvolutionGeometry& geometry);

// A Fallback node that the C++ backend computes itself, exactly as the node's reference kernel
// does (codegen/cpp/kiln_sequence_kernels.h), instead of calling the host's handler: a running sum
// or product (cumsum, cumprod), a top-k, or a scatter (written or added) along one dim of its
// first input, seen as [outer, length, inner], or a 2-d grid_sample; its tensor inputs are
// contiguous. Other consumers of the loop IR run the reference kernel.
struct NativeFallback {
  enum class Kind { none, cumulative_sum, cumulative_product, top_k, scatter, scatter_add, grid_sample };
  Kind kind = Kind::none;
  SymInt outer = 1, length = 1, inner = 1;
  int64_t k = 0;         // top_k
  bool largest = true;   // top_k
  SymInt index_length = 0;  // scatter: the index's (and src's) size along the dim
  // grid_sample of a 2-d input (its sizes those of the call's views): bilinear or nearest; zeros,
  // border or reflection padding (0, 1, 2).
  bool nearest = false;
  int padding = 0;
  bool align_corners = false;
};

// "top_k [8, 256, 1] k=16 largest", as loop dumps show it.
std::string native_fallback_text(const NativeFallback& native);

struct ExternCall {
  ExternKind kind = ExternKind::Gemm;
  // Gemm: {a, b}; Convolution: {input, weight} or {input, weight, bias}; Fallback: the node's
  // tensor arguments in order.
  std::vector<StridedView> inputs;
  std::vector<StridedView> outputs;  // Gemm, Convolution: {out} (contiguous); Fallback: the node's results
  std::string graph_node;            // Fallback: the graph node to run
  ConvolutionGeometry convolution;   // Convolution only
  // Convolution only: a bound on |output| (no element NaN or infinite) for calls whose
  // floating-point inputs are within +-passes::kBoundedInput (passes/value_bounds.h, from frozen
  // weights); +infinity where none is known.
  double output_bound = std::numeric_limits<double>::infinity();
  // The same for calls whose inputs are within +-passes::kSmallInput (at most output_bound).
  double small_input_output_bound = std::numeric_limits<double>::infinity();
  // Convolution with frozen parameters and no bound for either: why (passes::ValueBounds::unknown_reason).
  std::string output_bound_note;
  NativeFallback native;  // Fallback only
};

// A Convolution call as the 2-d one the libraries and the evaluator run: a 1-d call's views gain
// a height of 1 (input [N, 1, W, C], weight [O, C/groups, 1, KW], out [N, 1, OW, O]) and its
// geometry a height stride and dilation of 1 and no padding; a 2-d call is returned as it is.
ExternCall convolution_as_2d(const ExternCall& call);

struct LoopNode {
  int id = -1;
  NodeKind kind = NodeKind::Pointwise;
  std::string name;                  // readable: the graph node's name
  std::vector<std::string> origins;  // graph nodes this node computes (views folded in included)
  std::vector<int> outputs;          // buffer ids written; Welford: {mean, m2}; Extern: the outputs
  SymShape ranges;                   // x variables; the output shape (keepdim shape for reductions)
  SymShape reduction_ranges;         // r variables (Reduction only)
  // Reduction only: positions in `ranges` of the reduced dims (ranges has the input's rank and is 1
  // there); reduction_ranges[k] is the input's size of dim reduced_dims[k]. A full reduction
  // (dim=None) has ranges [1, ..., 1] and every dim reduced.
  std::vector<int> reduced_dims;
  ReductionKind reduction = ReductionKind::Sum;
  // Pointwise and Reduction: the value at (x, r). For a reduction its dtype is the accumulation
  // dtype; results are cast to each output buffer's dtype when stored.
  Expr body;
  ExternCall extern_call;  // Extern only
};

// ---------------------------------------------------------------- programs

struct LoopProgram {
  std::vector<Buffer> buffers;  // id == index
  std::vector<LoopNode> nodes;  // id == index, topological order
  std::vector<int> inputs;      // buffer ids, in placeholder order
  std::vector<int> parameters;  // buffer ids of the parameters read
  std::vector<int> outputs;     // buffer ids, in the graph's output order
  std::vector<std::string> symbols;  // the graph's shape symbols, in order of first appearance
  // How each symbol is bound: the first input dim whose size is exactly that symbol.
  struct SymbolSource {
    std::string symbol;
    int input = -1;  // position in `inputs`
    int dim = -1;
  };
  std::vector<SymbolSource> symbol_sources;
  // The range each symbol must lie in (the graph signature's), checked with the guards.
  struct SymbolRange {
    std::string symbol;
    int64_t min = 0;
    std::optional<int64_t> max;  // none: unbounded
  };
  std::vector<SymbolRange> symbol_ranges;
  // The program may call the convolution library's matmul (LoweringOptions::library_matmul).
  bool library_matmul = false;
  // The program computes one of `chunks` equal chunks of its batch (passes/batch_split.h): the
  // model's call runs it once per chunk, side by side. Each input and output of the whole call
  // holds the batch in dim `dim` (an input with -1 is passed whole), `chunks` times this
  // program's size: `outer` blocks, of which each chunk has the same slice.
  struct BatchChunks {
    struct Slice {
      int64_t dim = -1;
      int64_t outer = 1;
    };
    int64_t chunks = 1;
    std::vector<Slice> inputs;   // placeholder order
    std::vector<Slice> outputs;  // output order
  };
  BatchChunks batch_chunks;

  int add_buffer(Buffer buffer);  // sets id, returns it
  int add_node(LoopNode node);    // sets id, returns it
  const Buffer& buffer(int id) const { return buffers.at(size_t(id)); }
  // Nodes that read buffer `id` (in a load or as an extern input), in order. One walk over every
  // node's body: a caller asking for each buffer in turn wants readers_by_buffer.
  std::vector<int> readers(int buffer_id) const;
  // readers(b) for every buffer b (indexed by buffer id), from one walk over the program.
  std::vector<std::vector<int>> readers_by_buffer() const;
  // The node that writes buffer `id`, or -1 (inputs and parameters).
  int writer(int buffer_id) const;
};

}  // namespace kiln::codegen
