// Reading a SymInt's value (ir/symbolic.h): evaluation under symbol bindings (checked
// against overflow, unbound symbols, negative sizes and division by zero), substitution of
// symbols by expressions (re-simplified through the public operators), and free symbols.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/symbolic_internal.h"

namespace kiln::ir {

namespace {

using detail::Atom;
using detail::AtomKind;
using detail::Factor;
using detail::Interval;
using detail::SymAccess;
using detail::Term;
using detail::checked_add;
using detail::checked_mul;
using detail::checked_pow;
using detail::from_atom;
using detail::is_finite;
using detail::power;
using detail::python_floordiv;
using detail::range_within;
using detail::terms_of;

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
        throw SymbolicError("division by zero evaluating " + detail::atom_text(atom) +
                            ": " + atom.rhs.to_string() + " is 0");
      return is_mod ? int_floor_mod(lhs, rhs) : python_floordiv(lhs, rhs);
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

// The value rebuilt with each atom replaced by `replace(atom)` where that gives a value, and
// simplified; nullopt when no atom changes.
template <class Replace>
std::optional<SymInt> replace_atoms(const SymInt& value, const Replace& replace) {
  bool changed = false;
  SymInt total = SymAccess::constant_term(value);
  for (const Term& term : terms_of(value)) {
    SymInt product = term.coefficient;
    for (const Factor& factor : term.factors) {
      std::optional<SymInt> replaced = replace(*factor.atom);
      changed = changed || replaced.has_value();
      product = product * power(replaced ? *replaced : from_atom(factor.atom), factor.power);
    }
    total = total + product;
  }
  if (!changed) return std::nullopt;
  return total;
}

std::optional<SymInt> substitute_sym(const SymInt& value,
                                     const std::map<std::string, SymInt>& replacements) {
  return replace_atoms(value, [&](const Atom& atom) { return substitute_atom(atom, replacements); });
}

std::optional<SymInt> fold_sym(const SymInt& value, const std::map<std::string, int64_t>& bounds);

// a//b and a % b for a divisor b = c*M (c > 1 a constant, M a product of symbols: sizes, positive
// wherever the division is defined) and a = c*Q + R with R within [0, c) under `bounds`: a//b is
// Q//M and a % b is c*(Q % M) + R, as floor((c*Q + R) / (c*M)) = floor((Q + R/c) / M) and no
// multiple of M lies strictly between Q and Q + R/c < Q + 1. (A copy out of a permuted view of a
// symbolic batch: (128*x0 + x1)//(128*s0) with x1 < 128 is x0//s0, which no longer varies along x1.)
std::optional<SymInt> fold_scaled_divisor(AtomKind kind, const SymInt& a, const SymInt& b,
                                          const std::map<std::string, int64_t>& bounds) {
  const std::vector<Term>& divisor_terms = terms_of(b);
  if (divisor_terms.size() != 1 || SymAccess::constant_term(b) != 0 || divisor_terms[0].coefficient <= 1) return std::nullopt;
  for (const Factor& factor : divisor_terms[0].factors)
    if (factor.atom->kind != AtomKind::kSymbol) return std::nullopt;
  const int64_t c = divisor_terms[0].coefficient;
  Term unit = divisor_terms[0];
  unit.coefficient = 1;
  const SymInt m = SymAccess::make({unit}, 0);
  std::vector<Term> q_terms, r_terms;
  for (Term term : terms_of(a)) {
    if (term.coefficient % c == 0) {
      term.coefficient /= c;
      q_terms.push_back(std::move(term));
    } else {
      r_terms.push_back(std::move(term));
    }
  }
  const int64_t constant = SymAccess::constant_term(a);
  const int64_t q_constant = python_floordiv(constant, c);
  const SymInt q = SymAccess::make(std::move(q_terms), q_constant);
  const SymInt r = SymAccess::make(std::move(r_terms), constant - q_constant * c);
  const Interval range = range_within(r, bounds);
  if (!is_finite(range) || range.lo < 0 || range.hi >= c) return std::nullopt;
  return kind == AtomKind::kFloorDiv ? floordiv(q, m) : SymInt(c) * mod(q, m) + r;
}

// The atom with what `bounds` decide folded, or nullopt when nothing in it changes.
std::optional<SymInt> fold_atom(const Atom& atom, const std::map<std::string, int64_t>& bounds) {
  if (atom.kind == AtomKind::kSymbol) return std::nullopt;
  std::optional<SymInt> lhs = fold_sym(atom.lhs, bounds);
  std::optional<SymInt> rhs = fold_sym(atom.rhs, bounds);
  const SymInt& a = lhs ? *lhs : atom.lhs;
  const SymInt& b = rhs ? *rhs : atom.rhs;
  std::optional<int64_t> divisor = b.maybe_constant();
  if ((atom.kind == AtomKind::kFloorDiv || atom.kind == AtomKind::kMod) && divisor && *divisor > 0) {
    Interval range = range_within(a, bounds);
    if (is_finite(range)) {
      // One quotient q over the whole range: a//k is q and a % k is a - q*k.
      int64_t quotient = python_floordiv(range.lo, *divisor);
      if (quotient == python_floordiv(range.hi, *divisor))
        return atom.kind == AtomKind::kFloorDiv ? SymInt(quotient) : a - SymInt(checked_mul(quotient, *divisor));
    }
  }
  if ((atom.kind == AtomKind::kFloorDiv || atom.kind == AtomKind::kMod) && !divisor) {
    if (std::optional<SymInt> folded = fold_scaled_divisor(atom.kind, a, b, bounds)) return folded;
  }
  if (!lhs && !rhs) return std::nullopt;
  return apply(atom.kind, a, b);
}

std::optional<SymInt> fold_sym(const SymInt& value, const std::map<std::string, int64_t>& bounds) {
  return replace_atoms(value, [&](const Atom& atom) { return fold_atom(atom, bounds); });
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

}  // namespace

SymInt SymInt::fold_with_bounds(const std::map<std::string, int64_t>& bounds) const {
  std::optional<SymInt> result = fold_sym(*this, bounds);
  return result ? *result : *this;
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

}  // namespace kiln::ir
