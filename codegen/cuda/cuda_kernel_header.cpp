// Standalone CUDA kernel headers (see codegen/cuda/cuda_kernel_header.h): the CUDA module's text
// made header-safe (no include guards or includes inside the namespace, kernels renamed and
// given the linkage of the compiler), then the host launch helper from the module's launch steps.
#include "codegen/cuda/cuda_kernel_header.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "codegen/c_like/c_printer.h"
#include "codegen/c_like/c_source_writer.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/kernel_interface.h"
#include "kiln/error.h"

namespace kiln::codegen::cuda {

namespace {

// Removes the one occurrence of `line` in `text` (an internal error when it is missing: the
// preludes changed and this file must follow).
void erase_line(std::string& text, const std::string& line) {
  size_t at = text.find(line);
  KILN_CHECK(at != std::string::npos, "the CUDA module text no longer has the line ", line);
  text.erase(at, line.size());
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

class HeaderPrinter : public CPrinter {
 public:
  explicit HeaderPrinter(const ScheduledProgram& scheduled)
      : CPrinter(scheduled, {"__half", "__nv_bfloat16", "", "", "", "", true}) {}
};

class CudaHeaderWriter {
 public:
  CudaHeaderWriter(const ScheduledProgram& scheduled, const CudaKernelHeaderOptions& options)
      : s_(scheduled), p_(scheduled.program), options_(options), printer_(scheduled),
        ns_("kiln_kernel_" + options.name), macro_(macro_name(options.name)) {}

  std::string write() {
    std::vector<int> selected = options_.kernels;
    if (selected.empty())
      for (size_t k = 0; k < s_.kernels.size(); ++k) selected.push_back(int(k));
    // The CUDA module of the selected kernels alone (the emitter prints every kernel it is given).
    ScheduledProgram chosen = s_;
    chosen.kernels.clear();
    for (int k : selected) chosen.kernels.push_back(s_.kernels.at(size_t(k)));
    CudaModule module = emit_cuda(chosen);
    for (const LaunchStep& step : module.steps) {
      if (step.kind != LaunchStep::Kind::Library) continue;
      const Kernel& kernel = chosen.kernels.at(size_t(step.kernel));
      fail("kernel ", kernel.name, " is a library call on the host (cuBLAS or a reference kernel), not a CUDA kernel: ",
           "a standalone CUDA header cannot hold it");
    }
    lay_out_workspace(kernel_interface(s_, selected), module);
    name_parameters();
    emit_top_comment(module);
    std::string guard = "KILN_KERNEL_" + macro_ + "_CUH";
    w_.line("#ifndef " + guard);
    w_.line("#define " + guard);
    w_.line("");
    w_.line("#if !defined(__CUDACC_RTC__)");
    w_.line("#include <cstdint>  // (NVRTC has none: the prelude declares the fixed-width types there)");
    w_.line("#endif");
    if (module.uses_half) {
      w_.line("#include <cuda_fp16.h>");
      w_.line("#include <cuda_bf16.h>");
    }
    w_.line("// Kernels: extern \"C\" under NVRTC (found by name), static under nvcc (one copy per file).");
    w_.line("#if defined(__CUDACC_RTC__)");
    w_.line("#define " + macro_ + "_GLOBAL extern \"C\" __global__");
    w_.line("#else");
    w_.line("#define " + macro_ + "_GLOBAL static __global__");
    w_.line("#endif");
    w_.line("");
    w_.line("// The preludes define more than these kernels use: no \"declared but never referenced\" warnings.");
    w_.line("#pragma nv_diagnostic push");
    w_.line("#pragma nv_diag_suppress 177");
    w_.line("namespace " + ns_ + " {");
    w_.raw(module_body(module));
    w_.line("}  // namespace " + ns_);
    w_.line("#pragma nv_diagnostic pop");
    for (const char* macro : {"KILN_OP", "KILN_FAULT_FLAG", "KILN_RAISE_FAULT", "KILN_DEVICE_FN", "KILN_SHARED_MEMORY"})
      w_.line(std::string("#undef ") + macro);
    w_.line("");
    w_.line("#if !defined(__CUDACC_RTC__)");
    emit_host_helpers();
    if (has_workspace()) emit_workspace_function();
    emit_signature_comment(module);
    emit_launcher(module);
    w_.line("#endif  // !__CUDACC_RTC__");
    w_.line("");
    w_.line("#endif  // " + guard);
    return w_.str();
  }

 private:
  bool has_workspace() const { return workspace_bytes_.maybe_constant() != std::optional<int64_t>(0); }

  // The interface's pointers; its internal values one after another in the workspace, each
  // 64-byte aligned, then the scratch area of split reductions where a launch takes it.
  void lay_out_workspace(const KernelInterface& interface, const CudaModule& module) {
    inputs_ = interface.inputs;
    outputs_ = interface.outputs;
    SymInt offset = 0;
    for (int id : interface.internal) {
      const Buffer& b = p_.buffer(id);
      internal_.push_back({id, offset});
      offset = offset + floordiv(numel(b.shape) * SymInt(int64_t(dtype_size(b.dtype))) + SymInt(63), SymInt(64)) * SymInt(64);
    }
    scratch_offset_ = offset;
    bool scratch = false;
    for (const LaunchStep& step : module.steps)
      for (const KernelArgument& a : step.launch.arguments) scratch |= a.kind == KernelArgument::Kind::Scratch;
    workspace_bytes_ = scratch ? offset + (module.workspace_bytes - module.scratch_offset) : offset;
  }

  // The module's source, header-safe: no include guards, no includes (they are above the
  // namespace), fault flags private to the namespace, kernels renamed with their linkage macro.
  std::string module_body(const CudaModule& module) {
    std::string text = module.source;
    text.erase(0, text.find('\n') + 1);  // the "Generated by Kiln for ..." line
    for (const std::string& line : {std::string("#ifndef KILN_CUDA_PRELUDE_H\n"), std::string("#define KILN_CUDA_PRELUDE_H\n"),
                                    std::string("#endif  // KILN_CUDA_PRELUDE_H\n"),
                                    std::string("#ifndef KILN_CUDA_REDUCTIONS_H\n"),
                                    std::string("#define KILN_CUDA_REDUCTIONS_H\n"),
                                    std::string("#endif  // KILN_CUDA_REDUCTIONS_H\n"),
                                    std::string("#include <cuda_fp16.h>\n"), std::string("#include <cuda_bf16.h>\n"),
                                    std::string("#include <cstdint>\n")})
      erase_line(text, line);
    erase_line(text, "#define KILN_FAULT_FLAG(name) extern \"C\" { __device__ int name = 0; }\n");
    size_t ops = text.find("#define KILN_RAISE_FAULT");
    KILN_CHECK(ops != std::string::npos, "the CUDA prelude no longer defines KILN_RAISE_FAULT");
    text.insert(ops, "#define KILN_FAULT_FLAG(name) static __device__ int name = 0;\n");
    std::set<std::string> renamed;
    for (const LaunchStep& step : module.steps) {
      const KernelLaunch& launch = step.launch;
      if (!renamed.insert(launch.name).second) continue;
      std::string from = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(launch.block) + ") " + launch.name + "(";
      std::string to = macro_ + "_GLOBAL void __launch_bounds__(" + std::to_string(launch.block) + ") " + kernel_name(launch) + "(";
      KILN_CHECK(text.find(from) != std::string::npos, "kernel ", launch.name, " not found in the CUDA module");
      text = replace_all(text, from, to);
    }
    return text;
  }

  std::string kernel_name(const KernelLaunch& launch) const { return options_.name + "_" + launch.name; }

  // The C name of a shape symbol's parameter: the symbol, unless C++ or the helper reserves it.
  std::string symbol_parameter(const std::string& symbol) const {
    bool reserved = is_reserved_c_word(symbol) || symbol == "stream" || symbol == "workspace" || symbol == "bufs" ||
                    symbol == "grid" || symbol == options_.name;
    return reserved ? symbol + "_" : symbol;
  }

  void name_parameters() {
    std::set<std::string> taken = {"stream", "workspace", "bufs", "grid", options_.name};
    for (const std::string& s : p_.symbols) taken.insert(symbol_parameter(s));
    auto add = [&](int id, bool input) {
      const Buffer& b = p_.buffer(id);
      std::string base = b.kind == BufferKind::Intermediate || b.source.empty() ? b.name : b.source;
      if (!input && b.kind == BufferKind::Output && size_t(b.position) < options_.output_names.size() &&
          !options_.output_names[size_t(b.position)].empty())
        base = options_.output_names[size_t(b.position)];
      for (char& c : base)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "_" + base;
      if (is_reserved_c_word(base)) base += "_";
      std::string name = base;
      for (int n = 1; taken.count(name); ++n) name = base + "_" + std::to_string(n);
      taken.insert(name);
      pointers_.push_back({id, input, name});
    };
    for (int id : inputs_) add(id, true);
    for (int id : outputs_) add(id, false);
  }

  void emit_top_comment(const CudaModule& module) {
    w_.line("// Generated by `kiln kernel --target cuda`: a standalone CUDA kernel. Do not edit: generate it again.");
    for (const std::string& line : options_.description) w_.line("// " + line);
    w_.line("//");
    w_.line("// Self-contained: no Kiln header or library. Compile it with nvcc (-std=c++17), which also sees");
    w_.line("// the host launch helper " + options_.name + "() below, or give its text to NVRTC (options -std=c++17");
    if (module.uses_half) w_.line("// and -I<CUDA include dir> for cuda_fp16.h), which sees the kernels only, as:");
    else w_.line("// only), which sees the kernels only, as:");
    for (const LaunchStep& step : module.steps) {
      const KernelLaunch& l = step.launch;
      std::string arguments;
      for (const KernelArgument& a : l.arguments) {
        std::string name = a.kind == KernelArgument::Kind::Buffer   ? buffer_text(a.buffer)
                           : a.kind == KernelArgument::Kind::Symbol ? a.symbol
                                                                    : "scratch";
        arguments += (arguments.empty() ? "" : ", ") + name;
      }
      w_.line("//   " + kernel_name(l) + "<<<" + l.grid.to_string() + ", " + std::to_string(l.block) + ", " +
              std::to_string(l.shared_bytes) + ">>>(" + arguments + ")");
    }
    if (module.steps.size() > 1)
      w_.line("// in that order (one stream); the helper launches them so.");
    w_.line("// Not reported here: an integer division by zero or an index read from a tensor out of range (the");
    w_.line("// element gets 0; the kernels set fault flags private to this header, which the helper does not read).");
    w_.line("");
  }

  // A kernel argument as the comment names it: the pointer's name, or where in the workspace.
  std::string buffer_text(int id) const {
    for (const Pointer& p : pointers_)
      if (p.id == id) return p.name;
    for (const auto& [internal, offset] : internal_)
      if (internal == id) return "workspace + " + offset.to_string() + " (" + p_.buffer(id).name + ")";
    KILN_CHECK(false, "buffer ", id, " is neither a pointer nor in the workspace");
  }

  void emit_host_helpers() {
    w_.line("// Size arithmetic of the launch helper (Python's floor division and modulo, max, min).");
    w_.line("namespace " + ns_ + "_host {");
    w_.line("static inline long long kiln_floordiv(long long a, long long b) {");
    w_.line("  long long q = a / b;");
    w_.line("  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;");
    w_.line("}");
    w_.line("static inline long long kiln_mod(long long a, long long b) {");
    w_.line("  long long r = a % b;");
    w_.line("  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;");
    w_.line("}");
    w_.line("static inline long long kiln_imax(long long a, long long b) { return a > b ? a : b; }");
    w_.line("static inline long long kiln_imin(long long a, long long b) { return a < b ? a : b; }");
    w_.line("}  // namespace " + ns_ + "_host");
    w_.line("");
  }

  std::string symbol_parameters() const {
    std::string text;
    for (const std::string& s : p_.symbols) text += (text.empty() ? "" : ", ") + std::string("long long ") + symbol_parameter(s);
    return text;
  }

  void declare_symbols() {
    w_.line("using namespace " + ns_ + "_host;");
    for (const std::string& s : p_.symbols)
      w_.line("const long long " + CPrinter::symbol_variable(s) + " = " + symbol_parameter(s) + ";");
    for (const std::string& s : p_.symbols) w_.line("(void)" + CPrinter::symbol_variable(s) + ";");
  }

  void emit_workspace_function() {
    w_.line("// The bytes of device memory " + options_.name + "() needs as its workspace for these sizes.");
    std::string params = symbol_parameters();
    w_.open("static inline long long " + options_.name + "_workspace_bytes(" + (params.empty() ? "void" : params) + ")");
    declare_symbols();
    w_.line("return " + printer_.index_text(workspace_bytes_) + ";");
    w_.close();
    w_.line("");
  }

  void emit_signature_comment(const CudaModule& module) {
    w_.line("// " + options_.name + "(...): launches the kernels on `stream` and returns cudaGetLastError() (the");
    w_.line("// launches are asynchronous: synchronize the stream before reading the outputs). Pointers: device");
    w_.line("// memory, contiguous row-major tensors aligned to their element type (the kernels use 128-bit");
    w_.line("// accesses where every pointer is 16-byte aligned, checked at run time); inputs are only read.");
    for (const Pointer& p : pointers_) {
      const Buffer& b = p_.buffer(p.id);
      w_.line("//   " + p.name + ": " + (p.input ? "input, " : "output, ") + std::string(dtype_name(b.dtype)) +
              ir::shape_string(b.shape));
    }
    for (const std::string& s : p_.symbols)
      w_.line("//   " + symbol_parameter(s) + ": the size of the symbolic dim " + s + " (>= 0)");
    if (has_workspace())
      w_.line("//   workspace: " + options_.name + "_workspace_bytes(...) bytes of device memory, 64-byte aligned, "
              "not used by another launch meanwhile");
    w_.line("// Threads: blocks of at most " + std::to_string(max_block(module)) + " threads; the grid follows the sizes.");
  }

  int max_block(const CudaModule& module) const {
    int block = 0;
    for (const LaunchStep& step : module.steps) block = std::max(block, step.launch.block);
    return block;
  }

  void emit_launcher(const CudaModule& module) {
    std::string params;
    for (const Pointer& p : pointers_) {
      std::string t = printer_.ctype(p_.buffer(p.id).dtype);
      params += (params.empty() ? "" : ", ") + (p.input ? "const " + t + "* " : t + "* ") + p.name;
    }
    std::string symbols = symbol_parameters();
    if (!symbols.empty()) params += (params.empty() ? "" : ", ") + symbols;
    if (has_workspace()) params += (params.empty() ? "" : ", ") + std::string("void* workspace");
    params += (params.empty() ? "" : ", ") + std::string("cudaStream_t stream = 0");
    w_.open("static inline cudaError_t " + options_.name + "(" + params + ")");
    declare_symbols();
    w_.line("void* bufs[" + std::to_string(std::max<size_t>(p_.buffers.size(), 1)) + "] = {};");
    for (const Pointer& p : pointers_) w_.line("bufs[" + std::to_string(p.id) + "] = (void*)" + p.name + ";");
    for (const auto& [id, offset] : internal_)
      w_.line("bufs[" + std::to_string(id) + "] = (char*)workspace + (" + printer_.index_text(offset) + ");  // " +
              p_.buffer(id).name);
    for (const LaunchStep& step : module.steps) {
      const KernelLaunch& l = step.launch;
      std::string arguments;
      for (const KernelArgument& a : l.arguments) {
        std::string text;
        if (a.kind == KernelArgument::Kind::Buffer)
          text = "(" + printer_.ctype(p_.buffer(a.buffer).dtype) + "*)bufs[" + std::to_string(a.buffer) + "]";
        else if (a.kind == KernelArgument::Kind::Symbol)
          text = CPrinter::symbol_variable(a.symbol);
        else
          text = "(unsigned char*)workspace + (" + printer_.index_text(scratch_offset_) + ")";
        arguments += (arguments.empty() ? "" : ", ") + text;
      }
      w_.open("");
      w_.line("const long long grid = " + printer_.index_text(l.grid) + ";");
      w_.line("if (grid > 0) " + ns_ + "::" + kernel_name(l) + "<<<(unsigned)grid, " + std::to_string(l.block) + ", " +
              std::to_string(l.shared_bytes) + ", stream>>>(" + arguments + ");");
      w_.close();
    }
    w_.line("return cudaGetLastError();");
    w_.close();
  }

  struct Pointer {
    int id = -1;
    bool input = true;
    std::string name;
  };

  const ScheduledProgram& s_;
  const LoopProgram& p_;
  const CudaKernelHeaderOptions& options_;
  HeaderPrinter printer_;
  std::string ns_;
  std::string macro_;
  std::vector<Pointer> pointers_;
  std::vector<int> inputs_, outputs_;
  std::vector<std::pair<int, SymInt>> internal_;  // (buffer, byte offset in the workspace)
  SymInt scratch_offset_ = 0;
  SymInt workspace_bytes_ = 0;
  CSourceWriter w_;
};

}  // namespace

std::string emit_cuda_kernel_header(const ScheduledProgram& scheduled, const CudaKernelHeaderOptions& options) {
  return CudaHeaderWriter(scheduled, options).write();
}

}  // namespace kiln::codegen::cuda
