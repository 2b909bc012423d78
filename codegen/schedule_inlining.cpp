// Stage 1 of the scheduler (codegen/schedule.h): pointwise nodes inlined into their readers
// (vertical fusion, and pointwise producers into reduction loads), unless the value must exist
// in memory: a graph output, a library call's input, a value read several times that a
// convolution's epilogue can compute once or whose expression is large or reads many buffers, an
// expensive value read by a node that visits more points than it has elements (a broadcast, or
// an im2col reading each element once per kernel tap) or by several nodes, a value of a few ops
// that a reader evaluates 16 times per element or more (a padding mask along attention rows), a
// stencil (a value reading many points of one buffer: a direct convolution), or a read whose
// index does not map back to the producer's elements (the index inversion here).
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "codegen/index_analysis.h"
#include "codegen/schedule_stages.h"
#include "kiln/error.h"

namespace kiln::codegen::scheduling {

namespace {

// A pointwise value read by several nodes is recomputed in each while its expression is this
// small and reads at most this many buffers; past either, the value is computed once and
// stored. Each recomputation reads every buffer again: a transformer's residual stream, x +
// attn + b1 + mlp + b2 + ..., was never stored, so each layer norm read all the earlier
// layers' outputs, twice (GPT b8, 4 layers: 28.6-29.7 -> 25.2-27.3 ms when stored).
constexpr size_t kMaxInlinedSizeWithManyReaders = 24;
constexpr size_t kMaxInlinedBuffersWithManyReaders = 3;
// A reader that visits more points than the value has elements (an im2col over a batch norm
// and relu: each element once per kernel tap) recomputes it at each visit while its expression
// is this small; past it, the value is computed once and stored (one more pass over memory
// instead of KH*KW evaluations: ResNet-18's im2col kernels spent 90% of their time so).
constexpr size_t kMaxRecomputedSize = 8;
// A value that a reader evaluates this many times per element or more (a padding mask's
// where(mask == 0, -inf, 0), read along every attention row: once per query) is computed once
// and stored when it is more than a load and one op: its reader then loads it from a buffer that
// stays in L1, where it computed it again at each visit, at the vector width of its widest
// operand (a BERT-like encoder's masked softmax compared the i64 mask 8 lanes at a time).
constexpr double kMinRevisitsToStore = 16;
constexpr size_t kMaxRevisitedSize = 3;
// A node that reads one buffer at this many points (a stencil: a convolution as Kiln's own loop)
// revisits its elements, and its value is stored: inlined, it would be computed in its reader's
// loops, which walk the reader's own rows (a max pool after LeNet's first convolution computed
// each output alone, scalar: 4x the time of storing it; a copy into channels-last order would
// gather every tap).
constexpr size_t kMinStencilTaps = 4;

// The most distinct points of any one buffer `body` loads (a value loaded at one point several
// times, x * x, counts once).
size_t stencil_taps(const Expr& body) {
  std::map<int, std::set<std::string>> points;
  size_t most = 0;
  visit(body, [&](const ExprNode& e) {
    if (e.kind != ExprKind::Load) return;
    std::set<std::string>& seen = points[e.buffer];
    seen.insert(e.index.to_string());
    most = std::max(most, seen.size());
  });
  return most;
}

SymShape contiguous(const SymShape& shape) {
  SymShape strides(shape.size());
  SymInt stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride = stride * shape[d];
  }
  return strides;
}

// True when `largest` + 1 <= size is certain.
bool fits_in(const SymInt& largest, const SymInt& size) {
  if (largest.is_constant() && size.is_constant()) return largest.constant() < size.constant();
  return largest + 1 == size || largest.maybe_constant() == 0;
}

int64_t trunc_div(int64_t a, int64_t b) { return a / b; }

// Every Load of `buffer` in `expr`.
void collect_loads(const Expr& expr, int buffer, std::vector<const ExprNode*>& loads) {
  visit(expr, [&](const ExprNode& node) {
    if (node.kind == ExprKind::Load && node.buffer == buffer) loads.push_back(&node);
  });
}

// Replaces every Load of `buffer` by f(load).
Expr replace_loads(const Expr& expr, int buffer, const std::function<Expr(const ExprNode&)>& f) {
  if (!expr) return expr;
  if (expr->kind == ExprKind::Load && expr->buffer == buffer) return f(*expr);
  return map_children(expr, [&](const Expr& child) { return replace_loads(child, buffer, f); });
}

struct VarRange {
  SymInt var;
  SymInt range;
};

// The variables of a node and their ranges: x_d over ranges, r_k over reduction ranges.
std::vector<VarRange> node_vars(const LoopNode& node) {
  std::vector<VarRange> vars;
  for (size_t d = 0; d < node.ranges.size(); ++d) vars.push_back({loop_var(d), node.ranges[d]});
  for (size_t k = 0; k < node.reduction_ranges.size(); ++k) {
    vars.push_back({reduction_var(k), node.reduction_ranges[k]});
  }
  return vars;
}

// Bounds a mask proves: `value` >= lower and `value` < upper whenever the mask holds.
struct MaskBound {
  SymInt value;
  std::optional<SymInt> lower, upper;
};

// The bounds of the conjunction `mask` (comparisons of an index value with an index value or
// an integer constant, joined by logical_and); other terms prove nothing and are skipped.
void collect_mask_bounds(const Expr& mask, std::vector<MaskBound>& bounds) {
  if (!mask || mask->kind != ExprKind::Binary) return;
  if (mask->op == LoopOp::logical_and) {
    collect_mask_bounds(mask->args[0], bounds);
    collect_mask_bounds(mask->args[1], bounds);
    return;
  }
  if (mask->op != LoopOp::ge && mask->op != LoopOp::lt) return;
  const Expr& left = mask->args[0];
  const Expr& right = mask->args[1];
  if (left->kind != ExprKind::IndexValue) return;
  std::optional<SymInt> limit;
  if (right->kind == ExprKind::IndexValue) limit = right->index;
  if (right->kind == ExprKind::Constant && is_integral(right->dtype)) limit = SymInt(right->int_value);
  if (!limit) return;
  if (mask->op == LoopOp::ge) bounds.push_back({left->index, *limit, std::nullopt});
  else bounds.push_back({left->index, std::nullopt, *limit});
}

// True when the bounds put `coordinate` in [0, size).
bool proves_in_range(const std::vector<MaskBound>& bounds, const SymInt& coordinate, const SymInt& size) {
  bool lower = false, upper = false;
  for (const MaskBound& b : bounds) {
    if (!(b.value == coordinate)) continue;
    if (b.lower && b.lower->maybe_constant().value_or(-1) >= 0) lower = true;
    if (b.upper && (*b.upper == size || (b.upper->is_constant() && size.is_constant() &&
                                         b.upper->constant() <= size.constant()))) {
      upper = true;
    }
  }
  return lower && upper;
}

// Given the index at which a reader reads a buffer stored contiguously over `ranges`, the
// coordinates (one expression of the reader's variables per dim of `ranges`) of the element
// read, or nullopt when they cannot be recovered exactly. `mask`: the predicate guarding the
// read (or null). Each coordinate must stay in its dim's range for every iteration, or, for a
// masked (padded) read, whenever the mask holds: the mask must test that very coordinate
// against that dim's bounds. A mask over a merged dim or a neighbouring dim proves nothing
// about this one (x3 in [0, 8) does not keep x3 inside a dim of 2).
std::optional<std::vector<SymInt>> invert_contiguous_index(const SymInt& index, const SymShape& ranges,
                                                           const std::vector<VarRange>& vars, const Expr& mask) {
  std::vector<SymInt> var_symbols;
  for (const VarRange& v : vars) var_symbols.push_back(v.var);
  std::optional<AffineIndex> affine = affine_form(index, var_symbols);
  if (!affine) return std::nullopt;
  SymShape strides = contiguous(ranges);
  std::vector<SymInt> coords(ranges.size(), SymInt(0));
  std::vector<SymInt> largest(ranges.size(), SymInt(0));
  std::vector<bool> starts_before(ranges.size(), false);
  for (size_t j = 0; j < vars.size(); ++j) {
    const SymInt& c = affine->coefficients[j];
    if (c == SymInt(0)) continue;
    std::optional<size_t> dim;
    SymInt ratio = 1;
    for (size_t d = 0; d < ranges.size() && !dim; ++d) {
      if (ranges[d] == SymInt(1)) continue;
      if (c == strides[d]) {
        dim = d;
        ratio = 1;
      }
    }
    for (size_t d = 0; d < ranges.size() && !dim; ++d) {
      if (ranges[d] == SymInt(1) || strides[d] == SymInt(0)) continue;
      SymInt q = floordiv(c, strides[d]);
      if (q * strides[d] == c && q.maybe_constant().value_or(1) > 0) {
        dim = d;
        ratio = q;
      }
    }
    if (!dim) return std::nullopt;
    coords[*dim] = coords[*dim] + ratio * vars[j].var;
    largest[*dim] = largest[*dim] + ratio * (vars[j].range - 1);
  }
  // The constant offset, split per dim with truncating division (padding offsets are negative).
  SymInt offset = affine->offset;
  if (!(offset == SymInt(0))) {
    std::optional<int64_t> rest = offset.maybe_constant();
    if (!rest) return std::nullopt;
    for (size_t d = 0; d < ranges.size(); ++d) {
      std::optional<int64_t> stride = strides[d].maybe_constant();
      if (!stride || *stride == 0) {
        if (*rest != 0) return std::nullopt;
        continue;
      }
      if (ranges[d] == SymInt(1)) continue;
      int64_t part = trunc_div(*rest, *stride);
      if (part < 0) starts_before[d] = true;
      coords[d] = coords[d] + part;
      largest[d] = largest[d] + part;
      *rest -= part * *stride;
    }
    if (*rest != 0) return std::nullopt;
  }
  SymInt rebuilt = 0;
  for (size_t d = 0; d < ranges.size(); ++d) rebuilt = rebuilt + coords[d] * strides[d];
  if (!(rebuilt == index)) return std::nullopt;
  std::vector<MaskBound> bounds;
  collect_mask_bounds(mask, bounds);
  for (size_t d = 0; d < ranges.size(); ++d) {
    if (!starts_before[d] && fits_in(largest[d], ranges[d])) continue;
    if (!proves_in_range(bounds, coords[d], ranges[d])) return std::nullopt;
  }
  return coords;
}

// The points `node` visits: its x and r ranges' product.
SymInt visited_points(const LoopNode& node) {
  SymInt points = 1;
  for (const SymInt& range : node.ranges) points = points * range;
  for (const SymInt& range : node.reduction_ranges) points = points * range;
  return points;
}

// How many times, at the least, `reader` evaluates each of its loads of `buffer` per point that
// `producer` computes (0 when unknown), counting a load once per iteration of the innermost loop
// whose variable it uses: a load that ignores the loops inside that one (a row's rstd read along
// the row) is hoisted out of them later, so it recomputes nothing, but one that ignores an outer
// loop only (a channel's rstd read along a channels-last value's width, its channels innermost)
// is computed again at each of that loop's iterations.
double revisits_per_point(const LoopNode& reader, const LoopNode& producer, int buffer) {
  std::optional<int64_t> computed = visited_points(producer).maybe_constant();
  if (!computed || *computed <= 0) return 0;
  std::vector<const ExprNode*> loads;
  collect_loads(reader.body, buffer, loads);
  if (loads.empty()) return 0;
  const std::vector<VarRange> vars = node_vars(reader);  // outermost first
  double least = std::numeric_limits<double>::infinity();
  for (const ExprNode* load : loads) {
    std::vector<std::string> used = load->index.free_symbols();
    SymInt evaluations = 1, through_last_used = 1;
    for (const VarRange& var : vars) {
      evaluations = evaluations * var.range;
      if (std::find(used.begin(), used.end(), var.var.to_string()) != used.end()) through_last_used = evaluations;
    }
    std::optional<int64_t> count = through_last_used.maybe_constant();
    if (!count) return 0;
    least = std::min(least, double(*count) / double(*computed));
  }
  return least;
}

// True when `reader` provably evaluates each of its loads of `buffer` more times than
// `producer` computes points (revisits_per_point).
bool revisits(const LoopNode& reader, const LoopNode& producer, int buffer) {
  return revisits_per_point(reader, producer, buffer) > 1;
}

bool read_by_extern(const LoopProgram& p, const std::vector<int>& readers) {
  for (int reader : readers) {
    if (p.nodes[size_t(reader)].kind == NodeKind::Extern) return true;
  }
  return false;
}

// The buffers `node` reads, sorted, each once.
std::vector<int> sorted_loads(const LoopNode& node) {
  std::vector<int> loaded = loaded_buffers(node.body);
  std::sort(loaded.begin(), loaded.end());
  loaded.erase(std::unique(loaded.begin(), loaded.end()), loaded.end());
  return loaded;
}

// Keeps `readers` (LoopProgram::readers_by_buffer) true after node `reader` went from reading
// `before` to reading `after` (both sorted): each buffer's readers stay in node order.
void update_readers(std::vector<std::vector<int>>& readers, int reader, const std::vector<int>& before,
                    const std::vector<int>& after) {
  for (int buffer : before) {
    if (std::binary_search(after.begin(), after.end(), buffer)) continue;
    std::vector<int>& list = readers[size_t(buffer)];
    list.erase(std::remove(list.begin(), list.end(), reader), list.end());
  }
  for (int buffer : after) {
    std::vector<int>& list = readers[size_t(buffer)];
    auto at = std::lower_bound(list.begin(), list.end(), reader);
    if (at == list.end() || *at != reader) list.insert(at, reader);
  }
}

// Whether `node` reads the output of a library convolution.
bool reads_convolution_output(const LoopProgram& p, const LoopNode& node) {
  bool found = false;
  visit(node.body, [&](const ExprNode& e) {
    if (e.kind != ExprKind::Load) return;
    int writer = p.writer(e.buffer);
    if (writer >= 0 && p.nodes[size_t(writer)].kind == NodeKind::Extern &&
        p.nodes[size_t(writer)].extern_call.kind == ExternKind::Convolution)
      found = true;
  });
  return found;
}

}  // namespace

void inline_pointwise(SchedulingState& state) {
  LoopProgram& p = state.program();
  // Every buffer's readers, kept up to date as inlining rewrites the readers' bodies (asking
  // LoopProgram::readers for each node walked every body each time: 0.7 s of DenseNet-121's
  // compile).
  std::vector<std::vector<int>> readers_by_buffer = p.readers_by_buffer();
  for (LoopNode& node : p.nodes) {
    if (node.kind != NodeKind::Pointwise || node.outputs.size() != 1) continue;
    int buffer = node.outputs[0];
    const Buffer& buf = p.buffer(buffer);
    if (buf.kind != BufferKind::Intermediate) continue;
    const std::vector<int> readers = readers_by_buffer[size_t(buffer)];
    if (read_by_extern(p, readers)) {
      state.note(node.name + " is stored: a library call reads it");
      continue;
    }
    size_t load_count = 0;
    bool invertible = true;
    for (int reader_id : readers) {
      const LoopNode& reader = p.nodes[size_t(reader_id)];
      std::vector<const ExprNode*> loads;
      collect_loads(reader.body, buffer, loads);
      load_count += loads.size();
      for (const ExprNode* l : loads) {
        if (!l->indirect.empty()) {
          invertible = false;
          state.note(node.name + " is stored: " + reader.name + " reads it through an index tensor");
          break;
        }
        if (!invert_contiguous_index(l->index, node.ranges, node_vars(reader), l->mask)) {
          invertible = false;
          state.note(node.name + " is stored: " + reader.name + " reads it at index " + l->index.to_string() +
                     ", which does not map back to its elements");
          break;
        }
      }
      if (!invertible) break;
    }
    if (!invertible || readers.empty()) continue;
    size_t size = expr_size(node.body);
    if (readers.size() > 1 && size > 1 && reads_convolution_output(p, node)) {
      // The convolution's epilogue computes it once (as oneDNN's post-op where it has one: a
      // SiLU), instead of each reader from the convolution's output (EfficientNet's
      // squeeze-excitation blocks pool and scale the SiLU of a depthwise convolution).
      state.note(node.name + " is stored: " + std::to_string(readers.size()) +
                 " nodes read this epilogue of a convolution, which computes it once");
      continue;
    }
    if (size_t taps = stencil_taps(node.body); taps >= kMinStencilTaps) {
      state.note(node.name + " is stored: it reads " + std::to_string(taps) +
                 " points of one buffer (a stencil), which a reader's loops would not walk as its own do");
      continue;
    }
    std::set<int> loaded;
    visit(node.body, [&](const ExprNode& e) {
      if (e.kind == ExprKind::Load) loaded.insert(e.buffer);
    });
    if (load_count > 1 && (size > kMaxInlinedSizeWithManyReaders || loaded.size() > kMaxInlinedBuffersWithManyReaders)) {
      state.note(node.name + " is stored: " + std::to_string(load_count) + " reads of an expression of " +
                 std::to_string(size) + " operations over " + std::to_string(loaded.size()) + " buffers");
      continue;
    }
    // An expensive value (a sigmoid, an exp) is never recomputed for each visit of a reader that
    // visits more points than the value has elements: EfficientNet's squeeze-excitation scale,
    // sigmoid(gate[c]) * x[p, c], computed the gate's 32 sigmoids 12544 times each.
    if (applies_expensive_op(node.body)) {
      auto broadcasting = std::find_if(readers.begin(), readers.end(), [&](int reader) {
        std::optional<int64_t> visited = visited_points(p.nodes[size_t(reader)]).maybe_constant();
        std::optional<int64_t> computed = visited_points(node).maybe_constant();
        return visited && computed && *visited > *computed;
      });
      if (broadcasting != readers.end()) {
        state.note(node.name + " is stored: " + p.nodes[size_t(*broadcasting)].name +
                   " visits more points than it has elements, and it applies an expensive op");
        continue;
      }
    }
    if (size > kMaxRecomputedSize) {
      auto revisiting = std::find_if(readers.begin(), readers.end(),
                                     [&](int reader) { return revisits(p.nodes[size_t(reader)], node, buffer); });
      if (revisiting != readers.end()) {
        state.note(node.name + " is stored: " + p.nodes[size_t(*revisiting)].name +
                   " visits its elements several times, and it is an expression of " + std::to_string(size) + " operations");
        continue;
      }
    }
    if (size > kMaxRevisitedSize) {
      auto revisiting = std::find_if(readers.begin(), readers.end(), [&](int reader) {
        return revisits_per_point(p.nodes[size_t(reader)], node, buffer) >= kMinRevisitsToStore;
      });
      if (revisiting != readers.end()) {
        state.note(node.name + " is stored: " + p.nodes[size_t(*revisiting)].name + " visits each element " +
                   std::to_string(int64_t(kMinRevisitsToStore)) + " times or more, and it is an expression of " +
                   std::to_string(size) + " operations");
        continue;
      }
    }
    for (int reader_id : readers) {
      LoopNode& reader = p.nodes[size_t(reader_id)];
      const std::vector<int> read_before = sorted_loads(reader);
      std::vector<VarRange> vars = node_vars(reader);
      reader.body = replace_loads(reader.body, buffer, [&](const ExprNode& l) -> Expr {
        auto coords = invert_contiguous_index(l.index, node.ranges, vars, l.mask);
        KILN_CHECK(coords.has_value(), "inlining: a checked load no longer inverts");
        std::map<std::string, SymInt> replacements;
        for (size_t d = 0; d < coords->size(); ++d) replacements[loop_var(d).to_string()] = (*coords)[d];
        Expr value = cast(substitute(node.body, replacements), buf.dtype);
        if (l.mask) value = where(l.mask, value, l.other ? l.other : constant(0, buf.dtype));
        return value;
      });
      reader.origins.insert(reader.origins.end(), node.origins.begin(), node.origins.end());
      update_readers(readers_by_buffer, reader_id, read_before, sorted_loads(reader));
    }
    state.alive[size_t(node.id)] = false;
  }
}

}  // namespace kiln::codegen::scheduling
