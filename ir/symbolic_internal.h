// The canonical form behind SymInt (ir/symbolic.h), shared by the files that implement it and
// by nothing else: atoms, terms and the node a SymInt points to, overflow-checked int64
// helpers, value ranges, the canonical order and the building blocks of canonical values.
//
//   ir/symbolic_canonical.cpp construction and canonical simplification (+ - * // % max min)
//   ir/symbolic_ranges.cpp    value ranges (interval arithmetic) that the simplifier consults
//   ir/symbolic_evaluate.cpp  evaluation under bindings, substitution, free symbols
//   ir/symbolic_print.cpp     the readable text and the C++ printers
//   ir/symbolic_parse.cpp     the parser of the readable text
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/symbolic.h"
#include "runtime/scalar_arithmetic.h"

namespace kiln::ir::detail {

enum class AtomKind { kSymbol, kFloorDiv, kMod, kMax, kMin };

// Bounds of an expression's value: lo <= value <= hi. INT64_MIN / INT64_MAX stand for
// -infinity / +infinity. Ranges assume symbols >= 0 and that no evaluation overflows.
struct Interval {
  int64_t lo;
  int64_t hi;
};

inline constexpr int64_t kNegInf = INT64_MIN;
inline constexpr int64_t kPosInf = INT64_MAX;

struct Atom {
  AtomKind kind;
  std::string name;  // kSymbol only
  SymInt lhs, rhs;   // the operands of the other kinds
  size_t hash;
  Interval range;
};
using AtomPtr = std::shared_ptr<const Atom>;

struct Factor {
  AtomPtr atom;
  int64_t power;  // >= 1
};

// coefficient * product of factors; factors sorted by compare_atoms, each atom once.
struct Term {
  int64_t coefficient;  // != 0
  std::vector<Factor> factors;  // non-empty
  int64_t degree;  // sum of the powers
};

// Terms sorted by compare_monomials, monomials distinct, never empty.
struct SymNode {
  std::vector<Term> terms;
  size_t hash;
};

struct SymAccess {
  static const SymNode* node(const SymInt& value) { return value.node_.get(); }
  static int64_t constant_term(const SymInt& value) { return value.constant_; }
  static SymInt make(std::vector<Term> terms, int64_t constant);
};

// ---------------------------------------------------------------- integer helpers

[[noreturn]] void throw_overflow();

inline int64_t checked_add(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result)) throw_overflow();
  return result;
}

inline int64_t checked_mul(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result)) throw_overflow();
  return result;
}

inline int64_t checked_neg(int64_t a) {
  if (a == INT64_MIN) throw_overflow();
  return -a;
}

// Python's a // b (runtime/scalar_arithmetic.h), throwing where it would overflow; b != 0.
inline int64_t python_floordiv(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) throw_overflow();
  return int_floor_divide(a, b);
}

// base**exponent by squaring, exponent >= 0; throws on overflow.
int64_t checked_pow(int64_t base, int64_t exponent);

inline uint64_t magnitude(int64_t value) {
  return value < 0 ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
}

inline uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t rest = a % b;
    a = b;
    b = rest;
  }
  return a;
}

inline size_t hash_mix(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// ---------------------------------------------------------------- value ranges (symbolic_ranges.cpp)

bool is_finite(Interval range);
Interval range_of(const SymInt& value);
// The range of an atom of `kind` over operands lhs and rhs (a symbol: [0, +infinity)).
Interval range_of_atom(AtomKind kind, const SymInt& lhs, const SymInt& rhs);
// The range of `value` where each symbol of `bounds` lies in [0, bound - 1] (others in
// [0, +infinity)).
Interval range_within(const SymInt& value, const std::map<std::string, int64_t>& bounds);

// ---------------------------------------------------------------- canonical form (symbolic_canonical.cpp)

// A total order on canonical expressions; constants sort after everything else.
int compare_sym(const SymInt& a, const SymInt& b);
int compare_atoms(const Atom& a, const Atom& b);
// Higher degree first, then factor by factor (atom order, higher power first).
int compare_monomials(const Term& a, const Term& b);

AtomPtr make_atom(AtomKind kind, std::string name, SymInt lhs, SymInt rhs);
SymInt from_atom(AtomPtr atom);
// The atom `kind`(lhs, rhs) as a value, without simplifying.
SymInt make_op(AtomKind kind, const SymInt& lhs, const SymInt& rhs);
// The single atom when value is exactly that atom (coefficient 1, power 1, no constant).
const Atom* bare_atom(const SymInt& value);
// The non-constant terms (empty for a constant).
const std::vector<Term>& terms_of(const SymInt& value);
// base**exponent, exponent >= 0, simplified.
SymInt power(const SymInt& base, int64_t exponent);

// ---------------------------------------------------------------- text (symbolic_print.cpp, symbolic_parse.cpp)

// An atom as to_string() prints it: "s0", "(s0 + 1)//2", "max(s0, 3)".
std::string atom_text(const Atom& atom);

inline bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_identifier_char(char c) { return is_identifier_start(c) || (c >= '0' && c <= '9'); }

}  // namespace kiln::ir::detail
