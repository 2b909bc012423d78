// Gradient buckets: how data-parallel training groups the gradients it averages across ranks, as
// PyTorch's DistributedDataParallel does (buckets of about 25 MB, filled in the order the backward
// produces the gradients, so that each bucket is complete as early as possible and can be
// reduced while the rest of the backward runs: compiler/distributed/data_parallel.h).
//
// A bucket holds parameters of one dtype group of the ParameterArena, taken in the given order
// (the backward's: the last layer first) until the next one would take it past `bucket_bytes`
// (a parameter larger than that is a bucket alone). When its parameters fill one range of the
// group's gradient arena, padding included (the usual case: a module declares its parameters in
// the order its forward uses them, so the arena holds them in forward order), the bucket is that
// range and is reduced in place; otherwise it is reduced through a packed copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/training/parameter_arena.h"

namespace kiln::compiler {

struct GradientBucket {
  size_t group = 0;                     // ParameterArena::groups() index
  std::vector<std::string> parameters;  // in the order given
  int64_t bytes = 0;                    // the parameters' gradients (no padding)
  // The range of the group's gradient arena the parameters fill (first element, element count,
  // padding included), when they fill one.
  std::optional<std::pair<int64_t, int64_t>> arena_range;
};

// Buckets over every parameter of `arena`, in `order` (each arena parameter exactly once; a
// kiln::InternalError otherwise). `bucket_bytes` must be positive.
std::vector<GradientBucket> plan_gradient_buckets(const training::ParameterArena& arena,
                                                  const std::vector<std::string>& order, int64_t bucket_bytes);

}  // namespace kiln::compiler
