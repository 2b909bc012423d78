// Owns the implementation of SymInt (ir/symbolic.h): the canonical polynomial form and its
// simplification rules, value ranges used by those rules, evaluation, substitution, the
// two printers (text and C++) and the parser of the text form.
#include "ir/symbolic.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <utility>

namespace kiln::ir {
namespace detail {

enum class AtomKind { kSymbol, kFloorDiv, kMod, kMax, kMin };

// Bounds of an expression's value: lo <= value <= hi. INT64_MIN / INT64_MAX stand for
// -infinity / +infinity. Ranges assume symbols >= 0 and that no evaluation overflows.
struct Interval {
  int64_t lo;
  int64_t hi;
};

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

}  // namespace detail

namespace {

using detail::Atom;
using detail::AtomKind;
using detail::AtomPtr;
using detail::Factor;
using detail::Interval;
using detail::SymAccess;
using detail::SymNode;
using detail::Term;

constexpr int64_t kNegInf = INT64_MIN;
constexpr int64_t kPosInf = INT64_MAX;

// ---------------------------------------------------------------- integer helpers

[[noreturn]] void throw_overflow() {
  throw SymbolicError("symbolic integer overflow: a value does not fit in int64");
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result)) throw_overflow();
  return result;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result)) throw_overflow();
  return result;
}

int64_t checked_neg(int64_t a) {
  if (a == INT64_MIN) throw_overflow();
  return -a;
}

// Python's a // b; b != 0.
int64_t python_floordiv(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) throw_overflow();
  int64_t quotient = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}

// Python's a % b; b != 0.
int64_t python_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t remainder = a % b;
  if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder += b;
  return remainder;
}

// base**exponent by squaring, exponent >= 0; throws on overflow.
int64_t checked_pow(int64_t base, int64_t exponent) {
  if (base == 0) return exponent == 0 ? 1 : 0;
  if (base == 1) return 1;
  if (base == -1) return exponent % 2 == 0 ? 1 : -1;
  int64_t result = 1;
  while (true) {
    if (exponent & 1) result = checked_mul(result, base);
    exponent >>= 1;
    if (exponent == 0) return result;
    base = checked_mul(base, base);
  }
}

uint64_t magnitude(int64_t value) {
  return value < 0 ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
}

uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t rest = a % b;
    a = b;
    b = rest;
  }
  return a;
}

size_t hash_mix(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// ---------------------------------------------------------------- interval arithmetic

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

bool is_finite(Interval range) { return range.lo != kNegInf && range.hi != kPosInf; }

Interval range_of(const SymInt& value) {
  const SymNode* node = SymAccess::node(value);
  Interval total = interval_of_constant(SymAccess::constant_term(value));
  if (node == nullptr) return total;
  for (const Term& term : node->terms) {
    Interval product = interval_of_constant(term.coefficient);
    for (const Factor& factor : term.factors)
      product = interval_mul(product, interval_pow(factor.atom->range, factor.power));
    total = interval_add(total, product);
  }
  return total;
}

Interval range_of_atom(AtomKind kind, const SymInt& lhs, const SymInt& rhs) {
  Interval everything{kNegInf, kPosInf};
  if (kind == AtomKind::kSymbol) return {0, kPosInf};
  Interval a = range_of(lhs);
  Interval b = range_of(rhs);
  switch (kind) {
    case AtomKind::kSymbol:
      break;
    case AtomKind::kFloorDiv:
      if (auto k = rhs.maybe_constant(); k && *k > 0)
        return {bound_floordiv(a.lo, *k), bound_floordiv(a.hi, *k)};
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

// ---------------------------------------------------------------- canonical order

// Natural order for names: digit runs compare as numbers, so s2 < s10.
int compare_names(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i_end = i, j_end = j;
      while (i_end < a.size() && std::isdigit(static_cast<unsigned char>(a[i_end]))) ++i_end;
      while (j_end < b.size() && std::isdigit(static_cast<unsigned char>(b[j_end]))) ++j_end;
      size_t i_start = i, j_start = j;
      while (i_start + 1 < i_end && a[i_start] == '0') ++i_start;
      while (j_start + 1 < j_end && b[j_start] == '0') ++j_start;
      if (i_end - i_start != j_end - j_start) return i_end - i_start < j_end - j_start ? -1 : 1;
      int digits = a.compare(i_start, i_end - i_start, b, j_start, j_end - j_start);
      if (digits != 0) return digits < 0 ? -1 : 1;
      i = i_end;
      j = j_end;
    } else {
      if (a[i] != b[j]) return a[i] < b[j] ? -1 : 1;
      ++i;
      ++j;
    }
  }
  if (i < a.size() || j < b.size()) return i < a.size() ? 1 : -1;
  int plain = a.compare(b);  // "s01" vs "s1": equal numerically, still distinct names
  return plain < 0 ? -1 : (plain > 0 ? 1 : 0);
}

int compare_sym(const SymInt& a, const SymInt& b);

int compare_atoms(const Atom& a, const Atom& b) {
  if (&a == &b) return 0;
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.kind == AtomKind::kSymbol) return compare_names(a.name, b.name);
  if (int c = compare_sym(a.lhs, b.lhs)) return c;
  return compare_sym(a.rhs, b.rhs);
}

// Higher degree first, then factor by factor (atom order, higher power first).
int compare_monomials(const Term& a, const Term& b) {
  if (a.degree != b.degree) return a.degree > b.degree ? -1 : 1;
  size_t common = std::min(a.factors.size(), b.factors.size());
  for (size_t i = 0; i < common; ++i) {
    if (int c = compare_atoms(*a.factors[i].atom, *b.factors[i].atom)) return c;
    if (a.factors[i].power != b.factors[i].power)
      return a.factors[i].power > b.factors[i].power ? -1 : 1;
  }
  if (a.factors.size() != b.factors.size()) return a.factors.size() < b.factors.size() ? -1 : 1;
  return 0;
}

// A total order on canonical expressions; constants sort after everything else, so that
// max(s0, 3) keeps its constant last.
int compare_sym(const SymInt& a, const SymInt& b) {
  const SymNode* na = SymAccess::node(a);
  const SymNode* nb = SymAccess::node(b);
  if (na != nb) {
    if (na == nullptr) return 1;
    if (nb == nullptr) return -1;
    size_t common = std::min(na->terms.size(), nb->terms.size());
    for (size_t i = 0; i < common; ++i) {
      if (int c = compare_monomials(na->terms[i], nb->terms[i])) return c;
      if (na->terms[i].coefficient != nb->terms[i].coefficient)
        return na->terms[i].coefficient < nb->terms[i].coefficient ? -1 : 1;
    }
    if (na->terms.size() != nb->terms.size())
      return na->terms.size() < nb->terms.size() ? -1 : 1;
  }
  int64_t ca = SymAccess::constant_term(a), cb = SymAccess::constant_term(b);
  if (ca != cb) return ca < cb ? -1 : 1;
  return 0;
}

// ---------------------------------------------------------------- building blocks

size_t hash_term(const Term& term) {
  size_t seed = std::hash<int64_t>{}(term.coefficient);
  for (const Factor& factor : term.factors)
    seed = hash_mix(hash_mix(seed, factor.atom->hash), std::hash<int64_t>{}(factor.power));
  return seed;
}

AtomPtr make_atom(AtomKind kind, std::string name, SymInt lhs, SymInt rhs) {
  size_t seed = hash_mix(0x51ed270b27a6f1c3ULL, static_cast<size_t>(kind));
  if (kind == AtomKind::kSymbol) {
    seed = hash_mix(seed, std::hash<std::string>{}(name));
  } else {
    seed = hash_mix(hash_mix(seed, lhs.hash()), rhs.hash());
  }
  Interval range = range_of_atom(kind, lhs, rhs);
  return std::make_shared<const Atom>(
      Atom{kind, std::move(name), std::move(lhs), std::move(rhs), seed, range});
}

SymInt from_atom(AtomPtr atom) {
  std::vector<Term> terms;
  terms.push_back(Term{1, {Factor{std::move(atom), 1}}, 1});
  return SymAccess::make(std::move(terms), 0);
}

SymInt make_op(AtomKind kind, const SymInt& lhs, const SymInt& rhs) {
  return from_atom(make_atom(kind, "", lhs, rhs));
}

// The single atom when value is exactly that atom (coefficient 1, power 1, no constant).
const Atom* bare_atom(const SymInt& value) {
  const SymNode* node = SymAccess::node(value);
  if (node == nullptr || SymAccess::constant_term(value) != 0 || node->terms.size() != 1)
    return nullptr;
  const Term& term = node->terms[0];
  if (term.coefficient != 1 || term.factors.size() != 1 || term.factors[0].power != 1)
    return nullptr;
  return term.factors[0].atom.get();
}

const std::vector<Term>& terms_of(const SymInt& value) {
  static const std::vector<Term> kNone;
  const SymNode* node = SymAccess::node(value);
  return node == nullptr ? kNone : node->terms;
}

// Sorts terms into canonical order, adding the coefficients of equal monomials and dropping
// zeros.
std::vector<Term> normalize_terms(std::vector<Term> terms) {
  std::sort(terms.begin(), terms.end(),
            [](const Term& a, const Term& b) { return compare_monomials(a, b) < 0; });
  std::vector<Term> merged;
  for (Term& term : terms) {
    if (!merged.empty() && compare_monomials(merged.back(), term) == 0) {
      merged.back().coefficient = checked_add(merged.back().coefficient, term.coefficient);
    } else {
      if (!merged.empty() && merged.back().coefficient == 0) merged.pop_back();
      merged.push_back(std::move(term));
    }
  }
  if (!merged.empty() && merged.back().coefficient == 0) merged.pop_back();
  return merged;
}

std::vector<Factor> multiply_factors(const std::vector<Factor>& a, const std::vector<Factor>& b) {
  std::vector<Factor> product;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int c = i == a.size() ? 1 : j == b.size() ? -1 : compare_atoms(*a[i].atom, *b[j].atom);
    if (c < 0) {
      product.push_back(a[i++]);
    } else if (c > 0) {
      product.push_back(b[j++]);
    } else {
      product.push_back(Factor{a[i].atom, checked_add(a[i].power, b[j].power)});
      ++i;
      ++j;
    }
  }
  return product;
}

SymInt scale(const SymInt& value, int64_t factor) {
  if (factor == 0) return SymInt(0);
  if (factor == 1) return value;
  std::vector<Term> terms = terms_of(value);
  for (Term& term : terms) term.coefficient = checked_mul(term.coefficient, factor);
  return SymAccess::make(std::move(terms), checked_mul(SymAccess::constant_term(value), factor));
}

SymInt power(const SymInt& base, int64_t exponent) {
  if (auto k = base.maybe_constant()) return checked_pow(*k, exponent);
  if (exponent == 0) return 1;
  if (const SymNode* node = SymAccess::node(base);
      node->terms.size() == 1 && SymAccess::constant_term(base) == 0) {
    // A single monomial: multiply the powers, no expansion needed.
    Term term = node->terms[0];
    term.coefficient = checked_pow(term.coefficient, exponent);
    term.degree = checked_mul(term.degree, exponent);
    for (Factor& factor : term.factors) factor.power = checked_mul(factor.power, exponent);
    std::vector<Term> terms;
    terms.push_back(std::move(term));
    return SymAccess::make(std::move(terms), 0);
  }
  SymInt result = 1;
  SymInt square = base;
  while (true) {
    if (exponent & 1) result = result * square;
    exponent >>= 1;
    if (exponent == 0) return result;
    square = square * square;
  }
}

// gcd of the magnitudes of every coefficient and the constant (0 for the constant 0).
uint64_t content(const std::vector<Term>& terms, int64_t constant) {
  uint64_t g = magnitude(constant);
  for (const Term& term : terms) g = gcd_u64(g, magnitude(term.coefficient));
  return g;
}

uint64_t content(const SymInt& value) {
  return content(terms_of(value), SymAccess::constant_term(value));
}

// value / divisor where divisor > 0 divides every coefficient and the constant.
SymInt divide_exact(const SymInt& value, int64_t divisor) {
  if (divisor == 1) return value;
  std::vector<Term> terms = terms_of(value);
  for (Term& term : terms) term.coefficient /= divisor;
  return SymAccess::make(std::move(terms), SymAccess::constant_term(value) / divisor);
}

// The quotient when the monomial of `divisor` divides the monomial of `term`.
std::optional<std::vector<Factor>> divide_monomial(const Term& term, const Term& divisor) {
  std::vector<Factor> quotient;
  size_t j = 0;
  for (const Factor& factor : term.factors) {
    if (j < divisor.factors.size() && compare_atoms(*factor.atom, *divisor.factors[j].atom) == 0) {
      if (factor.power < divisor.factors[j].power) return std::nullopt;
      if (factor.power > divisor.factors[j].power)
        quotient.push_back(Factor{factor.atom, factor.power - divisor.factors[j].power});
      ++j;
    } else {
      quotient.push_back(factor);
    }
  }
  if (j != divisor.factors.size()) return std::nullopt;
  return quotient;
}

// Splits value = divisor*quotient + rest, where divisor is one term without a constant and
// quotient collects the terms of value that it divides exactly.
struct Split {
  SymInt quotient;
  SymInt rest;
  bool any;
};

Split split_by_monomial(const SymInt& value, const Term& divisor) {
  std::vector<Term> quotient_terms;
  int64_t quotient_constant = 0;
  std::vector<Term> rest_terms;
  for (const Term& term : terms_of(value)) {
    std::optional<std::vector<Factor>> factors;
    if (term.coefficient % divisor.coefficient == 0) factors = divide_monomial(term, divisor);
    if (!factors) {
      rest_terms.push_back(term);
      continue;
    }
    int64_t coefficient = term.coefficient / divisor.coefficient;
    if (factors->empty()) {
      quotient_constant = checked_add(quotient_constant, coefficient);
    } else {
      int64_t degree = 0;
      for (const Factor& factor : *factors) degree += factor.power;
      quotient_terms.push_back(Term{coefficient, std::move(*factors), degree});
    }
  }
  bool any = rest_terms.size() != terms_of(value).size();
  SymInt quotient = SymAccess::make(normalize_terms(std::move(quotient_terms)), quotient_constant);
  SymInt rest = SymAccess::make(std::move(rest_terms), SymAccess::constant_term(value));
  return {quotient, rest, any};
}

// The one term of value when it is a single term with no constant.
const Term* single_term(const SymInt& value) {
  const SymNode* node = SymAccess::node(value);
  if (node == nullptr || node->terms.size() != 1 || SymAccess::constant_term(value) != 0)
    return nullptr;
  return &node->terms[0];
}

// ---------------------------------------------------------------- floordiv and mod

SymInt floordiv_by_constant(const SymInt& a, int64_t k) {
  if (k == 1) return a;
  // a = k*q + r: the terms whose coefficient k divides, and the constant's floor part.
  std::vector<Term> q_terms, r_terms;
  for (const Term& term : terms_of(a)) {
    if (term.coefficient % k == 0) {
      q_terms.push_back(term);
      q_terms.back().coefficient /= k;
    } else {
      r_terms.push_back(term);
    }
  }
  int64_t constant = SymAccess::constant_term(a);
  SymInt q = SymAccess::make(std::move(q_terms), python_floordiv(constant, k));
  int64_t r_constant = python_mod(constant, k);
  if (r_terms.empty()) return q;  // r is a constant in [0, k)
  if (uint64_t g = gcd_u64(content(r_terms, r_constant), static_cast<uint64_t>(k)); g > 1) {
    int64_t divisor = static_cast<int64_t>(g);
    for (Term& term : r_terms) term.coefficient /= divisor;
    r_constant /= divisor;
    k /= divisor;
  }
  SymInt r = SymAccess::make(std::move(r_terms), r_constant);
  Interval range = range_of(r);
  if (is_finite(range)) {
    int64_t lo = python_floordiv(range.lo, k), hi = python_floordiv(range.hi, k);
    if (lo == hi) return q + lo;
  }
  if (const Atom* inner = bare_atom(r); inner != nullptr && inner->kind == AtomKind::kFloorDiv) {
    // (x//k1)//k == x//(k1*k) for positive k1, k.
    int64_t product;
    if (auto k1 = inner->rhs.maybe_constant();
        k1 && *k1 > 0 && !__builtin_mul_overflow(*k1, k, &product))
      return q + floordiv(inner->lhs, product);
  }
  return q + make_op(AtomKind::kFloorDiv, r, k);
}

SymInt floordiv_general(SymInt a, SymInt b) {
  if (uint64_t g = gcd_u64(content(a), content(b)); g > 1) {
    a = divide_exact(a, static_cast<int64_t>(g));
    b = divide_exact(b, static_cast<int64_t>(g));
  }
  if (const Term* divisor = single_term(b)) {
    // (b*q + r)//b == q + r//b.
    Split split = split_by_monomial(a, *divisor);
    if (split.any) return split.quotient + floordiv(split.rest, b);
  }
  Interval ra = range_of(a), rb = range_of(b);
  if (ra.lo >= 0 && rb.lo >= 1 && ra.hi < rb.lo) return 0;
  return make_op(AtomKind::kFloorDiv, a, b);
}

SymInt mod_by_constant(const SymInt& a, int64_t k) {
  if (k == 1) return 0;
  // Coefficients only matter modulo k.
  std::vector<Term> r_terms;
  for (const Term& term : terms_of(a)) {
    int64_t coefficient = python_mod(term.coefficient, k);
    if (coefficient == 0) continue;
    r_terms.push_back(term);
    r_terms.back().coefficient = coefficient;
  }
  int64_t r_constant = python_mod(SymAccess::constant_term(a), k);
  if (r_terms.empty()) return r_constant;
  if (uint64_t g = gcd_u64(content(r_terms, r_constant), static_cast<uint64_t>(k)); g > 1) {
    // (g*x) % (g*m) == g*(x % m).
    int64_t divisor = static_cast<int64_t>(g);
    SymInt r = SymAccess::make(std::move(r_terms), r_constant);
    return scale(mod(divide_exact(r, divisor), k / divisor), divisor);
  }
  SymInt r = SymAccess::make(std::move(r_terms), r_constant);
  Interval range = range_of(r);
  if (is_finite(range)) {
    int64_t lo = python_floordiv(range.lo, k), hi = python_floordiv(range.hi, k);
    if (lo == hi) return r - checked_mul(lo, k);
  }
  if (const Atom* inner = bare_atom(r); inner != nullptr && inner->kind == AtomKind::kMod) {
    // (x % k1) % k == x % k when k divides k1.
    if (auto k1 = inner->rhs.maybe_constant(); k1 && *k1 > 0 && *k1 % k == 0)
      return mod(inner->lhs, k);
  }
  return make_op(AtomKind::kMod, r, k);
}

SymInt mod_general(const SymInt& a, const SymInt& b) {
  if (uint64_t g = gcd_u64(content(a), content(b)); g > 1) {
    int64_t divisor = static_cast<int64_t>(g);
    return scale(mod(divide_exact(a, divisor), divide_exact(b, divisor)), divisor);
  }
  if (const Term* divisor = single_term(b)) {
    // (b*q + r) % b == r % b.
    Split split = split_by_monomial(a, *divisor);
    if (split.any) return mod(split.rest, b);
  }
  Interval ra = range_of(a), rb = range_of(b);
  if (ra.lo >= 0 && rb.lo >= 1 && ra.hi < rb.lo) return a;
  return make_op(AtomKind::kMod, a, b);
}

// ---------------------------------------------------------------- max and min

void collect_arguments(AtomKind kind, const SymInt& value, std::vector<SymInt>& out) {
  if (const Atom* atom = bare_atom(value); atom != nullptr && atom->kind == kind) {
    collect_arguments(kind, atom->lhs, out);
    collect_arguments(kind, atom->rhs, out);
  } else {
    out.push_back(value);
  }
}

// Whether `winner` makes `loser` redundant in a max (winner >= loser) or min (winner <= loser).
bool dominates(AtomKind kind, const SymInt& winner, const SymInt& loser) {
  try {
    Interval difference = range_of(winner - loser);
    return kind == AtomKind::kMax ? difference.lo >= 0 : difference.hi <= 0;
  } catch (const SymbolicError&) {
    return false;  // the difference overflows: no conclusion
  }
}

SymInt extremum(AtomKind kind, const SymInt& a, const SymInt& b) {
  bool is_max = kind == AtomKind::kMax;
  if (a == b) return a;
  auto ka = a.maybe_constant(), kb = b.maybe_constant();
  if (ka && kb) return is_max ? std::max(*ka, *kb) : std::min(*ka, *kb);
  // Flatten nested max(max(...), ...), fold the constants into one, sort, deduplicate.
  std::vector<SymInt> all, arguments;
  collect_arguments(kind, a, all);
  collect_arguments(kind, b, all);
  std::optional<int64_t> constant;
  for (SymInt& argument : all) {
    if (auto k = argument.maybe_constant()) {
      constant = !constant ? *k : is_max ? std::max(*constant, *k) : std::min(*constant, *k);
    } else {
      arguments.push_back(std::move(argument));
    }
  }
  if (constant) arguments.push_back(*constant);
  std::sort(arguments.begin(), arguments.end(),
            [](const SymInt& x, const SymInt& y) { return compare_sym(x, y) < 0; });
  arguments.erase(std::unique(arguments.begin(), arguments.end()), arguments.end());
  // Drop the arguments another one provably dominates.
  std::vector<bool> dropped(arguments.size(), false);
  for (size_t i = 0; i < arguments.size(); ++i) {
    for (size_t j = 0; j < arguments.size() && !dropped[i]; ++j) {
      if (i != j && !dropped[j] && dominates(kind, arguments[j], arguments[i])) dropped[i] = true;
    }
  }
  std::vector<SymInt> kept;
  for (size_t i = 0; i < arguments.size(); ++i)
    if (!dropped[i]) kept.push_back(arguments[i]);
  SymInt result = kept[0];
  for (size_t i = 1; i < kept.size(); ++i) result = make_op(kind, result, kept[i]);
  return result;
}

// ---------------------------------------------------------------- printing

enum class Syntax { kText, kCpp };
enum Precedence { kSum = 1, kProduct, kUnary, kPower, kPrimary };

struct Printed {
  std::string text;
  int precedence;
};

std::string wrap(const Printed& printed, int min_precedence) {
  return printed.precedence >= min_precedence ? printed.text : "(" + printed.text + ")";
}

Printed print_sym(const SymInt& value, Syntax syntax);

Printed print_atom(const Atom& atom, Syntax syntax) {
  if (atom.kind == AtomKind::kSymbol) return {atom.name, kPrimary};
  Printed lhs = print_sym(atom.lhs, syntax);
  Printed rhs = print_sym(atom.rhs, syntax);
  switch (atom.kind) {
    case AtomKind::kSymbol:
      break;
    case AtomKind::kFloorDiv:
    case AtomKind::kMod: {
      bool is_mod = atom.kind == AtomKind::kMod;
      // Any compound operand gets parentheses: "(2*s0)//3", "(-s0)//2", never "-s0//2",
      // which Python reads as (-s0)//2 but a reader may not.
      if (syntax == Syntax::kText)
        return {wrap(lhs, kPower) + (is_mod ? " % " : "//") + wrap(rhs, kPower), kProduct};
      if (range_of(atom.lhs).lo >= 0 && range_of(atom.rhs).lo >= 0)
        return {"(" + wrap(lhs, kProduct) + (is_mod ? " % " : " / ") + wrap(rhs, kPower) + ")",
                kPrimary};
      return {std::string(is_mod ? "kiln_mod(" : "kiln_floordiv(") + lhs.text + ", " + rhs.text +
                  ")",
              kPrimary};
    }
    case AtomKind::kMax:
    case AtomKind::kMin: {
      std::string name = atom.kind == AtomKind::kMax ? "max" : "min";
      if (syntax == Syntax::kCpp) name = "std::" + name + "<int64_t>";
      return {name + "(" + lhs.text + ", " + rhs.text + ")", kPrimary};
    }
  }
  return {"?", kPrimary};
}

// magnitude * factors, unsigned; `elements` tells whether it is a product chain.
struct PrintedTerm {
  Printed printed;
  size_t elements;
};

PrintedTerm print_unsigned_term(uint64_t coefficient_magnitude, const std::vector<Factor>& factors,
                                Syntax syntax) {
  std::vector<Printed> elements;
  if (coefficient_magnitude != 1 || factors.empty())
    elements.push_back({std::to_string(coefficient_magnitude), kPrimary});
  for (const Factor& factor : factors) {
    Printed atom = print_atom(*factor.atom, syntax);
    if (syntax == Syntax::kCpp) {
      for (int64_t i = 0; i < factor.power; ++i) elements.push_back(atom);
    } else if (factor.power == 1) {
      elements.push_back(atom);
    } else {
      elements.push_back({wrap(atom, kPrimary) + "**" + std::to_string(factor.power), kPower});
    }
  }
  if (elements.size() == 1) return {elements[0], 1};
  std::string text;
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i > 0) text += "*";
    text += wrap(elements[i], kPower);
  }
  return {{text, kProduct}, elements.size()};
}

struct SignedTerm {
  bool negative;
  uint64_t magnitude;
  const std::vector<Factor>* factors;
};

Printed print_sym(const SymInt& value, Syntax syntax) {
  static const std::vector<Factor> kNoFactors;
  // The terms in order, then the constant. A coefficient of INT64_MIN has no positive
  // literal, so it prints as two terms: -9223372036854775807*m - m.
  std::vector<SignedTerm> items;
  auto add_item = [&](int64_t coefficient, const std::vector<Factor>* factors) {
    if (coefficient == INT64_MIN) {
      items.push_back({true, static_cast<uint64_t>(INT64_MAX), factors});
      items.push_back({true, 1, factors});
    } else {
      items.push_back({coefficient < 0, magnitude(coefficient), factors});
    }
  };
  for (const Term& term : terms_of(value)) add_item(term.coefficient, &term.factors);
  int64_t constant = SymAccess::constant_term(value);
  if (constant != 0 || items.empty()) add_item(constant, &kNoFactors);

  std::string text;
  for (size_t i = 0; i < items.size(); ++i) {
    PrintedTerm term = print_unsigned_term(items[i].magnitude, *items[i].factors, syntax);
    if (i > 0) {
      text += items[i].negative ? " - " : " + ";
      text += term.printed.text;
    } else if (!items[i].negative) {
      text = term.printed.text;
      if (items.size() == 1) return term.printed;
    } else {
      // A lone element gets parentheses unless unary minus binds looser ("-(s0//2)");
      // "-3*s0" reads as (-3)*s0, the same value.
      Printed negated = term.elements == 1
                            ? Printed{"-" + wrap(term.printed, kUnary), kUnary}
                            : Printed{"-" + term.printed.text, kProduct};
      if (items.size() == 1) return negated;
      text = negated.text;
    }
  }
  return {text, kSum};
}

// ---------------------------------------------------------------- evaluation, substitution

int64_t evaluate_sym(const SymInt& value, const std::map<std::string, int64_t>& bindings);

int64_t evaluate_atom(const Atom& atom, const std::map<std::string, int64_t>& bindings) {
  if (atom.kind == AtomKind::kSymbol) {
    auto found = bindings.find(atom.name);
    if (found == bindings.end())
      throw SymbolicError("unbound symbol '" + atom.name + "' in symbolic evaluation");
    if (found->second < 0)
      throw SymbolicError("symbol '" + atom.name + "' bound to " + std::to_string(found->second) +
                          "; symbols are sizes and must be >= 0");
    return found->second;
  }
  int64_t lhs = evaluate_sym(atom.lhs, bindings);
  int64_t rhs = evaluate_sym(atom.rhs, bindings);
  switch (atom.kind) {
    case AtomKind::kSymbol:
      break;
    case AtomKind::kFloorDiv:
    case AtomKind::kMod: {
      bool is_mod = atom.kind == AtomKind::kMod;
      if (rhs == 0)
        throw SymbolicError("division by zero evaluating " + print_atom(atom, Syntax::kText).text +
                            ": " + atom.rhs.to_string() + " is 0");
      return is_mod ? python_mod(lhs, rhs) : python_floordiv(lhs, rhs);
    }
    case AtomKind::kMax:
      return std::max(lhs, rhs);
    case AtomKind::kMin:
      return std::min(lhs, rhs);
  }
  return 0;
}

int64_t evaluate_sym(const SymInt& value, const std::map<std::string, int64_t>& bindings) {
  int64_t total = SymAccess::constant_term(value);
  for (const Term& term : terms_of(value)) {
    int64_t product = term.coefficient;
    for (const Factor& factor : term.factors)
      product = checked_mul(product, checked_pow(evaluate_atom(*factor.atom, bindings),
                                                 factor.power));
    total = checked_add(total, product);
  }
  return total;
}

SymInt apply(AtomKind kind, const SymInt& lhs, const SymInt& rhs) {
  switch (kind) {
    case AtomKind::kFloorDiv:
      return floordiv(lhs, rhs);
    case AtomKind::kMod:
      return mod(lhs, rhs);
    case AtomKind::kMax:
      return max(lhs, rhs);
    case AtomKind::kMin:
      return min(lhs, rhs);
    case AtomKind::kSymbol:
      break;
  }
  return lhs;
}

std::optional<SymInt> substitute_sym(const SymInt& value,
                                     const std::map<std::string, SymInt>& replacements);

// The atom with replacements made, or nullopt when nothing in it changes.
std::optional<SymInt> substitute_atom(const Atom& atom,
                                      const std::map<std::string, SymInt>& replacements) {
  if (atom.kind == AtomKind::kSymbol) {
    auto found = replacements.find(atom.name);
    if (found == replacements.end()) return std::nullopt;
    return found->second;
  }
  std::optional<SymInt> lhs = substitute_sym(atom.lhs, replacements);
  std::optional<SymInt> rhs = substitute_sym(atom.rhs, replacements);
  if (!lhs && !rhs) return std::nullopt;
  return apply(atom.kind, lhs ? *lhs : atom.lhs, rhs ? *rhs : atom.rhs);
}

std::optional<SymInt> substitute_sym(const SymInt& value,
                                     const std::map<std::string, SymInt>& replacements) {
  bool changed = false;
  SymInt total = SymAccess::constant_term(value);
  for (const Term& term : terms_of(value)) {
    SymInt product = term.coefficient;
    for (const Factor& factor : term.factors) {
      std::optional<SymInt> replaced = substitute_atom(*factor.atom, replacements);
      changed = changed || replaced.has_value();
      product = product * power(replaced ? *replaced : from_atom(factor.atom), factor.power);
    }
    total = total + product;
  }
  if (!changed) return std::nullopt;
  return total;
}

void collect_symbols(const SymInt& value, std::set<std::string>& out) {
  for (const Term& term : terms_of(value)) {
    for (const Factor& factor : term.factors) {
      const Atom& atom = *factor.atom;
      if (atom.kind == AtomKind::kSymbol) {
        out.insert(atom.name);
      } else {
        collect_symbols(atom.lhs, out);
        collect_symbols(atom.rhs, out);
      }
    }
  }
}

bool is_identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// ---------------------------------------------------------------- parsing

// Recursive descent over Python's precedence:
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '//' | '%') unary)*
//   unary   := ('-' | '+') unary | power
//   power   := primary ('**' unary)?
//   primary := integer | symbol | ('max' | 'min') '(' sum ',' sum ')' | '(' sum ')'
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  SymInt parse() {
    SymInt result = parse_sum();
    skip_spaces();
    if (position_ < text_.size()) {
      char c = text_[position_];
      fail("unexpected '" + std::string(1, c) + "'" +
           (c == '/' ? " (floor division is written '//')" : ""));
    }
    return result;
  }

 private:
  [[noreturn]] void fail(const std::string& what, size_t position) const {
    throw SymbolicError("cannot parse symbolic integer \"" + std::string(text_) + "\": " + what +
                            " at column " + std::to_string(position + 1),
                        position + 1);
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, position_); }

  void skip_spaces() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\t'))
      ++position_;
  }

  // Consumes `token` (after spaces) when it is next.
  bool accept(std::string_view token) {
    skip_spaces();
    if (text_.substr(position_, token.size()) != token) return false;
    position_ += token.size();
    return true;
  }

  void expect(std::string_view token) {
    if (!accept(token)) fail("expected '" + std::string(token) + "'");
  }

  // Runs an arithmetic step, giving its error (division by zero, overflow) a column.
  template <typename Step>
  SymInt at(size_t position, Step step) {
    try {
      return step();
    } catch (const SymbolicError& error) {
      fail(error.what(), position);
    }
  }

  SymInt parse_sum() {
    SymInt result = parse_product();
    while (true) {
      skip_spaces();
      size_t where = position_;
      if (accept("+")) {
        SymInt rhs = parse_product();
        result = at(where, [&] { return result + rhs; });
      } else if (accept("-")) {
        SymInt rhs = parse_product();
        result = at(where, [&] { return result - rhs; });
      } else {
        return result;
      }
    }
  }

  SymInt parse_product() {
    SymInt result = parse_unary();
    while (true) {
      skip_spaces();
      size_t where = position_;
      if (accept("//")) {
        SymInt rhs = parse_unary();
        result = at(where, [&] { return floordiv(result, rhs); });
      } else if (accept("%")) {
        SymInt rhs = parse_unary();
        result = at(where, [&] { return mod(result, rhs); });
      } else if (text_.substr(position_, 2) != "**" && accept("*")) {
        SymInt rhs = parse_unary();
        result = at(where, [&] { return result * rhs; });
      } else {
        return result;
      }
    }
  }

  SymInt parse_unary() {
    skip_spaces();
    size_t where = position_;
    if (accept("-")) {
      // Fold a negative literal directly, so that -9223372036854775808 reads.
      skip_spaces();
      if (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) {
        size_t digits_start = position_;
        size_t end = position_;
        while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
        std::string_view rest = text_.substr(end);
        size_t after = rest.find_first_not_of(" \t");
        bool power_follows = after != std::string_view::npos && rest.substr(after, 2) == "**";
        if (!power_follows) {
          position_ = end;
          return negative_literal(text_.substr(digits_start, end - digits_start), digits_start);
        }
      }
      SymInt operand = parse_unary();
      return at(where, [&] { return -operand; });
    }
    if (accept("+")) return parse_unary();
    return parse_power();
  }

  SymInt parse_power() {
    SymInt base = parse_primary();
    skip_spaces();
    size_t where = position_;
    if (!accept("**")) return base;
    SymInt exponent = parse_unary();
    std::optional<int64_t> k = exponent.maybe_constant();
    if (!k || *k < 0) fail("the exponent of '**' must be a constant >= 0", where);
    if (*k > kMaxExponent)
      fail("the exponent of '**' is above " + std::to_string(kMaxExponent), where);
    return at(where, [&] { return power(base, *k); });
  }

  SymInt parse_primary() {
    skip_spaces();
    if (position_ >= text_.size()) fail("expected an integer, a symbol, max(, min( or '('");
    char c = text_[position_];
    size_t start = position_;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_])))
        ++position_;
      std::string digits(text_.substr(start, position_ - start));
      uint64_t value = 0;
      for (char digit : digits) {
        if (value > (static_cast<uint64_t>(INT64_MAX) - (digit - '0')) / 10)
          fail("integer literal out of int64 range", start);
        value = value * 10 + static_cast<uint64_t>(digit - '0');
      }
      return static_cast<int64_t>(value);
    }
    if (is_identifier_start(c)) {
      while (position_ < text_.size() && is_identifier_char(text_[position_])) ++position_;
      std::string name(text_.substr(start, position_ - start));
      skip_spaces();
      bool call = position_ < text_.size() && text_[position_] == '(';
      if (name == "max" || name == "min") {
        if (!call) fail("expected '(' after " + name);
        ++position_;
        SymInt first = parse_sum();
        expect(",");
        SymInt second = parse_sum();
        expect(")");
        return at(start, [&] { return name == "max" ? max(first, second) : min(first, second); });
      }
      if (call) fail("unknown function '" + name + "' (only max and min)", start);
      return SymInt::symbol(name);
    }
    if (c == '(') {
      ++position_;
      SymInt inner = parse_sum();
      expect(")");
      return inner;
    }
    fail("expected an integer, a symbol, max(, min( or '('");
  }

  SymInt negative_literal(std::string_view digits, size_t start) {
    uint64_t limit = static_cast<uint64_t>(INT64_MAX) + 1;
    uint64_t value = 0;
    for (char digit : digits) {
      if (value > (limit - static_cast<uint64_t>(digit - '0')) / 10)
        fail("integer literal out of int64 range", start);
      value = value * 10 + static_cast<uint64_t>(digit - '0');
    }
    return static_cast<int64_t>(uint64_t{0} - value);
  }

  // Bounds the work of expanding (a + b)**k and of printing powers as C++ products.
  static constexpr int64_t kMaxExponent = 64;

  std::string_view text_;
  size_t position_ = 0;
};

}  // namespace

// ---------------------------------------------------------------- the public API

SymInt detail::SymAccess::make(std::vector<Term> terms, int64_t constant) {
  if (terms.empty()) return SymInt(constant);
  size_t seed = 0x2545f4914f6cdd1dULL;
  for (const Term& term : terms) seed = hash_mix(seed, hash_term(term));
  return SymInt(std::make_shared<const SymNode>(SymNode{std::move(terms), seed}), constant);
}

SymInt SymInt::symbol(std::string name) {
  bool valid = !name.empty() && is_identifier_start(name[0]) &&
               std::all_of(name.begin(), name.end(), is_identifier_char) && name != "max" &&
               name != "min";
  if (!valid)
    throw SymbolicError("invalid symbol name '" + name +
                        "': expected [A-Za-z_][A-Za-z0-9_]*, not max or min");
  return from_atom(make_atom(AtomKind::kSymbol, std::move(name), SymInt(), SymInt()));
}

int64_t SymInt::constant() const {
  if (!is_constant())
    throw SymbolicError("expected a constant, got the symbolic expression " + to_string());
  return constant_;
}

std::optional<int64_t> SymInt::maybe_constant() const {
  if (!is_constant()) return std::nullopt;
  return constant_;
}

bool SymInt::is_symbol() const {
  const detail::Atom* atom = bare_atom(*this);
  return atom != nullptr && atom->kind == AtomKind::kSymbol;
}

std::vector<std::string> SymInt::free_symbols() const {
  std::set<std::string> names;
  collect_symbols(*this, names);
  return {names.begin(), names.end()};
}

int64_t SymInt::evaluate(const std::map<std::string, int64_t>& bindings) const {
  return evaluate_sym(*this, bindings);
}

SymInt SymInt::substitute(const std::map<std::string, SymInt>& replacements) const {
  std::optional<SymInt> result = substitute_sym(*this, replacements);
  return result ? *result : *this;
}

std::string SymInt::to_string() const { return print_sym(*this, Syntax::kText).text; }

std::string SymInt::to_cpp() const { return print_sym(*this, Syntax::kCpp).text; }

size_t SymInt::hash() const {
  return hash_mix(node_ ? node_->hash : 0, std::hash<int64_t>{}(constant_));
}

bool operator==(const SymInt& a, const SymInt& b) {
  if (a.constant_ != b.constant_) return false;
  if (a.node_ == b.node_) return true;
  if (!a.node_ || !b.node_ || a.node_->hash != b.node_->hash) return false;
  return compare_sym(a, b) == 0;
}

SymInt operator+(const SymInt& a, const SymInt& b) {
  int64_t constant = checked_add(a.constant_, b.constant_);
  if (!b.node_) return SymInt(a.node_, constant);
  if (!a.node_) return SymInt(b.node_, constant);
  // Merge the two sorted term lists.
  const std::vector<Term>& x = a.node_->terms;
  const std::vector<Term>& y = b.node_->terms;
  std::vector<Term> sum;
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    int c = i == x.size() ? 1 : j == y.size() ? -1 : compare_monomials(x[i], y[j]);
    if (c < 0) {
      sum.push_back(x[i++]);
    } else if (c > 0) {
      sum.push_back(y[j++]);
    } else {
      int64_t coefficient = checked_add(x[i].coefficient, y[j].coefficient);
      if (coefficient != 0) sum.push_back(Term{coefficient, x[i].factors, x[i].degree});
      ++i;
      ++j;
    }
  }
  return SymAccess::make(std::move(sum), constant);
}

SymInt operator-(const SymInt& a) { return scale(a, -1); }

SymInt operator-(const SymInt& a, const SymInt& b) { return a + scale(b, -1); }

SymInt operator*(const SymInt& a, const SymInt& b) {
  if (!a.node_) return scale(b, a.constant_);
  if (!b.node_) return scale(a, b.constant_);
  // Expand: every term of a (its constant included) times every term of b.
  static const std::vector<Factor> kNoFactors;
  auto with_constant = [](const SymInt& value) {
    std::vector<std::pair<int64_t, const std::vector<Factor>*>> items;
    for (const Term& term : value.node_->terms) items.emplace_back(term.coefficient, &term.factors);
    if (value.constant_ != 0) items.emplace_back(value.constant_, &kNoFactors);
    return items;
  };
  std::vector<Term> product;
  int64_t constant = 0;
  for (const auto& [ca, fa] : with_constant(a)) {
    for (const auto& [cb, fb] : with_constant(b)) {
      int64_t coefficient = checked_mul(ca, cb);
      if (fa->empty() && fb->empty()) {
        constant = checked_add(constant, coefficient);
        continue;
      }
      std::vector<Factor> factors = multiply_factors(*fa, *fb);
      int64_t degree = 0;
      for (const Factor& factor : factors) degree = checked_add(degree, factor.power);
      product.push_back(Term{coefficient, std::move(factors), degree});
    }
  }
  return SymAccess::make(normalize_terms(std::move(product)), constant);
}

SymInt floordiv(const SymInt& a, const SymInt& b) {
  if (auto k = b.maybe_constant()) {
    if (*k == 0) throw SymbolicError("division by zero: floordiv(" + a.to_string() + ", 0)");
    if (auto ka = a.maybe_constant()) return python_floordiv(*ka, *k);
    if (*k < 0) return floordiv(-a, checked_neg(*k));  // a//(-k) == (-a)//k
    return floordiv_by_constant(a, *k);
  }
  if (a == 0) return 0;
  if (a == b) return 1;
  return floordiv_general(a, b);
}

SymInt mod(const SymInt& a, const SymInt& b) {
  if (auto k = b.maybe_constant()) {
    if (*k == 0) throw SymbolicError("division by zero: mod(" + a.to_string() + ", 0)");
    if (auto ka = a.maybe_constant()) return python_mod(*ka, *k);
    if (*k < 0) return -mod(-a, checked_neg(*k));  // a % (-k) == -((-a) % k)
    return mod_by_constant(a, *k);
  }
  if (a == 0 || a == b) return 0;
  return mod_general(a, b);
}

SymInt max(const SymInt& a, const SymInt& b) { return extremum(AtomKind::kMax, a, b); }

SymInt min(const SymInt& a, const SymInt& b) { return extremum(AtomKind::kMin, a, b); }

std::ostream& operator<<(std::ostream& out, const SymInt& value) {
  return out << value.to_string();
}

SymInt parse_sym_int(std::string_view text) { return Parser(text).parse(); }

}  // namespace kiln::ir
