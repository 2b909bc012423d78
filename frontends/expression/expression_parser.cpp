// The expression front end (see frontends/expression/expression_parser.h): a recursive-descent
// parser over the characters of one expression, building the graph as it reads.
#include "frontends/expression/expression_parser.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <variant>

#include "ir/op_registry.h"
#include "ir/symbolic.h"
#include "kiln/error.h"
#include "runtime/message_text.h"
#include "runtime/strides.h"

namespace kiln::frontends {

namespace {

bool is_identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_identifier(std::string_view text) {
  if (text.empty() || !is_identifier_start(text[0])) return false;
  for (char c : text)
    if (!is_identifier_char(c)) return false;
  return true;
}

std::string trimmed(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

// The parser's values: a tensor (a graph node), a number, or what only an op's argument can be.
struct Value {
  ir::Argument argument;
  size_t column = 0;  // where the value starts (1-based)
  bool is_tensor() const { return argument.is_node(); }
  bool is_number() const {
    return argument.kind() == ir::Argument::Kind::integer || argument.kind() == ir::Argument::Kind::floating;
  }
};

class ExpressionParser {
 public:
  ExpressionParser(std::string_view text, const std::vector<ExpressionInput>& inputs) : text_(text) {
    for (const ExpressionInput& input : inputs) {
      if (inputs_.count(input.name)) fail("--input ", input.name, " is given twice");
      inputs_[input.name] = graph_.create_placeholder(input.name, input.meta);
      if (!input_names_.empty()) input_names_ += ", ";
      input_names_ += input.name;
    }
  }

  ir::Graph parse() {
    if (trimmed(text_).empty()) fail("expression: the expression is empty");
    Value result = parse_sum();
    skip_space();
    if (position_ < text_.size()) error_here("expected an operator (+ - * /) or the end of the expression, found ", describe_next());
    if (!result.is_tensor())
      error_at(result.column, "the expression is a number, not a tensor: use at least one input (--input NAME=DTYPE[DIMS])");
    ir::Node* node = result.argument.node();
    if (node->op() == ir::OpKind::placeholder)
      error_at(result.column, "the expression is the input '", node->target(), "' itself: there is nothing to compute");
    if (node->meta.is_tuple || node->meta.values.size() != 1)
      error_at(result.column, "'", node->target(), "' returns ", node->meta.values.size(),
               " values; an expression computes one tensor");
    std::string name = inputs_.count("out") ? graph_.unique_name("out") : "out";
    if (graph_.find(name) == nullptr) graph_.rename(node, name);
    graph_.create_output({node});
    return std::move(graph_);
  }

 private:
  // ---------------------------------------------------------------- characters and errors
  void skip_space() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) ++position_;
  }
  char peek() {
    skip_space();
    return position_ < text_.size() ? text_[position_] : '\0';
  }
  size_t column() const { return position_ + 1; }

  std::string describe_next() {
    skip_space();
    if (position_ >= text_.size()) return "end of expression";
    size_t end = position_ + 1;
    if (is_identifier_char(text_[position_]))
      while (end < text_.size() && is_identifier_char(text_[end])) ++end;
    return "'" + excerpt(text_.substr(position_, end - position_), 40) + "'";
  }

  template <typename... Parts>
  [[noreturn]] void error_at(size_t column, const Parts&... parts) {
    fail("expression:1:", column, ": ", parts...);
  }
  template <typename... Parts>
  [[noreturn]] void error_here(const Parts&... parts) {
    skip_space();
    error_at(column(), parts...);
  }

  void expect(char c, const std::string& context) {
    if (peek() != c) error_here("expected '", std::string(1, c), "' ", context, ", found ", describe_next());
    ++position_;
  }

  // ---------------------------------------------------------------- graph building
  // A call of op `op` at `column`; the op's own errors (binding, shape, dtype) name the column.
  Value call(const std::string& op, std::vector<ir::Argument> args, ir::Kwargs kwargs, size_t column) {
    const ir::OpInfo* info = ir::OpRegistry::global().find(op);
    if (info == nullptr) {
      try {
        ir::OpRegistry::global().get(op);  // its message suggests the closest name
      } catch (const Error& error) {
        error_at(column, error.what());
      }
    }
    if (info->is_inplace())
      error_at(column, "'", op, "' is an in-place op: an expression cannot mutate its inputs (use '", info->inplace_of, "')");
    try {
      return {graph_.create_call(op, std::move(args), std::move(kwargs)), column};
    } catch (const Error& error) {
      error_at(column, error.what());
    }
  }

  Value arithmetic(char symbol, const Value& left, const Value& right, size_t column) {
    if (left.is_number() && right.is_number()) return {fold(symbol, left.argument, right.argument, column), left.column};
    if (!left.is_tensor() && !left.is_number())
      error_at(left.column, "'", std::string(1, symbol), "' needs a tensor or a number on its left");
    if (!right.is_tensor() && !right.is_number())
      error_at(right.column, "'", std::string(1, symbol), "' needs a tensor or a number on its right");
    static const std::map<char, std::string> ops = {{'+', "add"}, {'-', "sub"}, {'*', "mul"}, {'/', "div"}};
    Value result = call(ops.at(symbol), {left.argument, right.argument}, {}, column);
    result.column = left.column;
    return result;
  }

  // Arithmetic on two numbers, as Python computes it (an int result stays an int but for '/').
  ir::Argument fold(char symbol, const ir::Argument& a, const ir::Argument& b, size_t column) {
    bool ints = a.kind() == ir::Argument::Kind::integer && b.kind() == ir::Argument::Kind::integer;
    if (ints && symbol != '/') {
      int64_t x = a.integer(), y = b.integer(), r = 0;
      bool overflow = symbol == '+' ? __builtin_add_overflow(x, y, &r)
                      : symbol == '-' ? __builtin_sub_overflow(x, y, &r)
                                      : __builtin_mul_overflow(x, y, &r);
      if (overflow) error_at(column, "integer overflow in '", std::string(1, symbol), "'");
      return r;
    }
    double x = number(a), y = number(b);
    if (symbol == '/' && y == 0) error_at(column, "division by zero");
    switch (symbol) {
      case '+': return x + y;
      case '-': return x - y;
      case '*': return x * y;
      default: return x / y;
    }
  }
  static double number(const ir::Argument& a) {
    return a.kind() == ir::Argument::Kind::integer ? double(a.integer()) : a.floating();
  }

  // ---------------------------------------------------------------- grammar
  Value parse_sum() {
    Value left = parse_product();
    for (char c = peek(); c == '+' || c == '-'; c = peek()) {
      size_t at = column();
      ++position_;
      left = arithmetic(c, left, parse_product(), at);
    }
    return left;
  }

  Value parse_product() {
    Value left = parse_unary();
    for (char c = peek(); c == '*' || c == '/'; c = peek()) {
      size_t at = column();
      ++position_;
      left = arithmetic(c, left, parse_unary(), at);
    }
    return left;
  }

  // Bounds the recursion of nested parentheses, calls and minus signs.
  class Nesting {
   public:
    explicit Nesting(ExpressionParser& parser) : parser_(parser) {
      if (++parser_.depth_ > kMaxDepth)
        parser_.error_here("the expression nests deeper than ", kMaxDepth, " levels (parentheses, calls, minus signs)");
    }
    ~Nesting() { --parser_.depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    ExpressionParser& parser_;
  };
  static constexpr int kMaxDepth = 200;

  Value parse_unary() {
    Nesting nesting(*this);
    if (peek() != '-') return parse_primary();
    size_t at = column();
    ++position_;
    Value operand = parse_unary();
    if (operand.argument.kind() == ir::Argument::Kind::integer) {
      if (operand.argument.integer() == INT64_MIN) error_at(at, "integer overflow in '-'");
      return {-operand.argument.integer(), at};
    }
    if (operand.argument.kind() == ir::Argument::Kind::floating) return {-operand.argument.floating(), at};
    if (!operand.is_tensor()) error_at(operand.column, "'-' needs a tensor or a number");
    Value result = call("neg", {operand.argument}, {}, at);
    return result;
  }

  Value parse_primary() {
    char c = peek();
    size_t at = column();
    if (c == '(') {
      ++position_;
      Value inner = parse_sum();
      expect(')', "to close the '(' at column " + std::to_string(at));
      inner.column = at;
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return parse_number();
    if (is_identifier_start(c)) {
      std::string word = read_identifier();
      if (peek() == '(') return parse_call(word, at);
      auto input = inputs_.find(word);
      if (input != inputs_.end()) return {input->second, at};
      if (ir::OpRegistry::global().find(word) != nullptr)
        error_here("expected '(' after the op name '", word, "', found ", describe_next());
      error_at(at, "unknown input '", word, "' (", input_names_.empty() ? "no inputs are given" : "the inputs are " + input_names_,
               "; give each with --input NAME=DTYPE[DIMS])");
    }
    error_here("expected a number, an input, an op call or '(', found ", describe_next());
  }

  std::string read_identifier() {
    skip_space();
    size_t begin = position_;
    while (position_ < text_.size() && is_identifier_char(text_[position_])) ++position_;
    return std::string(text_.substr(begin, position_ - begin));
  }

  Value parse_number() {
    skip_space();
    size_t at = column();
    size_t begin = position_;
    bool floating = false;
    while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) ++position_;
    if (position_ < text_.size() && text_[position_] == '.') {
      floating = true;
      ++position_;
      while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) ++position_;
    }
    if (position_ < text_.size() && (text_[position_] == 'e' || text_[position_] == 'E')) {
      floating = true;
      ++position_;
      if (position_ < text_.size() && (text_[position_] == '+' || text_[position_] == '-')) ++position_;
      size_t digits = position_;
      while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) ++position_;
      if (digits == position_) error_here("expected the exponent's digits, found ", describe_next());
    }
    std::string literal(text_.substr(begin, position_ - begin));
    if (literal == ".") error_at(at, "expected a number, found '.'");
    if (position_ < text_.size() && is_identifier_char(text_[position_]))
      error_here("expected an operator or ')' after the number ", literal, ", found ", describe_next());
    errno = 0;
    if (floating) {
      double value = std::strtod(literal.c_str(), nullptr);
      if (!std::isfinite(value)) error_at(at, "the number ", literal, " is out of range");
      return {value, at};
    }
    long long value = std::strtoll(literal.c_str(), nullptr, 10);
    if (errno == ERANGE) error_at(at, "the integer ", literal, " is out of range (int64)");
    return {int64_t(value), at};
  }

  Value parse_call(const std::string& op, size_t at) {
    if (ir::OpRegistry::global().find(op) == nullptr && inputs_.count(op))
      error_at(at, "'", op, "' is an input, not an op: it cannot be called");
    const std::string context = "after the arguments of '" + op + "'";
    ++position_;  // '('
    std::vector<ir::Argument> args;
    ir::Kwargs kwargs;
    if (peek() != ')') {
      for (size_t count = 0;; ++count) {
        if (count >= 64) error_here("too many arguments to '", op, "' (at most 64)");
        size_t saved = position_;
        std::string keyword;
        if (is_identifier_start(peek())) {
          keyword = read_identifier();
          if (peek() == '=') {
            ++position_;
          } else {
            position_ = saved;
            keyword.clear();
          }
        }
        size_t value_at = (skip_space(), column());
        Value value = parse_argument(0);
        if (!keyword.empty()) {
          kwargs.emplace_back(keyword, value.argument);
        } else {
          if (!kwargs.empty()) error_at(value_at, "a positional argument of '", op, "' follows a keyword argument");
          args.push_back(value.argument);
        }
        if (peek() != ',') break;
        ++position_;
      }
    }
    expect(')', context);
    return call(op, std::move(args), std::move(kwargs), at);
  }

  // An argument of an op: an expression, or a list, string, bool, None or dtype.
  Value parse_argument(int depth) {
    if (depth > 16) error_here("lists nest too deep (at most 16 levels)");
    char c = peek();
    size_t at = column();
    if (c == '[') {
      ++position_;
      std::vector<ir::Argument> items;
      if (peek() != ']') {
        for (;;) {
          if (items.size() >= 64) error_here("too many list items (at most 64)");
          items.push_back(parse_argument(depth + 1).argument);
          if (peek() != ',') break;
          ++position_;
        }
      }
      expect(']', "to close the list at column " + std::to_string(at));
      return {ir::Argument(std::move(items)), at};
    }
    if (c == '\'' || c == '"') {
      size_t end = text_.find(c, position_ + 1);
      if (end == std::string_view::npos) error_at(at, "the string has no closing ", std::string(1, c));
      std::string value(text_.substr(position_ + 1, end - position_ - 1));
      position_ = end + 1;
      return {ir::Argument(value), at};
    }
    if (is_identifier_start(c)) {
      size_t saved = position_;
      std::string word = read_identifier();
      char next = peek();
      bool followed_by_operator = next == '(' || next == '+' || next == '-' || next == '*' || next == '/';
      if (!followed_by_operator && !inputs_.count(word)) {
        if (word == "True" || word == "False") return {ir::Argument(word == "True"), at};
        if (word == "None") return {ir::Argument(), at};
        if (std::optional<DType> dtype = parse_dtype(word); dtype && dtype_name(*dtype) == word) return {ir::Argument(*dtype), at};
      }
      position_ = saved;
    }
    return parse_sum();
  }

  std::string_view text_;
  size_t position_ = 0;
  int depth_ = 0;
  ir::Graph graph_;
  std::map<std::string, ir::Node*> inputs_;
  std::string input_names_;
};

// The dims of an input spec: comma-separated symbolic sizes (commas inside parentheses, as in
// max(s0, 4), belong to the dim).
std::vector<std::string> split_dims(std::string_view text) {
  std::vector<std::string> dims;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ',';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      dims.push_back(trimmed(text.substr(begin, i - begin)));
      begin = i + 1;
    }
  }
  if (dims.size() == 1 && dims[0].empty()) dims.clear();  // "[]": a 0-d tensor
  return dims;
}

}  // namespace

ExpressionInput parse_expression_input(std::string_view spec) {
  const std::string shown = "--input '" + excerpt(spec, 80) + "'";
  const std::string form = " (expected NAME=DTYPE[DIMS], e.g. x=f32[s0, 4096])";
  size_t equals = spec.find('=');
  if (equals == std::string_view::npos) fail(shown, ": no '='", form);
  ExpressionInput input;
  input.name = trimmed(spec.substr(0, equals));
  if (!is_identifier(input.name)) fail(shown, ": the name '", excerpt(input.name, 40), "' is not an identifier", form);
  std::string type = trimmed(spec.substr(equals + 1));
  size_t open = type.find('[');
  if (open == std::string::npos || type.back() != ']') fail(shown, ": the type '", excerpt(type, 40), "' has no [DIMS]", form);
  std::string dtype_text = trimmed(std::string_view(type).substr(0, open));
  std::optional<DType> dtype = parse_dtype(dtype_text);
  if (!dtype || dtype_name(*dtype) != dtype_text)
    fail(shown, ": unknown dtype '", excerpt(dtype_text, 20), "' (f32, f16, bf16, f64, i64, i32, i16, i8, u8, u16, u32, u64, bool)");
  ir::SymShape shape;
  for (const std::string& dim : split_dims(std::string_view(type).substr(open + 1, type.size() - open - 2))) {
    if (dim.empty()) fail(shown, ": an empty dim", form);
    try {
      shape.push_back(ir::parse_sym_int(dim));
    } catch (const Error& error) {
      fail(shown, ": the dim '", excerpt(dim, 40), "' is not a size: ", error.what());
    }
    if (std::optional<int64_t> known = shape.back().maybe_constant(); known && *known < 0)
      fail(shown, ": the dim ", *known, " is negative");
  }
  input.meta = ir::TensorMeta::contiguous(*dtype, shape);
  return input;
}

ir::Graph parse_expression(std::string_view expression, const std::vector<ExpressionInput>& inputs) {
  return ExpressionParser(expression, inputs).parse();
}

}  // namespace kiln::frontends
