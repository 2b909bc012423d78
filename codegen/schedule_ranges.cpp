// Stage 4 of the scheduler (codegen/schedule.h): range simplification of each kernel. Size-1
// dims are dropped (their variable is 0), and adjacent dims that every index of the kernel
// walks contiguously are merged into one, for the outer (x) and then the inner (r) variables;
// then the floordivs and mods of indices that the constant ranges decide are folded. Last, a
// pointwise kernel whose indices divide an outer variable (a copy out of a permuted view:
// x1 // 25 and x1 % 5 reading a channels-last [N, 5, 5, 16] as [N, 400]) has that dim split at
// the divisors, x1 = 25 a + b, so that every index becomes affine and the loads plain strided
// ones instead of gathers with a division per element (Inductor splits its iteration ranges
// the same way).
#include <map>
#include <optional>

#include "codegen/index_analysis.h"
#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

namespace {

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

// Substitutes variables in every index of the kernel, through temporaries so that x0 -> x1 and
// x1 -> x2 do not collide.
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

// Folds every floordiv and mod of an index that the loops' constant ranges decide: a view that
// splits a dim and reshapes it again (a head split, x[..., 64*h + d] read through (64*h + d)//256
// and (64*h + d) % 256 for h < 4, d < 64) then reads memory as the affine index it is, which the
// compiler vectorizes with plain loads rather than gathers.
void fold_bounded_divisions(Kernel& kernel) {
  std::map<std::string, int64_t> bounds;
  for (size_t d = 0; d < kernel.outer.size(); ++d)
    if (std::optional<int64_t> size = kernel.outer[d].maybe_constant()) bounds[loop_var(d).to_string()] = *size;
  for (size_t d = 0; d < kernel.inner.size(); ++d)
    if (std::optional<int64_t> size = kernel.inner[d].maybe_constant()) bounds[reduction_var(d).to_string()] = *size;
  if (bounds.empty()) return;
  auto fold = [&](const SymInt& index) { return index.fold_with_bounds(bounds); };
  for (KernelStep& step : kernel.steps) {
    step.body = map_indices(step.body, fold);
    step.store_index = fold(step.store_index);
    step.stash_index = fold(step.stash_index);
  }
}

// The number of (index, outer variable) pairs where the index uses the variable and is not affine
// in it, over the outer variables first .. first + count - 1.
size_t non_affine_pairs(const Kernel& kernel, size_t first, size_t count) {
  std::vector<SymInt> indices = kernel_indices(kernel);
  size_t pairs = 0;
  for (size_t d = first; d < first + count; ++d)
    for (const SymInt& index : indices)
      if (depends_on(index, loop_var(d)) && !affine_form(index, {loop_var(d)})) ++pairs;
  return pairs;
}

// The divisors k of `size` with 1 < k < size, ascending.
std::vector<int64_t> proper_divisors(int64_t size) {
  std::vector<int64_t> low, high;
  for (int64_t k = 2; k * k <= size; ++k) {
    if (size % k != 0) continue;
    low.push_back(k);
    if (k * k != size) high.push_back(size / k);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// The kernel with outer dim d (constant size R) split into [R / k, k]: x_d = k x_d + x_{d+1},
// later variables renumbered, the divisions folded.
Kernel split_outer_dim(const Kernel& kernel, size_t d, int64_t k) {
  Kernel split = kernel;
  int64_t size = *kernel.outer[d].maybe_constant();
  std::map<std::string, SymInt> replacements;
  for (size_t e = d; e < kernel.outer.size(); ++e)
    replacements[loop_var(e).to_string()] = e == d ? SymInt(k) * loop_var(d) + loop_var(d + 1) : loop_var(e + 1);
  rename(split, replacements);
  split.outer[d] = size / k;
  split.outer.insert(split.outer.begin() + std::ptrdiff_t(d) + 1, SymInt(k));
  fold_bounded_divisions(split);
  return split;
}

// Splits outer dims at divisors of their constant sizes while a split leaves fewer
// non-affine uses of the two new variables than twice the old one's (one of the two comes
// out clean): x1 // 25 and x1 % 5 over x1 < 400 split at 25, then the rest at 5. Among the
// divisors, the one that leaves the fewest; ties go to the larger divisor.
void split_divided_dims(Kernel& kernel) {
  for (int splits = 0; splits < 8; ++splits) {
    std::optional<Kernel> best;
    size_t best_pairs = 0;
    for (size_t d = 0; d < kernel.outer.size(); ++d) {
      std::optional<int64_t> size = kernel.outer[d].maybe_constant();
      if (!size) continue;
      size_t before = non_affine_pairs(kernel, d, 1);
      if (before == 0) continue;
      for (int64_t k : proper_divisors(*size)) {
        Kernel split = split_outer_dim(kernel, d, k);
        size_t after = non_affine_pairs(split, d, 2);
        if (after < 2 * before && (!best || after <= best_pairs)) {
          best = std::move(split);
          best_pairs = after;
        }
      }
    }
    if (!best) return;
    kernel = std::move(*best);
  }
}

}  // namespace

// Drops size-1 dims and merges adjacent dims that every access walks contiguously, for the
// outer (x) and then the inner (r) variables; then folds the divisions the ranges decide, and
// splits the outer dims of a pointwise kernel that its indices still divide.
void simplify_ranges(Kernel& kernel) {
  if (kernel.kind == KernelKind::Extern) return;
  simplify_dims(kernel, kernel.outer, [](size_t d) { return loop_var(d); });
  simplify_dims(kernel, kernel.inner, [](size_t d) { return reduction_var(d); });
  fold_bounded_divisions(kernel);
  if (kernel.kind != KernelKind::Pointwise || kernel.outer.empty()) return;
  size_t before = non_affine_pairs(kernel, 0, kernel.outer.size());
  if (before == 0) return;
  Kernel split = kernel;
  split_divided_dims(split);
  simplify_dims(split, split.outer, [](size_t d) { return loop_var(d); });
  fold_bounded_divisions(split);
  // Kept when it removed divisions without leaving an innermost loop too short to vectorize
  // (an interleave, out[x] = in[(x % 2) * n + x // 2], would run 2 points per inner loop).
  std::optional<int64_t> inner_before = kernel.outer.back().maybe_constant();
  std::optional<int64_t> inner_after = split.outer.back().maybe_constant();
  bool inner_long_enough = !inner_after || (inner_before && *inner_after >= std::min<int64_t>(16, *inner_before));
  if (non_affine_pairs(split, 0, split.outer.size()) < before && inner_long_enough) kernel = std::move(split);
}

}  // namespace kiln::codegen::scheduling
