// kiln::Error's and kiln::InternalError's one-line messages (printable), and the formatting of
// internal errors raised by KILN_CHECK.
#include "kiln/error.h"

#include <sstream>
#include <string_view>

#include "runtime/message_text.h"

namespace kiln {

Error::Error(const std::string& message) : std::runtime_error(printable(message)) {}

InternalError::InternalError(const std::string& message) : std::logic_error(printable(message)) {}

namespace detail {

void internal_failure(const char* file, int line, const char* condition, const std::string& message) {
  // A library source is compiled from its unity batch (CMakeLists.txt), which includes it by a
  // path relative to the batch: "kiln_ir_unity/../../../ir/graph.cpp" names ir/graph.cpp.
  std::string_view path(file);
  if (size_t up = path.rfind("../"); up != std::string_view::npos) path.remove_prefix(up + 3);
  std::ostringstream text;
  text << "internal error at " << path << ":" << line << ": check '" << condition << "' failed";
  if (!message.empty()) text << ": " << message;
  throw InternalError(text.str());
}

}  // namespace detail
}  // namespace kiln
