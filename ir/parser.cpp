// A recursive-descent parser for the FX-style text form, working on characters with line and
// column tracking (the grammar is small enough that a separate lexer would add nothing).
//
//   file     := 'graph' '(' ')' ':' node* 'return' '(' [value {',' value} [',']] ')' [signature]
//   signature := 'Graph' 'signature' ':' spec*      (inputs first; "# inputs" are comments)
//   ranges    := 'Range' 'constraints' ':' '{' [symbol ':' 'VR' '[' int ',' (int | 'int_oo') ']' {',' ...}] '}' 
//   spec     := ['%'] NAME ':' KIND ['target' '=' TARGET]
//   node     := '%' NAME [':' [type] ['[' 'num_users' '=' INT ']']] '=' KIND '[' 'target' '=' TARGET ']' [call]
//   call     := '(' 'args' '=' '(' [arg {',' arg} [',']] ')' ',' 'kwargs' '=' '{' [NAME ':' arg {',' ...}] '}' ')'
//   type     := tensor | '(' [tensor {',' tensor} [',']] ')'
//   tensor   := DTYPE '[' [dim {',' dim}] ']' ['{' [dim {',' dim}] '}'] ['@' DEVICE]
//   arg      := '%' NAME | '[' [arg {',' arg}] ']' | STRING | scalar
// A scalar is read up to the next ',' ')' ']' '}' outside parentheses and is None, True,
// False, an int, a float, a dtype, a device, or a symbolic int (parse_sym_int).
#include "ir/parser.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <vector>

#include "ir/op_registry.h"
#include "ir/printer.h"
#include "ir/signature_specs.h"
#include "kiln/error.h"
#include "runtime/message_text.h"
#include "runtime/strides.h"

namespace kiln::ir {

std::string ParseOptions::missing_parameter_message(const std::string& target) const {
  if (weights_file.empty()) return "no value for get_attr target '" + target + "': no weights were given";
  if (weights_file_missing)
    return "get_attr target '" + target + "' needs the weights file '" + weights_file + "', which does not exist";
  return "get_attr target '" + target + "' is not in the weights file '" + weights_file + "'";
}

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool is_target_char(char c) { return is_name_char(c) || c == '.' || c == ':' || c == '/' || c == '-'; }

struct Location {
  size_t line = 1;
  size_t column = 1;
};

// A written num_users, checked once the whole graph is known.
struct WrittenUsers {
  Node* node;
  size_t count;
  Location location;
};

class Parser {
 public:
  Parser(std::string_view text, const ParseOptions& options) : text_(text), options_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') line_starts_.push_back(i + 1);
  }

  Graph parse() {
    for (const auto& [name, tensor] : options_.parameters) graph_.set_parameter(name, tensor);
    expect_word("graph");
    expect("(");
    expect(")");
    expect(":");
    while (true) {
      skip_trivia();
      if (peek() == '%') {
        parse_node();
      } else if (next_word() == "return") {
        parse_return();
        break;
      } else {
        error_here("expected a node ('%name : ...') or 'return', found ", describe_next());
      }
    }
    if (next_word() == "Graph") parse_signature();
    if (next_word() == "Range") parse_ranges();
    skip_trivia();
    if (position_ < text_.size()) error_here("expected end of file after the return line, found ", describe_next());
    check_argument_symbols();
    for (const WrittenUsers& written : written_users_) {
      size_t actual = written.node->users().size();
      if (actual != written.count)
        error_at(written.location, "%", written.node->name(), " is written with num_users=", written.count,
                 " but has ", actual, actual == 1 ? " user" : " users");
    }
    return std::move(graph_);
  }

 private:
  // ---- characters, locations, messages ----

  Location location_of(size_t offset) const {
    auto line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    return {size_t(line - line_starts_.begin()) + 1, offset - *line + 1};
  }
  Location here() const { return location_of(position_); }
  // Where the next token starts (after spaces and comments).
  Location token_start() {
    skip_trivia();
    return here();
  }

  template <typename... Parts>
  [[noreturn]] void error_at(Location location, const Parts&... parts) const {
    fail(options_.file_name, ":", location.line, ":", location.column, ": ", parts...);
  }
  template <typename... Parts>
  [[noreturn]] void error_here(const Parts&... parts) const {
    error_at(here(), parts...);
  }

  char peek() const { return position_ < text_.size() ? text_[position_] : '\0'; }
  bool at_end() const { return position_ >= text_.size(); }

  void skip_trivia() {
    while (position_ < text_.size()) {
      char c = text_[position_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++position_;
      } else if (c == '#') {
        while (position_ < text_.size() && text_[position_] != '\n') ++position_;
      } else {
        break;
      }
    }
  }

  // The word at the current position (after trivia), without consuming it.
  std::string_view next_word() {
    skip_trivia();
    size_t end = position_;
    while (end < text_.size() && is_name_char(text_[end])) ++end;
    return text_.substr(position_, end - position_);
  }

  // "'word'", "'c'" or "end of file", for "expected X, found Y".
  std::string describe_next() {
    skip_trivia();
    if (at_end()) return "end of file";
    std::string_view word = next_word();
    if (!word.empty()) return "'" + excerpt(word, 40) + "'";
    return "'" + printable(std::string_view(&text_[position_], 1)) + "'";
  }

  bool try_consume(std::string_view token) {
    skip_trivia();
    if (text_.substr(position_, token.size()) != token) return false;
    position_ += token.size();
    return true;
  }

  void expect(std::string_view token) {
    if (!try_consume(token)) error_here("expected '", token, "', found ", describe_next());
  }

  void expect_word(std::string_view word) {
    if (next_word() != word) error_here("expected '", word, "', found ", describe_next());
    position_ += word.size();
  }

  std::string read_name(std::string_view what) {
    std::string_view word = next_word();
    if (word.empty()) error_here("expected ", what, ", found ", describe_next());
    if (word.size() > kMaxNameLength)
      error_here("a name longer than ", kMaxNameLength, " characters: '", excerpt(word, 40), "'");
    position_ += word.size();
    return std::string(word);
  }

  // A quoted string ("..." or '...') with backslash escapes.
  std::string parse_string() {
    Location start = here();
    char quote = text_[position_++];
    std::string value;
    while (true) {
      if (at_end() || peek() == '\n') error_at(start, "unterminated string");
      char c = text_[position_++];
      if (c == quote) return value;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (at_end()) error_at(start, "unterminated string");
      char escaped = text_[position_++];
      switch (escaped) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'x': {
          unsigned code = 0;
          auto [end, error] = std::from_chars(text_.data() + position_,
                                              text_.data() + std::min(position_ + 2, text_.size()), code, 16);
          if (error != std::errc() || end != text_.data() + position_ + 2)
            error_at(location_of(position_ - 2), "bad escape in string: expected two hex digits after \\x");
          position_ += 2;
          value += char(code);
          break;
        }
        default: value += escaped;  // \" \\ \'
      }
    }
  }

  // Text up to the next separator outside parentheses (',' and the given closers), trimmed.
  std::string_view scan_extent(std::string_view closers) {
    skip_trivia();
    size_t start = position_;
    int depth = 0;
    while (position_ < text_.size()) {
      char c = text_[position_];
      if (c == '\n' || c == '\r' || c == '#') break;
      if (depth == 0 && (c == ',' || closers.find(c) != std::string_view::npos)) break;
      if (c == '(') ++depth;
      if (c == ')') --depth;
      ++position_;
    }
    std::string_view extent = text_.substr(start, position_ - start);
    while (!extent.empty() && (extent.back() == ' ' || extent.back() == '\t')) extent.remove_suffix(1);
    return extent;
  }

  // ---- types ----

  SymInt parse_dim(std::string_view closers, std::string_view what) {
    Location start = token_start();
    std::string_view extent = scan_extent(closers);
    if (extent.empty()) error_at(start, "expected ", what, ", found ", describe_next());
    try {
      return parse_sym_int(extent);
    } catch (const SymbolicError& error) {
      Location at = start;
      if (error.column()) at.column += *error.column() - 1;
      error_at(at, "bad ", what, " '", excerpt(extent), "': ", error.what());
    }
  }

  SymShape parse_dims(char close, std::string_view what) {
    SymShape dims;
    std::string closer(1, close);
    while (!try_consume(closer)) {
      if (!dims.empty()) {
        if (!try_consume(",")) error_here("expected ',' or '", closer, "', found ", describe_next());
      }
      dims.push_back(parse_dim(closer, what));
    }
    return dims;
  }

  struct WrittenType {
    NodeMeta meta;
    std::vector<bool> strides_written;  // per value
    Location location;
  };

  TensorMeta parse_tensor_type(bool& strides_written) {
    Location start = token_start();
    std::string word(next_word());
    std::optional<DType> dtype = parse_dtype(word);
    if (!dtype || dtype_name(*dtype) != word)
      error_at(start, "expected a dtype (f32, f16, bf16, f64, i64, i32, i16, i8, u8, u16, u32, u64, bool), found ", describe_next());
    position_ += word.size();
    TensorMeta meta;
    meta.dtype = *dtype;
    if (peek() != '[') error_here("expected '[' after the dtype, found ", describe_next());
    ++position_;
    meta.shape = parse_dims(']', "dimension");
    strides_written = peek() == '{';
    if (strides_written) {
      ++position_;
      meta.strides = parse_dims('}', "stride");
      if (meta.strides.size() != meta.shape.size())
        error_at(start, "type ", format_tensor_type(meta), " has ", meta.strides.size(), " strides for ",
                 meta.shape.size(), " dimensions");
    } else {
      try {
        meta.strides = contiguous_strides(meta.shape);
      } catch (const SymbolicError& error) {  // sizes whose product no int64 holds
        error_at(start, "type ", format_tensor_type(meta), " has no contiguous strides: ", error.what());
      }
    }
    if (peek() == '@') {
      ++position_;
      Location device_start = here();
      size_t end = position_;
      while (end < text_.size() && is_target_char(text_[end])) ++end;
      std::string_view device = text_.substr(position_, end - position_);
      position_ = end;
      try {
        meta.device = parse_device(device);
      } catch (const Error& error) {
        error_at(device_start, error.what());
      }
    }
    return meta;
  }

  WrittenType parse_type() {
    WrittenType type;
    type.location = token_start();
    bool strides_written = false;
    if (try_consume("(")) {
      type.meta.is_tuple = true;
      while (!try_consume(")")) {
        if (!type.meta.values.empty() && !try_consume(","))
          error_here("expected ',' or ')' in the tuple type, found ", describe_next());
        if (try_consume(")")) break;  // trailing comma
        type.meta.values.push_back(parse_tensor_type(strides_written));
        type.strides_written.push_back(strides_written);
      }
    } else {
      type.meta.values.push_back(parse_tensor_type(strides_written));
      type.strides_written.push_back(strides_written);
    }
    return type;
  }

  // ---- arguments ----

  Node* node_reference() {
    Location start = here();
    ++position_;  // '%'
    std::string name = read_name("a node name after '%'");
    Node* node = graph_.find(name);
    if (!node) error_at(start, "%", name, " used before it is defined");
    return node;
  }

  Argument parse_scalar(std::string_view closers) {
    Location start = token_start();
    std::string_view text = scan_extent(closers);
    if (text.empty()) error_at(start, "expected an argument, found ", describe_next());
    if (text == "None") return Argument();
    if (text == "True") return Argument(true);
    if (text == "False") return Argument(false);

    std::string_view digits = text.substr(text[0] == '-' ? 1 : 0);
    bool numeric = !digits.empty() && digits[0] >= '0' && digits[0] <= '9';
    if (numeric && digits.find_first_not_of("0123456789") == std::string_view::npos) {
      int64_t value = 0;
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error != std::errc() || end != text.data() + text.size())
        error_at(start, "integer ", excerpt(text), " is out of range");
      return Argument(value);
    }
    if ((numeric && digits.find_first_not_of("0123456789.eE+-") == std::string_view::npos) || digits == "inf" ||
        text == "nan") {
      double value = 0;
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error != std::errc() || end != text.data() + text.size()) error_at(start, "bad number '", excerpt(text), "'");
      return Argument(value);
    }
    if (std::optional<DType> dtype = parse_dtype(text); dtype && dtype_name(*dtype) == text) return Argument(*dtype);
    if (text == "cpu" || text.starts_with("cuda")) {
      try {
        return Argument(parse_device(text));
      } catch (const Error& error) {
        error_at(start, error.what());
      }
    }
    if (std::all_of(text.begin(), text.end(), is_name_char) && graph_.find(text))
      error_at(start, "'", text, "' reads as a symbol; write %", text, " to use node %", text);
    try {
      SymInt value = parse_sym_int(text);
      if (!value.is_constant()) symbolic_arguments_.push_back({value, start});
      return Argument(value);
    } catch (const SymbolicError& error) {
      Location at = start;
      if (error.column()) at.column += *error.column() - 1;
      error_at(at, "expected an argument, found '", excerpt(text), "' (", error.what(), ")");
    }
  }

  // `bare_nodes`: a plain name is a node reference (the return line).
  Argument parse_argument(std::string_view closers, bool bare_nodes = false) {
    skip_trivia();
    char c = peek();
    if (c == '%') return Argument(node_reference());
    if (c == '"' || c == '\'') return Argument(parse_string());
    if (c == '[') {
      if (++list_depth_ > kMaxListDepth) error_here("lists nested deeper than ", kMaxListDepth, " levels");
      ++position_;
      std::vector<Argument> items;
      while (!try_consume("]")) {
        if (!items.empty() && !try_consume(",")) error_here("expected ',' or ']', found ", describe_next());
        items.push_back(parse_argument("]", bare_nodes));
      }
      --list_depth_;
      return Argument(std::move(items));
    }
    if (bare_nodes && is_name_char(c)) {
      std::string_view word = next_word();
      if (word != "None" && word != "True" && word != "False") {
        Node* node = graph_.find(word);
        if (!node) error_here("return value '", word, "' is not a defined node");
        position_ += word.size();
        return Argument(node);
      }
    }
    return parse_scalar(closers);
  }

  std::vector<Argument> parse_tuple(bool bare_nodes = false) {
    expect("(");
    std::vector<Argument> items;
    while (!try_consume(")")) {
      if (!items.empty()) {
        if (!try_consume(",")) error_here("expected ',' or ')', found ", describe_next());
        if (try_consume(")")) break;  // trailing comma: (a,)
      }
      items.push_back(parse_argument(")", bare_nodes));
    }
    return items;
  }

  Kwargs parse_kwargs() {
    expect("{");
    Kwargs kwargs;
    while (!try_consume("}")) {
      if (!kwargs.empty()) {
        if (!try_consume(",")) error_here("expected ',' or '}', found ", describe_next());
        if (try_consume("}")) break;
      }
      Location key_location = token_start();
      std::string key = read_name("a keyword argument name");
      for (const auto& [existing, value] : kwargs)
        if (existing == key) error_at(key_location, "keyword argument '", key, "' is given twice");
      expect(":");
      kwargs.emplace_back(key, parse_argument("}"));
    }
    return kwargs;
  }

  // ---- nodes ----

  std::string parse_target() {
    skip_trivia();
    if (peek() == '"' || peek() == '\'') return parse_string();
    size_t end = position_;
    while (end < text_.size() && is_target_char(text_[end])) ++end;
    if (end == position_) error_here("expected a target, found ", describe_next());
    std::string target(text_.substr(position_, end - position_));
    position_ = end;
    return target;
  }

  void check_written_type(const Node& node, const std::optional<WrittenType>& written, const std::string& origin) {
    if (!written) return;
    std::string written_text = format_node_type(written->meta);
    std::string actual_text = format_node_type(node.meta);
    if (written_text != actual_text)
      error_at(written->location, "type of %", node.name(), " is written ", written_text, " but ", origin, " ",
               actual_text);
  }

  void parse_node() {
    Location start = here();
    ++position_;  // '%'
    std::string name = read_name("a node name after '%'");
    if (auto previous = defined_at_.find(name); previous != defined_at_.end())
      error_at(start, "duplicate name %", name, " (first defined at line ", previous->second, ")");

    std::optional<WrittenType> type;
    std::optional<std::pair<size_t, Location>> num_users;
    if (try_consume(":")) {
      skip_trivia();
      if (peek() != '[' && peek() != '=') type = parse_type();
      skip_trivia();
      if (peek() == '[') {
        Location users_location = here();
        ++position_;
        expect_word("num_users");
        expect("=");
        Location count_location = token_start();
        std::string_view count_text = next_word();
        size_t count = 0;
        auto [end, error] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
        if (count_text.empty() || error != std::errc() || end != count_text.data() + count_text.size())
          error_at(count_location, "expected a number of users, found ", describe_next());
        position_ += count_text.size();
        expect("]");
        num_users.emplace(count, users_location);
      }
    }
    expect("=");
    Location kind_location = token_start();
    std::string kind = std::string(next_word());
    if (kind != "placeholder" && kind != "get_attr" && kind != "call_function")
      error_at(kind_location, "expected placeholder, get_attr or call_function, found ", describe_next());
    position_ += kind.size();
    expect("[");
    expect_word("target");
    expect("=");
    Location target_location = token_start();
    std::string target = parse_target();
    expect("]");

    Node* node = nullptr;
    if (kind == "placeholder") {
      if (!type) error_at(start, "placeholder %", name, " needs a type, e.g. f32[2, 3]");
      if (type->meta.is_tuple) error_at(type->location, "placeholder %", name, " cannot have a tuple type");
      node = graph_.create_node(OpKind::placeholder, target, {}, {}, name, type->meta);
    } else if (kind == "get_attr") {
      if (!graph_.parameter(target)) error_at(target_location, options_.missing_parameter_message(target));
      node = graph_.create_get_attr(target, name);
      check_written_type(*node, type, "the parameter '" + target + "' is");
    } else {
      node = parse_call(name, target, start, target_location);
      check_written_type(*node, type, "infers");
      for (size_t i = 0; type && i < node->meta.values.size(); ++i)
        if (type->strides_written[i]) node->meta.values[i].strides = type->meta.values[i].strides;
    }
    node->source.file = options_.file_name;
    node->source.line = int(start.line);
    defined_at_[name] = start.line;
    if (num_users) written_users_.push_back({node, num_users->first, num_users->second});
  }

  Node* parse_call(const std::string& name, const std::string& target, Location start, Location target_location) {
    expect("(");
    expect_word("args");
    expect("=");
    std::vector<Argument> args = parse_tuple();
    expect(",");
    expect_word("kwargs");
    expect("=");
    Kwargs kwargs = parse_kwargs();
    expect(")");
    if (!OpRegistry::global().find(target)) {
      try {
        OpRegistry::global().get(target);  // throws "unknown op 'foo'" with a suggestion
      } catch (const Error& error) {
        error_at(target_location, error.what());
      }
      error_at(target_location, "unknown op '", target, "'");
    }
    try {
      return graph_.create_call(target, std::move(args), std::move(kwargs), name);
    } catch (const Error& error) {
      error_at(start, error.what());
    }
  }

  void parse_return() {
    Location start = here();
    position_ += std::string_view("return").size();
    std::vector<Argument> values = parse_tuple(/*bare_nodes=*/true);
    Node* output = nullptr;
    try {
      output = graph_.create_output(std::move(values));
    } catch (const Error& error) {
      error_at(start, error.what());
    }
    output->source.file = options_.file_name;
    output->source.line = int(start.line);
  }

  // ---- the graph signature (ir/printer.h) ----

  // Whether "target =" follows on this line (a node named "target" may start the next spec).
  bool target_clause_follows() const {
    size_t at = position_;
    while (at < text_.size() && (text_[at] == ' ' || text_[at] == '\t')) ++at;
    if (text_.substr(at, 6) != "target") return false;
    at += 6;
    while (at < text_.size() && (text_[at] == ' ' || text_[at] == '\t')) ++at;
    return at < text_.size() && text_[at] == '=';
  }

  void parse_signature() {
    Location block = here();
    expect_word("Graph");
    expect_word("signature");
    expect(":");
    SignatureBuilder builder(graph_);
    while (true) {
      Location start = token_start();
      if (at_end() || next_word() == "Range") break;
      bool percent = try_consume("%");
      std::string name = read_name(percent ? "a node name after '%'" : "a spec ('name: KIND'), or end of file");
      expect(":");
      Location kind_location = token_start();
      std::string kind = read_name("a kind (USER_INPUT, PARAMETER, BUFFER, CONSTANT_TENSOR, USER_OUTPUT, ...)");
      std::string target;
      if (target_clause_follows()) {
        expect_word("target");
        expect("=");
        target = parse_target();
      }
      std::string problem;
      if (std::optional<InputKind> input = parse_input_kind(kind)) {
        problem = builder.add_input(name, *input, target);
      } else if (std::optional<OutputKind> output = parse_output_kind(kind)) {
        problem = builder.add_output(name, OutputSpec{*output, target});
      } else {
        error_at(kind_location, "unknown signature kind '", kind,
                 "' (USER_INPUT, PARAMETER, BUFFER, CONSTANT_TENSOR; USER_OUTPUT, LOSS_OUTPUT, USER_INPUT_MUTATION, "
                 "PARAMETER_MUTATION, BUFFER_MUTATION)");
      }
      if (!problem.empty()) error_at(start, "graph signature: ", problem);
    }
    std::string problem = builder.finish();
    if (!problem.empty()) error_at(block, "graph signature: ", problem);
  }

  // "Range constraints: {s0: VR[1, 1024], s1: VR[2, int_oo]}" (ir/printer.h)
  void parse_ranges() {
    expect_word("Range");
    expect_word("constraints");
    expect(":");
    expect("{");
    if (try_consume("}")) return;
    do {
      Location start = token_start();
      std::string symbol = read_name("a symbol");
      expect(":");
      expect_word("VR");
      expect("[");
      int64_t min = read_bound("the lowest value");
      expect(",");
      std::optional<int64_t> max;
      if (next_word() == "int_oo") expect_word("int_oo");
      else max = read_bound("the highest value or int_oo");
      expect("]");
      if (max && *max < min) error_at(start, "the range of ", symbol, " is empty: VR[", min, ", ", *max, "]");
      if (graph_.signature().symbol_ranges().count(symbol)) error_at(start, "the range of ", symbol, " is given twice");
      graph_.signature().set_symbol_range(symbol, SymbolRange{min, max});
    } while (try_consume(","));
    expect("}");
  }

  int64_t read_bound(std::string_view what) {
    Location start = token_start();
    bool negative = try_consume("-");
    std::string word = read_name(what);
    int64_t value = 0;
    auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (error != std::errc() || end != word.data() + word.size()) error_at(start, "expected ", what, ", found '", word, "'");
    return negative ? -value : value;
  }

  static constexpr int kMaxListDepth = 64;  // bounds the recursion on hostile input
  static constexpr size_t kMaxNameLength = kMaxTextNameLength;

  std::string_view text_;
  const ParseOptions& options_;
  std::vector<size_t> line_starts_;
  size_t position_ = 0;
  int list_depth_ = 0;
  Graph graph_;
  std::map<std::string, size_t, std::less<>> defined_at_;
  std::vector<WrittenUsers> written_users_;
  // Symbolic arguments as written (a size expression such as s0 * 4), where they start.
  struct SymbolicArgument {
    SymInt value;
    Location location;
  };
  std::vector<SymbolicArgument> symbolic_arguments_;

  // A symbol gets its value when the graph runs from the input dims that are exactly that symbol
  // (ir/interpreter.h binds them so); a symbol no input dim is can never be evaluated.
  void check_argument_symbols() {
    std::set<std::string> bound;
    for (Node* input : graph_.placeholders())
      for (const SymInt& dim : input->value().shape)
        if (dim.is_symbol()) bound.insert(dim.free_symbols().at(0));
    for (const SymbolicArgument& argument : symbolic_arguments_)
      for (const std::string& symbol : argument.value.free_symbols())
        if (!bound.count(symbol))
          error_at(argument.location, "symbol '", symbol, "' in ", argument.value.to_string(),
                   " is not the size of any input dim, so it has no value when the graph runs");
  }
};

}  // namespace

bool is_text_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxTextNameLength && std::all_of(name.begin(), name.end(), is_name_char);
}

Graph parse_graph(std::string_view text, const ParseOptions& options) { return Parser(text, options).parse(); }

Graph parse_graph(std::string_view text, const std::string& file_name) {
  ParseOptions options;
  options.file_name = file_name;
  return parse_graph(text, options);
}

Graph parse_graph(std::string_view text, const std::string& file_name,
                  const std::map<std::string, Tensor, std::less<>>& parameters) {
  ParseOptions options;
  options.file_name = file_name;
  options.parameters = parameters;
  return parse_graph(text, options);
}

}  // namespace kiln::ir
