// kiln::Error's and kiln::InternalError's one-line messages (printable), and the formatting of
// internal errors raised by KILN_CHECK.
#include "kiln/error.h"

#include "runtime/message_text.h"

namespace kiln {

Error::Error(const std::string& message) : std::runtime_error(printable(message)) {}

InternalError::InternalError(const std::string& message) : std::logic_error(printable(message)) {}

namespace detail {

void internal_failure(const char* file, int line, const char* condition, const std::string& message) {
  std::ostringstream text;
  text << "internal error at " << file << ":" << line << ": check '" << condition << "' failed";
  if (!message.empty()) text << ": " << message;
  throw InternalError(text.str());
}

}  // namespace detail
}  // namespace kiln
