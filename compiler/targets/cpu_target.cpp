// The cpu target: emitter, build step (the system C++ compiler) and loader. See
// compiler/targets/cpu_target.h.
#include "compiler/targets/cpu_target.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "codegen/cpp/cpp_emitter.h"
#include "runtime/checksum.h"
#include "runtime/cpu/artifact_manifest.h"
#include "runtime/cpu/cpu_artifact.h"
#include "runtime/error.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif
#ifndef KILN_BLAS_LIBRARY
#define KILN_BLAS_LIBRARY ""
#endif
// oneDNN, which modules with convolutions link (compiler/CMakeLists.txt; "" when not found:
// convolutions then lower to im2col + GEMM).
#ifndef KILN_DNNL_LIBRARY
#define KILN_DNNL_LIBRARY ""
#endif

namespace kiln::compiler {

namespace {

struct CpuCode final : GeneratedCode {
  codegen::CppModule module;
  ArtifactManifest manifest;  // all but the build's own fields (isa, key, version)
};

std::string compiler_command() {
  const char* cxx = std::getenv("CXX");
  return cxx != nullptr && *cxx != '\0' ? cxx : "c++";
}

std::vector<std::string> compile_flags(Isa isa) {
  std::vector<std::string> flags = {"-O3", "-std=c++17", "-fPIC", "-shared", "-fopenmp", "-fno-math-errno",
                                    "-fno-trapping-math", "-fno-semantic-interposition"};
  for (const std::string& flag : isa_compiler_flags(isa)) flags.push_back(flag);
  return flags;
}

// Runs argv in `directory` with stdout and stderr to `log`; returns the exit status (127 when
// the program could not be started).
int run_process(const std::vector<std::string>& argv, const std::filesystem::path& directory,
                const std::filesystem::path& log) {
  pid_t pid = fork();
  if (pid < 0) fail("cannot start the C++ compiler: fork failed");
  if (pid == 0) {
    if (chdir(directory.c_str()) != 0) _exit(126);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail("cannot wait for the C++ compiler");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string read_head(const std::filesystem::path& file, size_t max_lines) {
  std::ifstream in(file);
  std::string line, out;
  for (size_t i = 0; i < max_lines && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

void build_module(const std::filesystem::path& dir, Isa isa, const codegen::CppModule& module) {
  std::vector<std::string> argv = {compiler_command()};
  for (const std::string& flag : compile_flags(isa)) argv.push_back(flag);
  argv.insert(argv.end(), {"module.cpp", "-o", "module.so"});
  if (module.uses_blas) {
    std::string blas = KILN_BLAS_LIBRARY;
    if (blas.empty()) fail("the model has matrix products, and Kiln was built without a BLAS library (install libopenblas-dev and rebuild)");
    argv.push_back(blas);
  }
  if (module.uses_dnnl) argv.push_back(KILN_DNNL_LIBRARY);  // lowering makes no convolution call without it
  int status = run_process(argv, dir, dir / "compile.log");
  if (status == 127) {
    fail("the C++ compiler '", compiler_command(), "' was not found: install g++ or set $CXX to a C++ compiler");
  }
  if (status != 0) {
    fail("the C++ compiler '", compiler_command(), "' failed (exit ", status, ") on the generated code in ",
         (dir / "module.cpp").string(), ":\n", read_head(dir / "compile.log", 20));
  }
}

// The manifest's graph-facing fields: inputs, outputs, parameters, symbols, fallbacks.
ArtifactManifest manifest_of(const codegen::ScheduledProgram& scheduled, const codegen::CppModule& module) {
  const codegen::LoopProgram& p = scheduled.program;
  ArtifactManifest m;
  for (int id : p.inputs) m.inputs.push_back({p.buffer(id).source, p.buffer(id).dtype, int64_t(p.buffer(id).shape.size())});
  for (int id : p.outputs) {
    m.outputs.push_back({p.buffer(id).source, p.buffer(id).dtype, int64_t(p.buffer(id).shape.size())});
  }
  for (int id : p.parameters) {
    const codegen::Buffer& b = p.buffer(id);
    Sizes shape;
    for (const ir::SymInt& d : b.shape) shape.push_back(d.constant());
    m.parameters.push_back({b.source, b.dtype, shape});
  }
  m.symbols = p.symbols;
  m.fallbacks = module.fallbacks;
  return m;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) fail("cannot write ", path.string());
}

class CpuTarget final : public CodeTarget {
 public:
  std::string_view code_stage() const override { return "cpp"; }
  std::string_view code_stage_summary() const override { return "the generated C++ source"; }

  codegen::LoweringOptions lowering_options() const override {
    codegen::LoweringOptions options;
    options.library_convolution = !std::string_view(KILN_DNNL_LIBRARY).empty();
    return options;
  }

  std::unique_ptr<GeneratedCode> emit(const codegen::ScheduledProgram& scheduled,
                                      const std::optional<std::string>& title,
                                      const CompileOptions& options) const override {
    codegen::CppEmitOptions emit_options;
    if (title) emit_options.title = *title;
    emit_options.constant_parameters = options.freeze;
    auto code = std::make_unique<CpuCode>();
    code->module = codegen::emit_cpp(scheduled, emit_options);
    code->source = code->module.source;
    code->kernel_count = scheduled.kernels.size();
    code->manifest = manifest_of(scheduled, code->module);
    return code;
  }

  std::string dump(const GeneratedCode& code) const override { return code.source; }

  // 128 bits of XXH64 (two seeds) over everything that decides the built module.
  std::string cache_key(const GeneratedCode& code, const CompileOptions& options) const override {
    Isa isa = resolve_isa(options.isa);
    std::string content = "kiln " KILN_VERSION "\nabi " + std::to_string(kKilnAbiVersion) + "\nisa " +
                          std::string(isa_name(isa)) + "\ncxx " + compiler_command() + "\nfuse " +
                          (options.fuse ? "1" : "0") + "\nblas " KILN_BLAS_LIBRARY "\ndnnl " KILN_DNNL_LIBRARY "\n";
    for (const std::string& flag : compile_flags(isa)) content += flag + " ";
    content += "\n" + code.source;
    Checksum64 a(0), b(0x9E3779B97F4A7C15ULL);
    a.update(content.data(), content.size());
    b.update(content.data(), content.size());
    return checksum_hex(a.digest()) + checksum_hex(b.digest());
  }

  void build(const GeneratedCode& generated, const std::string& key, const CompileOptions& options,
             const std::filesystem::path& directory) const override {
    const CpuCode& code = static_cast<const CpuCode&>(generated);
    Isa isa = resolve_isa(options.isa);
    write_text(directory / "module.cpp", code.source);
    ArtifactManifest manifest = code.manifest;
    manifest.kiln_version = KILN_VERSION;
    manifest.isa = isa;
    manifest.key = key;
    write_artifact_manifest(directory / kArtifactManifestFile, manifest);
    build_module(directory, isa, code.module);
  }
  std::string_view build_stage() const override { return "c++ compile"; }
  std::vector<std::string> artifact_files() const override { return {"module.so", kArtifactManifestFile, "module.cpp"}; }

  std::unique_ptr<Artifact> load(const std::filesystem::path& directory) const override {
    return std::make_unique<CpuArtifact>(CpuArtifact::load(directory));
  }
  std::string describe(const GeneratedCode&, const Artifact& artifact) const override {
    return "isa " + std::string(isa_name(static_cast<const CpuArtifact&>(artifact).isa()));
  }
};

}  // namespace

const CodeTarget& cpu_target() {
  static const CpuTarget target;
  return target;
}

}  // namespace kiln::compiler
