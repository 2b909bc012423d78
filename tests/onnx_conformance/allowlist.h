// The conformance allowlist (tests/onnx_conformance/allowlist.txt): node test cases of
// supported ops that are known to fail, one a line as `case_name  # reason`. Blank lines and
// lines that start with '#' are comments. A case without a reason, or listed twice, is an error
// (kiln::Error naming the file and line): every entry says why it is there.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace kiln::conformance {

// Case name -> reason.
using Allowlist = std::map<std::string, std::string>;

Allowlist parse_allowlist(const std::string& text, const std::string& file_name);
Allowlist read_allowlist(const std::filesystem::path& path);

}  // namespace kiln::conformance
