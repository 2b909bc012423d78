// Short JSON text of a value for error messages (used by every reader of JSON: safetensors
// headers, the IR's JSON form).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kiln {

// JSON text of `value`, kept short and shallow: nested containers beyond three levels and
// items past the fourth print as "..." (so hostile, deeply nested input cannot exhaust the
// stack through dump()); strings and keys past 60 characters are cut (runtime/message_text.h).
std::string json_brief(const nlohmann::json& value, int depth = 0);

}  // namespace kiln
