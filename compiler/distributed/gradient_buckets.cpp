// Gradient buckets. See compiler/distributed/gradient_buckets.h.
#include "compiler/distributed/gradient_buckets.h"

#include <algorithm>
#include <map>
#include <set>

#include "kiln/error.h"
#include "runtime/allocator.h"

namespace kiln::compiler {

namespace {

// Where a parameter's gradient lies in its group's arena: first element, elements with the
// padding to the next cache line (the arena's layout, compiler/training/parameter_arena.h).
std::pair<int64_t, int64_t> padded_slot(const training::ParameterArena& arena, const std::string& name) {
  const Tensor gradient = arena.gradient(name);
  const Tensor& flat = arena.groups()[arena.group_of(name)].gradients;
  const int64_t per_line = int64_t(kCpuAlignment / dtype_size(gradient.dtype()));
  const int64_t padded = (gradient.numel() + per_line - 1) / per_line * per_line;
  return {gradient.storage_offset() - flat.storage_offset(), padded};
}

// The range the bucket's parameters fill in the arena, when they fill one without gaps.
std::optional<std::pair<int64_t, int64_t>> filled_range(const training::ParameterArena& arena,
                                                        const std::vector<std::string>& parameters) {
  std::vector<std::pair<int64_t, int64_t>> slots;
  for (const std::string& name : parameters) slots.push_back(padded_slot(arena, name));
  std::sort(slots.begin(), slots.end());
  for (size_t i = 1; i < slots.size(); ++i)
    if (slots[i].first != slots[i - 1].first + slots[i - 1].second) return std::nullopt;
  return std::pair<int64_t, int64_t>{slots.front().first,
                                     slots.back().first + slots.back().second - slots.front().first};
}

}  // namespace

std::vector<GradientBucket> plan_gradient_buckets(const training::ParameterArena& arena,
                                                  const std::vector<std::string>& order, int64_t bucket_bytes) {
  KILN_CHECK(bucket_bytes > 0, "a positive bucket size");
  std::set<std::string> given(order.begin(), order.end());
  KILN_CHECK(given.size() == order.size() && given.size() == arena.names().size(),
             "the bucket order names each of the arena's ", arena.names().size(), " parameters once");
  std::vector<GradientBucket> buckets;
  std::map<size_t, size_t> open;  // group -> index in buckets of its bucket being filled
  for (const std::string& name : order) {
    KILN_CHECK(arena.contains(name), "the bucket order names a parameter of the arena: ", name);
    const size_t group = arena.group_of(name);
    const int64_t bytes = int64_t(arena.gradient(name).nbytes());
    auto it = open.find(group);
    if (it == open.end() || buckets[it->second].bytes + bytes > bucket_bytes) {
      buckets.push_back(GradientBucket{group, {}, 0, std::nullopt});
      it = open.insert_or_assign(group, buckets.size() - 1).first;
    }
    GradientBucket& bucket = buckets[it->second];
    bucket.parameters.push_back(name);
    bucket.bytes += bytes;
  }
  for (GradientBucket& bucket : buckets) bucket.arena_range = filled_range(arena, bucket.parameters);
  return buckets;
}

}  // namespace kiln::compiler
