// The printing the C++ and CUDA backends share. See codegen/c_like/c_printer.h.
#include "codegen/c_like/c_printer.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "kiln/error.h"

namespace kiln::codegen {

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

CDialect cpp_dialect() {
  return {"uint16_t", "uint16_t", "__builtin_inff()", "__builtin_nanf(\"\")", "__builtin_inf()", "__builtin_nan(\"\")"};
}

std::string int_literal(int64_t value) {
  if (value == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  return std::to_string(value) + "LL";
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

bool is_reserved_c_word(const std::string& name) {
  static const std::set<std::string> words = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "decltype", "default", "delete", "do", "double", "else", "enum", "explicit",
      "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
      "namespace", "new", "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public",
      "register", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template", "this",
      "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using", "virtual", "void",
      "volatile", "while", "xor", "int64_t", "int32_t", "int16_t", "int8_t", "uint64_t", "uint32_t",
      "uint16_t", "uint8_t", "size_t", "main"};
  return words.count(name) > 0;
}

std::string origins_text(const std::vector<std::string>& origins) {
  std::string text;
  std::set<std::string> seen;
  for (const std::string& o : origins) {
    if (seen.insert(o).second) text += (text.empty() ? "" : ", ") + o;
  }
  return text;
}

CPrinter::CPrinter(const ScheduledProgram& scheduled, CDialect dialect)
    : s_(scheduled), p_(scheduled.program), dialect_(std::move(dialect)),
      registers_(scheduled.register_buffers.begin(), scheduled.register_buffers.end()) {
  for (const std::string& symbol : p_.symbols) symbol_names_[symbol] = SymInt::symbol(symbol_variable(symbol));
}

std::string CPrinter::ctype(DType dtype) const {
  switch (dtype) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f16: return dialect_.f16_storage;
    case DType::bf16: return dialect_.bf16_storage;
    case DType::i64: return "int64_t";
    case DType::i32: return "int32_t";
    case DType::i16: return "int16_t";
    case DType::i8: return "int8_t";
    case DType::u8: return "uint8_t";
    case DType::u16: return "uint16_t";
    case DType::u32: return "uint32_t";
    case DType::u64: return "uint64_t";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::string CPrinter::literal(double float_value, int64_t int_value, DType dtype) const {
  if (dtype == DType::f32 || dtype == DType::f64) {
    bool single = dtype == DType::f32;
    if (std::isnan(float_value)) return single ? dialect_.f32_nan : dialect_.f64_nan;
    if (std::isinf(float_value)) {
      const std::string& inf = single ? dialect_.f32_infinity : dialect_.f64_infinity;
      return float_value < 0 ? "(-" + inf + ")" : inf;
    }
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", float_value);
    std::string s = text;
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return single ? "float(" + s + ")" : s;
  }
  if (dtype == DType::boolean) return int_value ? "true" : "false";
  KILN_CHECK(dtype != DType::f16 && dtype != DType::bf16, "a half-precision constant reached the C emitter");
  return ctype(dtype) + "(" + int_literal(int_value) + ")";
}

std::string CPrinter::lowest(DType dtype) const {
  switch (dtype) {
    case DType::f32: return "(-" + dialect_.f32_infinity + ")";
    case DType::f64: return "(-" + dialect_.f64_infinity + ")";
    case DType::i64: return int_literal(std::numeric_limits<int64_t>::min());
    case DType::i32: return "int32_t(-2147483647 - 1)";
    case DType::i16: return "int16_t(-32768)";
    case DType::i8: return "int8_t(-128)";
    case DType::u8: return "uint8_t(0)";
    case DType::u16: return "uint16_t(0)";
    case DType::u32: return "uint32_t(0)";
    case DType::u64: return "uint64_t(0)";
    case DType::boolean: return "false";
    default: break;
  }
  KILN_CHECK(false, "no lowest value for this dtype");
  return "";
}

std::string CPrinter::highest(DType dtype) const {
  switch (dtype) {
    case DType::f32: return dialect_.f32_infinity;
    case DType::f64: return dialect_.f64_infinity;
    case DType::i64: return "int64_t(9223372036854775807LL)";
    case DType::i32: return "int32_t(2147483647)";
    case DType::i16: return "int16_t(32767)";
    case DType::i8: return "int8_t(127)";
    case DType::u8: return "uint8_t(255)";
    case DType::u16: return "uint16_t(65535)";
    case DType::u32: return "uint32_t(4294967295U)";
    case DType::u64: return "uint64_t(18446744073709551615ULL)";
    case DType::boolean: return "true";
    default: break;
  }
  KILN_CHECK(false, "no highest value for this dtype");
  return "";
}

std::string CPrinter::convert(const std::string& value, DType from, DType to) const {
  if (from == to) return value;
  if (from == DType::f16) return convert("kiln_f16_to_f32(" + value + ")", DType::f32, to);
  if (from == DType::bf16) return convert("kiln_bf16_to_f32(" + value + ")", DType::f32, to);
  if (to == DType::f16) return "kiln_f32_to_f16(" + convert(value, from, DType::f32) + ")";
  if (to == DType::bf16) return "kiln_f32_to_bf16(" + convert(value, from, DType::f32) + ")";
  if (to == DType::boolean) return "bool((" + value + ") != 0)";
  // Float to integer: the interpreter's store rule (truncate, NaN to 0, saturate to int64, then
  // wrap to the narrower type), never the undefined behaviour of a plain cast.
  if ((from == DType::f32 || from == DType::f64) && !is_floating(to)) {
    if (to == DType::u64) return "kiln_saturate_to_u64(double(" + value + "))";  // holds values past 2^63
    return ctype(to) + "(kiln_saturate_to_i64(" + value + "))";
  }
  return ctype(to) + "(" + value + ")";
}

std::string CPrinter::symbol_variable(const std::string& symbol) { return "s_" + symbol; }

std::string CPrinter::index_text(const SymInt& value) const {
  std::string text = value.substitute(symbol_names_).to_cpp();
  text = replace_all(text, "std::max<int64_t>", "kiln_imax");
  return replace_all(text, "std::min<int64_t>", "kiln_imin");
}

Expr CPrinter::named_value(const std::string& name, DType dtype) {
  int id = kFirstNamedValue - int(named_values_.size());
  named_values_[id] = name;
  return load(id, dtype, 0);
}

std::string_view CPrinter::op_spelling(LoopOp op) const {
  const LoopOpInfo& info = loop_op_info(op);
  return dialect_.cuda && !info.cuda_spelling.empty() ? info.cuda_spelling : info.c_spelling;
}

std::string CPrinter::memory_load(const ExprNode& e) {
  std::string index = index_text(e.index);
  for (const IndirectTerm& term : e.indirect) {
    if (term.in_range) {
      index += " + int64_t(" + expr(term.value) + ") * (" + index_text(term.stride) + ")";
      continue;
    }
    index += " + kiln_wrap_index(int64_t(" + expr(term.value) + "), " + index_text(term.size) + ") * (" +
             index_text(term.stride) + ")";
  }
  // GCC 12 has no vector type for C++'s bool, so a loop that loads one stayed scalar; the same
  // byte read as unsigned char (Kiln stores bools as 0 or 1) vectorizes.
  if (e.dtype == DType::boolean && !dialect_.cuda) return "(((const unsigned char*)" + buf(e.buffer) + ")[" + index + "] != 0)";
  return buf(e.buffer) + "[" + index + "]";
}

namespace {

// Whether the condition of a where reads a tensor (a mask), as a where of the model does; the
// wheres that guard reads past a tensor's bounds (an inlined masked read, codegen/
// schedule_inlining.cpp) test only indices, also when hoisted into a named value (`named`).
bool reads_tensor(const Expr& e, const std::map<int, std::string>& named) {
  bool found = false;
  visit(e, [&](const ExprNode& node) { found = found || (node.kind == ExprKind::Load && !named.count(node.buffer)); });
  return found;
}

// Whether evaluating `e` where its value is not used is harmless: no read through an index
// tensor (it faults on an index out of range) and no integer division (it faults on zero). Its
// direct reads are in bounds at every point of the loop, or guarded by their own masks.
bool evaluable_anywhere(const Expr& e) {
  bool safe = true;
  visit(e, [&](const ExprNode& node) {
    if (node.kind == ExprKind::Load && !node.indirect.empty()) safe = false;
    if (node.kind == ExprKind::Binary && !is_floating(node.args[0]->dtype) &&
        (node.op == LoopOp::div || node.op == LoopOp::div_trunc || node.op == LoopOp::div_floor ||
         node.op == LoopOp::fmod || node.op == LoopOp::remainder))
      safe = false;
  });
  return safe;
}

}  // namespace

std::string CPrinter::expr(const Expr& e) {
  switch (e->kind) {
    case ExprKind::Constant: return literal(e->float_value, e->int_value, e->dtype);
    case ExprKind::Load: {
      if (auto named = named_values_.find(e->buffer); named != named_values_.end()) return named->second;
      if (registers_.count(e->buffer)) return reg(e->buffer);
      std::string value = memory_load(*e);
      if (e->mask) {
        std::string other = e->other ? expr(e->other) : literal(0, 0, e->dtype);
        value = "(" + expr(e->mask) + " ? " + value + " : " + other + ")";
      }
      return value;
    }
    case ExprKind::IndexValue: return ctype(e->dtype) + "(" + index_text(e->index) + ")";
    case ExprKind::Unary: return std::string(op_spelling(e->op)) + "(" + expr(e->args[0]) + ")";
    case ExprKind::Binary: {
      const std::string t = ctype(e->args[0]->dtype);
      return std::string(op_spelling(e->op)) + "(" + t + "(" + expr(e->args[0]) + "), " + t + "(" +
             expr(e->args[1]) + "))";
    }
    case ExprKind::Where:
      // A where on data evaluates both sides (kiln_select): GCC vectorizes that as a blend.
      if (!dialect_.cuda && reads_tensor(e->args[0], named_values_) && evaluable_anywhere(e->args[1]) && evaluable_anywhere(e->args[2])) {
        return "kiln_select<" + ctype(e->dtype) + ">(" + expr(e->args[0]) + ", " + expr(e->args[1]) + ", " +
               expr(e->args[2]) + ")";
      }
      return "(" + expr(e->args[0]) + " ? " + expr(e->args[1]) + " : " + expr(e->args[2]) + ")";
    case ExprKind::Cast: return convert(expr(e->args[0]), e->args[0]->dtype, e->dtype);
    case ExprKind::Random: {
      std::string call = std::string(e->normal ? "kiln_philox_normal" : "kiln_philox_uniform") + "(" +
                         std::to_string(uint64_t(e->seed)) + "ULL, " + std::to_string(uint64_t(e->offset)) +
                         "ULL, uint64_t(" + index_text(e->index) + "))";
      return convert(call, DType::f32, e->dtype);
    }
  }
  return "?";
}

}  // namespace kiln::codegen
