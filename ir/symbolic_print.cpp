// Printing SymInt (ir/symbolic.h): the readable canonical text (to_string, which
// ir/symbolic_parse.cpp reads back) and the C++ int64_t expression (to_cpp) that generated
// kernels use, both from one printer over the canonical form with Python's precedence.
#include <string>
#include <vector>

#include "ir/symbolic_internal.h"

namespace kiln::ir {

namespace {

using detail::Atom;
using detail::AtomKind;
using detail::Factor;
using detail::SymAccess;
using detail::Term;
using detail::magnitude;
using detail::range_of;
using detail::terms_of;

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

}  // namespace

std::string detail::atom_text(const Atom& atom) { return print_atom(atom, Syntax::kText).text; }

std::string SymInt::to_string() const { return print_sym(*this, Syntax::kText).text; }

std::string SymInt::to_cpp() const { return print_sym(*this, Syntax::kCpp).text; }

std::ostream& operator<<(std::ostream& out, const SymInt& value) {
  return out << value.to_string();
}

}  // namespace kiln::ir
