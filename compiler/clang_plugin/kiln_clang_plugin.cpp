// Kiln's in-process C++ compiler: Clang's and LLD's libraries behind the C interface of
// compiler/clang_plugin/kiln_clang_plugin.h.
//
// The clang driver's own logic turns flags into a compiler invocation (the target features of
// -mavx512f, the include paths of the GCC installation, the resource directory) and into the
// linker's command line (crtbeginS.o, -lgcc, -lc, ...), exactly as the clang executable would; the
// front end, LLVM's optimizer and the object writer then run here, and LLD links in this process.
// Each build has its own CompilerInstance and LLVMContext, so builds on several threads run at
// once; LLD keeps global state, so links take a lock.
#include "compiler/clang_plugin/kiln_clang_plugin.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/Version.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Driver/Job.h>
#include <clang/Driver/Tool.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Frontend/FrontendDiagnostic.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <lld/Common/Driver.h>
#include <lld/Common/ErrorHandler.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ADT/IntrusiveRefCntPtr.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#ifndef KILN_CLANG_EXECUTABLE
#error "KILN_CLANG_EXECUTABLE (the clang of these libraries) must be defined"
#endif
#ifndef KILN_CLANG_RESOURCE_DIR
#error "KILN_CLANG_RESOURCE_DIR (Clang's builtin headers) must be defined"
#endif

namespace {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeX86AsmParser();
  });
}

void copy_log(const std::string& text, char* log, size_t capacity) {
  if (log == nullptr || capacity == 0) return;
  size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  std::memcpy(log, text.data(), n);
  log[n] = '\0';
}

// Diagnostics printed as the clang executable prints them ("module.cpp:12:3: error: ..."), into `out`.
llvm::IntrusiveRefCntPtr<clang::DiagnosticsEngine> diagnostics_into(llvm::raw_ostream& out) {
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> options = new clang::DiagnosticOptions();
  options->ShowColors = false;
  auto* printer = new clang::TextDiagnosticPrinter(out, options.get());
  llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs> ids(new clang::DiagnosticIDs());
  return new clang::DiagnosticsEngine(ids, options, printer, /*ShouldOwnClient=*/true);
}

// The driver's command line: the clang of these libraries, its builtin headers, the flags.
std::vector<const char*> driver_arguments(const char* const* flags, int flag_count) {
  std::vector<const char*> args = {KILN_CLANG_EXECUTABLE, "-resource-dir", KILN_CLANG_RESOURCE_DIR};
  for (int i = 0; i < flag_count; ++i) args.push_back(flags[i]);
  return args;
}

// Runs `action` on the invocation the driver makes of `args`, with `source_name` read from
// `text` (in memory). False when the invocation cannot be made or the action fails; the
// diagnostics are in `diagnostics`' stream.
bool run_frontend(const std::vector<const char*>& args, const char* source_name, const char* text, size_t size,
                  clang::FrontendAction& action, llvm::IntrusiveRefCntPtr<clang::DiagnosticsEngine> diagnostics) {
  // The compile job the driver makes of `args` (createInvocationFromCommandLine would turn it
  // into a syntax check), checked to be the one cc1 job, then parsed into an invocation.
  clang::driver::Driver driver(KILN_CLANG_EXECUTABLE, llvm::sys::getDefaultTargetTriple(), *diagnostics);
  driver.setCheckInputsExist(false);
  std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(args));
  if (!compilation || diagnostics->hasErrorOccurred()) return false;
  const clang::driver::JobList& jobs = compilation->getJobs();
  if (jobs.size() != 1 || llvm::StringRef(jobs.begin()->getCreator().getName()) != "clang") {
    diagnostics->Report(clang::diag::err_fe_expected_compiler_job) << "the generated code's flags";
    return false;
  }
  const llvm::opt::ArgStringList& cc1 = jobs.begin()->getArguments();
  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, llvm::makeArrayRef(cc1).drop_front(), *diagnostics,
                                                 KILN_CLANG_EXECUTABLE))
    return false;
  invocation->getPreprocessorOpts().addRemappedFile(
      source_name, llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(text, size), source_name).release());
  invocation->getFrontendOpts().DisableFree = false;
  // A precompiled header's own source was compiled from memory and is nowhere on disk: its
  // input files are not checked (the PCH's cache key holds its text, flags and compiler; the
  // language options are still compared).
  if (!invocation->getPreprocessorOpts().ImplicitPCHInclude.empty())
    invocation->getPreprocessorOpts().DisablePCHOrModuleValidation = clang::DisableValidationForModuleKind::PCH;
  clang::CompilerInstance compiler;
  compiler.setInvocation(std::move(invocation));
  // ExecuteAction prints "N warnings generated." to this stream, stderr by default: the warnings
  // themselves are in `diagnostics`' stream, and Kiln's user sees neither unless the build fails.
  compiler.setVerboseOutputStream(llvm::nulls());
  compiler.createDiagnostics(diagnostics->getClient(), /*ShouldOwnClient=*/false);
  if (!compiler.hasDiagnostics()) return false;
  return compiler.ExecuteAction(action) && compiler.getDiagnostics().getNumErrors() == 0;
}

// The linker's command line the driver makes for `clang -shared OBJECTS... -o OUTPUT INPUTS...`
// (start files, library paths, the C library), as LLD takes it.
bool link_arguments(const char* const* objects, int object_count, const char* output_path,
                    const char* const* link_inputs, int link_input_count, std::vector<std::string>& out,
                    llvm::raw_ostream& log) {
  std::vector<const char*> args = {KILN_CLANG_EXECUTABLE, "-resource-dir", KILN_CLANG_RESOURCE_DIR, "-shared", "-Wl,-O1"};
  for (int i = 0; i < object_count; ++i) args.push_back(objects[i]);
  args.insert(args.end(), {"-o", output_path});
  for (int i = 0; i < link_input_count; ++i) args.push_back(link_inputs[i]);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticsEngine> diagnostics = diagnostics_into(log);
  clang::driver::Driver driver(KILN_CLANG_EXECUTABLE, llvm::sys::getDefaultTargetTriple(), *diagnostics);
  std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(args));
  if (!compilation || diagnostics->hasErrorOccurred()) return false;
  const clang::driver::JobList& jobs = compilation->getJobs();
  if (jobs.size() != 1) {
    log << "the clang driver made " << jobs.size() << " jobs for a link, expected 1\n";
    return false;
  }
  const clang::driver::Command& link = *jobs.begin();
  out = {"ld.lld"};
  for (const char* arg : link.getArguments()) out.push_back(arg);
  return true;
}

std::mutex& linker_lock() {
  static std::mutex lock;
  return lock;
}

// Links as link_arguments says, with LLD in this process; its messages go to `stream`.
int link_shared(const char* const* objects, int object_count, const char* output_path, const char* const* link_inputs,
                int link_input_count, llvm::raw_ostream& stream) {
  std::vector<std::string> link;
  if (!link_arguments(objects, object_count, output_path, link_inputs, link_input_count, link, stream))
    return KILN_CLANG_FAILED;
  std::vector<const char*> link_args;
  for (const std::string& arg : link) link_args.push_back(arg.c_str());
  std::lock_guard<std::mutex> hold(linker_lock());
  bool linked = lld::elf::link(link_args, stream, stream, /*exitEarly=*/false, /*disableOutput=*/false);
  // LLD 14 frees its link's state (input and output sections, the symbol table's arena) only
  // when it exits the process; the next link in this process needs it gone, and no errors
  // counted.
  if (lld::errorHandler().cleanupCallback) lld::errorHandler().cleanupCallback();
  lld::errorHandler().errorCount = 0;
  return linked ? KILN_CLANG_OK : KILN_CLANG_LINK_ERROR;
}

}  // namespace

extern "C" {

int kiln_clang_abi(void) { return KILN_CLANG_PLUGIN_ABI; }

const char* kiln_clang_identity(void) {
  // LLD is versioned with LLVM (Debian's liblld lacks the header that says it).
  static const std::string identity = "clang " + std::string(CLANG_VERSION_STRING) + ", LLD " + LLVM_VERSION_STRING;
  return identity.c_str();
}

const char* kiln_clang_unavailable(void) {
  struct stat info;
  if (stat(KILN_CLANG_RESOURCE_DIR "/include/stddef.h", &info) != 0)
    return "Clang's builtin headers are missing (" KILN_CLANG_RESOURCE_DIR "/include; Debian package libclang-common-14-dev)";
  return nullptr;
}

int kiln_clang_make_pch(const char* header_name, const char* header_text, size_t header_size,
                        const char* const* flags, int flag_count, const char* pch_path, char* log,
                        size_t log_capacity) {
  initialize_llvm();
  std::string text;
  llvm::raw_string_ostream stream(text);
  std::vector<const char*> args = driver_arguments(flags, flag_count);
  args.insert(args.end(), {"-x", "c++-header", header_name, "-o", pch_path});
  clang::GeneratePCHAction action;
  bool ok = run_frontend(args, header_name, header_text, header_size, action, diagnostics_into(stream));
  stream.flush();
  copy_log(text, log, log_capacity);
  return ok ? KILN_CLANG_OK : KILN_CLANG_SOURCE_ERROR;
}

int kiln_clang_build(const KilnClangBuild* build) {
  initialize_llvm();
  std::string text;
  llvm::raw_string_ostream stream(text);
  std::vector<const char*> args = driver_arguments(build->flags, build->flag_count);
  if (build->pch != nullptr) args.insert(args.end(), {"-include-pch", build->pch});
  args.insert(args.end(), {"-c", "-x", "c++", build->source_name, "-o", build->object_path});
  clang::EmitObjAction action;
  if (!run_frontend(args, build->source_name, build->source_text, build->source_size, action,
                    diagnostics_into(stream))) {
    stream.flush();
    copy_log(text, build->log, build->log_capacity);
    return text.find("error:") != std::string::npos ? KILN_CLANG_SOURCE_ERROR : KILN_CLANG_FAILED;
  }
  if (build->output_path == nullptr) {
    stream.flush();
    copy_log(text, build->log, build->log_capacity);
    return KILN_CLANG_OK;
  }
  int status = link_shared(&build->object_path, 1, build->output_path, build->link_inputs, build->link_input_count,
                           stream);
  stream.flush();
  copy_log(text, build->log, build->log_capacity);
  return status;
}

int kiln_clang_link(const char* const* objects, int object_count, const char* output_path,
                    const char* const* link_inputs, int link_input_count, char* log, size_t log_capacity) {
  initialize_llvm();
  std::string text;
  llvm::raw_string_ostream stream(text);
  int status = link_shared(objects, object_count, output_path, link_inputs, link_input_count, stream);
  stream.flush();
  copy_log(text, log, log_capacity);
  return status;
}

}  // extern "C"
