// Owns SymInt: the symbolic integers used for dynamic tensor dimensions (a dimension `s0`,
// `s0*s1`, `(s0 + 1)//2`), with canonical simplification, evaluation under bindings,
// substitution, printing (readable text and C++) and parsing of the printed text.
//
// An expression is kept in one canonical form: a sum of monomials with int64 coefficients
// plus a constant; a monomial is a product of atoms with positive integer powers; an atom is
// a free symbol or one of floordiv, mod, max, min of canonical sub-expressions. Two
// expressions that the rules below bring to the same form compare equal (==, hash()).
//
// Assumption: every symbol stands for a size, so it is an integer >= 0. The simplifier uses
// this (max(s0, 0) -> s0, min(s0, 0) -> 0, s0//2 printed as plain C++ division), and
// evaluate() refuses a negative binding rather than return a value the rules did not mean.
//
// Semantics are Python's / sympy's: floordiv rounds toward negative infinity and mod takes
// the divisor's sign. Coefficients, constants and evaluation are int64; an overflow throws
// SymbolicError instead of wrapping. Building floordiv/mod by the constant 0 throws too.
//
// Simplifications applied on construction (beyond collecting like terms and folding
// constants): x//1 -> x; (k*q + r)//k -> q + r//k for a positive constant k, with the
// remaining constant reduced into [0, k) and a common factor of r and k divided out
// ((4*s0 + 8)//4 -> s0 + 2, (2*s0 + 2)//4 -> (s0 + 1)//2); (x//a)//b -> x//(a*b) for
// positive constants a, b; (m*q + r)//m -> q + r//m and (m*q + r) % m -> r % m for a
// one-term divisor m (s0*s1//s0 -> s1); x % k reduces every coefficient modulo k
// (mod(4*s0 + 5, 4) -> 1) and pulls out common factors (mod(2*s0, 4) -> 2*(s0 % 2)); a
// floordiv or mod whose value the range of the operands decides folds (mod(s0 % 4, 8) ->
// s0 % 4); max/min are flattened, sorted, deduplicated, constants folded, and an argument
// known to be dominated is dropped.
// Like sympy, x//x -> 1, x % x -> 0 and 0//x -> 0 without asking whether x may be 0, so a
// division by zero that the rules removed is not reported by evaluate().
//
// Implemented in ir/symbolic_canonical.cpp (construction, simplification),
// symbolic_ranges.cpp, symbolic_evaluate.cpp, symbolic_print.cpp and symbolic_parse.cpp, over
// the canonical form of ir/symbolic_internal.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"
#include "runtime/strides.h"

namespace kiln::ir {

// A user-facing error from the symbolic library: an unbound symbol, a division by zero, an
// overflow, a bad symbol name, or text parse_sym_int cannot read (then column() is the
// 1-based column of the problem, also named in the message).
class SymbolicError : public kiln::Error {
 public:
  explicit SymbolicError(const std::string& message,
                         std::optional<size_t> column = std::nullopt)
      : kiln::Error(message), column_(column) {}
  std::optional<size_t> column() const { return column_; }

 private:
  std::optional<size_t> column_;
};

namespace detail {
struct SymNode;
struct SymAccess;
}  // namespace detail

class SymInt {
 public:
  SymInt() = default;  // the constant 0
  SymInt(int64_t value) : constant_(value) {}  // NOLINT: implicit on purpose ({2, 3} dims)

  // A free symbol. Names match [A-Za-z_][A-Za-z0-9_]* and are not "max" or "min".
  static SymInt symbol(std::string name);

  bool is_constant() const { return node_ == nullptr; }
  int64_t constant() const;  // throws SymbolicError unless is_constant()
  std::optional<int64_t> maybe_constant() const;
  bool is_symbol() const;  // exactly one bare symbol

  // The names of the symbols the expression uses, unique, in std::string order.
  std::vector<std::string> free_symbols() const;

  // The value with each symbol bound. Throws SymbolicError naming an unbound symbol, a
  // negative binding, a floordiv/mod by zero, or an int64 overflow.
  int64_t evaluate(const std::map<std::string, int64_t>& bindings) const;
  // Replaces symbols by expressions (others stay) and simplifies the result.
  SymInt substitute(const std::map<std::string, SymInt>& replacements) const;
  // The value where each symbol of `bounds` lies in [0, bound) (a loop variable over its range):
  // every floordiv and mod by a positive constant whose quotient those bounds decide is folded
  // ((64*x1 + x3)//256 -> 0 and (64*x1 + x3) % 256 -> 64*x1 + x3 for x1 < 4, x3 < 64). Equal
  // to the value for every such binding; other symbols stay in [0, infinity).
  SymInt fold_with_bounds(const std::map<std::string, int64_t>& bounds) const;

  // Readable canonical text, which parse_sym_int reads back to an equal value:
  // "2*s0*s1 + s0 + 3", "-s0 + 4", "s0**2", "(s0 + 1)//2", "s0 % 4", "max(s0, 3)".
  // Monomials by degree (descending), then by their atoms (symbols in natural order, so
  // s2 before s10); the constant last.
  std::string to_string() const;
  // A C++ int64_t expression over variables named like the symbols. floordiv/mod print as
  // "(a / b)" / "(a % b)" when both operands are provably >= 0, else as calls to
  // kiln_floordiv(a, b) / kiln_mod(a, b) (Python semantics; the code generator declares
  // them); max/min as std::max<int64_t>(a, b) / std::min<int64_t>(a, b); powers expanded.
  std::string to_cpp() const;

  size_t hash() const;
  // Structural equality of the canonical forms.
  friend bool operator==(const SymInt& a, const SymInt& b);

  friend SymInt operator+(const SymInt& a, const SymInt& b);
  friend SymInt operator-(const SymInt& a, const SymInt& b);
  friend SymInt operator*(const SymInt& a, const SymInt& b);
  friend SymInt operator-(const SymInt& a);
  SymInt& operator+=(const SymInt& other) { return *this = *this + other; }
  SymInt& operator-=(const SymInt& other) { return *this = *this - other; }
  SymInt& operator*=(const SymInt& other) { return *this = *this * other; }

  friend SymInt floordiv(const SymInt& a, const SymInt& b);  // floor(a / b)
  friend SymInt mod(const SymInt& a, const SymInt& b);  // a - b*floordiv(a, b): divisor's sign
  friend SymInt max(const SymInt& a, const SymInt& b);
  friend SymInt min(const SymInt& a, const SymInt& b);

 private:
  friend struct detail::SymAccess;
  SymInt(std::shared_ptr<const detail::SymNode> node, int64_t constant)
      : node_(std::move(node)), constant_(constant) {}

  // The non-constant monomials (null when the expression is a constant), shared and
  // immutable, and the constant term kept beside them so that e + 1 shares e's node.
  std::shared_ptr<const detail::SymNode> node_;
  int64_t constant_ = 0;
};

// Namespace-scope declarations so that kiln::ir::floordiv(...) etc. also work qualified.
SymInt floordiv(const SymInt& a, const SymInt& b);
SymInt mod(const SymInt& a, const SymInt& b);
SymInt max(const SymInt& a, const SymInt& b);
SymInt min(const SymInt& a, const SymInt& b);

std::ostream& operator<<(std::ostream& out, const SymInt& value);

struct SymIntHash {
  size_t operator()(const SymInt& value) const { return value.hash(); }
};

// Reads the to_string() form: integers, symbols, + - * // % **, parentheses, max(a, b),
// min(a, b), with Python's precedence (unary minus binds tighter than * // %, looser than
// **; the exponent must be a constant in [0, 64]). The result is simplified. Throws
// SymbolicError with column() set on bad input.
SymInt parse_sym_int(std::string_view text);

}  // namespace kiln::ir

// Symbolic sizes in the stride algorithms of runtime/strides.h (contiguous_strides,
// view_strides): the predicates answer "provably", an expression equals only itself.
template <>
struct kiln::SizeArithmetic<kiln::ir::SymInt> {
  using SymInt = kiln::ir::SymInt;
  static bool is_zero(const SymInt& size) { return size.maybe_constant() == std::optional<int64_t>(0); }
  static bool is_one(const SymInt& size) { return size.maybe_constant() == std::optional<int64_t>(1); }
  static bool equal(const SymInt& a, const SymInt& b) { return a == b; }
  static bool maybe_less(const SymInt& a, const SymInt& b) {
    if (a.is_constant() && b.is_constant()) return a.constant() < b.constant();
    return !(a == b);
  }
  static SymInt stride_factor(const SymInt& size) { return max(size, SymInt(1)); }
};
