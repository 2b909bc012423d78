// Owns SymInt's construction and canonical simplification (ir/symbolic.h): the canonical
// order, the building blocks of canonical values, and the rules applied as +, -, *, floordiv,
// mod, max and min build an expression. The representation and the helpers shared with the
// other parts of the implementation (ranges, evaluation, printing, parsing) are in
// ir/symbolic_internal.h.
#include "ir/symbolic.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/symbolic_internal.h"

namespace kiln::ir::detail {

void throw_overflow() { throw SymbolicError("symbolic integer overflow: a value does not fit in int64"); }

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

// ---------------------------------------------------------------- canonical order

namespace {

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

}  // namespace

int compare_atoms(const Atom& a, const Atom& b) {
  if (&a == &b) return 0;
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.kind == AtomKind::kSymbol) return compare_names(a.name, b.name);
  if (int c = compare_sym(a.lhs, b.lhs)) return c;
  return compare_sym(a.rhs, b.rhs);
}

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

// Constants sort after everything else, so that max(s0, 3) keeps its constant last.
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

namespace {

size_t hash_term(const Term& term) {
  size_t seed = std::hash<int64_t>{}(term.coefficient);
  for (const Factor& factor : term.factors)
    seed = hash_mix(hash_mix(seed, factor.atom->hash), std::hash<int64_t>{}(factor.power));
  return seed;
}

}  // namespace

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

namespace {

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

}  // namespace

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

namespace {

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
  int64_t r_constant = int_floor_mod(constant, k);
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
    int64_t coefficient = int_floor_mod(term.coefficient, k);
    if (coefficient == 0) continue;
    r_terms.push_back(term);
    r_terms.back().coefficient = coefficient;
  }
  int64_t r_constant = int_floor_mod(SymAccess::constant_term(a), k);
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

}  // namespace

SymInt SymAccess::make(std::vector<Term> terms, int64_t constant) {
  if (terms.empty()) return SymInt(constant);
  size_t seed = 0x2545f4914f6cdd1dULL;
  for (const Term& term : terms) seed = hash_mix(seed, hash_term(term));
  return SymInt(std::make_shared<const SymNode>(SymNode{std::move(terms), seed}), constant);
}

}  // namespace kiln::ir::detail

// ---------------------------------------------------------------- the public API

namespace kiln::ir {

using detail::AtomKind;
using detail::Factor;
using detail::SymAccess;
using detail::SymNode;
using detail::Term;
using detail::bare_atom;
using detail::checked_add;
using detail::checked_mul;
using detail::checked_neg;
using detail::compare_monomials;
using detail::compare_sym;
using detail::extremum;
using detail::floordiv_by_constant;
using detail::floordiv_general;
using detail::from_atom;
using detail::hash_mix;
using detail::is_identifier_char;
using detail::is_identifier_start;
using detail::make_atom;
using detail::mod_by_constant;
using detail::mod_general;
using detail::multiply_factors;
using detail::normalize_terms;
using detail::python_floordiv;
using detail::scale;

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
    if (auto ka = a.maybe_constant()) return int_floor_mod(*ka, *k);
    if (*k < 0) return -mod(-a, checked_neg(*k));  // a % (-k) == -((-a) % k)
    return mod_by_constant(a, *k);
  }
  if (a == 0 || a == b) return 0;
  return mod_general(a, b);
}

SymInt max(const SymInt& a, const SymInt& b) { return extremum(AtomKind::kMax, a, b); }

SymInt min(const SymInt& a, const SymInt& b) { return extremum(AtomKind::kMin, a, b); }

}  // namespace kiln::ir

