// Batch splitting (passes/batch_split.h): where each tensor holds the batch, op by op, then the
// chunk graph, checked against the registry's shape rules.
#include "passes/batch_split.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ir/op_registry.h"
#include "passes/flop_count.h"

namespace kiln::passes {

namespace {

// The shortest run of contiguous bytes of a split input or output that a chunk copies (a batch
// that is not the tensors' first dim is copied run by run).
constexpr int64_t kMinChunkRunBytes = 256;

using ir::Argument;
using ir::Node;
using ir::OpCall;
using ir::OpKind;
using ir::SymShape;

// Where a tensor holds the batch: dim `dim`, of `outer` blocks of batch * per_sample indices,
// sample b holding indices [b * per_sample, (b + 1) * per_sample) of each block. per_sample is
// not 1 where the batch was merged with the dims after it (a token embedding's [batch * seq]),
// outer where it was merged with the dims before it (a sequence-first attention's [seq * batch]).
struct BatchDim {
  int64_t dim = 0;
  int64_t per_sample = 1;
  int64_t outer = 1;
  friend bool operator==(const BatchDim&, const BatchDim&) = default;
};

// Each value of a node: its batch dim, or none (the value does not depend on the sample).
using Placement = std::vector<std::optional<BatchDim>>;

struct NotSeparable {
  std::string why;
};

[[noreturn]] void refuse(const Node& node, const std::string& why) {
  const std::string what = node.op() == OpKind::get_attr      ? "a parameter"
                           : node.op() == OpKind::placeholder ? "an input"
                                                              : node.target();
  throw NotSeparable{"%" + node.name() + " (" + what + "): " + why};
}

int64_t size_of(const ir::TensorMeta& meta, int64_t dim) { return meta.shape.at(size_t(dim)).constant(); }

int64_t normalized_dim(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

class Analysis {
 public:
  explicit Analysis(int64_t batch) : batch_(batch) {}

  // The placement of every value of `node`, from its inputs' (refuses what it cannot split).
  Placement place(const Node& node) {
    if (node.op() == OpKind::get_attr) return Placement(node.meta.values.size());
    const ir::OpInfo* op = ir::OpRegistry::global().find(node.target());
    if (op == nullptr) refuse(node, "unknown op");
    const OpCall call = OpCall::of(node);
    // A node that reads nothing batched computes the same for every chunk (a mask, a constant).
    bool reads_batched = false;
    for (const Node* input : node.input_nodes()) {
      for (const auto& placed : at(*input)) reads_batched |= placed.has_value();
    }
    if (!reads_batched) return Placement(node.meta.values.size());
    // (Random draws per chunk would not be the whole call's draws; a functional graph mutates
    // nothing, but a graph may reach here unfunctionalized.)
    if (op->has_tag("random")) refuse(node, "draws random numbers");
    if (op->is_inplace()) refuse(node, "mutates its input");
    const std::string& name = node.target();
    if (op->has_tag("pointwise") || name == "full_like") return pointwise(node, call);
    if (name == "getitem") return {at(*call.arg(0).node()).at(size_t(call.int_arg(1)))};
    if (op->has_tag("reduction")) return reduction(node, call);
    if (name == "reshape" || name == "view") return {reshape(node, call)};
    if (name == "permute") {
      const BatchDim in = single(node, call, 0);
      std::vector<int64_t> dims = call.ints(1);
      for (size_t i = 0; i < dims.size(); ++i)
        if (normalized_dim(dims[i], int64_t(dims.size())) == in.dim) return {BatchDim{int64_t(i), in.per_sample, in.outer}};
      refuse(node, "the batch dim is not permuted");
    }
    if (name == "transpose") {
      BatchDim in = single(node, call, 0);
      const int64_t rank = call.tensor(0).rank();
      const int64_t a = normalized_dim(call.int_arg(1), rank), b = normalized_dim(call.int_arg(2), rank);
      if (in.dim == a) in.dim = b;
      else if (in.dim == b) in.dim = a;
      return {in};
    }
    if (name == "unsqueeze") {
      BatchDim in = single(node, call, 0);
      const int64_t at_dim = normalized_dim(call.int_arg(1), call.tensor(0).rank() + 1);
      if (at_dim <= in.dim) ++in.dim;
      return {in};
    }
    if (name == "squeeze") {
      BatchDim in = single(node, call, 0);
      if (call.is_none(1)) refuse(node, "squeezes every size-1 dim (a chunk of one sample would lose its batch dim)");
      int64_t removed_before = 0;
      for (int64_t d : call.ints(1)) {
        d = normalized_dim(d, call.tensor(0).rank());
        if (d == in.dim) refuse(node, "squeezes the batch dim");
        if (d < in.dim && size_of(call.tensor(0), d) == 1) ++removed_before;
      }
      in.dim -= removed_before;
      return {in};
    }
    if (name == "slice" || name == "select" || name == "cumsum" || name == "cumprod" || name == "logcumsumexp") {
      BatchDim in = single(node, call, 0);
      const int64_t d = normalized_dim(call.int_arg(1), call.tensor(0).rank());
      if (d == in.dim) refuse(node, "works along the batch dim");
      if (name == "select" && d < in.dim) --in.dim;
      return {in};
    }
    if (name == "expand") {
      BatchDim in = single(node, call, 0);
      in.dim += node.value().rank() - call.tensor(0).rank();
      return {in};
    }
    if (name == "pad") {
      BatchDim in = single(node, call, 0);
      const int64_t padded_dims = int64_t(call.syms(1).size()) / 2;
      if (in.dim >= call.tensor(0).rank() - padded_dims) refuse(node, "pads the batch dim");
      return {in};
    }
    if (name == "cat") {
      std::optional<BatchDim> common;
      for (const Node* input : node.input_nodes()) {
        std::optional<BatchDim> placed = at(*input).at(0);
        if (!placed || (common && !(*common == *placed))) refuse(node, "joins tensors that hold the batch differently");
        common = placed;
      }
      if (normalized_dim(call.int_arg(1), node.value().rank()) == common->dim) refuse(node, "joins along the batch dim");
      return {common};
    }
    if (name == "gather") {
      const std::optional<BatchDim> self = placed_arg(call, 0), index = placed_arg(call, 2);
      if (!self || !index || !(*self == *index)) refuse(node, "gathers across samples");
      if (normalized_dim(call.int_arg(1), call.tensor(0).rank()) == self->dim) refuse(node, "gathers along the batch dim");
      return {self};
    }
    if (name == "index_select") {
      const std::optional<BatchDim> self = placed_arg(call, 0), index = placed_arg(call, 2);
      const int64_t d = normalized_dim(call.int_arg(1), call.tensor(0).rank());
      if (self && !index && d != self->dim) return {self};
      // Rows of a table by batched indices (a token embedding): the batch moves to dim d.
      if (!self && index && index->dim == 0) return {BatchDim{d, index->per_sample, index->outer}};
      refuse(node, "selects across samples");
    }
    if (name == "matmul" || name == "bmm") return {matmul(node, call)};
    if (name == "convolution" || op->has_tag("pooling")) {
      const std::optional<BatchDim> input = placed_arg(call, 0);
      for (size_t i = 1; i < call.args().size(); ++i)
        if (placed_arg(call, i)) refuse(node, "its weights depend on the sample");
      const int64_t spatial = name == "convolution" ? call.tensor(1).rank() - 2 : int64_t(call.ints(1).size());
      if (!input || !(*input == BatchDim{}) || call.tensor(0).rank() != spatial + 2)
        refuse(node, "its input's batch is not its first dim");
      return {input};
    }
    if (name == "cummax" || name == "cummin") {
      BatchDim in = single(node, call, 0);
      if (normalized_dim(call.int_arg(1), call.tensor(0).rank()) == in.dim) refuse(node, "works along the batch dim");
      return {in, in};
    }
    if (name == "topk") {
      BatchDim in = single(node, call, 0);
      if (normalized_dim(call.int_arg(2), call.tensor(0).rank()) == in.dim) refuse(node, "works along the batch dim");
      return {in, in};
    }
    refuse(node, "not known to keep samples apart");
  }

  const Placement& at(const Node& node) const {
    static const Placement none(1);
    auto found = placements_.find(&node);
    return found == placements_.end() ? none : found->second;
  }
  void set(const Node& node, Placement placement) { placements_[&node] = std::move(placement); }

 private:
  std::optional<BatchDim> placed_arg(const OpCall& call, size_t index) const {
    if (!call.is_tensor(index)) return std::nullopt;
    return at(*call.arg(index).node()).at(0);
  }

  // The placement of the op's one batched tensor argument `index`.
  BatchDim single(const Node& node, const OpCall& call, size_t index) const {
    std::optional<BatchDim> placed = placed_arg(call, index);
    if (!placed) refuse(node, "its batched argument is not its input");
    return *placed;
  }

  // Broadcasting ops: every batched argument holds the batch in the same output dim, alike; an
  // argument that does not has size 1 there (or does not reach it).
  Placement pointwise(const Node& node, const OpCall& call) const {
    const int64_t rank = node.value().rank();
    std::optional<BatchDim> out;
    for (size_t i = 0; i < call.args().size(); ++i) {
      if (!call.is_tensor(i)) continue;
      std::optional<BatchDim> placed = placed_arg(call, i);
      if (!placed) continue;
      BatchDim aligned{placed->dim + rank - call.tensor(i).rank(), placed->per_sample, placed->outer};
      if (out && !(*out == aligned)) refuse(node, "combines tensors that hold the batch in different dims");
      out = aligned;
    }
    for (size_t i = 0; i < call.args().size(); ++i) {
      if (!call.is_tensor(i) || placed_arg(call, i)) continue;
      const int64_t aligned = out->dim - (rank - call.tensor(i).rank());
      if (aligned >= 0 && size_of(call.tensor(i), aligned) != 1)
        refuse(node, "combines samples with a tensor that has the batch's size but does not depend on the sample");
    }
    return Placement(node.meta.values.size(), out);
  }

  Placement reduction(const Node& node, const OpCall& call) const {
    BatchDim in = single(node, call, 0);
    const int64_t rank = call.tensor(0).rank();
    std::vector<int64_t> dims;
    const std::string& name = node.target();
    if (name == "argmax" || name == "argmin") {
      if (call.is_none(1)) refuse(node, "reduces every dim");
      dims = {call.int_arg(1)};
    } else if (call.is_none(1) || call.ints(1).empty()) {
      refuse(node, "reduces every dim");
    } else {
      dims = call.ints(1);
    }
    const ir::OpSchema& schema = call.op().schema;
    const ir::Param* keepdim_param = schema.find_param("keepdim");
    const size_t keepdim_at = size_t(keepdim_param - schema.params.data());
    const bool keepdim = keepdim_param != nullptr && call.bool_arg(keepdim_at);
    int64_t removed_before = 0;
    for (int64_t d : dims) {
      d = normalized_dim(d, rank);
      if (d == in.dim) refuse(node, "reduces over the batch");
      if (d < in.dim) ++removed_before;
    }
    if (!keepdim) in.dim -= removed_before;
    return Placement(node.meta.values.size(), in);
  }

  // In row-major order a tensor holding the batch is `blocks` blocks, each of batch runs of
  // `run` elements, sample b's run the b-th of each block (blocks: the dims before the batch's
  // times its outer; run: its per_sample times the dims after it). A new shape keeps that when
  // some dim j is outer' x batch x per_sample' with the dims before it times outer' making the
  // same blocks and per_sample' times the dims after it the same runs.
  BatchDim reshape(const Node& node, const OpCall& call) const {
    const BatchDim in = single(node, call, 0);
    const ir::TensorMeta& from = call.tensor(0);
    const ir::TensorMeta& to = node.value();
    int64_t blocks = in.outer, run = in.per_sample;
    for (int64_t d = 0; d < in.dim; ++d) blocks *= size_of(from, d);
    for (int64_t d = in.dim + 1; d < from.rank(); ++d) run *= size_of(from, d);
    int64_t prefix = 1;
    for (int64_t j = 0; j < to.rank() && blocks % prefix == 0; ++j) {
      const int64_t size = size_of(to, j), outer = blocks / prefix;
      int64_t rest = 1;
      for (int64_t d = j + 1; d < to.rank(); ++d) rest *= size_of(to, d);
      if (size % (outer * batch_) == 0 && (size / (outer * batch_)) * rest == run)
        return BatchDim{j, size / (outer * batch_), outer};
      prefix *= size;
    }
    refuse(node, "its new shape mixes samples");
  }

  // Matrix products: batched rows of the left operand, batched columns of the right one, or
  // both operands batched alike in a broadcast (batch) dim; never the contracted dim.
  BatchDim matmul(const Node& node, const OpCall& call) const {
    const std::optional<BatchDim> a = placed_arg(call, 0), b = placed_arg(call, 1);
    const int64_t ra = call.tensor(0).rank(), rb = call.tensor(1).rank(), rank = node.value().rank();
    if (ra < 2 || rb < 2) refuse(node, "a matrix-vector product");
    auto output_dim = [&](const BatchDim& placed, int64_t operand_rank, bool left) -> std::optional<BatchDim> {
      if (placed.dim < operand_rank - 2) return BatchDim{placed.dim + rank - operand_rank, placed.per_sample, placed.outer};
      if (left && placed.dim == operand_rank - 2) return BatchDim{rank - 2, placed.per_sample, placed.outer};
      if (!left && placed.dim == operand_rank - 1) return BatchDim{rank - 1, placed.per_sample, placed.outer};
      return std::nullopt;  // the contracted dim
    };
    std::optional<BatchDim> out_a, out_b;
    if (a && !(out_a = output_dim(*a, ra, true))) refuse(node, "contracts over the batch");
    if (b && !(out_b = output_dim(*b, rb, false))) refuse(node, "contracts over the batch");
    if (out_a && out_b) {
      if (!(*out_a == *out_b) || out_a->dim >= rank - 2) refuse(node, "multiplies samples with each other");
      return *out_a;
    }
    const BatchDim out = out_a ? *out_a : *out_b;
    // The other operand must broadcast over the batch dim.
    if (out.dim < rank - 2) {
      const int64_t other_rank = out_a ? rb : ra;
      const int64_t aligned = out.dim - (rank - other_rank);
      if (aligned >= 0 && size_of(call.tensor(out_a ? 1 : 0), aligned) != 1)
        refuse(node, "multiplies samples with a tensor that has the batch's size");
    }
    return out;
  }

  int64_t batch_;
  std::map<const Node*, Placement> placements_;
};

// The shape of a value with `placed` in a chunk of `chunk` samples.
SymShape chunk_shape(const SymShape& shape, const std::optional<BatchDim>& placed, int64_t chunk) {
  SymShape out = shape;
  if (placed) out[size_t(placed->dim)] = ir::SymInt(placed->outer * chunk * placed->per_sample);
  return out;
}

// Rewrites the sizes that ops take as arguments (reshape, view, expand) for the chunk.
void rewrite_size_argument(Node& node, const SymShape& output_shape, const std::optional<BatchDim>& input_placement) {
  const std::string& name = node.target();
  if (name != "reshape" && name != "view" && name != "expand") return;
  std::vector<ir::SymInt> sizes;
  if (name == "expand") {
    // -1 keeps the input's size; only the batch dim's entry changes.
    sizes = OpCall::of(node).syms(1);
    const int64_t at_dim = input_placement->dim + int64_t(output_shape.size()) - node.input_nodes().front()->value().rank();
    if (!(sizes[size_t(at_dim)] == ir::SymInt(-1))) sizes[size_t(at_dim)] = output_shape[size_t(at_dim)];
  } else {
    sizes = output_shape;
  }
  Argument value = Argument::sym_ints(sizes);
  if (node.args().size() > 1) {
    node.set_arg(1, value);
    return;
  }
  ir::Kwargs kwargs = node.kwargs();
  for (auto& [key, argument] : kwargs)
    if (key == "shape" || key == "size") argument = value;
  node.set_kwargs(std::move(kwargs));
}

// Multiply-adds of a matrix product or convolution node (0 for other nodes; the graph is static).
int64_t multiply_adds(const Node& node) { return int64_t(product_flops(node, {}).value_or(0) / 2); }

// The number of chunks (BatchChunking); below 2 with the reason in `why` where none suits.
int64_t chunk_count(const ir::Graph& graph, const Analysis& analysis, int64_t batch, const BatchChunking& chunking,
                    std::string* why) {
  if (chunking.chunks > 0) {
    if (chunking.chunks > chunking.max_chunks) {
      *why = std::to_string(chunking.chunks) + " chunks are more than " + std::to_string(chunking.max_chunks);
      return 1;
    }
    if (chunking.chunks < 2 || chunking.chunks > batch || batch % chunking.chunks != 0) {
      *why = std::to_string(chunking.chunks) + " chunks do not divide its batch of " + std::to_string(batch);
      return 1;
    }
    return chunking.chunks;
  }
  int64_t total = 0, work = 0;
  double weight_bytes = 0, sample_bytes = 0;
  for (const Node* node : graph.nodes()) {
    if (node->op() == OpKind::get_attr) {
      for (const ir::TensorMeta& value : node->meta.values) {
        int64_t elements = 1;
        for (const ir::SymInt& d : value.shape) elements *= d.constant();
        weight_bytes += double(elements) * double(dtype_size(value.dtype));
      }
    }
    if (node->op() != OpKind::call_function) continue;
    const int64_t macs = multiply_adds(*node);
    int64_t elements = 0;  // of every value the node makes
    for (const ir::TensorMeta& value : node->meta.values) elements += value.numel().constant();
    total += macs;
    work += std::max(macs, elements);
    if (macs > 0 && analysis.at(*node).at(0))  // a product: one value
      sample_bytes += double(elements) * double(dtype_size(node->value().dtype)) / double(batch);
  }
  // A call too small to share: every call of a chunked model wakes the other threads for its
  // chunks, which costs more than the whole call on one thread (a relu of 16 floats as 16 chunks:
  // 3.4-4.6 us a call against 0.9 us whole; bench/README.md).
  if (work < BatchChunking::kMinWork) {
    *why = "a call's work (" + std::to_string(work) + " multiply-adds and output elements) is less than " +
           std::to_string(BatchChunking::kMinWork) + ", too little to share";
    return 1;
  }
  // The fewest samples a chunk may hold: as many bytes of GEMM and convolution outputs as the
  // model has weights, which every chunk reads again (ResNet-50 at batch 8: 102 MB of weights,
  // 44 MB of outputs per image; 2 chunks of four ran 192-199 ms, 8 of one 225, whole 207-219);
  std::string limiting;
  int64_t min_chunk = 1;
  if (sample_bytes > 0 && weight_bytes > sample_bytes) {
    min_chunk = int64_t(std::ceil(weight_bytes / sample_bytes));
    limiting = "its weights, read by every chunk,";
  }
  // and enough rows in each GEMM that matters.
  for (const Node* node : graph.nodes()) {
    if (node->op() != OpKind::call_function || (node->target() != "matmul" && node->target() != "bmm")) continue;
    const std::optional<BatchDim> placed = analysis.at(*node).at(0);
    const int64_t rank = node->value().rank();
    if (!placed || placed->dim < rank - 2 || multiply_adds(*node) * 10 < total) continue;  // whole matrices per sample
    // A sample's rows (or columns): with a 2-d right operand the rows of every leading dim fold
    // into one GEMM.
    int64_t rows = placed->per_sample * placed->outer;
    if (placed->dim == rank - 2 && OpCall::of(*node).tensor(1).rank() == 2) {
      int64_t elements = 1;
      for (const ir::SymInt& d : node->value().shape) elements *= d.constant();
      rows = elements / size_of(node->value(), rank - 1) / batch;
    }
    const int64_t needed = (BatchChunking::kMinGemmRows + rows - 1) / rows;
    if (needed > min_chunk) {
      min_chunk = needed;
      limiting = "%" + node->name() + ", for rows enough,";
    }
  }
  for (int64_t chunk = min_chunk; chunk <= batch / 2; ++chunk) {
    if (batch % chunk != 0 || batch / chunk > chunking.max_chunks) continue;
    const int64_t chunks = batch / chunk;
    if (chunks < chunking.cpus && chunk > 1) {
      *why = "chunks of " + std::to_string(chunk) + " samples (" + limiting + " needs " + std::to_string(min_chunk) +
             ") would be fewer than the " + std::to_string(chunking.cpus) + " CPUs";
      return 1;
    }
    return chunks;
  }
  *why = "its batch of " + std::to_string(batch) + " has no chunks of " + std::to_string(min_chunk) +
         " samples or more (" + (limiting.empty() ? std::string("at most ") + std::to_string(chunking.max_chunks) + " chunks" : limiting + " needs them") + ")";
  return 1;
}

}  // namespace

std::optional<BatchSplit> split_batch(const ir::Graph& graph, const BatchChunking& chunking, std::string* why_not) {
  auto no = [&](const std::string& why) -> std::optional<BatchSplit> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  std::vector<Node*> placeholders = graph.placeholders();
  if (placeholders.empty() || graph.output_node() == nullptr) return no("the graph has no inputs or no outputs");
  for (const Node* node : graph.nodes()) {
    if (node->op() == OpKind::output) continue;
    for (const ir::TensorMeta& value : node->meta.values) {
      if (!value.is_static()) return no("%" + node->name() + " has a symbolic size (only static graphs are split)");
      for (const ir::SymInt& d : value.shape)
        if (d.constant() == 0) return no("%" + node->name() + " has no elements");
    }
  }
  const ir::TensorMeta& first = placeholders.front()->value();
  if (first.rank() == 0) return no("its first input is a scalar");
  // The batch: the first input's first dim, else its second (sequence-first).
  std::optional<Analysis> analysis;
  BatchSplit split;
  int64_t batch = 0;
  std::string refused_first;
  for (int64_t batch_dim = 0; batch_dim < std::min<int64_t>(2, first.rank()) && !analysis; ++batch_dim) {
    batch = first.shape[size_t(batch_dim)].constant();
    if (batch < 2) {
      if (batch_dim == 0) refused_first = "its batch is " + std::to_string(batch);
      continue;
    }
    std::optional<BatchSplit> attempt = BatchSplit{};
    try {
      analysis.emplace(batch);
      for (const Node* node : graph.nodes()) {
        if (node->op() == OpKind::placeholder) {
          const ir::TensorMeta& value = node->value();
          const bool batched = value.rank() > batch_dim && value.shape[size_t(batch_dim)].constant() == batch;
          attempt->inputs.push_back(batched ? BatchSlice{batch_dim, 1, 1} : BatchSlice{});
          analysis->set(*node, batched ? Placement{BatchDim{batch_dim, 1, 1}} : Placement(1));
        } else if (node->op() == OpKind::output) {
          for (const Node* output : graph.outputs()) {  // in order, a node returned twice twice
            const std::optional<BatchDim> placed = analysis->at(*output).at(0);
            if (!placed) refuse(*output, "an output that does not hold the batch");
            attempt->outputs.push_back(BatchSlice{placed->dim, placed->per_sample, placed->outer});
          }
        } else {
          analysis->set(*node, analysis->place(*node));
        }
      }
      split = std::move(*attempt);
    } catch (const NotSeparable& refused) {
      analysis.reset();
      if (batch_dim == 0) refused_first = refused.why;
    }
  }
  // (The reason given is the first dim's: a batch-first model's.)
  if (!analysis) return no(refused_first);
  split.batch = batch;
  std::string why_chunks;
  split.chunks = chunk_count(graph, *analysis, batch, chunking, &why_chunks);
  if (split.chunks < 2) return no(why_chunks);
  const int64_t chunk = batch / split.chunks;
  // Each chunk copies its part of every split input in and of every output out, run by run: a
  // batch inside the rows (a [512, 64] table's columns, when its rows are gathered) would copy
  // floats one at a time (a gather of 8192 rows: 0.08 ms whole, 2.7 ms in 64 chunks). Chosen
  // chunks are refused so; chunks asked for are made.
  auto runs_too_short = [&](const ir::TensorMeta& value, const BatchSlice& slice, const std::string& what) -> bool {
    if (slice.dim < 0 || chunking.chunks != 0) return false;
    int64_t run = chunk * slice.per_sample * int64_t(dtype_size(value.dtype));
    for (size_t d = size_t(slice.dim) + 1; d < value.shape.size(); ++d) run *= value.shape[d].constant();
    if (run >= kMinChunkRunBytes || (slice.dim == 0 && slice.outer == 1)) return false;
    why_chunks = "a chunk's part of " + what + " is runs of " + std::to_string(run) + " bytes, fewer than " +
                 std::to_string(kMinChunkRunBytes) + " (copies too fine to pay)";
    return true;
  };
  for (size_t i = 0; i < placeholders.size(); ++i)
    if (runs_too_short(placeholders[i]->value(), split.inputs[i], "input %" + placeholders[i]->name())) return no(why_chunks);
  const std::vector<Node*> outputs = graph.outputs();
  for (size_t i = 0; i < outputs.size(); ++i)
    if (runs_too_short(outputs[i]->meta.values.at(0), split.outputs[i], "output %" + outputs[i]->name())) return no(why_chunks);

  // The chunk graph: batched sizes divided, size arguments rewritten, every node's shape as the
  // registry infers it from its rewritten inputs, which must be what the analysis expects.
  split.chunk = graph.clone();
  std::vector<Node*> originals = graph.node_list(), copies = split.chunk.node_list();
  for (size_t i = 0; i < originals.size(); ++i) {
    const Node& original = *originals[i];
    Node& copy = *copies[i];
    if (original.op() == OpKind::output) continue;
    const Placement& placement = analysis->at(original);
    ir::NodeMeta expected = original.meta;
    for (size_t v = 0; v < expected.values.size(); ++v) {
      if (!placement.at(v)) continue;
      expected.values[v] = ir::TensorMeta::contiguous(expected.values[v].dtype,
                                                      chunk_shape(expected.values[v].shape, placement[v], chunk),
                                                      expected.values[v].device);
    }
    if (original.op() == OpKind::placeholder) {
      copy.meta = expected;
      continue;
    }
    if (original.op() != OpKind::call_function) continue;
    bool batched = std::any_of(placement.begin(), placement.end(), [](const auto& p) { return p.has_value(); });
    if (!batched) continue;
    std::optional<BatchDim> input_placement;
    for (const Node* input : original.input_nodes())
      if (!input_placement) input_placement = analysis->at(*input).at(0);
    rewrite_size_argument(copy, expected.values.at(0).shape, input_placement);
    ir::NodeMeta inferred;
    try {
      inferred = ir::infer_meta(copy);
    } catch (const Error& error) {
      return no("%" + original.name() + " of the chunk graph fails its shape rule: " + error.what());
    }
    for (size_t v = 0; v < expected.values.size(); ++v) {
      if (inferred.values.size() != expected.values.size() || !(inferred.values[v].shape == expected.values[v].shape))
        return no("%" + original.name() + " of the chunk graph has shape " + inferred.type_string() + ", not " +
                  expected.type_string());
    }
    copy.meta = inferred;
  }
  return split;
}

}  // namespace kiln::passes
