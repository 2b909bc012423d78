// Formatting of internal errors raised by KILN_CHECK.
#include "runtime/error.h"

namespace kiln::detail {

void internal_failure(const char* file, int line, const char* condition, const std::string& message) {
  std::ostringstream text;
  text << "internal error at " << file << ":" << line << ": check '" << condition << "' failed";
  if (!message.empty()) text << ": " << message;
  throw InternalError(text.str());
}

}  // namespace kiln::detail
