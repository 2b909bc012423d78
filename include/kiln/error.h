// Kiln's two kinds of error (STYLE.md habit 11):
//  - kiln::Error: the user's fault (bad model, bad flag, wrong shape). The message names
//    what and where. The CLI prints it on one line and exits 1.
//  - kiln::InternalError: ours (a broken invariant). Raised by KILN_CHECK with file and line.
//    The CLI exits 2.
// Both keep their message on one line: the constructors escape control characters and bytes
// that are not UTF-8 (runtime/message_text.h, in runtime/error.cpp), so quoted input can never
// break the line.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message);
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message);
};

namespace detail {
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
[[noreturn]] void internal_failure(const char* file, int line, const char* condition,
                                   const std::string& message);
}  // namespace detail

// Builds a user-facing message from streamable parts and throws kiln::Error.
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(detail::concat(parts...));
}

}  // namespace kiln

// An internal invariant: on failure throws kiln::InternalError naming file, line and condition.
#define KILN_CHECK(condition, ...)                                                   \
  do {                                                                               \
    if (!(condition))                                                                \
      ::kiln::detail::internal_failure(__FILE__, __LINE__, #condition,               \
                                       ::kiln::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
