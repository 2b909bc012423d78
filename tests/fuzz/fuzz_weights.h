// Parameters for fuzzed graphs. A fuzzed .kiln or .json graph has no weights file beside it,
// so each get_attr target gets a tensor of the type its node is written with (static shapes
// of at most kMaxParameterElements elements; others get none, and the reader reports the
// missing parameter as it would for a user), filled with fixed values: seeds from the samples
// and the tests then read as they do with their real weights.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kiln/tensor.h"

namespace kiln::fuzz {

using Parameters = std::map<std::string, Tensor, std::less<>>;

inline constexpr int64_t kMaxParameterElements = 1 << 16;

// A tensor of `sizes` and `dtype` with deterministic, varied values (small integers, or
// floats in [-2, 2]).
Tensor fuzz_tensor(const Sizes& sizes, DType dtype, uint64_t seed);

// One parameter per `%name : TYPE ... = get_attr[target=T]` line of IR text.
Parameters parameters_for_text(std::string_view text);
// One parameter per get_attr node of a JSON graph document.
Parameters parameters_for_json(const nlohmann::json& document);

}  // namespace kiln::fuzz
