// SizeExpression: a size, offset or grid written as text over shape symbols, as the compiler
// prints its symbolic integers (ir/symbolic.h, SymInt::to_string) into files the runtime reads
// (the CUDA launch plan): "s0*512", "(s0 + 255)//256", "max(s0, 1)", "s0**2 - s1 % 4". The
// runtime cannot use ir/, so it parses the printed form itself, once at load, and evaluates it
// per run under the symbols' values.
//
// Grammar (Python's precedence, as SymInt prints and parses): integers, symbols
// ([A-Za-z_][A-Za-z0-9_]*), + - * // % **, parentheses, max(a, b), min(a, b); unary minus binds
// tighter than * // % and looser than ** (whose exponent is a constant in [0, 64]). Semantics
// are Python's: // rounds toward negative infinity, % takes the divisor's sign. Arithmetic is
// int64 and checked: an overflow or a division by zero throws kiln::Error naming the expression.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class SizeExpression {
 public:
  SizeExpression();  // the constant 0

  // Parses `text`; throws kiln::Error "<what>: cannot read size expression '<text>': <why> at
  // column N" on bad input. `symbols` lists the names the expression may use; each symbol's
  // value is passed to evaluate() at that position. Another name is an error.
  static SizeExpression parse(std::string_view text, const std::vector<std::string>& symbols, const std::string& what);

  // The value with symbol i bound to values[i] (values.size() >= the symbols' count).
  int64_t evaluate(const std::vector<int64_t>& values) const;
  // The value when it uses no symbol.
  bool is_constant() const;

  const std::string& text() const { return text_; }

  struct Node;  // the parsed form (size_expression.cpp)

 private:
  std::shared_ptr<const Node> root_;
  std::string text_;
};

}  // namespace kiln
