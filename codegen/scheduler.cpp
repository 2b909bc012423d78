// The scheduler: inlining, kernel formation (fusion), range simplification and the memory plan.
// See codegen/schedule.h for what each stage guarantees.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "codegen/index_analysis.h"
#include "codegen/schedule.h"
#include "runtime/error.h"

namespace kiln::codegen {

namespace {

// A pointwise value read by several nodes is recomputed in each while its expression is this
// small; past it, the value is computed once and stored.
constexpr size_t kMaxInlinedSizeWithManyReaders = 24;

bool fusion_log_enabled() {
  const char* log = std::getenv("KILN_LOG");
  return log != nullptr && std::string(log).find("fusion") != std::string::npos;
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

bool same_shape(const SymShape& a, const SymShape& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (!(a[d] == b[d])) return false;
  }
  return true;
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
  auto node = std::make_shared<ExprNode>(*expr);
  for (Expr& arg : node->args) arg = replace_loads(arg, buffer, f);
  for (IndirectTerm& term : node->indirect) term.value = replace_loads(term.value, buffer, f);
  node->mask = replace_loads(node->mask, buffer, f);
  node->other = replace_loads(node->other, buffer, f);
  return node;
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

class Scheduler {
 public:
  Scheduler(LoopProgram program, const ScheduleOptions& options)
      : options_(options), log_to_stderr_(fusion_log_enabled()) {
    result_.program = std::move(program);
  }

  ScheduledProgram run() {
    alive_.assign(program().nodes.size(), true);
    if (options_.fuse) inline_pointwise();
    form_kernels();
    find_register_buffers();
    for (Kernel& kernel : result_.kernels) stash_reduced_values(kernel);
    for (Kernel& kernel : result_.kernels) simplify_ranges(kernel);
    plan_memory();
    return std::move(result_);
  }

 private:
  LoopProgram& program() { return result_.program; }

  void note(const std::string& message) {
    result_.fusion_log.push_back(message);
    if (log_to_stderr_) std::cerr << "kiln[fusion]: " << message << "\n";
  }

  // ------------------------------------------------------------ inlining

  bool read_by_extern(int buffer) {
    for (int reader : program().readers(buffer)) {
      if (program().nodes[size_t(reader)].kind == NodeKind::Extern) return true;
    }
    return false;
  }

  void inline_pointwise() {
    LoopProgram& p = program();
    for (LoopNode& node : p.nodes) {
      if (node.kind != NodeKind::Pointwise || node.outputs.size() != 1) continue;
      int buffer = node.outputs[0];
      const Buffer& buf = p.buffer(buffer);
      if (buf.kind != BufferKind::Intermediate) continue;
      if (read_by_extern(buffer)) {
        note(node.name + " is stored: a library call reads it");
        continue;
      }
      std::vector<int> readers = p.readers(buffer);
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
            note(node.name + " is stored: " + reader.name + " reads it through an index tensor");
            break;
          }
          if (!invert_contiguous_index(l->index, node.ranges, node_vars(reader), l->mask)) {
            invertible = false;
            note(node.name + " is stored: " + reader.name + " reads it at index " + l->index.to_string() +
                 ", which does not map back to its elements");
            break;
          }
        }
        if (!invertible) break;
      }
      if (!invertible || readers.empty()) continue;
      size_t size = expr_size(node.body);
      if (load_count > 1 && size > kMaxInlinedSizeWithManyReaders) {
        note(node.name + " is stored: " + std::to_string(load_count) + " reads of an expression of " +
             std::to_string(size) + " operations");
        continue;
      }
      for (int reader_id : readers) {
        LoopNode& reader = p.nodes[size_t(reader_id)];
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
      }
      alive_[size_t(node.id)] = false;
    }
  }

  // ------------------------------------------------------------ kernels

  struct Placement {
    int kernel = -1;
    KernelStep::Kind kind = KernelStep::Kind::StoreOuter;
  };

  // Where each buffer is produced: kernel index and step kind.
  std::map<int, Placement> produced_;

  int producer_kernel_floor(const LoopNode& node) {
    int floor = -1;
    std::vector<int> reads;
    if (node.kind == NodeKind::Extern) {
      for (const StridedView& v : node.extern_call.inputs) reads.push_back(v.buffer);
    } else {
      reads = loaded_buffers(node.body);
    }
    for (int b : reads) {
      auto it = produced_.find(b);
      if (it != produced_.end()) floor = std::max(floor, it->second.kernel);
    }
    return floor;
  }

  // Checks that every load in `body` of a buffer produced in `kernel` reads the element of the
  // current point (outer, or outer+inner), so fusion keeps each value where it is made.
  std::optional<std::string> in_kernel_reads_ok(const Kernel& kernel, int kernel_index, const Expr& body,
                                                const SymInt& outer_index, const SymInt& full_index) {
    std::optional<std::string> problem;
    visit(body, [&](const ExprNode& node) {
      if (problem || node.kind != ExprKind::Load) return;
      auto it = produced_.find(node.buffer);
      if (it == produced_.end() || it->second.kernel != kernel_index) return;
      const SymInt& expected = it->second.kind == KernelStep::Kind::StoreInner ? full_index : outer_index;
      if (!node.indirect.empty() || node.mask || !(node.index == expected)) {
        problem = "it reads " + program().buffer(node.buffer).name + " of " + kernel.name +
                  " at another point (" + node.index.to_string() + ")";
      }
    });
    return problem;
  }

  Kernel& new_kernel(KernelKind kind, const LoopNode& node) {
    Kernel kernel;
    kernel.id = int(result_.kernels.size());
    kernel.kind = kind;
    std::string base = node.name;
    for (char& c : base) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    kernel.name = "kernel" + std::to_string(kernel.id) + "_" + base;
    result_.kernels.push_back(std::move(kernel));
    return result_.kernels.back();
  }

  void add_step(Kernel& kernel, const LoopNode& node, KernelStep step) {
    kernel.steps.push_back(std::move(step));
    kernel.nodes.push_back(node.id);
    kernel.origins.insert(kernel.origins.end(), node.origins.begin(), node.origins.end());
    for (int b : node.outputs) produced_[b] = {kernel.id, kernel.steps.back().kind};
  }

  // The full (row) shape of a reduction kernel: outer with the inner ranges at the reduced dims.
  struct RowSpace {
    SymShape outer;
    SymShape inner;
    std::vector<int> reduced_dims;
  };
  std::map<int, RowSpace> row_spaces_;

  std::vector<SymInt> full_coords(const RowSpace& space) {
    std::vector<SymInt> coords = loop_vars(space.outer.size());
    for (size_t k = 0; k < space.reduced_dims.size(); ++k) coords[size_t(space.reduced_dims[k])] = reduction_var(k);
    return coords;
  }
  SymShape full_shape(const RowSpace& space) {
    SymShape shape = space.outer;
    for (size_t k = 0; k < space.reduced_dims.size(); ++k) shape[size_t(space.reduced_dims[k])] = space.inner[k];
    return shape;
  }

  // Tries to add a reduction or pointwise node to reduction kernel `k`; returns why not.
  std::optional<std::string> try_join_reduction_kernel(int k, const LoopNode& node) {
    Kernel& kernel = result_.kernels[size_t(k)];
    const RowSpace& space = row_spaces_.at(k);
    SymInt outer_index = flat_index(loop_vars(space.outer.size()), space.outer);
    SymInt full_index = flat_index(full_coords(space), full_shape(space));
    if (node.kind == NodeKind::Reduction) {
      if (!same_shape(node.ranges, space.outer) || !same_shape(node.reduction_ranges, space.inner) ||
          node.reduced_dims != space.reduced_dims) {
        return "it reduces over other ranges";
      }
      if (auto problem = in_kernel_reads_ok(kernel, k, node.body, outer_index, full_index)) return problem;
      KernelStep step;
      step.kind = KernelStep::Kind::Reduce;
      step.node = node.id;
      step.body = node.body;
      step.reduction = node.reduction;
      step.outputs = node.outputs;
      step.store_index = outer_index;
      add_step(kernel, node, std::move(step));
      return std::nullopt;
    }
    if (node.kind != NodeKind::Pointwise) return "it is a library call";
    std::map<std::string, SymInt> replacements;
    KernelStep step;
    step.node = node.id;
    step.outputs = node.outputs;
    std::vector<int> kept;  // outer dims that are not reduced
    for (size_t d = 0; d < space.outer.size(); ++d) {
      if (std::find(space.reduced_dims.begin(), space.reduced_dims.end(), int(d)) == space.reduced_dims.end()) {
        kept.push_back(int(d));
      }
    }
    SymShape squeezed;
    for (int d : kept) squeezed.push_back(space.outer[size_t(d)]);
    if (same_shape(node.ranges, space.outer)) {
      step.kind = KernelStep::Kind::StoreOuter;
      step.store_index = outer_index;
    } else if (same_shape(node.ranges, squeezed)) {
      step.kind = KernelStep::Kind::StoreOuter;
      for (size_t i = 0; i < kept.size(); ++i) replacements[loop_var(i).to_string()] = loop_var(size_t(kept[i]));
      step.store_index = outer_index;
    } else if (same_shape(node.ranges, full_shape(space))) {
      step.kind = KernelStep::Kind::StoreInner;
      for (size_t k2 = 0; k2 < space.reduced_dims.size(); ++k2) {
        replacements[loop_var(size_t(space.reduced_dims[k2])).to_string()] = reduction_var(k2);
      }
      step.store_index = full_index;
    } else {
      return "its range " + ir::shape_string(node.ranges) + " is neither the row " +
             ir::shape_string(full_shape(space)) + " nor the outer range " + ir::shape_string(space.outer);
    }
    // Rename through temporaries so that x0 -> x1 and x1 -> x2 do not collide.
    std::map<std::string, SymInt> to_temp, from_temp;
    for (auto& [name, value] : replacements) {
      to_temp[name] = SymInt::symbol("tmp_" + name);
      from_temp["tmp_" + name] = value;
    }
    step.body = substitute(substitute(node.body, to_temp), from_temp);
    if (auto problem = in_kernel_reads_ok(kernel, k, step.body, outer_index, full_index)) return problem;
    add_step(kernel, node, std::move(step));
    return std::nullopt;
  }

  // Adds pointwise `node` as one value per point of `kernel`, stored at `index`.
  void add_point_step(Kernel& kernel, const LoopNode& node, const SymInt& index) {
    KernelStep step;
    step.kind = KernelStep::Kind::StoreOuter;
    step.node = node.id;
    step.body = node.body;
    step.outputs = node.outputs;
    step.store_index = index;
    add_step(kernel, node, std::move(step));
  }

  std::optional<std::string> try_join_pointwise_kernel(int k, const LoopNode& node) {
    Kernel& kernel = result_.kernels[size_t(k)];
    if (node.kind != NodeKind::Pointwise) return "it is not pointwise";
    if (!same_shape(node.ranges, kernel.outer)) {
      return "its range " + ir::shape_string(node.ranges) + " differs from " + ir::shape_string(kernel.outer);
    }
    SymInt index = flat_index(loop_vars(kernel.outer.size()), kernel.outer);
    if (auto problem = in_kernel_reads_ok(kernel, k, node.body, index, index)) return problem;
    add_point_step(kernel, node, index);
    return std::nullopt;
  }

  // A pointwise node that reads a GEMM's output at the same point becomes its epilogue.
  std::optional<std::string> try_join_gemm_kernel(int k, const LoopNode& node) {
    Kernel& kernel = result_.kernels[size_t(k)];
    const LoopNode& gemm = program().nodes[size_t(kernel.extern_node)];
    if (gemm.extern_call.kind != ExternKind::Gemm) return "the library call takes no epilogue";
    if (node.kind != NodeKind::Pointwise) return "it is not pointwise";
    const StridedView& out = gemm.extern_call.outputs.at(0);
    if (!same_shape(node.ranges, out.shape)) {
      return "its range " + ir::shape_string(node.ranges) + " differs from the GEMM's " + ir::shape_string(out.shape);
    }
    SymInt index = flat_index(loop_vars(out.shape.size()), out.shape);
    if (auto problem = in_kernel_reads_ok(kernel, k, node.body, index, index)) return problem;
    // The epilogue runs once per block of rows: it must read the GEMM output at its own point only
    // (checked above) and nothing else this kernel makes.
    add_point_step(kernel, node, index);
    return std::nullopt;
  }

  void form_kernels() {
    const LoopProgram& p = program();
    for (const LoopNode& node : p.nodes) {
      if (!alive_[size_t(node.id)]) continue;
      int floor = producer_kernel_floor(node);
      bool placed = false;
      if (options_.fuse && node.kind != NodeKind::Extern) {
        // Prefer kernels that make what this node reads (vertical), then any later one (horizontal).
        std::vector<int> candidates;
        for (int k = std::max(floor, 0); k < int(result_.kernels.size()); ++k) candidates.push_back(k);
        std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
          return reads_from_kernel(node, a) > reads_from_kernel(node, b);
        });
        for (int k : candidates) {
          const Kernel& kernel = result_.kernels[size_t(k)];
          std::optional<std::string> why_not;
          switch (kernel.kind) {
            case KernelKind::Reduction: why_not = try_join_reduction_kernel(k, node); break;
            case KernelKind::Pointwise: why_not = try_join_pointwise_kernel(k, node); break;
            case KernelKind::Extern: why_not = try_join_gemm_kernel(k, node); break;
          }
          if (!why_not) {
            placed = true;
            break;
          }
          if (reads_from_kernel(node, k)) note(node.name + " not fused into " + kernel.name + ": " + *why_not);
        }
        // Reading from a kernel that comes before the floor is fine; fusing into one is not.
        for (int k = 0; k < std::max(floor, 0) && !placed; ++k) {
          if (reads_from_kernel(node, k) && k < floor) {
            note(node.name + " not fused into " + result_.kernels[size_t(k)].name +
                 ": it also reads values made later, in " + result_.kernels[size_t(floor)].name);
          }
        }
      }
      if (placed) continue;
      switch (node.kind) {
        case NodeKind::Extern: {
          Kernel& kernel = new_kernel(KernelKind::Extern, node);
          kernel.extern_node = node.id;
          kernel.nodes.push_back(node.id);
          kernel.origins = node.origins;
          for (int b : node.outputs) produced_[b] = {kernel.id, KernelStep::Kind::StoreOuter};
          break;
        }
        case NodeKind::Reduction: {
          Kernel& kernel = new_kernel(KernelKind::Reduction, node);
          kernel.outer = node.ranges;
          kernel.inner = node.reduction_ranges;
          row_spaces_[kernel.id] = {node.ranges, node.reduction_ranges, node.reduced_dims};
          auto problem = try_join_reduction_kernel(kernel.id, node);
          KILN_CHECK(!problem, "a reduction does not fit its own kernel: " + problem.value_or(""));
          break;
        }
        case NodeKind::Pointwise: {
          Kernel& kernel = new_kernel(KernelKind::Pointwise, node);
          kernel.outer = node.ranges;
          auto problem = try_join_pointwise_kernel(kernel.id, node);
          KILN_CHECK(!problem, "a pointwise node does not fit its own kernel: " + problem.value_or(""));
          break;
        }
      }
    }
  }

  bool reads_from_kernel(const LoopNode& node, int k) {
    std::vector<int> reads = node.kind == NodeKind::Extern ? std::vector<int>{} : loaded_buffers(node.body);
    if (node.kind == NodeKind::Extern) {
      for (const StridedView& v : node.extern_call.inputs) reads.push_back(v.buffer);
    }
    for (int b : reads) {
      auto it = produced_.find(b);
      if (it != produced_.end() && it->second.kernel == k) return true;
    }
    return false;
  }

  // ------------------------------------------------------------ registers

  void find_register_buffers() {
    const LoopProgram& p = program();
    for (const Kernel& kernel : result_.kernels) {
      if (kernel.kind == KernelKind::Extern) continue;
      for (const KernelStep& step : kernel.steps) {
        if (step.kind == KernelStep::Kind::StoreInner) continue;
        for (int b : step.outputs) {
          if (p.buffer(b).kind != BufferKind::Intermediate) continue;
          bool only_here = true;
          for (int reader : p.readers(b)) {
            if (!alive_[size_t(reader)]) continue;
            if (std::find(kernel.nodes.begin(), kernel.nodes.end(), reader) == kernel.nodes.end()) only_here = false;
          }
          if (only_here) result_.register_buffers.push_back(b);
        }
      }
    }
  }

  // ------------------------------------------------------------ stashes

  static bool same_expr(const Expr& a, const Expr& b) {
    if (a == b) return true;
    if (!a || !b) return false;
    if (a->kind != b->kind || a->dtype != b->dtype || a->op != b->op || a->buffer != b->buffer ||
        a->float_value != b->float_value || a->int_value != b->int_value || a->seed != b->seed ||
        a->offset != b->offset || a->normal != b->normal || !(a->index == b->index) ||
        a->args.size() != b->args.size() || a->indirect.size() != b->indirect.size()) {
      return false;
    }
    for (size_t i = 0; i < a->args.size(); ++i) {
      if (!same_expr(a->args[i], b->args[i])) return false;
    }
    for (size_t i = 0; i < a->indirect.size(); ++i) {
      if (!same_expr(a->indirect[i].value, b->indirect[i].value) || !(a->indirect[i].stride == b->indirect[i].stride) ||
          !(a->indirect[i].size == b->indirect[i].size)) {
        return false;
      }
    }
    return same_expr(a->mask, b->mask) && same_expr(a->other, b->other);
  }

  // Whether the expression applies an op the loop op table marks expensive.
  static bool expensive(const Expr& expr) {
    bool found = false;
    visit(expr, [&](const ExprNode& node) {
      found = found || ((node.kind == ExprKind::Unary || node.kind == ExprKind::Binary) &&
                        loop_op_info(node.op).cost == LoopCost::expensive);
    });
    return found;
  }

  // Replaces every occurrence of `target` in `expr` by `replacement`; counts them.
  static Expr replace_expr(const Expr& expr, const Expr& target, const Expr& replacement, int& count) {
    if (!expr) return expr;
    if (same_expr(expr, target)) {
      ++count;
      return replacement;
    }
    auto node = std::make_shared<ExprNode>(*expr);
    for (Expr& arg : node->args) arg = replace_expr(arg, target, replacement, count);
    for (IndirectTerm& term : node->indirect) term.value = replace_expr(term.value, target, replacement, count);
    node->mask = replace_expr(node->mask, target, replacement, count);
    node->other = replace_expr(node->other, target, replacement, count);
    return node;
  }

  void stash_reduced_values(Kernel& kernel) {
    if (kernel.kind != KernelKind::Reduction) return;
    for (size_t i = 0; i < kernel.steps.size(); ++i) {
      KernelStep& reduce = kernel.steps[i];
      if (reduce.kind != KernelStep::Kind::Reduce || !expensive(reduce.body)) continue;
      if (reduce.reduction == ReductionKind::Welford) continue;
      for (size_t j = i + 1; j < kernel.steps.size(); ++j) {
        KernelStep& row = kernel.steps[j];
        if (row.kind != KernelStep::Kind::StoreInner || row.outputs.size() != 1) continue;
        int out = row.outputs[0];
        if (program().buffer(out).dtype != reduce.body->dtype) continue;
        Expr stashed = load(out, reduce.body->dtype, row.store_index);
        int count = 0;
        Expr body = replace_expr(row.body, reduce.body, stashed, count);
        if (count == 0) continue;
        row.body = body;
        reduce.stash_buffer = out;
        reduce.stash_index = row.store_index;
        break;
      }
    }
  }

  // ------------------------------------------------------------ ranges

  // Every index expression of the kernel, for coalescing decisions.
  std::vector<SymInt> kernel_indices(const Kernel& kernel) {
    std::vector<SymInt> indices;
    for (const KernelStep& step : kernel.steps) {
      map_indices(step.body, [&](const SymInt& index) {
        indices.push_back(index);
        return index;
      });
      indices.push_back(step.store_index);
      if (step.stash_buffer >= 0) indices.push_back(step.stash_index);
    }
    return indices;
  }

  void rename(Kernel& kernel, const std::map<std::string, SymInt>& replacements) {
    std::map<std::string, SymInt> to_temp, from_temp;
    for (auto& [name, value] : replacements) {
      to_temp[name] = SymInt::symbol("tmp_" + name);
      from_temp["tmp_" + name] = value;
    }
    for (KernelStep& step : kernel.steps) {
      step.body = substitute(substitute(step.body, to_temp), from_temp);
      step.store_index = step.store_index.substitute(to_temp).substitute(from_temp);
      step.stash_index = step.stash_index.substitute(to_temp).substitute(from_temp);
    }
  }

  // Drops size-1 dims and merges adjacent dims that every access walks contiguously, for the
  // outer (x) and then the inner (r) variables.
  void simplify_ranges(Kernel& kernel) {
    if (kernel.kind == KernelKind::Extern) return;
    simplify_dims(kernel, kernel.outer, [](size_t d) { return loop_var(d); });
    simplify_dims(kernel, kernel.inner, [](size_t d) { return reduction_var(d); });
  }

  void simplify_dims(Kernel& kernel, SymShape& ranges, const std::function<SymInt(size_t)>& var) {
    // 1. size-1 dims: the variable is 0.
    {
      std::map<std::string, SymInt> replacements;
      SymShape kept;
      for (size_t d = 0; d < ranges.size(); ++d) {
        if (ranges[d] == SymInt(1)) {
          replacements[var(d).to_string()] = 0;
        } else {
          replacements[var(d).to_string()] = var(kept.size());
          kept.push_back(ranges[d]);
        }
      }
      rename(kernel, replacements);
      ranges = kept;
    }
    // 2. merge d and d+1 when every index has coefficient(d) == coefficient(d+1) * size(d+1).
    bool changed = true;
    while (changed && ranges.size() > 1) {
      changed = false;
      std::vector<SymInt> vars;
      for (size_t d = 0; d < ranges.size(); ++d) vars.push_back(var(d));
      std::vector<SymInt> indices = kernel_indices(kernel);
      std::vector<std::optional<AffineIndex>> forms;
      for (const SymInt& index : indices) forms.push_back(affine_form(index, vars));
      for (size_t d = ranges.size() - 1; d-- > 0;) {
        bool mergeable = true;
        for (const auto& form : forms) {
          if (!form) {
            mergeable = false;
            break;
          }
          const SymInt& outer_c = form->coefficients[d];
          const SymInt& inner_c = form->coefficients[d + 1];
          if (!(outer_c == inner_c * ranges[d + 1])) {
            mergeable = false;
            break;
          }
        }
        if (!mergeable) continue;
        // x_d * size + x_{d+1} becomes one variable y over size_d * size_{d+1}: substituting
        // x_d -> 0 and x_{d+1} -> y keeps every (affine) index the same.
        std::map<std::string, SymInt> replacements;
        SymShape merged;
        for (size_t e = 0; e < ranges.size(); ++e) {
          if (e == d) {
            replacements[var(e).to_string()] = 0;
          } else {
            replacements[var(e).to_string()] = var(merged.size());
            merged.push_back(e == d + 1 ? ranges[d] * ranges[d + 1] : ranges[e]);
          }
        }
        rename(kernel, replacements);
        ranges = merged;
        changed = true;
        break;
      }
    }
  }

  // ------------------------------------------------------------ memory

  void plan_memory() {
    const LoopProgram& p = program();
    struct Lifetime {
      int buffer;
      int first;
      int last;
      SymInt bytes;
    };
    std::vector<Lifetime> lifetimes;
    std::set<int> registers(result_.register_buffers.begin(), result_.register_buffers.end());
    for (const Buffer& b : p.buffers) {
      if (b.kind != BufferKind::Intermediate || registers.count(b.id)) continue;
      auto made = produced_.find(b.id);
      if (made == produced_.end()) continue;  // inlined away
      int last = made->second.kernel;
      for (int reader : p.readers(b.id)) {
        if (!alive_[size_t(reader)]) continue;
        for (const Kernel& kernel : result_.kernels) {
          if (std::find(kernel.nodes.begin(), kernel.nodes.end(), reader) != kernel.nodes.end()) {
            last = std::max(last, kernel.id);
          }
        }
      }
      SymInt bytes = numel(b.shape) * SymInt(int64_t(dtype_size(b.dtype)));
      bytes = floordiv(bytes + 63, 64) * 64;
      lifetimes.push_back({b.id, made->second.kernel, last, bytes});
    }
    SymInt naive = 0;
    bool all_static = true;
    for (const Lifetime& l : lifetimes) {
      naive = naive + l.bytes;
      all_static = all_static && l.bytes.is_constant();
    }
    result_.memory.naive_bytes = naive;
    if (all_static) {
      // Greedy by size: the largest buffers first, each at the lowest offset free over its lifetime.
      std::vector<Lifetime> order = lifetimes;
      std::stable_sort(order.begin(), order.end(),
                       [](const Lifetime& a, const Lifetime& b) { return a.bytes.constant() > b.bytes.constant(); });
      struct Placed {
        int64_t offset, size;
        int first, last;
      };
      std::vector<Placed> placed;
      int64_t peak = 0;
      for (const Lifetime& l : order) {
        int64_t size = l.bytes.constant();
        std::vector<std::pair<int64_t, int64_t>> busy;
        for (const Placed& q : placed) {
          if (q.first <= l.last && l.first <= q.last) busy.push_back({q.offset, q.offset + q.size});
        }
        std::sort(busy.begin(), busy.end());
        int64_t offset = 0;
        for (auto [begin, end] : busy) {
          if (offset + size <= begin) break;
          offset = std::max(offset, end);
        }
        placed.push_back({offset, size, l.first, l.last});
        result_.memory.offsets[l.buffer] = offset;
        peak = std::max(peak, offset + size);
      }
      result_.memory.peak_bytes = peak;
      return;
    }
    // Symbolic sizes: a slot is reused only by a buffer of the very same size expression.
    struct Slot {
      SymInt offset, bytes;
      int free_after;
    };
    std::vector<Slot> slots;
    SymInt end = 0;
    std::vector<Lifetime> order = lifetimes;
    std::stable_sort(order.begin(), order.end(), [](const Lifetime& a, const Lifetime& b) { return a.first < b.first; });
    for (const Lifetime& l : order) {
      Slot* reuse = nullptr;
      for (Slot& slot : slots) {
        if (slot.free_after < l.first && slot.bytes == l.bytes) {
          reuse = &slot;
          break;
        }
      }
      if (reuse) {
        reuse->free_after = l.last;
        result_.memory.offsets[l.buffer] = reuse->offset;
      } else {
        slots.push_back({end, l.bytes, l.last});
        result_.memory.offsets[l.buffer] = end;
        end = end + l.bytes;
      }
    }
    result_.memory.peak_bytes = end;
  }

  ScheduleOptions options_;
  bool log_to_stderr_ = false;
  ScheduledProgram result_;
  std::vector<bool> alive_;
};

}  // namespace

ScheduledProgram schedule(LoopProgram program, const ScheduleOptions& options) {
  return Scheduler(std::move(program), options).run();
}

}  // namespace kiln::codegen
