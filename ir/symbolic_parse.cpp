// Parsing SymInt's readable text (ir/symbolic.h: parse_sym_int): a recursive-descent
// parser over Python's precedence that builds the value through the public operators (so
// the result is canonical) and reports every problem as a SymbolicError with its column.
#include <cctype>
#include <string>
#include <string_view>

#include "ir/symbolic_internal.h"
#include "runtime/message_text.h"

namespace kiln::ir {

namespace {

using detail::is_identifier_char;
using detail::is_identifier_start;
using detail::power;

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
    // Long chains (a // b // c ...) nest as deeply as parentheses in the value built: bound them too.
    if (text_.size() > kMaxLength)
      fail("longer than " + std::to_string(kMaxLength) + " characters (" + std::to_string(text_.size()) + ")", 0);
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
    throw SymbolicError("cannot parse symbolic integer \"" + excerpt(text_) + "\": " + what +
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
    // Every nesting (parentheses, max/min, unary signs, exponents) passes here: bound it, so
    // that hostile input cannot exhaust the stack.
    if (++depth_ > kMaxDepth) fail("expression nested deeper than " + std::to_string(kMaxDepth) + " levels");
    SymInt result = parse_unary_unbounded();
    --depth_;
    return result;
  }

  SymInt parse_unary_unbounded() {
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
  static constexpr int kMaxDepth = 200;
  static constexpr size_t kMaxLength = 1024;

  std::string_view text_;
  size_t position_ = 0;
  int depth_ = 0;
};

}  // namespace

SymInt parse_sym_int(std::string_view text) { return Parser(text).parse(); }

}  // namespace kiln::ir
