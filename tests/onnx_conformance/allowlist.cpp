// Parsing the conformance allowlist (see allowlist.h).
#include "tests/onnx_conformance/allowlist.h"

#include <sstream>

#include "runtime/atomic_file.h"
#include "kiln/error.h"

namespace kiln::conformance {

namespace {

std::string trimmed(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

}  // namespace

Allowlist parse_allowlist(const std::string& text, const std::string& file_name) {
  Allowlist allowlist;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::string content = trimmed(line);
    if (content.empty() || content[0] == '#') continue;
    size_t hash = content.find('#');
    std::string name = trimmed(content.substr(0, hash));
    std::string reason = hash == std::string::npos ? "" : trimmed(content.substr(hash + 1));
    if (name.find_first_of(" \t") != std::string::npos)
      fail(file_name, ":", number, ": '", name, "' is not one case name (write `case_name  # reason`)");
    if (reason.empty()) fail(file_name, ":", number, ": case '", name, "' has no reason (write `case_name  # reason`)");
    if (!allowlist.emplace(name, reason).second) fail(file_name, ":", number, ": case '", name, "' is listed twice");
  }
  return allowlist;
}

Allowlist read_allowlist(const std::filesystem::path& path) { return parse_allowlist(read_file(path.string()), path.string()); }

}  // namespace kiln::conformance
