// The source files of a package. See codegen/package/package_sources.h.
#include "codegen/package/package_sources.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "codegen/c_like/c_printer.h"
#include "codegen/cpp/prelude.h"
#include "codegen/package/package_texts.h"
#include "kiln/error.h"
#include "runtime/package_abi.h"

namespace kiln::codegen {

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string upper(const std::string& name) {
  std::string out = name;
  for (char& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string shape_text(const PackageTensor& tensor) {
  std::string text = "[";
  for (size_t i = 0; i < tensor.shape.size(); ++i) text += (i ? ", " : "") + tensor.shape[i];
  return text + "]";
}

std::string tensor_table(const std::string& name, const std::vector<PackageTensor>& tensors) {
  std::string text = "const KilnTensorInfo " + name + "[] = {\n";
  for (const PackageTensor& t : tensors) {
    text += "    {" + quoted(t.name) + ", " + std::to_string(int(t.dtype)) + ", " + std::to_string(t.shape.size()) + ", " +
            quoted(shape_text(t)) + "},\n";
  }
  return text + "    {nullptr, 0, 0, nullptr},  // (no array is empty)\n};\n";
}

// Entry points of the kernels built for `isa`: NAME_<isa>_kiln_run, ...
const char* const kEntryPoints[] = {"kiln_abi_version", "kiln_bind", "kiln_output_sizes", "kiln_workspace_bytes", "kiln_run"};

std::string entry(const PackageSpec& spec, Isa isa, const std::string& point) {
  return spec.name + "_" + std::string(isa_name(isa)) + "_" + point;
}

bool is_cuda(const PackageSpec& spec) { return spec.target == "cuda"; }

// The one build of a CUDA package: its host code's entry points (NAME_cuda.cpp).
std::string cuda_table(const PackageSpec& spec) {
  const std::string p = spec.name + "_cuda_";
  return "bool supports_cuda() { return true; }  // create finds out (NAME_cuda_open)\n"
         "const Entries kIsas[] = {\n"
         "    {\"cuda\", supports_cuda, " + p + "kiln_bind, " + p + "kiln_output_sizes, " + p + "kiln_workspace_bytes, nullptr, " +
         p + "open, " + p + "close, " + p + "run_on, " + p + "run_device, " + p + "copy_device},\n};\n";
}

std::string isa_tables(const PackageSpec& spec) {
  if (is_cuda(spec)) return cuda_table(spec);
  std::string text;
  for (Isa isa : spec.isas) {
    text += "bool supports_" + std::string(isa_name(isa)) + "() {\n  return true";
    for (const std::string& flag : isa_compiler_flags(isa)) {
      // -mavx2 -> "avx2"; flags with a value (-mprefer-vector-width=512) are no CPU feature.
      if (flag.rfind("-m", 0) == 0 && flag.find('=') == std::string::npos)
        text += " && cpu_has(" + quoted(flag.substr(2)) + ", __builtin_cpu_supports(" + quoted(flag.substr(2)) + "))";
    }
    text += ";\n}\n";
  }
  text += "const Entries kIsas[] = {\n";
  for (Isa isa : spec.isas) {
    std::string n(isa_name(isa));
    text += "    {" + quoted(n) + ", supports_" + n + ", " + entry(spec, isa, "kiln_bind") + ", " +
            entry(spec, isa, "kiln_output_sizes") + ", " + entry(spec, isa, "kiln_workspace_bytes") + ", " +
            entry(spec, isa, "kiln_run") + ", nullptr, nullptr, nullptr, nullptr, nullptr},\n";
  }
  return text + "};\n";
}

// Which kernel output each output is, and the write-backs (PackageWriteBack).
std::string output_tables(const PackageSpec& spec) {
  const std::vector<PackageTensor>& kernel_outputs = spec.kernel_outputs.empty() ? spec.outputs : spec.kernel_outputs;
  std::string text = tensor_table("kKernelOutputs", kernel_outputs);
  text += "const int64_t kNumKernelOutputs = " + std::to_string(kernel_outputs.size()) + ";\n";
  text += "const int64_t kOutputPositions[] = {";
  for (size_t i = 0; i < spec.outputs.size(); ++i)
    text += std::to_string(spec.output_positions.empty() ? int64_t(i) : spec.output_positions.at(i)) + ", ";
  text += "-1};\n";
  text += "// Kernel outputs copied back after a run: into input `input`, or parameter `parameter`'s own copy.\n"
          "struct WriteBack {\n  int64_t output, input, parameter;\n};\n"
          "const WriteBack kWriteBacks[] = {\n";
  for (const PackageWriteBack& w : spec.write_backs)
    text += "    {" + std::to_string(w.output) + ", " + std::to_string(w.input) + ", " + std::to_string(w.parameter) +
            "},  // " + kernel_outputs.at(size_t(w.output)).name + "\n";
  text += "    {-1, -1, -1},  // (no array is empty)\n};\n";
  text += "const int64_t kNumWriteBacks = " + std::to_string(spec.write_backs.size()) + ";\n";
  return text;
}

std::string tables(const PackageSpec& spec) {
  std::string text = isa_tables(spec) + "\n";
  text += tensor_table("kInputs", spec.inputs) + tensor_table("kOutputs", spec.outputs) + output_tables(spec);
  text += "const Parameter kParameters[] = {\n";
  for (const PackageParameter& p : spec.parameters)
    text += "    {" + quoted(p.name) + ", " + std::to_string(p.offset) + ", " + std::to_string(p.bytes) + "},\n";
  text += "    {nullptr, 0, 0},  // (no array is empty)\n};\n";
  text += "const int64_t kNumInputs = " + std::to_string(spec.inputs.size()) + ";\n";
  text += "const int64_t kNumOutputs = " + std::to_string(spec.outputs.size()) + ";\n";
  text += "const int64_t kNumParameters = " + std::to_string(spec.parameters.size()) + ";\n";
  text += "const int64_t kNumSymbols = " + std::to_string(spec.symbol_count) + ";\n";
  text += "const uint64_t kWeightsBytes = " + std::to_string(spec.weights_bytes) + "ULL;\n";
  text += "const uint64_t kWeightsChecksum = " + std::to_string(spec.weights_checksum) + "ULL;";
  return text;
}

std::string entry_declarations(const PackageSpec& spec) {
  if (is_cuda(spec)) {
    const std::string p = spec.name + "_cuda_";
    return "int32_t " + p + "kiln_bind(const KilnTensorDesc* inputs, int64_t num_inputs, int64_t* symbols, char* error, int64_t capacity);\n"
           "void " + p + "kiln_output_sizes(const int64_t* symbols, int64_t* sizes);\n"
           "int64_t " + p + "kiln_workspace_bytes(const int64_t* symbols);\n"
           "void* " + p + "open(void* const* parameters, const int64_t* parameter_bytes, int64_t count, char* error, int64_t capacity);\n"
           "void " + p + "close(void* device);\n"
           "int32_t " + p + "run_on(void* device, const KilnRunArgs* args);\n"
           "int32_t " + p + "run_device(void* device, const KilnRunArgs* args, void* stream, void** outputs);\n"
           "int32_t " + p + "copy_device(void* device, void* to, const void* from, int64_t bytes, char* error, int64_t capacity);\n";
  }
  std::string text;
  for (Isa isa : spec.isas) {
    text += "int32_t " + entry(spec, isa, "kiln_bind") +
            "(const KilnTensorDesc* inputs, int64_t num_inputs, int64_t* symbols, char* error, int64_t capacity);\n";
    text += "void " + entry(spec, isa, "kiln_output_sizes") + "(const int64_t* symbols, int64_t* sizes);\n";
    text += "int64_t " + entry(spec, isa, "kiln_workspace_bytes") + "(const int64_t* symbols);\n";
    text += "int32_t " + entry(spec, isa, "kiln_run") + "(const KilnRunArgs* args);\n";
  }
  return text;
}

std::string embedded_weights(const PackageSpec& spec) {
  if (!spec.embed_weights) return "static const unsigned char* const kEmbeddedWeights = nullptr;";
  std::string symbol = spec.name + "_embedded_weights";
  // The assembler finds the file through the -Wa,-I folder the build passes (the package's).
  return "// The weights file, in the library (--embed-weights).\n"
         "extern \"C\" const unsigned char " + symbol + "[];\n"
         "__asm__(\".section .rodata\\n.balign 64\\n.globl " + symbol + "\\n.hidden " + symbol + "\\n" + symbol +
         ":\\n.incbin \\\"" + spec.name + ".safetensors\\\"\\n.previous\\n\");\n"
         "static const unsigned char* const kEmbeddedWeights = " + symbol + ";";
}

std::string describe(const PackageSpec& spec) {
  std::string text = "Inputs:";
  for (const PackageTensor& t : spec.inputs) text += " " + t.name + " " + std::string(dtype_name(t.dtype)) + shape_text(t) + ";";
  text += "\n// Outputs:";
  for (const PackageTensor& t : spec.outputs) text += " " + t.name + " " + std::string(dtype_name(t.dtype)) + shape_text(t) + ";";
  std::string written;
  for (const PackageWriteBack& w : spec.write_backs)
    if (w.input >= 0) written += " " + spec.inputs.at(size_t(w.input)).name + ";";
  if (!written.empty()) text += "\n// Inputs written in place by each run (as the model's in-place ops write them):" + written;
  size_t buffers = 0;
  for (const PackageWriteBack& w : spec.write_backs) buffers += w.parameter >= 0 ? 1 : 0;
  if (buffers > 0)
    text += "\n// Buffers each run updates (" + std::to_string(buffers) + "), kept per model: later runs read them.";
  if (is_cuda(spec)) {
    text += "\n// Device: CUDA (" + spec.cuda_architecture + " device code in " + spec.device_image_file + ", in the library)";
  } else {
    text += "\n// Instruction sets:";
    for (Isa isa : spec.isas) text += " " + std::string(isa_name(isa));
  }
  text += spec.embed_weights ? ". Weights: in the library, and in " + spec.name + ".safetensors."
                             : ". Weights: " + spec.name + ".safetensors (" + std::to_string(spec.weights_bytes) + " bytes).";
  return text;
}

// A CUDA package's: the API and the host code, with the device code the package step built
// (.incbin'ed); no CUDA library is linked (the driver and cuBLAS are loaded at run time).
std::string cuda_cmake_file(const PackageSpec& spec) {
  const std::string& n = spec.name;
  std::string text =
      "# " + n + ": a model compiled by Kiln " + spec.kiln_version + " from " + spec.source +
      " for CUDA (" + spec.cuda_architecture + "). Generated: do not edit.\n"
      "# add_subdirectory(<this folder>) gives the static library target " + n +
      " (include " + n + ".h); nothing of Kiln is needed, and nothing of CUDA at build time:\n"
      "# the driver (and cuBLAS) are loaded when a model is created. The device code, " + spec.device_image_file +
      ", was built from " + n + "_kernels.cu.\n"
      "cmake_minimum_required(VERSION 3.16)\n"
      "project(" + n + " LANGUAGES CXX)\n"
      "add_library(" + n + " STATIC " + n + ".cpp " + n + "_cuda.cpp)\n"
      "target_compile_features(" + n + " PRIVATE cxx_std_17)\n"
      "target_compile_options(" + n + " PRIVATE -O2 -fvisibility=hidden \"-Wa,-I${CMAKE_CURRENT_SOURCE_DIR}\")\n"
      "target_include_directories(" + n + " PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n"
      "target_link_libraries(" + n + " PUBLIC ${CMAKE_DL_LIBS})\n"
      "set_target_properties(" + n + " PROPERTIES POSITION_INDEPENDENT_CODE ON)\n"
      "set_property(SOURCE " + n + "_cuda.cpp APPEND PROPERTY OBJECT_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/" +
      spec.device_image_file + ")\n";
  if (spec.embed_weights)
    text += "set_property(SOURCE " + n + ".cpp APPEND PROPERTY OBJECT_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/" + n + ".safetensors)\n";
  return text;
}

std::string cmake_file(const PackageSpec& spec) {
  if (is_cuda(spec)) return cuda_cmake_file(spec);
  const std::string& n = spec.name;
  std::string text =
      "# " + n + ": a model compiled by Kiln " + spec.kiln_version + " from " + spec.source +
      ". Generated: do not edit.\n"
      "# add_subdirectory(<this folder>) gives the static library target " + n +
      " (include " + n + ".h); nothing of Kiln is needed.\n"
      "cmake_minimum_required(VERSION 3.16)\n"
      "project(" + n + " LANGUAGES CXX)\n"
      "find_package(OpenMP REQUIRED)\n"
      "add_library(" + n + " STATIC " + n + ".cpp";
  for (Isa isa : spec.isas) text += " " + n + "_" + std::string(isa_name(isa)) + ".cpp";
  text += ")\n";
  for (Isa isa : spec.isas) {
    std::string flags;
    for (const std::string& flag : isa_compiler_flags(isa)) flags += (flags.empty() ? "" : ";") + flag;
    if (!flags.empty())
      text += "set_source_files_properties(" + n + "_" + std::string(isa_name(isa)) + ".cpp PROPERTIES COMPILE_OPTIONS \"" +
              flags + "\")\n";
  }
  text += "target_compile_features(" + n + " PRIVATE cxx_std_17)\n"
          "target_compile_options(" + n + " PRIVATE -O3 -fno-math-errno -fno-trapping-math -fvisibility=hidden)\n"
          "target_include_directories(" + n + " PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n"
          "target_link_libraries(" + n + " PUBLIC OpenMP::OpenMP_CXX)\n"
          "set_target_properties(" + n + " PROPERTIES POSITION_INDEPENDENT_CODE ON)\n";
  if (spec.embed_weights) {
    text += "target_compile_options(" + n + " PRIVATE \"-Wa,-I${CMAKE_CURRENT_SOURCE_DIR}\")\n"
            "set_property(SOURCE " + n + ".cpp APPEND PROPERTY OBJECT_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/" + n +
            ".safetensors)\n";
  }
  if (spec.uses_blas) {
    text += "# The kernels call CBLAS (cblas_sgemm): the BLAS Kiln used when it exists here, else CMake's FindBLAS.\n"
            "set(" + n + "_BLAS_LIBRARY \"" + spec.blas_library + "\" CACHE FILEPATH \"The CBLAS library " + n + " links\")\n"
            "if(EXISTS \"${" + n + "_BLAS_LIBRARY}\")\n"
            "  target_link_libraries(" + n + " PUBLIC \"${" + n + "_BLAS_LIBRARY}\")\n"
            "else()\n"
            "  find_package(BLAS REQUIRED)\n"
            "  target_link_libraries(" + n + " PUBLIC BLAS::BLAS)\n"
            "endif()\n";
  }
  if (spec.uses_dnnl && spec.portable_kernels) {
    text += "# The convolutions run through oneDNN (libdnnl-dev) where it is found and " + n + "_ONEDNN is on, as\n"
            "# `kiln run` does; else as im2col + GEMM (" + n + "_kernels_portable.inc), which needs nothing more.\n"
            "option(" + n + "_ONEDNN \"Run " + n + "'s convolutions through oneDNN when it is installed\" ON)\n"
            "if(" + n + "_ONEDNN)\n"
            "  find_library(" + n + "_DNNL_LIBRARY dnnl)\n"
            "  find_path(" + n + "_DNNL_INCLUDE oneapi/dnnl/dnnl.h)\n"
            "endif()\n"
            "if(" + n + "_ONEDNN AND " + n + "_DNNL_LIBRARY AND " + n + "_DNNL_INCLUDE)\n"
            "  target_include_directories(" + n + " PRIVATE \"${" + n + "_DNNL_INCLUDE}\")\n"
            "  target_link_libraries(" + n + " PUBLIC \"${" + n + "_DNNL_LIBRARY}\")\n"
            "else()\n"
            "  target_compile_definitions(" + n + " PRIVATE " + upper(n) + "_PORTABLE_KERNELS)\n"
            "endif()\n";
  } else if (spec.uses_dnnl) {
    text += "# The convolutions run through oneDNN (libdnnl-dev).\n"
            "find_library(" + n + "_DNNL_LIBRARY dnnl REQUIRED)\n"
            "target_link_libraries(" + n + " PUBLIC \"${" + n + "_DNNL_LIBRARY}\")\n";
  }
  return text;
}

// What differs in the API's comments between a cpu and a CUDA package.
std::string backend_doc(const PackageSpec& spec) {
  if (is_cuda(spec))
    return "The kernels (@NAME@_kernels.cu) run on the GPU from the device code built at package time\n"
           "// (" + spec.device_image_file + ", in the library); @NAME@_cuda.cpp, their host side, checks the guards and\n"
           "// launches them in the launch plan's order through the CUDA driver, which create loads (dlopen).";
  return "The kernels (@NAME@_kernels.inc) are compiled once per instruction set (@NAME@_<isa>.cpp),\n"
         "// their entry points renamed per set; create picks the best set the CPU runs (or $KILN_ISA).\n"
         "// The nodes the code generator does not lower run on the math of Kiln's reference kernels,\n"
         "// compiled in below.";
}

std::string run_doc(const PackageSpec& spec) {
  if (is_cuda(spec))
    return "The kernels run on GPU 0, on one stream per model. @NAME@_run takes host memory,\n"
           "// copied to and from the GPU in each run; @NAME@_run_device takes and gives device memory.";
  return "The kernels run on OpenMP threads (@NAME@_set_num_threads).";
}

std::string create_doc(const PackageSpec& spec) {
  if (is_cuda(spec))
    return "loads the CUDA driver (dlopen: nothing of CUDA is linked),\n"
           "// opens GPU 0 and copies the weights there (KILN_NO_DEVICE, with the reason, when it cannot).";
  return "picks the best instruction set of the CPU among those\n"
         "// built (AVX-512, AVX2, scalar; $KILN_ISA forces one; the test hook $KILN_HIDE_CPU_FEATURES,\n"
         "// \"avx512f,avx2\", treats the CPU features it lists as missing).";
}

std::string link_note(const PackageSpec& spec) {
  if (is_cuda(spec)) return " (with -ldl; the CUDA driver and cuBLAS are loaded at run time)";
  return std::string(" (with -fopenmp") + (spec.uses_blas ? ", a CBLAS" : "") + (spec.uses_dnnl ? ", oneDNN (-ldnnl)" : "") + ")" +
         (spec.portable_kernels ? "; a CMake build without oneDNN (or with -D@NAME@_ONEDNN=OFF) compiles the im2col + "
                                  "GEMM convolutions of @NAME@_kernels_portable.inc instead, which need only OpenMP and a CBLAS"
                                : "");
}

}  // namespace

std::string compiled_abi_text() {
  std::string_view prelude = cpp_prelude();
  size_t begin = prelude.find("// ---------------------------------------------------------------- compiled-artifact ABI");
  size_t end = prelude.find("#define KILN_INLINE");
  KILN_CHECK(begin != std::string_view::npos && end != std::string_view::npos && begin < end,
             "the cpu prelude's ABI block was not found");
  return std::string(prelude.substr(begin, end - begin));
}

bool is_reserved_package_name(const std::string& name) {
  // C++20's keywords and alternative tokens, C's keywords and the macros of its standard headers
  // that a package's sources include (the name becomes a namespace, a class prefix and a macro
  // prefix), and the names the package itself uses.
  static const std::set<std::string> reserved = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char8_t", "char16_t", "char32_t", "class", "co_await", "co_return", "co_yield", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "decltype", "default", "delete", "do",
      "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend",
      "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
      "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "requires",
      "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch",
      "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union",
      "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "restrict", "final",
      "override", "import", "module", "NULL", "EOF", "errno", "stdin", "stdout", "stderr", "assert", "offsetof",
      "kiln", "Kiln", "main", "std"};
  // Identifiers that start with '_' and a capital or hold "__" belong to the implementation.
  bool implementation = name.find("__") != std::string::npos ||
                        (name.size() > 1 && name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1])));
  return implementation || reserved.count(name) != 0;
}

void check_package_name(const std::string& name) {
  bool identifier = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) identifier = identifier && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!identifier)
    fail("package name '", name, "' is not a C identifier (letters, digits and '_', not starting with a digit); ",
         "every symbol of the package starts with it (pass --name)");
  if (is_reserved_package_name(name))
    fail("package name '", name, "' is a C or C++ keyword or a name the package's sources reserve; every symbol of ",
         "the package starts with it (pass another --name)");
  if (name.size() > 64) fail("package name '", name, "' is longer than 64 characters (pass a shorter --name)");
}

std::map<std::string, std::string> package_files(const PackageSpec& spec, const std::string& module_source,
                                                 const std::string& portable_source) {
  check_package_name(spec.name);
  KILN_CHECK(is_cuda(spec) || !spec.isas.empty(), "a package needs at least one instruction set");
  KILN_CHECK(!is_cuda(spec) || !spec.cuda_host_source.empty(), "a CUDA package needs its host code");
  std::map<std::string, std::string> files;
  const std::string& n = spec.name;
  std::string version = std::to_string(KILN_PACKAGE_ABI);
  auto fill = [&](std::string text) {
    text = replace_all(std::move(text), "@ABI_TYPES@", std::string(package_abi_text()));
    text = replace_all(std::move(text), "@ABI@", compiled_abi_text());
    text = replace_all(std::move(text), "@BACKEND_DOC@", backend_doc(spec));
    text = replace_all(std::move(text), "@RUN_DOC@", run_doc(spec));
    text = replace_all(std::move(text), "@CREATE_DOC@", create_doc(spec));
    text = replace_all(std::move(text), "@TABLES@", tables(spec));
    text = replace_all(std::move(text), "@ENTRY_DECLARATIONS@", entry_declarations(spec));
    text = replace_all(std::move(text), "@EMBEDDED@", embedded_weights(spec));
    text = replace_all(std::move(text), "@FALLBACKS@",
                       spec.fallback_handler.empty() ? "static const KilnFallbackFn kFallback = nullptr;  // no fallback nodes"
                                                     : spec.fallback_handler);
    text = replace_all(std::move(text), "@DOC@", describe(spec));
    text = replace_all(std::move(text), "@NUM_INPUTS@", std::to_string(spec.inputs.size()));
    text = replace_all(std::move(text), "@NUM_OUTPUTS@", std::to_string(spec.outputs.size()));
    text = replace_all(std::move(text), "@LINK_NOTE@", link_note(spec));
    text = replace_all(std::move(text), "@PACKAGE_ABI@", version);
    text = replace_all(std::move(text), "@KILN_VERSION@", spec.kiln_version);
    text = replace_all(std::move(text), "@SOURCE@", spec.source);
    text = replace_all(std::move(text), "@NAME_UPPER@", upper(n));
    return replace_all(std::move(text), "@NAME@", n);
  };
  files[n + ".h"] = fill(std::string(package_header_text()));
  files[n + ".cpp"] = fill(std::string(package_wrapper_text()));
  files["CMakeLists.txt"] = cmake_file(spec);
  if (is_cuda(spec)) {
    files[n + "_kernels.cu"] = module_source;
    files[n + "_cuda.cpp"] = spec.cuda_host_source;
    return files;
  }
  files[n + "_kernels.inc"] = module_source;
  if (spec.portable_kernels) {
    KILN_CHECK(spec.uses_dnnl && !portable_source.empty(), "portable kernels come beside oneDNN's");
    files[n + "_kernels_portable.inc"] = portable_source;
  }
  for (Isa isa : spec.isas) {
    std::string text = "// " + n + "_" + std::string(isa_name(isa)) + ".cpp: the kernels of " + n +
                       " built for the " + std::string(isa_name(isa)) + " instruction set";
    std::string flags;
    for (const std::string& flag : isa_compiler_flags(isa)) flags += " " + flag;
    text += flags.empty() ? " (no flags)" : " (" + flags.substr(1) + ")";
    text += ", their entry points renamed. Generated: do not edit.\n";
    for (const char* point : kEntryPoints) text += "#define " + std::string(point) + " " + entry(spec, isa, point) + "\n";
    text += "#define KILN_KERNEL static  // each instruction set's kernels, pool and fault flags are its own\n"
            "#define KILN_MODULE_STATE static\n";
    if (spec.portable_kernels) {
      text += "// " + upper(n) + "_PORTABLE_KERNELS (CMakeLists.txt defines it where oneDNN is not found): the im2col +\n"
              "// GEMM convolutions, which need no oneDNN; else oneDNN's.\n"
              "#ifdef " + upper(n) + "_PORTABLE_KERNELS\n#include \"" + n + "_kernels_portable.inc\"\n#else\n#include \"" + n +
              "_kernels.inc\"\n#endif\n";
    } else {
      text += "#include \"" + n + "_kernels.inc\"\n";
    }
    files[n + "_" + std::string(isa_name(isa)) + ".cpp"] = text;
  }
  return files;
}

}  // namespace kiln::codegen
