// Integer division and remainder with Python's semantics (the semantics of Kiln's symbolic
// sizes, ir/symbolic.h): the quotient rounds toward negative infinity and the remainder takes
// the divisor's sign. The divisor must not be 0, and floor_divide(INT64_MIN, -1) overflows:
// callers check both and report them themselves.
#pragma once

#include <cstdint>

namespace kiln {

inline int64_t floor_divide(int64_t a, int64_t b) {
  int64_t quotient = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}

inline int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 would trap
  int64_t remainder = a % b;
  if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder += b;
  return remainder;
}

}  // namespace kiln
