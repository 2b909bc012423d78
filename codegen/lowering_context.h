// The state and helpers shared by the lowering rules (codegen/lowering*.cpp): the Lowerer,
// which owns the LoopProgram being built and the accessor of every graph value, and the
// table of per-op lowering rules that each op-family file fills. Internal to lowering.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/loop_ir.h"
#include "codegen/lowering.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "passes/value_bounds.h"

namespace kiln::codegen::lowering {

// How a graph value is read: element x (a multi-index over the value's shape) of the value
// lives at buffer[index(x0..x{rank-1})].
struct Accessor {
  int buffer = -1;        // -1 while `parameter` has not been read yet
  std::string parameter;  // get_attr target of a parameter not yet given a buffer
  DType dtype = DType::f32;
  SymShape shape;
  SymInt index;
  std::vector<std::string> views;  // view nodes folded in since the buffer, in order
};

class Lowerer;
using LoweringRule = std::function<void(Lowerer&, const ir::Node&, const ir::OpCall&)>;
using LoweringTable = std::map<std::string, LoweringRule, std::less<>>;

// One file per op family fills the table.
void register_view_lowerings(LoweringTable& table);            // lowering_views.cpp
void register_pointwise_lowerings(LoweringTable& table);       // lowering_pointwise.cpp
void register_creation_lowerings(LoweringTable& table);        // lowering_creation.cpp
void register_reduction_lowerings(LoweringTable& table);       // lowering_reductions.cpp
void register_copy_lowerings(LoweringTable& table);            // lowering_copies.cpp
void register_linear_algebra_lowerings(LoweringTable& table);  // lowering_linear_algebra.cpp
void register_pooling_lowerings(LoweringTable& table);         // lowering_pooling.cpp
void register_convolution_lowerings(LoweringTable& table);     // lowering_convolution.cpp

// ---- reductions that skip their input's padding (lowering_reductions.cpp)

// The pad that `reduction` (amax or amin) reduces, when that pad fills a float tensor with the
// reduction's identity (-inf for amax, +inf for amin) only after the end of reduced dims: the
// reduction then reduces the pad's input, and a pad that nothing else reads is not computed.
std::optional<ir::OpCall> identity_padding(const ir::Node& reduction);

// ---- dtype helpers

// The dtype arithmetic runs in: f16 and bf16 compute in f32, others in themselves.
DType compute_dtype(DType dtype);
// `value` cast to compute_dtype of its dtype.
Expr upcast(Expr value);
// A Python number (bool, int or float argument) converted to `dtype` exactly as the
// interpreter converts it (rounded to a float dtype, wrapped to an integer one), as a Constant
// of compute_dtype(dtype).
Expr number(const ir::Argument& value, DType dtype);
// The dtype a Python number takes in type promotion: bool, i64 or f32.
DType number_dtype(const ir::Argument& value);
// PyTorch's result_type over the call's arguments `indices` (tensors or Python numbers).
DType promoted_dtype(const ir::OpCall& call, const std::vector<size_t>& indices);

// ---- index helpers

// x<d> for every d of `shape`.
std::vector<SymInt> vars_of(const SymShape& shape);
// The index of a value of `shape` read at the loop variables of `out_shape` with
// broadcasting (right-aligned; a dim of constant size 1 reads index 0).
std::vector<SymInt> broadcast_index(const SymShape& shape, const SymShape& out_shape);
// Whether `a` <= `b` is provable from SymInt's canonical simplification.
bool provably_le(const SymInt& a, const SymInt& b);
// 0 <= position < size as a bool expression (the lower test left out where it is provable): the
// mask of a read that padding may take outside its input.
Expr index_within(const SymInt& position, const SymInt& size);

// Makes the last two dims of `view` a BLAS-usable matrix layout: a unit stride in one dim and
// a leading stride at least the other dim's size (an emitter clamps a zero leading stride of
// an empty matrix to 1). Adjusts the strides of size-1 dims, which address nothing. False when
// no such layout exists (lowering_linear_algebra.cpp).
bool make_matrix_layout(StridedView& view);

// Adds an ExternKind::Gemm node `name` of the graph node being lowered: out = a @ b
// (lowering_linear_algebra.cpp).
class Lowerer;
void add_gemm(Lowerer& lowerer, const std::string& name, StridedView a, StridedView b, StridedView out);

class Lowerer {
 public:
  Lowerer(const ir::Graph& graph, const LoweringOptions& options);
  LoopProgram run();

  const ir::Graph& graph() const { return graph_; }
  LoopProgram& program() { return program_; }
  const LoweringOptions& options() const { return options_; }
  // The graph's value bounds (passes/value_bounds.h), computed on first use: for calls whose inputs
  // are within +-passes::kBoundedInput, and (small_input_bounds) within +-passes::kSmallInput.
  const passes::ValueBounds& value_bounds();
  const passes::ValueBounds& small_input_bounds();
  // Where the graph's value bounds were computed, `buffer`, which holds `node`'s value whole,
  // carries its bounds (Buffer::bound, Buffer::small_input_bound); elsewhere they stay unknown (no
  // graph walk for it alone).
  void note_bound(int buffer, const ir::Node& node);

  // ---- values
  const Accessor& value(const ir::Node* node, size_t element = 0) const;
  // The accessor of tensor argument `index` of `call` (which must be a node).
  const Accessor& tensor(const ir::OpCall& call, size_t index) const;
  void define(const ir::Node& node, Accessor value);
  void define(const ir::Node& node, std::vector<Accessor> values);

  // ---- reading
  // The buffer id of `value`, giving a parameter its buffer on first read.
  int resolve(const Accessor& value);
  // `value` at the multi-index `index` (one SymInt per dim), as its own dtype. Records the
  // views the accessor folded in as origins of the node being built.
  Expr load(const Accessor& value, const std::vector<SymInt>& index);
  // The same with a mask: `other` (converted to the value's dtype) where `mask` is false.
  Expr load_masked(const Accessor& value, const std::vector<SymInt>& index, Expr mask, double other);
  // `value` broadcast to `out_shape`, read at the loop variables x0.. of out_shape.
  Expr load_broadcast(const Accessor& value, const SymShape& out_shape);
  // Reads through an indirect index: value[index with dim `dim` replaced by `position`]
  // (an integer expression; negative positions count from the end). Copies `value`
  // contiguous first when its accessor is not affine in that dim.
  Expr load_indirect(const Accessor& value, std::vector<SymInt> index, size_t dim, Expr position);
  // Whether `position` (an index value) is a read of a constant integer table whose every element
  // lies in [0, size): an index read through it needs no check (IndirectTerm::in_range).
  bool constant_within(const Expr& position, const SymInt& size) const;

  // The accessor as a strided view of its buffer, or nullopt when it is not affine.
  std::optional<StridedView> strided_view(const Accessor& value);
  // `value` copied into a fresh contiguous buffer named `name` by a Pointwise node, unless it
  // already reads a whole buffer contiguously or an earlier call copied the same elements (two
  // products of one transposed input read one copy).
  Accessor contiguous(const Accessor& value, const std::string& name);
  // Whether `value` reads its buffer's elements in row-major order from offset 0.
  static bool is_contiguous(const Accessor& value);
  // An accessor reading buffer `id` contiguously as `shape` (default: the buffer's shape).
  Accessor whole(int buffer, std::optional<SymShape> shape = std::nullopt) const;

  // ---- writing
  // A new Intermediate buffer; the name is made unique by a "_N" suffix when taken.
  int new_buffer(const std::string& name, DType dtype, SymShape shape);
  // Adds a node of the graph node being lowered; its origins are the views loaded so far and
  // the graph node. `name` defaults to the graph node's name.
  int add_node(LoopNode node);
  // The common case: a Pointwise node over `ranges` writing `body` (cast to dtype) into a new
  // buffer. Returns the buffer.
  int emit_pointwise(const std::string& name, DType dtype, const SymShape& ranges, Expr body);
  // Lowers `node` to one Pointwise node over its output shape computing `body`, and defines
  // the node's value as that buffer.
  void define_pointwise(const ir::Node& node, Expr body);
  // Lowers `node` to a Fallback extern.
  void lower_fallback(const ir::Node& node, const ir::OpCall& call);
  NativeFallback native_fallback(const ir::Node& node, const ir::OpCall& call);
  NativeFallback native_scatter(const ir::OpCall& call, const ir::TensorMeta& self, int64_t dim_arg);
  NativeFallback native_grid_sample(const ir::OpCall& call);

  // The graph node being lowered.
  const ir::Node& current() const { return *current_; }

  // ---- channels-last layout (lowering_layout.cpp)
  // A 3-d or 4-d value [N, C, L] or [N, C, H, W] whose buffer holds it as [N, L, C] or
  // [N, H, W, C]: the layout library convolutions read and write. Values computed from such
  // values keep it.
  // The accessor of logical shape `logical` ([N, C, H, W]) over channels-last buffer `buffer`.
  Accessor channels_last(int buffer, const SymShape& logical);
  // Whether `value` reads a whole channels-last buffer at its own points.
  bool is_channels_last(const Accessor& value) const;
  // The channels-last buffer of 3-d or 4-d `value`: its own when it already is one (also a
  // buffer whose order is the same, with one channel or a single point), else a Pointwise copy
  // over [N, H, W, C] named `name`.
  int channels_last_buffer(const Accessor& value, const std::string& name);
  // Whether a 3-d or 4-d node computing `body` at the points x0, x1, ... of `shape` reads some
  // channels-last buffer at those very points (so that storing its result channels-last too
  // reads and writes both in the same order).
  bool reads_channels_last(const Expr& body, const SymShape& shape) const;
  // `expr` over the variables of a channels-last node of rank `rank`: x1 (channel) becomes the
  // last variable, x2, x3, ... (the spatial dims) become x1, x2, ...
  static Expr to_channels_last_vars(const Expr& expr, size_t rank);
  static SymShape channels_last_shape(const SymShape& logical);  // [N, C, H, W] -> [N, H, W, C]

 private:
  void bind_symbols();
  void lower_node(const ir::Node& node);
  void lower_outputs(const ir::Node& output);
  void add_output(const ir::Node& source, const Accessor& value, const std::string& name, int position);
  std::string unique_buffer_name(const std::string& name);

  const ir::Graph& graph_;
  const LoweringOptions& options_;
  std::optional<passes::ValueBounds> value_bounds_, small_input_bounds_;
  LoweringTable rules_;
  LoopProgram program_;
  std::map<const ir::Node*, std::vector<Accessor>> values_;
  std::map<std::string, int> parameter_buffers_;
  std::map<std::string, std::string> parameter_names_;  // get_attr target -> the first get_attr node's name
  std::set<std::string> buffer_names_;
  // contiguous(): per buffer read (-1: a parameter not yet read), the copy of each accessor of it.
  std::map<int, std::map<std::string, int>> contiguous_copies_;
  std::set<int> channels_last_buffers_;
  const ir::Node* current_ = nullptr;
  std::vector<std::string> pending_origins_;
};

}  // namespace kiln::codegen::lowering
