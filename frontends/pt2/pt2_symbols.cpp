// A recursive-descent reader of sympy's srepr text, building SymInts as it goes.
#include "frontends/pt2/pt2_symbols.h"

#include <cctype>
#include <vector>

#include "kiln/error.h"

namespace kiln::frontends {

using ir::SymInt;

namespace {

// A parsed srepr term: a SymInt, or a rational p/q (Rational(1, 2) inside a Mul), or the
// quotient of IntTrueDiv waiting for CeilToInt / FloorToInt.
struct Term {
  enum class Kind { integer, rational, true_division, string, flag } kind = Kind::integer;
  SymInt value;
  int64_t numerator = 0, denominator = 1;  // rational
  SymInt dividend, divisor;                // true_division
  std::string text;                        // string (a symbol's name)
};

class SympyParser {
 public:
  SympyParser(const std::string& text, const std::string& where) : text_(text), where_(where) {}

  SymInt parse() {
    Term term = parse_term();
    skip_space();
    if (position_ != text_.size()) error("unexpected text at column " + std::to_string(position_ + 1));
    return as_int(term);
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail(where_, ": cannot read the symbolic size '", text_, "': ", what);
  }
  void skip_space() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) ++position_;
  }
  bool accept(char c) {
    skip_space();
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) error(std::string("expected '") + c + "' at column " + std::to_string(position_ + 1));
  }
  std::string identifier() {
    skip_space();
    size_t start = position_;
    while (position_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[position_])) || text_[position_] == '_'))
      ++position_;
    if (start == position_) error("expected a name at column " + std::to_string(start + 1));
    return text_.substr(start, position_ - start);
  }

  SymInt as_int(const Term& term) const {
    if (term.kind == Term::Kind::integer) return term.value;
    if (term.kind == Term::Kind::rational && term.denominator == 1) return SymInt(term.numerator);
    error("a non-integer value (a fraction or a true division) where a size is expected");
  }

  int64_t constant_of(const Term& term) const {
    SymInt value = as_int(term);
    if (!value.is_constant()) error("expected a constant, found " + value.to_string());
    return value.constant();
  }

  Term integer_term(SymInt value) const {
    Term term;
    term.value = std::move(value);
    return term;
  }

  Term parse_term() {
    skip_space();
    if (position_ < text_.size() && (text_[position_] == '\'' || text_[position_] == '"')) {
      char quote = text_[position_++];
      size_t end = text_.find(quote, position_);
      if (end == std::string::npos) error("unterminated string");
      Term term;
      term.kind = Term::Kind::string;
      term.text = text_.substr(position_, end - position_);
      position_ = end + 1;
      return term;
    }
    if (position_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[position_])) || text_[position_] == '-')) {
      size_t start = position_;
      if (text_[position_] == '-') ++position_;
      while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) ++position_;
      try {
        return integer_term(SymInt(std::stoll(text_.substr(start, position_ - start))));
      } catch (const std::exception&) {
        error("the number '" + text_.substr(start, position_ - start) + "' does not fit in 64 bits");
      }
    }
    std::string name = identifier();
    if (name == "True" || name == "False") {
      Term term;
      term.kind = Term::Kind::flag;
      return term;
    }
    std::vector<Term> args;
    expect('(');
    if (!accept(')')) {
      do {
        // keyword arguments (positive=True, integer=True) are read and dropped
        size_t saved = position_;
        skip_space();
        size_t start = position_;
        while (position_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[position_])) || text_[position_] == '_'))
          ++position_;
        skip_space();
        if (position_ > start && position_ < text_.size() && text_[position_] == '=') {
          ++position_;
          parse_term();
          continue;
        }
        position_ = saved;
        args.push_back(parse_term());
      } while (accept(','));
      expect(')');
    }
    return apply(name, args);
  }

  Term apply(const std::string& name, const std::vector<Term>& args) {
    auto arity = [&](size_t n) {
      if (args.size() != n) error(name + " takes " + std::to_string(n) + " arguments, got " + std::to_string(args.size()));
    };
    if (name == "Symbol") {
      arity(1);
      if (args[0].kind != Term::Kind::string) error("Symbol takes a name");
      const std::string& symbol = args[0].text;
      if (!symbol.empty() && symbol[0] == 'u')
        error("'" + symbol + "' is an unbacked symbol (a size that depends on tensor values, e.g. from nonzero or "
              ".item()); Kiln compiles sizes known from the input shapes only");
      return integer_term(SymInt::symbol(symbol));
    }
    if (name == "Integer") {
      arity(1);
      return integer_term(SymInt(constant_of(args[0])));
    }
    if (name == "Rational") {
      arity(2);
      Term term;
      term.kind = Term::Kind::rational;
      term.numerator = constant_of(args[0]);
      term.denominator = constant_of(args[1]);
      if (term.denominator <= 0) error("a rational with a non-positive denominator");
      return term;
    }
    if (name == "Add") {
      SymInt sum = 0;
      for (const Term& arg : args) sum = sum + as_int(arg);
      return integer_term(sum);
    }
    if (name == "Mul") {
      SymInt product = 1;
      int64_t denominator = 1;
      for (const Term& arg : args) {
        if (arg.kind == Term::Kind::rational) {
          product = product * SymInt(arg.numerator);
          denominator *= arg.denominator;
        } else {
          product = product * as_int(arg);
        }
      }
      // sympy keeps a fraction only where the product is a multiple of it: exact division.
      return integer_term(denominator == 1 ? product : floordiv(product, SymInt(denominator)));
    }
    if (name == "Pow") {
      arity(2);
      int64_t exponent = constant_of(args[1]);
      if (exponent < 0 || exponent > 64) error("Pow with exponent " + std::to_string(exponent));
      SymInt base = as_int(args[0]), result = 1;
      for (int64_t i = 0; i < exponent; ++i) result = result * base;
      return integer_term(result);
    }
    if (name == "FloorDiv" || name == "CleanDiv") {
      arity(2);
      return integer_term(floordiv(as_int(args[0]), as_int(args[1])));
    }
    if (name == "Mod" || name == "PythonMod") {
      arity(2);
      return integer_term(mod(as_int(args[0]), as_int(args[1])));
    }
    if (name == "Max" || name == "Min") {
      if (args.empty()) error(name + " without arguments");
      SymInt result = as_int(args[0]);
      for (size_t i = 1; i < args.size(); ++i) result = name == "Max" ? max(result, as_int(args[i])) : min(result, as_int(args[i]));
      return integer_term(result);
    }
    if (name == "IntTrueDiv") {
      arity(2);
      Term term;
      term.kind = Term::Kind::true_division;
      term.dividend = as_int(args[0]);
      term.divisor = as_int(args[1]);
      return term;
    }
    if (name == "CeilToInt" || name == "FloorToInt" || name == "ceiling" || name == "floor") {
      arity(1);
      const Term& arg = args[0];
      SymInt dividend, divisor;
      if (arg.kind == Term::Kind::true_division) {
        dividend = arg.dividend;
        divisor = arg.divisor;
      } else if (arg.kind == Term::Kind::rational) {
        dividend = arg.numerator;
        divisor = arg.denominator;
      } else {
        return integer_term(as_int(arg));
      }
      bool ceil = name == "CeilToInt" || name == "ceiling";
      return integer_term(ceil ? -floordiv(-dividend, divisor) : floordiv(dividend, divisor));
    }
    error("the function '" + name + "' is not one Kiln reads in sizes");
  }

  const std::string& text_;
  const std::string& where_;
  size_t position_ = 0;
};

}  // namespace

ir::SymInt parse_sympy_size(const std::string& text, const std::string& where) {
  try {
    return SympyParser(text, where).parse();
  } catch (const ir::SymbolicError& error) {
    fail(where, ": cannot read the symbolic size '", text, "': ", error.what());
  }
}

}  // namespace kiln::frontends
