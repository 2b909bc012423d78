// The C++ backend's printer: a scheduled program to one C++ source implementing the
// compiled-artifact ABI. See codegen/cpp/cpp_emitter.h.
#include "codegen/cpp/cpp_emitter.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "codegen/cpp/prelude.h"
#include "codegen/index_analysis.h"
#include "runtime/compiled_abi.h"
#include "runtime/error.h"

namespace kiln::codegen {

namespace {

constexpr int kLanes = 16;  // reduction lanes: one AVX-512 register of f32, two of AVX2

std::string ctype(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f16:
    case DType::bf16: return "uint16_t";
    case DType::i64: return "int64_t";
    case DType::i32: return "int32_t";
    case DType::i8: return "int8_t";
    case DType::u8: return "uint8_t";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string cpp_text(const SymInt& value) {
  std::string text = value.to_cpp();
  text = replace_all(text, "std::max<int64_t>", "kiln_imax");
  return replace_all(text, "std::min<int64_t>", "kiln_imin");
}

std::string int_literal(int64_t value) {
  if (value == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  return std::to_string(value) + "LL";
}

std::string float_literal(double value, DType dtype) {
  bool single = dtype != DType::f64;
  if (std::isnan(value)) return single ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(value)) {
    std::string inf = single ? "__builtin_inff()" : "__builtin_inf()";
    return value < 0 ? "(-" + inf + ")" : inf;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  std::string s = text;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return single ? "float(" + s + ")" : s;
}

std::string literal(double float_value, int64_t int_value, DType dtype) {
  if (dtype == DType::f32 || dtype == DType::f64) return float_literal(float_value, dtype);
  if (dtype == DType::boolean) return int_value ? "true" : "false";
  KILN_CHECK(dtype != DType::f16 && dtype != DType::bf16, "a half-precision constant reached the C++ emitter");
  return ctype(dtype) + "(" + int_literal(int_value) + ")";
}

// value (a C expression of type `from`) converted to `to`, with the interpreter's rules.
std::string convert(const std::string& value, DType from, DType to) {
  if (from == to) return value;
  if (from == DType::f16) return convert("kiln_f16_to_f32(" + value + ")", DType::f32, to);
  if (from == DType::bf16) return convert("kiln_bf16_to_f32(" + value + ")", DType::f32, to);
  if (to == DType::f16) return "kiln_f32_to_f16(" + convert(value, from, DType::f32) + ")";
  if (to == DType::bf16) return "kiln_f32_to_bf16(" + convert(value, from, DType::f32) + ")";
  if (to == DType::boolean) return "bool((" + value + ") != 0)";
  // Float to integer: the interpreter's store rule (truncate, NaN to 0, saturate to int64, then
  // wrap to the narrower type), never the undefined behaviour of a plain cast.
  if ((from == DType::f32 || from == DType::f64) && !is_floating(to)) {
    return ctype(to) + "(kiln_saturate_to_i64(" + value + "))";
  }
  return ctype(to) + "(" + value + ")";
}

std::string lowest(DType dtype) {
  switch (dtype) {
    case DType::f32: return "(-__builtin_inff())";
    case DType::f64: return "(-__builtin_inf())";
    case DType::i64: return int_literal(std::numeric_limits<int64_t>::min());
    case DType::i32: return "int32_t(-2147483647 - 1)";
    case DType::i8: return "int8_t(-128)";
    case DType::u8: return "uint8_t(0)";
    case DType::boolean: return "false";
    default: break;
  }
  KILN_CHECK(false, "no lowest value for this dtype");
  return "";
}

std::string highest(DType dtype) {
  switch (dtype) {
    case DType::f32: return "__builtin_inff()";
    case DType::f64: return "__builtin_inf()";
    case DType::i64: return "int64_t(9223372036854775807LL)";
    case DType::i32: return "int32_t(2147483647)";
    case DType::i8: return "int8_t(127)";
    case DType::u8: return "uint8_t(255)";
    case DType::boolean: return "true";
    default: break;
  }
  KILN_CHECK(false, "no highest value for this dtype");
  return "";
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

class Writer {
 public:
  void line(const std::string& text) {
    for (int i = 0; i < indent_; ++i) out_ << "  ";
    out_ << text << "\n";
  }
  void open(const std::string& text) {
    line(text + " {");
    ++indent_;
  }
  void close(const std::string& suffix = "") {
    --indent_;
    line("}" + suffix);
  }
  void raw(std::string_view text) { out_ << text; }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_ = 0;
};

class Emitter {
 public:
  Emitter(const ScheduledProgram& scheduled, const CppEmitOptions& options)
      : s_(scheduled), p_(scheduled.program), options_(options),
        registers_(scheduled.register_buffers.begin(), scheduled.register_buffers.end()) {
    // Shape symbols become C++ variables under a reserved prefix, so a symbol named like
    // something the generated code declares (`batch`, `sym`, `N`) cannot collide with it.
    for (const std::string& symbol : p_.symbols) symbol_names_[symbol] = SymInt::symbol(symbol_variable(symbol));
  }

  static std::string symbol_variable(const std::string& symbol) { return "s_" + symbol; }
  // An index or size expression as C++, over the renamed symbols.
  std::string cpp(const SymInt& value) const { return cpp_text(value.substitute(symbol_names_)); }

  CppModule run() {
    w_.line("// Generated by Kiln for " + options_.title + ". Do not edit: recompile the model instead.");
    w_.raw(cpp_prelude());
    w_.raw("\n");
    w_.raw(cpp_ops_text());
    w_.raw("\n");
    emit_support();
    for (const Kernel& kernel : s_.kernels) emit_kernel(kernel);
    emit_bind();
    emit_sizes();
    emit_run();
    module_.source = w_.str();
    return std::move(module_);
  }

 private:
  // ------------------------------------------------------------ names and expressions

  std::string buf(int id) const { return "b" + std::to_string(id); }
  std::string reg(int id) const { return "v" + std::to_string(id); }

  std::string expr(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Constant: return literal(e->float_value, e->int_value, e->dtype);
      case ExprKind::Load: {
        if (auto named = named_values_.find(e->buffer); named != named_values_.end()) return named->second;
        if (registers_.count(e->buffer)) return reg(e->buffer);
        std::string index = cpp(e->index);
        for (const IndirectTerm& term : e->indirect) {
          index += " + kiln_wrap_index(int64_t(" + expr(term.value) + "), " + cpp(term.size) + ") * (" +
                   cpp(term.stride) + ")";
        }
        std::string value = buf(e->buffer) + "[" + index + "]";
        if (e->mask) {
          std::string other = e->other ? expr(e->other) : literal(0, 0, e->dtype);
          value = "(" + expr(e->mask) + " ? " + value + " : " + other + ")";
        }
        return value;
      }
      case ExprKind::IndexValue: return ctype(e->dtype) + "(" + cpp(e->index) + ")";
      case ExprKind::Unary: return "kop_" + e->op + "(" + expr(e->args[0]) + ")";
      case ExprKind::Binary: {
        const std::string t = ctype(e->args[0]->dtype);
        return "kop_" + e->op + "(" + t + "(" + expr(e->args[0]) + "), " + t + "(" + expr(e->args[1]) + "))";
      }
      case ExprKind::Where:
        return "(" + expr(e->args[0]) + " ? " + expr(e->args[1]) + " : " + expr(e->args[2]) + ")";
      case ExprKind::Cast: return convert(expr(e->args[0]), e->args[0]->dtype, e->dtype);
      case ExprKind::Random: {
        std::string call = std::string(e->normal ? "kiln_philox_normal" : "kiln_philox_uniform") + "(" +
                           std::to_string(uint64_t(e->seed)) + "ULL, " + std::to_string(uint64_t(e->offset)) +
                           "ULL, uint64_t(" + cpp(e->index) + "))";
        return convert(call, DType::f32, e->dtype);
      }
    }
    return "?";
  }

  // ------------------------------------------------------------ support

  void emit_support() {
    w_.line("extern \"C\" void omp_set_num_threads(int);");
    w_.line("static void kiln_message(char* out, int64_t capacity, const char* const* parts, const int64_t* ints, int n) {");
    w_.line("  int64_t at = 0;");
    w_.line("  for (int i = 0; i < n; ++i) {");
    w_.line("    char digits[24];");
    w_.line("    const char* text = parts[i];");
    w_.line("    if (text == nullptr) {");
    w_.line("      int64_t v = ints[i];");
    w_.line("      unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;");
    w_.line("      int k = 23;");
    w_.line("      digits[k] = 0;");
    w_.line("      do { digits[--k] = char('0' + u % 10); u /= 10; } while (u);");
    w_.line("      if (v < 0) digits[--k] = '-';");
    w_.line("      text = digits + k;");
    w_.line("    }");
    w_.line("    for (; *text && at + 1 < capacity; ++text) out[at++] = *text;");
    w_.line("  }");
    w_.line("  if (capacity > 0) out[at] = 0;");
    w_.line("}");
    w_.line("static const char* const kiln_dtype_names[] = {\"f32\", \"f16\", \"bf16\", \"f64\", \"i64\", \"i32\", \"i8\", \"u8\", \"bool\"};");
    w_.line("static const char* kiln_dtype_name(int32_t code) { return code >= 0 && code < 9 ? kiln_dtype_names[code] : \"(unknown dtype)\"; }");
    w_.line("#pragma omp declare reduction(kiln_max_f32 : float : omp_out = kred_max(omp_out, omp_in)) initializer(omp_priv = -__builtin_inff())");
    w_.line("#pragma omp declare reduction(kiln_min_f32 : float : omp_out = kred_min(omp_out, omp_in)) initializer(omp_priv = __builtin_inff())");
    w_.line("#pragma omp declare reduction(kiln_max_f64 : double : omp_out = kred_max(omp_out, omp_in)) initializer(omp_priv = -__builtin_inf())");
    w_.line("#pragma omp declare reduction(kiln_min_f64 : double : omp_out = kred_min(omp_out, omp_in)) initializer(omp_priv = __builtin_inf())");
    w_.line("extern \"C\" void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);");
    w_.line("extern \"C\" void cblas_dgemm(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*, int);");
    w_.line("// A row-major matrix with strides (rows, cols) as a CBLAS operand: 0 when it has none.");
    w_.line("static int kiln_blas_layout(int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols, int* trans, int* ld) {");
    w_.line("  if (col_stride == 1 || cols == 1) {");
    w_.line("    *trans = 111; *ld = int(rows <= 1 ? (cols > 1 ? cols : 1) : row_stride);");
    w_.line("    return rows <= 1 || row_stride >= cols;");
    w_.line("  }");
    w_.line("  if (row_stride == 1 || rows == 1) {");
    w_.line("    *trans = 112; *ld = int(cols <= 1 ? (rows > 1 ? rows : 1) : col_stride);");
    w_.line("    return cols <= 1 || col_stride >= rows;");
    w_.line("  }");
    w_.line("  return 0;");
    w_.line("}");
    w_.line("");
  }

  void declare_symbols() {
    w_.line("(void)sym;");
    for (size_t i = 0; i < p_.symbols.size(); ++i) {
      std::string name = symbol_variable(p_.symbols[i]);
      w_.line("const int64_t " + name + " = sym[" + std::to_string(i) + "];");
      w_.line("(void)" + name + ";");
    }
  }

  void declare_buffers(const std::set<int>& ids) {
    for (int id : ids) {
      if (registers_.count(id)) continue;
      std::string t = ctype(p_.buffer(id).dtype);
      w_.line(t + "* __restrict " + buf(id) + " = (" + t + "*)bufs[" + std::to_string(id) + "];  // " +
              p_.buffer(id).name);
    }
  }

  std::set<int> kernel_buffers(const Kernel& kernel) {
    std::set<int> ids;
    for (const KernelStep& step : kernel.steps) {
      for (int b : loaded_buffers(step.body)) ids.insert(b);
      for (int b : step.outputs) ids.insert(b);
    }
    if (kernel.extern_node >= 0) {
      const ExternCall& call = p_.nodes[size_t(kernel.extern_node)].extern_call;
      for (const StridedView& v : call.inputs) ids.insert(v.buffer);
      for (const StridedView& v : call.outputs) ids.insert(v.buffer);
    }
    return ids;
  }

  // "#pragma omp parallel for ..." when the work can be large, else nothing.
  std::string parallel_pragma(const SymInt& work, const std::string& clauses) {
    std::optional<int64_t> known = work.maybe_constant();
    if (known && *known < options_.parallel_threshold) return "";
    std::string pragma = "#pragma omp parallel for" + clauses + " schedule(static)";
    if (!known) pragma += " if((" + cpp(work) + ") >= " + std::to_string(options_.parallel_threshold) + ")";
    return pragma;
  }

  // ------------------------------------------------------------ steps

  // Stores (or keeps in a register) every output of a pointwise step, from value `v` of `from`.
  void store_outputs(const KernelStep& step, const std::string& value, DType from) {
    for (int b : step.outputs) {
      DType to = p_.buffer(b).dtype;
      if (registers_.count(b)) {
        w_.line("const " + ctype(to) + " " + reg(b) + " = " + convert(value, from, to) + ";");
      } else {
        w_.line(buf(b) + "[" + cpp(step.store_index) + "] = " + convert(value, from, to) + ";");
      }
    }
  }

  void emit_point_step(const KernelStep& step, int number) {
    std::string v = "t" + std::to_string(number);
    w_.line("const " + ctype(step.body->dtype) + " " + v + " = " + expr(step.body) + ";");
    store_outputs(step, v, step.body->dtype);
  }

  // A loop nest over the inner (row) ranges; `body` writes the innermost statements.
  void inner_loops(const SymShape& inner, size_t from, const std::function<void()>& body) {
    if (from == inner.size()) {
      body();
      return;
    }
    std::string var = reduction_var(from).to_string();
    if (from + 1 == inner.size()) w_.line("#pragma omp simd");
    w_.open("for (int64_t " + var + " = 0; " + var + " < " + cpp(inner[from]) + "; ++" + var + ")");
    inner_loops(inner, from + 1, body);
    w_.close();
  }

  void emit_row_step(const Kernel& kernel, const KernelStep& step, int number) {
    w_.line("// row: " + p_.nodes[size_t(step.node)].name);
    // Values the row loop would compute again for every element are computed once before it,
    // and a division by one is a product with its reciprocal (as ATen's softmax does).
    std::vector<std::pair<std::string, Expr>> hoisted;
    Expr body = hoist_row_invariants(step.body, kernel.inner.size(), hoisted);
    for (const auto& [name, value] : hoisted) {
      w_.line("const " + ctype(value->dtype) + " " + name + " = " + expr(value) + ";");
    }
    inner_loops(kernel.inner, 0, [&] {
      std::string v = "t" + std::to_string(number);
      w_.line("const " + ctype(body->dtype) + " " + v + " = " + expr(body) + ";");
      store_outputs(step, v, body->dtype);
    });
  }

  bool depends_on_row(const Expr& e, size_t inner_rank) {
    bool depends = false;
    map_indices(e, [&](const SymInt& index) {
      for (size_t k = 0; k < inner_rank && !depends; ++k) depends = codegen::depends_on(index, reduction_var(k));
      return index;
    });
    return depends;
  }

  // A value named `name` (a hoisted temporary), as an expression.
  Expr named_value(const std::string& name, DType dtype) {
    int id = kFirstNamedValue - int(named_values_.size());
    named_values_[id] = name;
    return load(id, dtype, 0);
  }

  Expr hoist_row_invariants(const Expr& e, size_t inner_rank, std::vector<std::pair<std::string, Expr>>& hoisted) {
    if (!e) return e;
    if (!depends_on_row(e, inner_rank)) {
      if (e->kind == ExprKind::Constant || e->kind == ExprKind::Load || e->kind == ExprKind::IndexValue) return e;
      std::string name = "h" + std::to_string(hoist_counter_++);
      hoisted.push_back({name, e});
      return named_value(name, e->dtype);
    }
    if (e->kind == ExprKind::Binary && e->op == "div" && is_floating(e->dtype) && !depends_on_row(e->args[1], inner_rank)) {
      std::string name = "h" + std::to_string(hoist_counter_++);
      hoisted.push_back({name, binary("div", constant(1, e->dtype), e->args[1])});
      return binary("mul", hoist_row_invariants(e->args[0], inner_rank, hoisted), named_value(name, e->dtype));
    }
    if (e->kind == ExprKind::Load) return e;  // masks and indirect terms stay with their load
    auto node = std::make_shared<ExprNode>(*e);
    for (Expr& arg : node->args) arg = hoist_row_invariants(arg, inner_rank, hoisted);
    return node;
  }

  void emit_reduce_step(const Kernel& kernel, const KernelStep& step, int number) {
    const DType at = accumulation_dtype(kernel, step);
    const std::string t = ctype(at);
    const std::string n = std::to_string(number);
    const std::string L = std::to_string(kLanes);
    const ReductionKind kind = step.reduction;
    const bool arg = kind == ReductionKind::ArgMax || kind == ReductionKind::ArgMin;
    const bool welford = kind == ReductionKind::Welford;
    w_.line("// reduce " + std::string(welford ? "welford" : arg ? "arg" : "") + ": " +
            p_.nodes[size_t(step.node)].name);
    std::string acc = "acc" + n, idx = "idx" + n, mean = "mean" + n, m2 = "m2" + n, cnt = "cnt" + n;
    std::string init;
    switch (kind) {
      case ReductionKind::Sum: init = literal(0, 0, at); break;
      case ReductionKind::Prod: init = literal(1, 1, at); break;
      case ReductionKind::Max:
      case ReductionKind::ArgMax: init = lowest(at); break;
      case ReductionKind::Min:
      case ReductionKind::ArgMin: init = highest(at); break;
      case ReductionKind::Welford: init = literal(0, 0, at); break;
    }
    const std::string L1 = std::to_string(kLanes + 1);
    if (welford) {
      // Lanes 0..L-1 see the same count in the main loop (one reciprocal per chunk, not one
      // division per element); lane L takes the tail.
      w_.line(t + " " + mean + "[" + L1 + "], " + m2 + "[" + L1 + "], " + cnt + "[" + L1 + "];");
      w_.line("for (int l = 0; l <= " + L + "; ++l) { " + mean + "[l] = 0; " + m2 + "[l] = 0; " + cnt + "[l] = 0; }");
      w_.line(t + " wn" + n + " = 0;");
    } else {
      w_.line(t + " " + acc + "[" + L + "];");
      w_.line("for (int l = 0; l < " + L + "; ++l) " + acc + "[l] = " + init + ";");
      if (arg) {
        w_.line("int64_t " + idx + "[" + L + "];");
        w_.line("for (int l = 0; l < " + L + "; ++l) " + idx + "[l] = -1;");
      }
    }
    std::vector<SymInt> rvars;
    for (size_t k = 0; k < kernel.inner.size(); ++k) rvars.push_back(reduction_var(k));
    std::string flat = cpp(flat_index(rvars, kernel.inner));
    auto combine = [&](const std::string& lane) {
      std::string v = "e" + n;
      w_.line("const " + t + " " + v + " = " + expr(step.body) + ";");
      switch (kind) {
        case ReductionKind::Sum: w_.line(acc + "[" + lane + "] = kop_add(" + acc + "[" + lane + "], " + v + ");"); break;
        case ReductionKind::Prod: w_.line(acc + "[" + lane + "] = kop_mul(" + acc + "[" + lane + "], " + v + ");"); break;
        case ReductionKind::Max: w_.line(acc + "[" + lane + "] = kred_max(" + acc + "[" + lane + "], " + v + ");"); break;
        case ReductionKind::Min: w_.line(acc + "[" + lane + "] = kred_min(" + acc + "[" + lane + "], " + v + ");"); break;
        case ReductionKind::ArgMax:
        case ReductionKind::ArgMin: {
          std::string a = acc + "[" + lane + "]", i = idx + "[" + lane + "]";
          std::string better = kind == ReductionKind::ArgMax ? "(" + v + " > " + a + ")" : "(" + v + " < " + a + ")";
          w_.line("const bool take" + n + " = " + i + " < 0 || " + better + " || (" + v + " != " + v + " && " + a +
                  " == " + a + ");");
          w_.line(a + " = take" + n + " ? " + v + " : " + a + ";");
          w_.line(i + " = take" + n + " ? int64_t(" + flat + ") : " + i + ";");
          break;
        }
        case ReductionKind::Welford: {
          bool main_loop = lane == "l";
          std::string slot = main_loop ? lane : L;
          std::string me = mean + "[" + slot + "]", m = m2 + "[" + slot + "]", c = cnt + "[" + slot + "]";
          w_.line("const " + t + " d" + n + " = " + v + " - " + me + ";");
          if (main_loop) {
            w_.line(c + " = wn" + n + ";");
            w_.line(me + " += d" + n + " * winv" + n + ";");
          } else {
            w_.line(c + " += " + t + "(1);");
            w_.line(me + " += d" + n + " / " + c + ";");
          }
          w_.line(m + " += d" + n + " * (" + v + " - " + me + ");");
          break;
        }
      }
      if (step.stash_buffer >= 0) w_.line(buf(step.stash_buffer) + "[" + cpp(step.stash_index) + "] = " + v + ";");
    };
    if (kernel.inner.empty()) {
      w_.open("");
      combine("0");
      w_.close();
    } else {
      size_t last = kernel.inner.size() - 1;
      std::string rv = reduction_var(last).to_string();
      std::function<void(size_t)> nest = [&](size_t d) {
        if (d == last) {
          std::string rl = "rl" + n, rn = "rn" + n;
          w_.line("const int64_t " + rn + " = " + cpp(kernel.inner[last]) + ";");
          w_.line("int64_t " + rl + " = 0;");
          if (std::string op = split_reduction_operator(kernel, step); !op.empty()) {
            // A whole-tensor reduction: no outer loop to share out, so the threads split the row
            // and OpenMP combines their lanes.
            std::string chunks = "chunks" + n;
            w_.line("const int64_t " + chunks + " = " + rn + " / " + L + ";");
            w_.line("#pragma omp parallel for schedule(static) reduction(" + op + ":" + acc + "[:" + L + "]) if(" + rn +
                    " >= " + std::to_string(options_.parallel_threshold) + ")");
            w_.open("for (int64_t c = 0; c < " + chunks + "; ++c)");
            w_.line("#pragma omp simd");
            w_.open("for (int l = 0; l < " + L + "; ++l)");
            w_.line("const int64_t " + rv + " = c * " + L + " + l;");
            combine("l");
            w_.close();
            w_.close();
            w_.line(rl + " = " + chunks + " * " + L + ";");
            w_.open("for (; " + rl + " < " + rn + "; ++" + rl + ")");
            w_.line("const int64_t " + rv + " = " + rl + ";");
            combine("0");
            w_.close();
            return;
          }
          w_.open("for (; " + rl + " + " + L + " <= " + rn + "; " + rl + " += " + L + ")");
          if (welford) {
            w_.line("wn" + n + " += " + t + "(1);");
            w_.line("const " + t + " winv" + n + " = " + t + "(1) / wn" + n + ";");
          }
          w_.line("#pragma omp simd");
          w_.open("for (int l = 0; l < " + L + "; ++l)");
          w_.line("const int64_t " + rv + " = " + rl + " + l;");
          combine("l");
          w_.close();
          w_.close();
          w_.open("for (; " + rl + " < " + rn + "; ++" + rl + ")");
          w_.line("const int64_t " + rv + " = " + rl + ";");
          combine("0");
          w_.close();
          return;
        }
        std::string var = reduction_var(d).to_string();
        w_.open("for (int64_t " + var + " = 0; " + var + " < " + cpp(kernel.inner[d]) + "; ++" + var + ")");
        nest(d + 1);
        w_.close();
      };
      w_.open("");
      nest(0);
      w_.close();
    }
    // Combine the lanes.
    std::string result = "res" + n;
    switch (kind) {
      case ReductionKind::Sum:
      case ReductionKind::Prod:
      case ReductionKind::Max:
      case ReductionKind::Min: {
        const char* op = kind == ReductionKind::Sum    ? "kop_add"
                         : kind == ReductionKind::Prod ? "kop_mul"
                         : kind == ReductionKind::Max  ? "kred_max"
                                                       : "kred_min";
        w_.line(t + " " + result + " = " + acc + "[0];");
        w_.line("for (int l = 1; l < " + L + "; ++l) " + result + " = " + op + "(" + result + ", " + acc + "[l]);");
        store_reduction(step, {result}, at);
        break;
      }
      case ReductionKind::ArgMax:
      case ReductionKind::ArgMin: {
        std::string bv = "bv" + n;
        w_.line(t + " " + bv + " = " + acc + "[0];");
        w_.line("int64_t " + result + " = " + idx + "[0];");
        std::string cmp = kind == ReductionKind::ArgMax ? ">" : "<";
        w_.open("for (int l = 1; l < " + L + "; ++l)");
        w_.line("if (" + idx + "[l] < 0) continue;");
        w_.line("const " + t + " c = " + acc + "[l];");
        w_.line("const bool c_nan = c != c, b_nan = " + bv + " != " + bv + ";");
        w_.line("const bool better = " + result + " < 0 || (c " + cmp + " " + bv + ") || (c_nan && !b_nan) || ((c == " +
                bv + " || (c_nan && b_nan)) && " + idx + "[l] < " + result + ");");
        w_.line("if (better) { " + bv + " = c; " + result + " = " + idx + "[l]; }");
        w_.close();
        w_.line("if (" + result + " < 0) " + result + " = 0;");
        store_reduction(step, {result}, DType::i64);
        break;
      }
      case ReductionKind::Welford: {
        std::string rm = "rm" + n, rq = "rq" + n, rc = "rc" + n;
        w_.line(t + " " + rm + " = 0, " + rq + " = 0, " + rc + " = 0;");
        w_.open("for (int l = 0; l <= " + L + "; ++l)");
        w_.line("if (" + cnt + "[l] == 0) continue;");
        w_.line("const " + t + " total = " + rc + " + " + cnt + "[l];");
        w_.line("const " + t + " delta = " + mean + "[l] - " + rm + ";");
        w_.line(rm + " += delta * " + cnt + "[l] / total;");
        w_.line(rq + " += " + m2 + "[l] + delta * delta * " + rc + " * " + cnt + "[l] / total;");
        w_.line(rc + " = total;");
        w_.close();
        store_reduction(step, {rm, rq}, at);
        break;
      }
    }
  }

  // Long f32 sums and Welford statistics accumulate in f64 lanes (the interpreter sums in
  // double; a 16M-element f32 sum would otherwise drift by ~1e-5 relative). Rows up to 16K
  // elements (softmax, layer_norm) keep f32 lanes: 1K additions per lane lose nothing visible.
  DType accumulation_dtype(const Kernel& kernel, const KernelStep& step) {
    std::optional<int64_t> row_length = numel(kernel.inner).maybe_constant();
    bool widen = step.body->dtype == DType::f32 &&
                 (step.reduction == ReductionKind::Sum || step.reduction == ReductionKind::Welford) &&
                 !(row_length && *row_length <= kLanes * 1024);
    return widen ? DType::f64 : step.body->dtype;
  }

  // The OpenMP reduction operator that lets a whole-tensor float reduction (no outer range, one
  // row dim) split its row across threads; empty when the step cannot split.
  std::string split_reduction_operator(const Kernel& kernel, const KernelStep& step) {
    if (!kernel.outer.empty() || kernel.inner.size() != 1 || step.stash_buffer >= 0) return "";
    const DType t = accumulation_dtype(kernel, step);
    if (t != DType::f32 && t != DType::f64) return "";
    switch (step.reduction) {
      case ReductionKind::Sum: return "+";
      case ReductionKind::Prod: return "*";
      case ReductionKind::Max: return t == DType::f32 ? "kiln_max_f32" : "kiln_max_f64";
      case ReductionKind::Min: return t == DType::f32 ? "kiln_min_f32" : "kiln_min_f64";
      default: return "";
    }
  }

  void store_reduction(const KernelStep& step, const std::vector<std::string>& values, DType from) {
    KILN_CHECK(values.size() == step.outputs.size(), "reduction outputs and values disagree");
    for (size_t i = 0; i < values.size(); ++i) {
      int b = step.outputs[i];
      DType to = p_.buffer(b).dtype;
      if (registers_.count(b)) {
        w_.line("const " + ctype(to) + " " + reg(b) + " = " + convert(values[i], from, to) + ";");
      } else {
        w_.line(buf(b) + "[" + cpp(step.store_index) + "] = " + convert(values[i], from, to) + ";");
      }
    }
  }

  // ------------------------------------------------------------ kernels

  void emit_kernel(const Kernel& kernel) {
    std::string origins;
    std::set<std::string> seen;
    for (const std::string& o : kernel.origins) {
      if (seen.insert(o).second) origins += (origins.empty() ? "" : ", ") + o;
    }
    w_.line("// " + kernel.name + ": " + origins);
    w_.open("static int32_t " + kernel.name + "(void* const* bufs, const int64_t* sym, const KilnRunArgs* args)");
    w_.line("(void)args;");
    declare_symbols();
    declare_buffers(kernel_buffers(kernel));
    switch (kernel.kind) {
      case KernelKind::Pointwise: emit_pointwise_kernel(kernel); break;
      case KernelKind::Reduction: emit_reduction_kernel(kernel); break;
      case KernelKind::Extern: emit_extern_kernel(kernel); break;
    }
    w_.line("return 0;");
    w_.close();
    w_.line("");
  }

  void outer_loops(const SymShape& outer, size_t from, const std::function<void()>& body, bool simd_innermost) {
    if (from == outer.size()) {
      body();
      return;
    }
    std::string var = loop_var(from).to_string();
    if (simd_innermost && from + 1 == outer.size() && from > 0) w_.line("#pragma omp simd");
    w_.open("for (int64_t " + var + " = 0; " + var + " < " + cpp(outer[from]) + "; ++" + var + ")");
    outer_loops(outer, from + 1, body, simd_innermost);
    w_.close();
  }

  void emit_pointwise_kernel(const Kernel& kernel) {
    SymInt work = numel(kernel.outer);
    const size_t rank = kernel.outer.size();
    auto body = [&] {
      int number = 0;
      for (const KernelStep& step : kernel.steps) emit_point_step(step, number++);
    };
    if (rank == 0) {
      w_.open("");
      body();
      w_.close();
      return;
    }
    if (rank >= 2 && reads_transposed(kernel)) {
      emit_tiled_transpose(kernel, work, body);
      return;
    }
    std::string pragma = parallel_pragma(work, rank >= 2 ? " collapse(" + std::to_string(rank - 1) + ")" : " simd");
    if (pragma.empty() && rank == 1) pragma = "#pragma omp simd";
    if (!pragma.empty()) w_.line(pragma);
    outer_loops(kernel.outer, 0, body, true);
  }

  // Whether some load walks the second-to-last loop variable contiguously and the last one with
  // a stride: a transpose, whose plain loop order reads (or writes) one element per cache line.
  bool reads_transposed(const Kernel& kernel) {
    const size_t rank = kernel.outer.size();
    std::vector<SymInt> vars = loop_vars(rank);
    bool transposed = false;
    for (const KernelStep& step : kernel.steps) {
      visit(step.body, [&](const ExprNode& node) {
        if (node.kind != ExprKind::Load || registers_.count(node.buffer) || !node.indirect.empty()) return;
        std::optional<AffineIndex> form = affine_form(node.index, vars);
        if (!form) return;
        const SymInt& row = form->coefficients[rank - 2];
        const SymInt& col = form->coefficients[rank - 1];
        if (row == SymInt(1) && !(col == SymInt(1)) && !(col == SymInt(0))) transposed = true;
      });
    }
    return transposed;
  }

  // Loops over the last two dims in square tiles, so that both the transposed reads and the
  // contiguous writes use whole cache lines while a tile is in L1.
  void emit_tiled_transpose(const Kernel& kernel, const SymInt& work, const std::function<void()>& body) {
    const size_t rank = kernel.outer.size();
    const std::string tile = "32";
    std::string pragma = parallel_pragma(work, " collapse(" + std::to_string(rank) + ")");
    w_.line("// tiled " + tile + "x" + tile + ": a transposed read");
    if (!pragma.empty()) w_.line(pragma);
    for (size_t d = 0; d + 2 < rank; ++d) {
      std::string var = loop_var(d).to_string();
      w_.open("for (int64_t " + var + " = 0; " + var + " < " + cpp(kernel.outer[d]) + "; ++" + var + ")");
    }
    std::string row = loop_var(rank - 2).to_string(), col = loop_var(rank - 1).to_string();
    std::string rows = cpp(kernel.outer[rank - 2]), cols = cpp(kernel.outer[rank - 1]);
    w_.open("for (int64_t tr = 0; tr < " + rows + "; tr += " + tile + ")");
    w_.open("for (int64_t tc = 0; tc < " + cols + "; tc += " + tile + ")");
    w_.line("const int64_t row_end = tr + " + tile + " < " + rows + " ? tr + " + tile + " : " + rows + ";");
    w_.line("const int64_t col_end = tc + " + tile + " < " + cols + " ? tc + " + tile + " : " + cols + ";");
    w_.open("for (int64_t " + row + " = tr; " + row + " < row_end; ++" + row + ")");
    w_.line("#pragma omp simd");
    w_.open("for (int64_t " + col + " = tc; " + col + " < col_end; ++" + col + ")");
    body();
    w_.close();
    w_.close();
    w_.close();
    w_.close();
    for (size_t d = 0; d + 2 < rank; ++d) w_.close();
  }

  void emit_reduction_kernel(const Kernel& kernel) {
    SymInt work = numel(kernel.outer) * numel(kernel.inner);
    const size_t rank = kernel.outer.size();
    auto body = [&] {
      int number = 0;
      for (const KernelStep& step : kernel.steps) {
        switch (step.kind) {
          case KernelStep::Kind::Reduce: emit_reduce_step(kernel, step, number); break;
          case KernelStep::Kind::StoreInner: emit_row_step(kernel, step, number); break;
          case KernelStep::Kind::StoreOuter: emit_point_step(step, number); break;
        }
        ++number;
      }
    };
    if (rank == 0) {
      w_.open("");
      body();
      w_.close();
      return;
    }
    std::string pragma = parallel_pragma(work, rank >= 2 ? " collapse(" + std::to_string(rank) + ")" : "");
    if (!pragma.empty()) w_.line(pragma);
    outer_loops(kernel.outer, 0, body, false);
  }

  void emit_extern_kernel(const Kernel& kernel) {
    const LoopNode& node = p_.nodes[size_t(kernel.extern_node)];
    const ExternCall& call = node.extern_call;
    if (call.kind == ExternKind::Fallback) {
      emit_fallback(node);
      return;
    }
    emit_gemm(kernel, node);
  }

  std::string view_pointer(const StridedView& view, const std::vector<std::string>& batch_vars) {
    std::string offset = cpp(view.offset);
    for (size_t i = 0; i < batch_vars.size(); ++i) {
      offset += " + " + batch_vars[i] + " * (" + cpp(view.strides[i]) + ")";
    }
    return buf(view.buffer) + " + (" + offset + ")";
  }

  void emit_gemm(const Kernel& kernel, const LoopNode& node) {
    const ExternCall& call = node.extern_call;
    const StridedView& a = call.inputs.at(0);
    const StridedView& b = call.inputs.at(1);
    const StridedView& c = call.outputs.at(0);
    const size_t rank = c.shape.size();
    KILN_CHECK(rank >= 2 && a.shape.size() == rank && b.shape.size() == rank, "gemm views must share a rank");
    DType dtype = p_.buffer(c.buffer).dtype;
    KILN_CHECK(dtype == DType::f32 || dtype == DType::f64, "gemm of a dtype BLAS lacks");
    module_.uses_blas = true;
    const std::string t = ctype(dtype);
    const std::string gemm = dtype == DType::f32 ? "cblas_sgemm" : "cblas_dgemm";
    w_.line("const int64_t M = " + cpp(c.shape[rank - 2]) + ", N = " + cpp(c.shape[rank - 1]) + ", K = " +
            cpp(a.shape[rank - 1]) + ";");
    w_.line("int ta = 0, lda = 0, tb = 0, ldb = 0;");
    w_.line("if (!kiln_blas_layout(" + cpp(a.strides[rank - 2]) + ", " + cpp(a.strides[rank - 1]) +
            ", M, K, &ta, &lda) || !kiln_blas_layout(" + cpp(b.strides[rank - 2]) + ", " + cpp(b.strides[rank - 1]) +
            ", K, N, &tb, &ldb)) {");
    w_.line("  const char* parts[] = {\"" + kernel.name + ": an operand has no BLAS layout\"};");
    w_.line("  kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
    w_.line("  return 1;");
    w_.line("}");
    const size_t batch_rank = rank - 2;
    SymInt batch = 1;
    for (size_t i = 0; i < batch_rank; ++i) batch = batch * c.shape[i];
    if (batch_rank > 0) {
      if (std::optional<SymInt> row_stride = folded_row_stride(a, b)) {
        emit_folded_gemm(kernel, a, b, c, *row_stride, batch, gemm, t);
        return;
      }
    }
    w_.line("const int64_t batch = " + cpp(batch) + ";");
    w_.line("if (M == 0 || N == 0 || batch == 0) return 0;");
    // An empty inner dim: the products are zeros (the output is contiguous).
    w_.line("if (K == 0) { for (int64_t i = 0; i < batch * M * N; ++i) " + buf(c.buffer) + "[" + cpp(c.offset) +
            " + i] = 0; }");
    std::string sam = cpp(a.strides[rank - 2]);
    bool epilogue = !kernel.steps.empty();
    // Small GEMMs of a batch run in parallel, each on one thread.
    if (batch_rank > 0) {
      // (only when the whole batch is worth a parallel region: ~1M multiply-adds)
      w_.line("#pragma omp parallel for schedule(static) if(batch > 1 && M * N * K < 262144 && batch * M * N * K >= 1048576)");
    }
    w_.open("for (int64_t bi = 0; bi < batch; ++bi)");
    std::vector<std::string> batch_vars;
    w_.line("int64_t rest = bi;");
    w_.line("(void)rest;");
    for (size_t i = batch_rank; i-- > 0;) {
      std::string var = loop_var(i).to_string();
      w_.line("const int64_t " + var + " = rest % (" + cpp(c.shape[i]) + ");");
      w_.line("rest /= (" + cpp(c.shape[i]) + ");");
    }
    for (size_t i = 0; i < batch_rank; ++i) batch_vars.push_back(loop_var(i).to_string());
    w_.line("const " + t + "* pa = " + view_pointer(a, batch_vars) + ";");
    w_.line("const " + t + "* pb = " + view_pointer(b, batch_vars) + ";");
    w_.line(t + "* pc = " + view_pointer(c, batch_vars) + ";");
    if (!epilogue) {
      w_.line("if (K > 0) " + gemm + "(101, ta, tb, int(M), int(N), int(K), 1, pa, lda, pb, ldb, 0, pc, int(N));");
    } else {
      std::string block = std::to_string(options_.gemm_block_rows);
      w_.open("for (int64_t m0 = 0; m0 < M; m0 += " + block + ")");
      w_.line("const int64_t mb = M - m0 < " + block + " ? M - m0 : " + block + ";");
      w_.line("if (K > 0) " + gemm + "(101, ta, tb, int(mb), int(N), int(K), 1, pa + m0 * (" + sam +
              "), lda, pb, ldb, 0, pc + m0 * N, int(N));");
      std::string row = loop_var(rank - 2).to_string(), col = loop_var(rank - 1).to_string();
      w_.open("for (int64_t " + row + " = m0; " + row + " < m0 + mb; ++" + row + ")");
      w_.line("#pragma omp simd");
      w_.open("for (int64_t " + col + " = 0; " + col + " < N; ++" + col + ")");
      int number = 0;
      for (const KernelStep& step : kernel.steps) emit_point_step(step, number++);
      w_.close();
      w_.close();
      w_.close();
    }
    w_.close();
  }

  // When the right operand is the same matrix for every batch entry and the left operand's batch
  // and row dims walk memory as one dim, the batch folds into M: one GEMM of batch*M rows
  // instead of batch GEMMs (x[seq, 1, d] @ w[d, n] is one call, not seq calls of one row).
  // Returns the folded row stride of `a`.
  std::optional<SymInt> folded_row_stride(const StridedView& a, const StridedView& b) {
    const size_t rank = a.shape.size();
    for (size_t i = 0; i + 2 < rank; ++i) {
      if (!(b.strides[i] == SymInt(0)) && !(b.shape[i] == SymInt(1))) return std::nullopt;
    }
    std::vector<size_t> walked;  // batch and row dims of `a` that have more than one element
    for (size_t i = 0; i + 1 < rank; ++i) {
      if (!(a.shape[i] == SymInt(1))) walked.push_back(i);
    }
    for (size_t j = 0; j + 1 < walked.size(); ++j) {
      if (!(a.strides[walked[j]] == a.strides[walked[j + 1]] * a.shape[walked[j + 1]])) return std::nullopt;
    }
    if (walked.empty()) return a.shape[rank - 1];  // one row: any stride >= K will do
    return a.strides[walked.back()];
  }

  void emit_folded_gemm(const Kernel& kernel, const StridedView& a, const StridedView& b, const StridedView& c,
                        const SymInt& row_stride, const SymInt& batch, const std::string& gemm, const std::string& t) {
    const size_t rank = c.shape.size();
    w_.line("// batch folded into M: one GEMM");
    w_.line("const int64_t rows = (" + cpp(batch) + ") * M;");
    w_.line("if (rows == 0 || N == 0) return 0;");
    w_.line("if (!kiln_blas_layout(" + cpp(row_stride) + ", " + cpp(a.strides[rank - 1]) + ", rows, K, &ta, &lda)) {");
    w_.line("  const char* parts[] = {\"" + kernel.name + ": an operand has no BLAS layout\"};");
    w_.line("  kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
    w_.line("  return 1;");
    w_.line("}");
    w_.line("if (K == 0) { for (int64_t i = 0; i < rows * N; ++i) " + buf(c.buffer) + "[" + cpp(c.offset) + " + i] = 0; }");
    w_.line("const " + t + "* pa = " + buf(a.buffer) + " + (" + cpp(a.offset) + ");");
    w_.line("const " + t + "* pb = " + buf(b.buffer) + " + (" + cpp(b.offset) + ");");
    w_.line(t + "* pc = " + buf(c.buffer) + " + (" + cpp(c.offset) + ");");
    if (kernel.steps.empty()) {
      w_.line("if (K > 0) " + gemm + "(101, ta, tb, int(rows), int(N), int(K), 1, pa, lda, pb, ldb, 0, pc, int(N));");
      return;
    }
    std::string block = std::to_string(options_.gemm_block_rows);
    w_.open("for (int64_t m0 = 0; m0 < rows; m0 += " + block + ")");
    w_.line("const int64_t mb = rows - m0 < " + block + " ? rows - m0 : " + block + ";");
    w_.line("if (K > 0) " + gemm + "(101, ta, tb, int(mb), int(N), int(K), 1, pa + m0 * (" + cpp(row_stride) +
            "), lda, pb, ldb, 0, pc + m0 * N, int(N));");
    w_.open("for (int64_t folded = m0; folded < m0 + mb; ++folded)");
    // The epilogue is written over the output's own coordinates: unfold the row.
    w_.line("int64_t rest = folded;");
    std::string row = loop_var(rank - 2).to_string(), col = loop_var(rank - 1).to_string();
    w_.line("const int64_t " + row + " = rest % M;");
    w_.line("rest /= M;");
    for (size_t i = rank - 2; i-- > 0;) {
      std::string var = loop_var(i).to_string();
      w_.line("const int64_t " + var + " = rest % (" + cpp(c.shape[i]) + ");");
      w_.line("rest /= (" + cpp(c.shape[i]) + ");");
      w_.line("(void)" + var + ";");
    }
    w_.line("#pragma omp simd");
    w_.open("for (int64_t " + col + " = 0; " + col + " < N; ++" + col + ")");
    int number = 0;
    for (const KernelStep& step : kernel.steps) emit_point_step(step, number++);
    w_.close();
    w_.close();
    w_.close();
  }

  void emit_fallback(const LoopNode& node) {
    const ExternCall& call = node.extern_call;
    int index = int(module_.fallbacks.size());
    module_.fallbacks.push_back(call.graph_node);
    auto describe = [&](const std::vector<StridedView>& views, const std::string& name) {
      w_.line("KilnTensorDesc " + name + "[" + std::to_string(std::max<size_t>(views.size(), 1)) + "];");
      for (size_t i = 0; i < views.size(); ++i) {
        const StridedView& v = views[i];
        std::string sizes = name + "_sizes" + std::to_string(i), strides = name + "_strides" + std::to_string(i);
        std::string size_list, stride_list;
        for (size_t d = 0; d < v.shape.size(); ++d) {
          size_list += (d ? ", " : "") + cpp(v.shape[d]);
          stride_list += (d ? ", " : "") + cpp(v.strides[d]);
        }
        size_t n = std::max<size_t>(v.shape.size(), 1);
        w_.line("const int64_t " + sizes + "[" + std::to_string(n) + "] = {" + (size_list.empty() ? "0" : size_list) + "};");
        w_.line("const int64_t " + strides + "[" + std::to_string(n) + "] = {" + (stride_list.empty() ? "0" : stride_list) + "};");
        std::string item = name + "[" + std::to_string(i) + "]";
        w_.line(item + ".data = (void*)(" + buf(v.buffer) + " + (" + cpp(v.offset) + "));");
        w_.line(item + ".sizes = " + sizes + ";");
        w_.line(item + ".strides = " + strides + ";");
        w_.line(item + ".dtype = " + std::to_string(int(p_.buffer(v.buffer).dtype)) + ";");
        w_.line(item + ".rank = " + std::to_string(v.shape.size()) + ";");
      }
    };
    describe(call.inputs, "in");
    describe(call.outputs, "out");
    w_.open("if (args->fallback == nullptr)");
    w_.line("const char* parts[] = {\"node " + call.graph_node + " runs on the reference kernel, and no fallback handler was given\"};");
    w_.line("kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
    w_.line("return 1;");
    w_.close();
    w_.line("return args->fallback(args->fallback_state, " + std::to_string(index) + ", in, " +
            std::to_string(call.inputs.size()) + ", out, " + std::to_string(call.outputs.size()) +
            ", args->error, args->error_capacity);");
  }

  // ------------------------------------------------------------ entry points

  void emit_bind() {
    const size_t n = p_.inputs.size();
    w_.open("extern \"C\" int32_t kiln_abi_version(void)");
    w_.line("return " + std::to_string(kKilnAbiVersion) + ";");
    w_.close();
    w_.open("extern \"C\" int32_t kiln_bind(const KilnTensorDesc* in, int64_t num_inputs, int64_t* sym, char* error, int64_t capacity)");
    w_.open("if (num_inputs != " + std::to_string(n) + ")");
    w_.line("const char* parts[] = {\"guard failed: the model takes " + std::to_string(n) + " inputs, got \", nullptr};");
    w_.line("const int64_t ints[] = {0, num_inputs};");
    w_.line("kiln_message(error, capacity, parts, ints, 2);");
    w_.line("return 1;");
    w_.close();
    for (size_t i = 0; i < n; ++i) {
      const Buffer& b = p_.buffer(p_.inputs[i]);
      std::string in = "in[" + std::to_string(i) + "]";
      std::string who = "input '" + b.source + "'";
      w_.open("if (" + in + ".dtype != " + std::to_string(int(b.dtype)) + ")");
      w_.line("const char* parts[] = {\"guard failed: " + who + " has dtype \", kiln_dtype_name(" + in +
              ".dtype), \", expected " + std::string(dtype_name(b.dtype)) + "\"};");
      w_.line("kiln_message(error, capacity, parts, nullptr, 3);");
      w_.line("return 1;");
      w_.close();
      w_.open("if (" + in + ".rank != " + std::to_string(b.shape.size()) + ")");
      w_.line("const char* parts[] = {\"guard failed: " + who + " has rank \", nullptr, \", expected " +
              std::to_string(b.shape.size()) + " (shape " + ir::shape_string(b.shape) + ")\"};");
      w_.line("const int64_t ints[] = {0, " + in + ".rank, 0};");
      w_.line("kiln_message(error, capacity, parts, ints, 3);");
      w_.line("return 1;");
      w_.close();
    }
    std::map<std::string, std::string> symbol_origin;
    for (size_t j = 0; j < p_.symbol_sources.size(); ++j) {
      const auto& source = p_.symbol_sources[j];
      size_t position = size_t(std::find(p_.symbols.begin(), p_.symbols.end(), source.symbol) - p_.symbols.begin());
      w_.line("sym[" + std::to_string(position) + "] = in[" + std::to_string(source.input) + "].sizes[" +
              std::to_string(source.dim) + "];");
      symbol_origin[source.symbol] = "input '" + p_.buffer(p_.inputs[size_t(source.input)]).source + "' dim " +
                                     std::to_string(source.dim);
    }
    declare_symbols();
    for (size_t i = 0; i < n; ++i) {
      const Buffer& b = p_.buffer(p_.inputs[i]);
      std::string in = "in[" + std::to_string(i) + "]";
      std::string who = "input '" + b.source + "'";
      for (size_t d = 0; d < b.shape.size(); ++d) {
        const SymInt& size = b.shape[d];
        std::string got = in + ".sizes[" + std::to_string(d) + "]";
        std::string expected;
        if (size.is_constant()) {
          expected = std::to_string(size.constant());
        } else {
          std::string origin;
          for (const std::string& s : size.free_symbols()) {
            if (symbol_origin.count(s)) origin += (origin.empty() ? "" : ", ") + s + " from " + symbol_origin[s];
          }
          expected = size.to_string() + " = \", nullptr, \" (" + origin + ")";
        }
        w_.open("if (" + got + " != (" + cpp(size) + "))");
        w_.line("const char* parts[] = {\"guard failed: " + who + " dim " + std::to_string(d) + " has size \", nullptr, \", expected " +
                expected + "\"};");
        w_.line("const int64_t ints[] = {0, " + got + ", 0, " + cpp(size) + ", 0};");
        w_.line("kiln_message(error, capacity, parts, ints, " + std::string(size.is_constant() ? "3" : "5") + ");");
        w_.line("return 1;");
        w_.close();
      }
      // Strides: the compiled code assumes contiguous inputs (size-1 dims may have any stride,
      // and an input with no elements any strides).
      SymInt empty_check = 1;
      for (const SymInt& d : b.shape) empty_check = empty_check * d;
      w_.open("if ((" + cpp(empty_check) + ") != 0)");
      SymInt stride = 1;
      for (size_t d = b.shape.size(); d-- > 0;) {
        std::string got = in + ".strides[" + std::to_string(d) + "]";
        w_.open("if (" + in + ".sizes[" + std::to_string(d) + "] != 1 && " + got + " != (" + cpp(stride) + "))");
        w_.line("const char* parts[] = {\"guard failed: " + who + " dim " + std::to_string(d) +
                " has stride \", nullptr, \", expected \", nullptr, \" (the compiled code assumes contiguous inputs)\"};");
        w_.line("const int64_t ints[] = {0, " + got + ", 0, " + cpp(stride) + ", 0};");
        w_.line("kiln_message(error, capacity, parts, ints, 5);");
        w_.line("return 1;");
        w_.close();
        stride = stride * b.shape[d];
      }
      w_.close();
    }
    w_.line("(void)error; (void)capacity;");
    w_.line("return 0;");
    w_.close();
    w_.line("");
  }

  void emit_sizes() {
    w_.open("extern \"C\" void kiln_output_sizes(const int64_t* sym, int64_t* sizes)");
    declare_symbols();
    size_t k = 0;
    for (int id : p_.outputs) {
      for (const SymInt& d : p_.buffer(id).shape) w_.line("sizes[" + std::to_string(k++) + "] = " + cpp(d) + ";");
    }
    w_.line("(void)sizes;");
    w_.close();
    w_.open("extern \"C\" int64_t kiln_workspace_bytes(const int64_t* sym)");
    declare_symbols();
    w_.line("return " + cpp(s_.memory.peak_bytes) + ";");
    w_.close();
    w_.line("");
  }

  void emit_run() {
    w_.open("extern \"C\" int32_t kiln_run(const KilnRunArgs* args)");
    w_.line("const int64_t* sym = args->symbols;");
    declare_symbols();
    w_.line("void* bufs[" + std::to_string(std::max<size_t>(p_.buffers.size(), 1)) + "] = {};");
    for (size_t i = 0; i < p_.inputs.size(); ++i) {
      w_.line("bufs[" + std::to_string(p_.inputs[i]) + "] = args->inputs[" + std::to_string(i) + "].data;");
    }
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      w_.line("bufs[" + std::to_string(p_.parameters[i]) + "] = args->parameters[" + std::to_string(i) + "];");
    }
    for (size_t i = 0; i < p_.outputs.size(); ++i) {
      w_.line("bufs[" + std::to_string(p_.outputs[i]) + "] = args->outputs[" + std::to_string(i) + "];");
    }
    for (const auto& [id, offset] : s_.memory.offsets) {
      w_.line("bufs[" + std::to_string(id) + "] = (char*)args->workspace + (" + cpp(offset) + ");  // " +
              p_.buffer(id).name);
    }
    w_.line("if (args->num_threads > 0) omp_set_num_threads(args->num_threads);");
    w_.line("__atomic_store_n(&kiln_fault_zero_division, 0, __ATOMIC_RELAXED);");
    w_.line("__atomic_store_n(&kiln_fault_index, 0, __ATOMIC_RELAXED);");
    for (const Kernel& kernel : s_.kernels) {
      std::string origins;
      std::set<std::string> seen;
      for (const std::string& o : kernel.origins) {
        if (seen.insert(o).second) origins += (origins.empty() ? "" : ", ") + o;
      }
      w_.open("");
      w_.line("const int32_t rc = " + kernel.name + "(bufs, sym, args);");
      w_.line("if (rc != 0) return rc;");
      w_.open("if (__atomic_load_n(&kiln_fault_zero_division, __ATOMIC_RELAXED))");
      w_.line("const char* parts[] = {" + quoted("ZeroDivisionError: integer division by zero in " + kernel.name + " (" + origins + ")") + "};");
      w_.line("kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
      w_.line("return 1;");
      w_.close();
      w_.open("if (__atomic_load_n(&kiln_fault_index, __ATOMIC_RELAXED))");
      w_.line("const char* parts[] = {" + quoted("IndexError: an index is out of range in " + kernel.name + " (" + origins + ")") + "};");
      w_.line("kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
      w_.line("return 1;");
      w_.close();
      w_.close();
    }
    w_.line("return 0;");
    w_.close();
  }

  // Hoisted temporaries appear in expressions as loads of these (negative) buffer ids.
  static constexpr int kFirstNamedValue = -1000;
  std::map<int, std::string> named_values_;
  std::map<std::string, SymInt> symbol_names_;  // shape symbol -> its C++ variable
  int hoist_counter_ = 0;

  const ScheduledProgram& s_;
  const LoopProgram& p_;
  CppEmitOptions options_;
  std::set<int> registers_;
  Writer w_;
  CppModule module_;
};

}  // namespace

CppModule emit_cpp(const ScheduledProgram& scheduled, const CppEmitOptions& options) {
  return Emitter(scheduled, options).run();
}

}  // namespace kiln::codegen
