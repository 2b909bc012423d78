// Stage 2 of the scheduler (codegen/schedule.h): kernel formation. Each live loop node joins
// the first kernel it fits, preferring kernels that make what it reads (vertical fusion), then
// any later one (horizontal): a reduction kernel takes reductions over its ranges and pointwise
// nodes over its row or its outer point (so softmax and layer_norm are one kernel each), a
// pointwise kernel takes pointwise nodes over its range, and a GEMM or a convolution takes a pointwise node
// reading its output at the same point as its epilogue. Every read of a value made in the
// same kernel must be at the point where it is made. Otherwise the node starts a kernel.
#include <algorithm>
#include <cctype>
#include <optional>

#include "codegen/schedule_stages.h"
#include "kiln/error.h"

namespace kiln::codegen::scheduling {

namespace {

bool same_shape(const SymShape& a, const SymShape& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (!(a[d] == b[d])) return false;
  }
  return true;
}

// The full (row) shape of a reduction kernel: outer with the inner ranges at the reduced dims.
struct RowSpace {
  SymShape outer;
  SymShape inner;
  std::vector<int> reduced_dims;
};

class KernelFormer {
 public:
  KernelFormer(SchedulingState& state, bool fuse) : state_(state), fuse_(fuse) {}

  void form_kernels() {
    const LoopProgram& p = state_.program();
    for (const LoopNode& node : p.nodes) {
      if (!state_.alive[size_t(node.id)]) continue;
      int floor = producer_kernel_floor(node);
      bool placed = false;
      if (fuse_ && node.kind != NodeKind::Extern) {
        // Prefer kernels that make what this node reads (vertical), then any later one (horizontal).
        std::vector<int> candidates;
        for (int k = std::max(floor, 0); k < int(state_.result.kernels.size()); ++k) candidates.push_back(k);
        std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
          return reads_from_kernel(node, a) > reads_from_kernel(node, b);
        });
        for (int k : candidates) {
          const Kernel& kernel = state_.result.kernels[size_t(k)];
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
          if (reads_from_kernel(node, k)) state_.note(node.name + " not fused into " + kernel.name + ": " + *why_not);
        }
        // Reading from a kernel that comes before the floor is fine; fusing into one is not.
        for (int k = 0; k < std::max(floor, 0) && !placed; ++k) {
          if (reads_from_kernel(node, k) && k < floor) {
            state_.note(node.name + " not fused into " + state_.result.kernels[size_t(k)].name +
                        ": it also reads values made later, in " + state_.result.kernels[size_t(floor)].name);
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
          for (int b : node.outputs) state_.produced[b] = {kernel.id, KernelStep::Kind::StoreOuter};
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

 private:
  int producer_kernel_floor(const LoopNode& node) {
    int floor = -1;
    std::vector<int> reads;
    if (node.kind == NodeKind::Extern) {
      for (const StridedView& v : node.extern_call.inputs) reads.push_back(v.buffer);
    } else {
      reads = loaded_buffers(node.body);
    }
    for (int b : reads) {
      auto it = state_.produced.find(b);
      if (it != state_.produced.end()) floor = std::max(floor, it->second.kernel);
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
      auto it = state_.produced.find(node.buffer);
      if (it == state_.produced.end() || it->second.kernel != kernel_index) return;
      const SymInt& expected = it->second.kind == KernelStep::Kind::StoreInner ? full_index : outer_index;
      if (!node.indirect.empty() || node.mask || !(node.index == expected)) {
        problem = "it reads " + state_.program().buffer(node.buffer).name + " of " + kernel.name +
                  " at another point (" + node.index.to_string() + ")";
      }
    });
    return problem;
  }

  Kernel& new_kernel(KernelKind kind, const LoopNode& node) {
    Kernel kernel;
    kernel.id = int(state_.result.kernels.size());
    kernel.kind = kind;
    std::string base = node.name;
    for (char& c : base) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    kernel.name = "kernel" + std::to_string(kernel.id) + "_" + base;
    state_.result.kernels.push_back(std::move(kernel));
    return state_.result.kernels.back();
  }

  void add_step(Kernel& kernel, const LoopNode& node, KernelStep step) {
    kernel.steps.push_back(std::move(step));
    kernel.nodes.push_back(node.id);
    kernel.origins.insert(kernel.origins.end(), node.origins.begin(), node.origins.end());
    for (int b : node.outputs) state_.produced[b] = {kernel.id, kernel.steps.back().kind};
  }

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
    Kernel& kernel = state_.result.kernels[size_t(k)];
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
    Kernel& kernel = state_.result.kernels[size_t(k)];
    if (node.kind != NodeKind::Pointwise) return "it is not pointwise";
    if (!same_shape(node.ranges, kernel.outer)) {
      return "its range " + ir::shape_string(node.ranges) + " differs from " + ir::shape_string(kernel.outer);
    }
    SymInt index = flat_index(loop_vars(kernel.outer.size()), kernel.outer);
    if (auto problem = in_kernel_reads_ok(kernel, k, node.body, index, index)) return problem;
    add_point_step(kernel, node, index);
    return std::nullopt;
  }

  // A pointwise node that reads a GEMM's (or a convolution's) output at the same point becomes
  // its epilogue.
  std::optional<std::string> try_join_gemm_kernel(int k, const LoopNode& node) {
    Kernel& kernel = state_.result.kernels[size_t(k)];
    const LoopNode& gemm = state_.program().nodes[size_t(kernel.extern_node)];
    if (gemm.extern_call.kind == ExternKind::Fallback) return "the library call takes no epilogue";
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

  bool reads_from_kernel(const LoopNode& node, int k) {
    std::vector<int> reads = node.kind == NodeKind::Extern ? std::vector<int>{} : loaded_buffers(node.body);
    if (node.kind == NodeKind::Extern) {
      for (const StridedView& v : node.extern_call.inputs) reads.push_back(v.buffer);
    }
    for (int b : reads) {
      auto it = state_.produced.find(b);
      if (it != state_.produced.end() && it->second.kernel == k) return true;
    }
    return false;
  }

  SchedulingState& state_;
  bool fuse_;
  std::map<int, RowSpace> row_spaces_;  // per reduction kernel
};

}  // namespace

void form_kernels(SchedulingState& state, bool fuse) { KernelFormer(state, fuse).form_kernels(); }

}  // namespace kiln::codegen::scheduling
