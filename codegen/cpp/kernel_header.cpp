// Standalone kernel headers (see codegen/cpp/kernel_header.h): which buffers the selected kernels
// take as pointers and which live in the workspace, which symbols they need, and the header's
// text around the C++ backend's own kernel functions.
#include "codegen/cpp/kernel_header.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/c_like/c_ops.h"
#include "codegen/c_like/c_printer.h"
#include "codegen/c_like/c_source_writer.h"
#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cpp/prelude.h"
#include "codegen/kernel_interface.h"
#include "kiln/error.h"

namespace kiln::codegen {

namespace {

constexpr int64_t kWorkspaceAlignment = 64;

// The names a parameter of the entry may not take: C++'s words, and the entry's own locals.
bool is_reserved_word(const std::string& name) {
  static const std::set<std::string> locals = {"sym", "bufs", "args", "error", "rc", "workspace"};
  return is_reserved_c_word(name) || locals.count(name) > 0;
}

// A printer of the program's types and size expressions (CPrinter is the backends' base).
class HeaderPrinter : public CPrinter {
 public:
  explicit HeaderPrinter(const ScheduledProgram& scheduled) : CPrinter(scheduled, cpp_dialect()) {}
};

enum class Role { Input, Output, Workspace };

struct HeaderBuffer {
  int id = -1;
  Role role = Role::Input;
  std::string name;  // the entry's parameter (Input, Output)
  SymInt offset;     // Workspace: byte offset
};

class KernelHeaderWriter {
 public:
  KernelHeaderWriter(const ScheduledProgram& scheduled, const KernelHeaderOptions& options)
      : s_(scheduled), p_(scheduled.program), options_(options), printer_(scheduled) {
    selected_ = options.kernels;
    if (selected_.empty())
      for (size_t k = 0; k < s_.kernels.size(); ++k) selected_.push_back(int(k));
    ns_ = "kiln_kernel_" + options.name;
  }

  std::string write() {
    check_supported();
    CppKernelParts parts = emit_cpp_kernel_parts(s_);
    classify_buffers();
    choose_symbols(parts);
    emit_top_comment();
    std::string guard = "KILN_KERNEL_" + macro_name(options_.name) + "_H";
    w_.line("#ifndef " + guard);
    w_.line("#define " + guard);
    w_.line("");
    w_.line("#include <stddef.h>");
    w_.line("#include <stdint.h>");
    w_.line("");
    w_.line("// Everything below but the entry function is internal to this header. Built without -fopenmp or");
    w_.line("// -fopenmp-simd, its OpenMP pragmas are ignored (GCC's -Wall still names them: -Wno-unknown-pragmas).");
    w_.line("#pragma GCC diagnostic push");
    w_.line("#pragma GCC diagnostic ignored \"-Wunknown-pragmas\"");
    w_.line("#ifdef __clang__");
    w_.line("#pragma clang diagnostic ignored \"-Wsource-uses-openmp\"");
    w_.line("#endif");
    w_.line("namespace " + ns_ + " {");
    w_.raw(prelude_body());
    w_.raw("\n");
    w_.raw(c_ops_text());
    w_.raw("\n");
    w_.raw(parts.reductions);
    if (uses_blas_) w_.raw(parts.blas);
    w_.line("");
    for (int k : selected_) w_.raw(parts.kernels[size_t(k)]);
    w_.line("}  // namespace " + ns_);
    w_.line("#pragma GCC diagnostic pop");
    w_.line("#undef KILN_OP");
    w_.line("#undef KILN_FAULT_FLAG");
    w_.line("#undef KILN_RAISE_FAULT");
    w_.line("#undef KILN_MODULE_STATE");
    w_.line("#undef KILN_KERNEL");
    w_.line("");
    emit_isa_constant();
    if (!workspace_.empty()) emit_workspace_function();
    emit_signature_comment();
    emit_entry();
    w_.line("");
    w_.line("#endif  // " + guard);
    return w_.str();
  }

 private:
  void check_supported() {
    for (int k : selected_) {
      const Kernel& kernel = s_.kernels.at(size_t(k));
      if (kernel.kind != KernelKind::Extern) continue;
      const ExternCall& call = p_.nodes.at(size_t(kernel.extern_node)).extern_call;
      if (call.kind == ExternKind::Convolution)
        fail("kernel ", kernel.name, " is a convolution through oneDNN: a standalone header cannot hold it");
      if (call.kind == ExternKind::Fallback)
        fail("kernel ", kernel.name, " runs graph node '", call.graph_node,
             "' with Kiln's reference kernel (no generated code): a standalone header cannot hold it");
      uses_blas_ = true;
    }
  }

  // Pointers and workspace (codegen/kernel_interface.h); the workspace holds the internal
  // values one after another, each 64-byte aligned.
  void classify_buffers() {
    KernelInterface interface = kernel_interface(s_, selected_);
    for (int id : interface.inputs) pointers_.push_back({id, Role::Input, "", SymInt(0)});
    for (int id : interface.outputs) pointers_.push_back({id, Role::Output, "", SymInt(0)});
    SymInt offset = 0;
    for (int id : interface.internal) {
      const Buffer& b = p_.buffer(id);
      workspace_.push_back({id, Role::Workspace, b.name, offset});
      SymInt bytes = numel(b.shape) * SymInt(int64_t(dtype_size(b.dtype)));
      offset = offset + floordiv(bytes + SymInt(kWorkspaceAlignment - 1), SymInt(kWorkspaceAlignment)) *
                            SymInt(kWorkspaceAlignment);
    }
    workspace_bytes_ = offset;
  }

  // A unique C identifier for a buffer's parameter, from its graph name.
  std::string parameter_name(const HeaderBuffer& h) {
    const Buffer& b = p_.buffer(h.id);
    std::string base;
    if (h.role == Role::Output && b.kind == BufferKind::Output && size_t(b.position) < options_.output_names.size() &&
        !options_.output_names[size_t(b.position)].empty()) {
      base = options_.output_names[size_t(b.position)];
    } else {
      base = b.kind == BufferKind::Intermediate || b.source.empty() ? b.name : b.source;
    }
    for (char& c : base)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "_" + base;
    if (is_reserved_word(base) || base == options_.name) base += "_";
    std::string name = base;
    for (int n = 1; taken_.count(name); ++n) name = base + "_" + std::to_string(n);
    taken_.insert(name);
    return name;
  }

  // Whether the C variable of `symbol` occurs in `text` past its declaration in each kernel
  // (`const int64_t s_x = sym[i];` and `(void)s_x;`).
  static size_t occurrences(const std::string& text, const std::string& word) {
    size_t count = 0;
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
      bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_');
      size_t end = at + word.size();
      bool ends = end >= text.size() || !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_');
      if (starts && ends) ++count;
    }
    return count;
  }

  void choose_symbols(const CppKernelParts& parts) {
    std::set<std::string> used;
    auto add_shape = [&](const SymShape& shape) {
      for (const SymInt& d : shape)
        for (const std::string& s : d.free_symbols()) used.insert(s);
    };
    for (const HeaderBuffer& h : pointers_) add_shape(p_.buffer(h.id).shape);
    for (const HeaderBuffer& h : workspace_) add_shape(p_.buffer(h.id).shape);
    for (int k : selected_) {
      const std::string& text = parts.kernels[size_t(k)];
      for (const std::string& s : p_.symbols)
        if (occurrences(text, CPrinter::symbol_variable(s)) > 2) used.insert(s);
    }
    for (const std::string& s : p_.symbols) {
      if (!used.count(s)) continue;
      std::string name = s;
      if (is_reserved_word(name) || name == options_.name) name += "_";
      taken_.insert(name);
      symbols_.push_back({s, name});
    }
    for (HeaderBuffer& h : pointers_) h.name = parameter_name(h);
  }

  // The prelude's text without its include guard and includes: the header includes <stddef.h>
  // and <stdint.h> outside its namespace, and its own copy of the prelude must not be skipped
  // because another header (or a Kiln module) defined the guard first.
  static std::string prelude_body() {
    // The header's fault flags are its own (codegen/cpp/kiln_prelude.h: KILN_MODULE_STATE).
    std::string text = "#undef KILN_MODULE_STATE\n#define KILN_MODULE_STATE static\n" + std::string(cpp_prelude());
    for (const std::string& line : {std::string("#ifndef KILN_PRELUDE_H\n"), std::string("#define KILN_PRELUDE_H\n"),
                                    std::string("#include <stddef.h>\n"), std::string("#include <stdint.h>\n"),
                                    std::string("#endif  // KILN_PRELUDE_H\n")}) {
      size_t at = text.find(line);
      KILN_CHECK(at != std::string::npos, "the C++ prelude no longer has the line ", line);
      text.erase(at, line.size());
    }
    return text;
  }

  std::string pointer_type(const HeaderBuffer& h) const {
    std::string t = printer_.ctype(p_.buffer(h.id).dtype);
    return h.role == Role::Input ? "const " + t + "*" : t + "*";
  }

  std::string dtype_text(DType dtype) const {
    std::string text(dtype_name(dtype));
    if (dtype == DType::f16) text += " (IEEE half bits in uint16_t)";
    if (dtype == DType::bf16) text += " (bfloat16 bits in uint16_t)";
    return text;
  }

  void emit_top_comment() {
    w_.line("// Generated by `kiln kernel`: a standalone kernel. Do not edit: generate it again instead.");
    for (const std::string& line : options_.description) w_.line("// " + line);
    w_.line("//");
    w_.line("// Self-contained: it needs no Kiln header or library. Everything but the entry function " +
            options_.name + "()");
    w_.line("// is in namespace " + ns_ + ", so several kernel headers (and this one in several");
    w_.line("// translation units) link into one program. C++17 (GCC or Clang).");
    if (selected_.size() > 1) {
      w_.line("// The computation needs " + std::to_string(selected_.size()) +
              " kernels (a reduction's results are read by a later loop");
      w_.line("// over another range): the entry function runs them in order.");
    }
    std::string names;
    for (int k : selected_) names += (names.empty() ? "" : ", ") + s_.kernels[size_t(k)].name;
    w_.line("// Kernels: " + names + ".");
    if (uses_blas_) {
      w_.line("// Matrix products call CBLAS: link a CBLAS library (-lopenblas). The header declares");
      w_.line("// cblas_sgemm/cblas_dgemm itself with int arguments: do not include <cblas.h> in the same file.");
      w_.line("// The products run on the library's own threads (OPENBLAS_NUM_THREADS for OpenBLAS).");
    }
    w_.line("//");
    w_.line("// Build flags: -O3 -fopenmp -fno-math-errno -fno-trapping-math, plus the instruction set:");
    w_.line("//   -mavx512f -mavx512dq -mavx512bw -mavx512vl -mavx2 -mfma (AVX-512), -mavx2 -mfma (AVX2),");
    w_.line("//   or none (scalar); -march=native picks the build machine's. The loops are `#pragma omp simd`");
    w_.line("//   loops written once: the compiler vectorizes them for the instruction set its flags enable");
    w_.line("//   (" + options_.name + "_isa names it). -fopenmp-simd instead of -fopenmp: vectorized, one thread.");
    w_.line("//   Whatever the flags, the math is the prelude's, within the error bounds its table states (no");
    w_.line("//   -ffast-math needed or wanted).");
    w_.line("");
  }

  void emit_isa_constant() {
    w_.line("// The instruction set this translation unit's flags enable, which the loops are vectorized for.");
    w_.line("#if defined(__AVX512F__)");
    w_.line("static constexpr const char* " + options_.name + "_isa = \"avx512\";");
    w_.line("#elif defined(__AVX2__)");
    w_.line("static constexpr const char* " + options_.name + "_isa = \"avx2\";");
    w_.line("#else");
    w_.line("static constexpr const char* " + options_.name + "_isa = \"scalar\";");
    w_.line("#endif");
    w_.line("");
  }

  std::string symbol_parameters() const {
    std::string text;
    for (const auto& [symbol, name] : symbols_) text += (text.empty() ? "" : ", ") + std::string("int64_t ") + name;
    return text;
  }

  void declare_symbol_variables() {
    for (const auto& [symbol, name] : symbols_)
      w_.line("const int64_t " + CPrinter::symbol_variable(symbol) + " = " + name + ";");
    for (const auto& [symbol, name] : symbols_) w_.line("(void)" + CPrinter::symbol_variable(symbol) + ";");
  }

  void emit_workspace_function() {
    w_.line("// The bytes of the workspace " + options_.name + "() needs for these sizes.");
    std::string params = symbol_parameters();
    w_.open("static inline int64_t " + options_.name + "_workspace_bytes(" + (params.empty() ? "void" : params) + ")");
    declare_symbol_variables();
    w_.line("return " + printer_.index_text(workspace_bytes_) + ";");
    w_.close();
    w_.line("");
  }

  void emit_signature_comment() {
    w_.line("// " + options_.name + "(...): returns 0 on success; 1 when an integer division by zero happened, 2 when an");
    w_.line("// index read from a tensor was out of range (as PyTorch would raise), 3 when a library call failed.");
    w_.line("// Pointers: contiguous row-major tensors (strides are the products of the later dims), aligned");
    w_.line("// to their element type (64 bytes is faster, not required); inputs are only read, outputs are");
    w_.line("// fully overwritten, and no output may overlap another pointer.");
    for (const HeaderBuffer& h : pointers_) {
      const Buffer& b = p_.buffer(h.id);
      std::string what = h.role == Role::Input ? "input" : "output";
      std::string origin;
      if (b.kind == BufferKind::Parameter) origin = ", the model's parameter " + b.source;
      if (b.kind == BufferKind::Intermediate) origin = ", the model's value " + b.name;
      w_.line("//   " + h.name + ": " + what + ", " + dtype_text(b.dtype) + ir::shape_string(b.shape) + origin);
    }
    for (const auto& [symbol, name] : symbols_)
      w_.line("//   " + name + ": the size of the symbolic dim " + symbol + " (int64_t, >= 0)");
    if (!workspace_.empty()) {
      w_.line("//   workspace: " + options_.name + "_workspace_bytes(" + symbol_names() +
              ") bytes of scratch memory, 64-byte aligned,");
      w_.line("//     not shared with another call running at the same time; it holds:");
      for (const HeaderBuffer& h : workspace_) {
        const Buffer& b = p_.buffer(h.id);
        w_.line("//     " + b.name + ": " + std::string(dtype_name(b.dtype)) + ir::shape_string(b.shape) + " at byte " +
                h.offset.to_string());
      }
    }
    w_.line("// Threads: compiled with -fopenmp, loops with at least 32768 elements of work run on OpenMP's");
    w_.line("// threads (OMP_NUM_THREADS or omp_set_num_threads); otherwise everything runs on the calling");
    w_.line("// thread. Calls on different data may run concurrently (the fault flags behind results 1 and 2");
    w_.line("// are shared by every call of this translation unit).");
  }

  std::string symbol_names() const {
    std::string text;
    for (const auto& [symbol, name] : symbols_) text += (text.empty() ? "" : ", ") + name;
    return text;
  }

  void emit_entry() {
    std::string params;
    for (const HeaderBuffer& h : pointers_) params += (params.empty() ? "" : ", ") + pointer_type(h) + " " + h.name;
    std::string symbols = symbol_parameters();
    if (!symbols.empty()) params += (params.empty() ? "" : ", ") + symbols;
    if (!workspace_.empty()) params += (params.empty() ? "" : ", ") + std::string("void* workspace");
    w_.open("static inline int32_t " + options_.name + "(" + (params.empty() ? "void" : params) + ")");
    declare_symbol_variables();
    std::string sym;
    for (const std::string& s : p_.symbols) {
      bool given = std::any_of(symbols_.begin(), symbols_.end(), [&](const auto& entry) { return entry.first == s; });
      sym += (sym.empty() ? "" : ", ") + (given ? CPrinter::symbol_variable(s) : std::string("0"));
    }
    w_.line("const int64_t sym[" + std::to_string(std::max<size_t>(p_.symbols.size(), 1)) + "] = {" +
            (sym.empty() ? "0" : sym) + "};");
    w_.line("void* bufs[" + std::to_string(std::max<size_t>(p_.buffers.size(), 1)) + "] = {};");
    for (const HeaderBuffer& h : pointers_)
      w_.line("bufs[" + std::to_string(h.id) + "] = (void*)" + h.name + ";");
    for (const HeaderBuffer& h : workspace_)
      w_.line("bufs[" + std::to_string(h.id) + "] = (char*)workspace + (" + printer_.index_text(h.offset) + ");  // " +
              h.name);
    w_.line("char error[256] = {0};");
    w_.line(ns_ + "::KilnRunArgs args = {};");
    w_.line("args.error = error;");
    w_.line("args.error_capacity = 256;");
    w_.line("__atomic_store_n(&" + ns_ + "::kiln_fault_zero_division, 0, __ATOMIC_RELAXED);");
    w_.line("__atomic_store_n(&" + ns_ + "::kiln_fault_index, 0, __ATOMIC_RELAXED);");
    for (int k : selected_) {
      w_.line("if (" + ns_ + "::" + s_.kernels[size_t(k)].name + "(bufs, sym, &args) != 0) return 3;");
      w_.line("if (__atomic_load_n(&" + ns_ + "::kiln_fault_zero_division, __ATOMIC_RELAXED)) return 1;");
      w_.line("if (__atomic_load_n(&" + ns_ + "::kiln_fault_index, __ATOMIC_RELAXED)) return 2;");
    }
    w_.line("return 0;");
    w_.close();
  }

  const ScheduledProgram& s_;
  const LoopProgram& p_;
  const KernelHeaderOptions& options_;
  HeaderPrinter printer_;
  std::vector<int> selected_;
  bool uses_blas_ = false;
  std::string ns_;
  std::vector<HeaderBuffer> pointers_;
  std::vector<HeaderBuffer> workspace_;
  SymInt workspace_bytes_ = 0;
  std::vector<std::pair<std::string, std::string>> symbols_;  // (symbol, parameter name)
  std::set<std::string> taken_;
  CSourceWriter w_;
};

}  // namespace

std::string emit_kernel_header(const ScheduledProgram& scheduled, const KernelHeaderOptions& options) {
  return KernelHeaderWriter(scheduled, options).write();
}

}  // namespace kiln::codegen
