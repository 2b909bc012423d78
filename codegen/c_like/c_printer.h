// CPrinter: what the C++ and CUDA backends print alike from a scheduled program: C types of
// dtypes, literals, the interpreter's conversions, index and size expressions over renamed
// shape symbols, buffer and register names, and loop-IR expressions as calls into the shared
// op layer (codegen/c_like/c_ops.h), spelled as the loop op table says (codegen/loop_ops.h). A
// backend derives from it and prints its own kernels, loops, reductions and entry points; the
// few spellings that differ between targets (half storage types, infinities and NaNs, ops with
// a CUDA spelling of their own) come from its CDialect.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/schedule.h"

namespace kiln::codegen {

struct CDialect {
  std::string f16_storage;   // the C type holding an f16 value in memory
  std::string bf16_storage;  // ... a bf16 value
  std::string f32_infinity, f32_nan, f64_infinity, f64_nan;  // expressions
  bool cuda = false;  // ops take their CUDA spelling from the loop op table where it has one
};

// The C++ backend's spellings (compiler builtins).
CDialect cpp_dialect();

std::string int_literal(int64_t value);
// `text` as a C string literal (quotes, backslashes and newlines escaped).
std::string quoted(const std::string& text);
// The graph nodes a kernel computes, each once, comma-separated (for comments and messages).
std::string origins_text(const std::vector<std::string>& origins);
// Whether `name` cannot name a parameter or function of generated C++/CUDA: a keyword of C++ or
// a type the generated code spells (int64_t, ...).
bool is_reserved_c_word(const std::string& name);

class CPrinter {
 public:
  CPrinter(const ScheduledProgram& scheduled, CDialect dialect);

  std::string ctype(DType dtype) const;
  std::string literal(double float_value, int64_t int_value, DType dtype) const;
  std::string lowest(DType dtype) const;   // the identity of max
  std::string highest(DType dtype) const;  // the identity of min
  // `value` (a C expression of type `from`) converted to `to` with the interpreter's rules
  // (halves through f32; float to integer truncates, NaN gives 0, saturates).
  std::string convert(const std::string& value, DType from, DType to) const;

  // Shape symbol `s` is the C variable s_<s>, so a symbol named like a generated local (`batch`,
  // `N`) cannot collide with it.
  static std::string symbol_variable(const std::string& symbol);
  // An index or size expression as C, over the renamed symbols.
  std::string index_text(const SymInt& value) const;

  std::string buf(int id) const { return "b" + std::to_string(id); }  // a buffer's pointer
  std::string reg(int id) const { return "v" + std::to_string(id); }  // a register buffer's value
  bool in_register(int id) const { return registers_.count(id) != 0; }
  // Whether buffer `id` shares its bytes with another buffer of `ids` (a result the memory plan
  // wrote over a dying operand: MemoryPlan::in_place_of); such pointers are not restrict.
  template <class Ids>
  bool shares_memory_with(int id, const Ids& ids) const {
    auto among = [&](int other) { return std::find(ids.begin(), ids.end(), other) != ids.end(); };
    for (const auto& [result, operand] : s_.memory.in_place_of)
      if ((result == id && among(operand)) || (operand == id && among(result))) return true;
    return false;
  }

  // A loop-IR expression as C: loads from buffers, registers or named values.
  std::string expr(const Expr& e);
  // The function generated code calls for a loop op on this target.
  std::string_view op_spelling(LoopOp op) const;
  // A value named `name` (a temporary declared by the backend), usable inside expressions.
  Expr named_value(const std::string& name, DType dtype);

 protected:
  // How a load from memory prints; a backend may override it (e.g. to read a vector lane).
  virtual std::string memory_load(const ExprNode& load);
  virtual ~CPrinter() = default;

  const ScheduledProgram& s_;
  const LoopProgram& p_;
  CDialect dialect_;
  std::set<int> registers_;

 private:
  // Named values appear in expressions as loads of these (negative) buffer ids.
  static constexpr int kFirstNamedValue = -1000;
  std::map<int, std::string> named_values_;
  std::map<std::string, SymInt> symbol_names_;  // shape symbol -> its C variable
};

}  // namespace kiln::codegen
