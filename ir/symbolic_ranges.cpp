// Value ranges of canonical symbolic expressions (ir/symbolic_internal.h): interval
// arithmetic with infinite bounds, the range of a value and of an atom. The simplifier in
// ir/symbolic_canonical.cpp consults them to fold floordiv/mod and drop dominated max/min
// arguments, and the C++ printer to print a floordiv of non-negative operands as division;
// SymInt::fold_with_bounds (symbolic_evaluate.cpp) consults the range of a value whose symbols
// are bounded (range_within).
#include <algorithm>
#include <iterator>
#include <optional>

#include "ir/symbolic_internal.h"

namespace kiln::ir::detail {

namespace {

// a + b for a lower (upper = false) or upper bound: the infinity on that side absorbs.
int64_t bound_add(int64_t a, int64_t b, bool upper) {
  int64_t absorbing = upper ? kPosInf : kNegInf;
  if (a == absorbing || b == absorbing) return absorbing;
  int64_t result;
  if (__builtin_add_overflow(a, b, &result)) return a > 0 ? kPosInf : kNegInf;
  return result;
}

// a * b where an infinite operand stays infinite (0 * infinity = 0: values are finite).
int64_t bound_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  bool infinite = a == kNegInf || a == kPosInf || b == kNegInf || b == kPosInf;
  int64_t result;
  if (infinite || __builtin_mul_overflow(a, b, &result)) return negative ? kNegInf : kPosInf;
  return result;
}

// floor(bound / k) for k > 0, infinities kept.
int64_t bound_floordiv(int64_t bound, int64_t k) {
  if (bound == kNegInf || bound == kPosInf) return bound;
  return python_floordiv(bound, k);
}

Interval interval_of_constant(int64_t value) {
  // The extreme values double as infinities; widen them by one so they stay sound.
  if (value == INT64_MIN) return {kNegInf, INT64_MIN + 1};
  if (value == INT64_MAX) return {INT64_MAX - 1, kPosInf};
  return {value, value};
}

Interval interval_add(Interval a, Interval b) {
  return {bound_add(a.lo, b.lo, false), bound_add(a.hi, b.hi, true)};
}

Interval interval_mul(Interval a, Interval b) {
  int64_t candidates[] = {bound_mul(a.lo, b.lo), bound_mul(a.lo, b.hi), bound_mul(a.hi, b.lo),
                          bound_mul(a.hi, b.hi)};
  return {*std::min_element(std::begin(candidates), std::end(candidates)),
          *std::max_element(std::begin(candidates), std::end(candidates))};
}

Interval interval_pow(Interval base, int64_t exponent) {
  Interval result{1, 1};
  while (true) {
    if (exponent & 1) result = interval_mul(result, base);
    exponent >>= 1;
    if (exponent == 0) return result;
    base = interval_mul(base, base);
  }
}

}  // namespace

bool is_finite(Interval range) { return range.lo != kNegInf && range.hi != kPosInf; }

namespace {

// The range of an atom of `kind` (not a symbol) over operands in ranges a and b; `divisor`, the
// right operand when it is a constant.
Interval range_of_operation(AtomKind kind, Interval a, Interval b, std::optional<int64_t> divisor) {
  Interval everything{kNegInf, kPosInf};
  switch (kind) {
    case AtomKind::kSymbol:
      break;
    case AtomKind::kFloorDiv:
      if (divisor && *divisor > 0) return {bound_floordiv(a.lo, *divisor), bound_floordiv(a.hi, *divisor)};
      if (b.lo >= 1) {
        // floor(a/b) lies between min(a, 0) and max(a, 0) for b >= 1.
        int64_t lo = a.lo >= 0 ? 0 : a.lo;
        int64_t hi = a.hi < 0 ? -1 : bound_floordiv(a.hi, b.lo);
        return {lo, hi};
      }
      return everything;
    case AtomKind::kMod:
      if (b.lo >= 1) {
        int64_t hi = b.hi == kPosInf ? kPosInf : b.hi - 1;
        if (a.lo >= 0) hi = std::min(hi, a.hi);
        return {0, hi};
      }
      if (b.hi <= -1) return {b.lo == kNegInf ? kNegInf : b.lo + 1, 0};
      return everything;
    case AtomKind::kMax:
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    case AtomKind::kMin:
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
  }
  return everything;
}

// The range of a canonical value whose atoms have ranges `atom_range(atom)`.
template <class AtomRange>
Interval range_of_terms(const SymInt& value, const AtomRange& atom_range) {
  const SymNode* node = SymAccess::node(value);
  Interval total = interval_of_constant(SymAccess::constant_term(value));
  if (node == nullptr) return total;
  for (const Term& term : node->terms) {
    Interval product = interval_of_constant(term.coefficient);
    for (const Factor& factor : term.factors) product = interval_mul(product, interval_pow(atom_range(*factor.atom), factor.power));
    total = interval_add(total, product);
  }
  return total;
}

}  // namespace

Interval range_of(const SymInt& value) {
  return range_of_terms(value, [](const Atom& atom) { return atom.range; });
}

Interval range_of_atom(AtomKind kind, const SymInt& lhs, const SymInt& rhs) {
  if (kind == AtomKind::kSymbol) return {0, kPosInf};
  return range_of_operation(kind, range_of(lhs), range_of(rhs), rhs.maybe_constant());
}

Interval range_within(const SymInt& value, const std::map<std::string, int64_t>& bounds) {
  return range_of_terms(value, [&](const Atom& atom) -> Interval {
    if (atom.kind == AtomKind::kSymbol) {
      auto found = bounds.find(atom.name);
      if (found == bounds.end() || found->second < 1) return {0, kPosInf};
      return {0, found->second - 1};
    }
    return range_of_operation(atom.kind, range_within(atom.lhs, bounds), range_within(atom.rhs, bounds),
                              atom.rhs.maybe_constant());
  });
}

}  // namespace kiln::ir::detail
