// Size expressions printed by the compiler, parsed and evaluated. See runtime/size_expression.h.
#include "runtime/size_expression.h"

#include <cctype>
#include <limits>

#include "kiln/error.h"
#include "runtime/scalar_arithmetic.h"

namespace kiln {

enum class Op { kConstant, kSymbol, kNegate, kAdd, kSubtract, kMultiply, kFloorDivide, kModulo, kPower, kMax, kMin };

struct SizeExpression::Node {
  Op op = Op::kConstant;
  int64_t value = 0;  // kConstant: the value; kSymbol: the symbol's index
  std::shared_ptr<const Node> lhs, rhs;
};

namespace {

using NodePtr = std::shared_ptr<const SizeExpression::Node>;

NodePtr make(Op op, int64_t value, NodePtr lhs = nullptr, NodePtr rhs = nullptr) {
  auto node = std::make_shared<SizeExpression::Node>();
  node->op = op;
  node->value = value;
  node->lhs = std::move(lhs);
  node->rhs = std::move(rhs);
  return node;
}

// The value of a parsed expression under the symbols' values, in checked int64 arithmetic.
class Evaluator {
 public:
  Evaluator(const std::vector<int64_t>& values, const std::string& text) : values_(values), text_(text) {}

  int64_t operator()(const SizeExpression::Node& node) const {
    switch (node.op) {
      case Op::kConstant: return node.value;
      case Op::kSymbol:
        KILN_CHECK(size_t(node.value) < values_.size(), "size expression '", text_, "': symbol #", node.value, " has no value");
        return values_[size_t(node.value)];
      case Op::kNegate: {
        int64_t a = (*this)(*node.lhs);
        if (a == std::numeric_limits<int64_t>::min()) overflow();
        return -a;
      }
      case Op::kPower: return power((*this)(*node.lhs), node.rhs->value);
      default: break;
    }
    int64_t a = (*this)(*node.lhs), b = (*this)(*node.rhs), result = 0;
    switch (node.op) {
      case Op::kAdd:
        if (__builtin_add_overflow(a, b, &result)) overflow();
        return result;
      case Op::kSubtract:
        if (__builtin_sub_overflow(a, b, &result)) overflow();
        return result;
      case Op::kMultiply:
        if (__builtin_mul_overflow(a, b, &result)) overflow();
        return result;
      case Op::kFloorDivide:
      case Op::kModulo:
        if (b == 0) fail("division by zero evaluating size expression '", text_, "'");
        if (node.op == Op::kModulo) return int_floor_mod(a, b);
        if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow();
        return int_floor_divide(a, b);
      case Op::kMax: return a > b ? a : b;
      case Op::kMin: return a < b ? a : b;
      default: break;
    }
    KILN_CHECK(false, "size expression '", text_, "': unknown operation");
  }

 private:
  [[noreturn]] void overflow() const { fail("size expression '", text_, "' overflows 64-bit integers"); }
  int64_t power(int64_t base, int64_t exponent) const {
    int64_t result = 1;
    for (int64_t i = 0; i < exponent; ++i)
      if (__builtin_mul_overflow(result, base, &result)) overflow();
    return result;
  }

  const std::vector<int64_t>& values_;
  const std::string& text_;
};

bool uses_symbols(const SizeExpression::Node& node) {
  if (node.op == Op::kSymbol) return true;
  return (node.lhs && uses_symbols(*node.lhs)) || (node.rhs && uses_symbols(*node.rhs));
}

// Recursive descent over the grammar of the header; `fail_at` reports the column.
class Parser {
 public:
  Parser(std::string_view text, const std::vector<std::string>& symbols, const std::string& what)
      : text_(text), symbols_(symbols), what_(what) {}

  NodePtr parse() {
    NodePtr root = sum();
    skip_spaces();
    if (at_ < text_.size()) fail_at("unexpected '" + std::string(1, text_[at_]) + "'");
    return root;
  }

 private:
  std::string text_copy() const { return std::string(text_); }
  [[noreturn]] void fail_at(const std::string& why) const {
    fail(what_, ": cannot read size expression '", text_, "': ", why, " at column ", at_ + 1);
  }
  void skip_spaces() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }
  bool take(std::string_view token) {
    skip_spaces();
    if (text_.substr(at_, token.size()) != token) return false;
    at_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!take(token)) fail_at("expected '" + std::string(token) + "'");
  }

  NodePtr sum() {
    NodePtr node = product();
    for (;;) {
      if (take("+")) node = make(Op::kAdd, 0, node, product());
      else if (take("-")) node = make(Op::kSubtract, 0, node, product());
      else return node;
    }
  }
  NodePtr product() {
    NodePtr node = unary();
    for (;;) {
      if (take("//")) node = make(Op::kFloorDivide, 0, node, unary());
      else if (take("*")) node = make(Op::kMultiply, 0, node, unary());
      else if (take("%")) node = make(Op::kModulo, 0, node, unary());
      else return node;
    }
  }
  NodePtr unary() {
    if (take("-")) return make(Op::kNegate, 0, unary());
    return power();
  }
  NodePtr power() {
    NodePtr base = primary();
    if (!take("**")) return base;
    skip_spaces();
    size_t exponent_at = at_;
    NodePtr exponent = unary();  // Python: right to left, and the exponent may carry a unary minus
    int64_t value = -1;
    if (!uses_symbols(*exponent)) value = Evaluator({}, text_copy())(*exponent);
    if (value < 0 || value > 64) {
      at_ = exponent_at;
      fail_at("the exponent must be a constant from 0 to 64");
    }
    return make(Op::kPower, 0, base, make(Op::kConstant, value));
  }
  NodePtr primary() {
    skip_spaces();
    if (at_ >= text_.size()) fail_at("the expression ends early");
    char c = text_[at_];
    if (std::isdigit(static_cast<unsigned char>(c))) return integer();
    if (take("(")) {
      NodePtr inner = sum();
      expect(")");
      return inner;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = at_;
      while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
      std::string name(text_.substr(start, at_ - start));
      if (name == "max" || name == "min") {
        expect("(");
        NodePtr a = sum();
        expect(",");
        NodePtr b = sum();
        expect(")");
        return make(name == "max" ? Op::kMax : Op::kMin, 0, a, b);
      }
      for (size_t i = 0; i < symbols_.size(); ++i)
        if (symbols_[i] == name) return make(Op::kSymbol, int64_t(i), nullptr, nullptr);
      at_ = start;
      fail_at("unknown symbol '" + name + "'");
    }
    fail_at("unexpected '" + std::string(1, c) + "'");
  }
  NodePtr integer() {
    int64_t value = 0;
    size_t start = at_;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
      int digit = text_[at_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        at_ = start;
        fail_at("the integer does not fit in 64 bits");
      }
      value = value * 10 + digit;
      ++at_;
    }
    return make(Op::kConstant, value);
  }

  std::string_view text_;
  const std::vector<std::string>& symbols_;
  const std::string& what_;
  size_t at_ = 0;
};

}  // namespace

SizeExpression::SizeExpression() : root_(make(Op::kConstant, 0)), text_("0") {}

SizeExpression SizeExpression::parse(std::string_view text, const std::vector<std::string>& symbols,
                                     const std::string& what) {
  SizeExpression expression;
  expression.root_ = Parser(text, symbols, what).parse();
  expression.text_ = std::string(text);
  return expression;
}

int64_t SizeExpression::evaluate(const std::vector<int64_t>& values) const { return Evaluator(values, text_)(*root_); }

bool SizeExpression::is_constant() const { return !uses_symbols(*root_); }

}  // namespace kiln
