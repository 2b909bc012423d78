// The CPU backend driver. See compiler/cpu_backend.h.
#include "compiler/cpu_backend.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>

#include "codegen/lowering.h"
#include "compiler/backend_common.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "runtime/artifact_manifest.h"
#include "runtime/checksum.h"
#include "runtime/compile_cache.h"
#include "runtime/error.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif
#ifndef KILN_BLAS_LIBRARY
#define KILN_BLAS_LIBRARY ""
#endif

namespace kiln::compiler {

namespace {

using Clock = std::chrono::steady_clock;

class StageTimer {
 public:
  explicit StageTimer(const CpuCompileOptions& options) : options_(options), start_(Clock::now()) {}
  void done(const std::string& stage) {
    auto now = Clock::now();
    if (options_.on_stage) options_.on_stage(stage, std::chrono::duration<double, std::milli>(now - start_).count());
    start_ = now;
  }

 private:
  const CpuCompileOptions& options_;
  Clock::time_point start_;
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

std::string hex64(uint64_t value) {
  static const char* digits = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[size_t(i)] = digits[value & 15];
  return out;
}

// 128 bits of XXH64 (two seeds) over everything that decides the built module: the generated
// source, the compiler and its flags, the BLAS, the ABI and Kiln's version.
std::string cache_key(const std::string& source, const CpuCompileOptions& options, Isa isa) {
  std::string content = "kiln " KILN_VERSION "\nabi " + std::to_string(kKilnAbiVersion) + "\nisa " +
                        std::string(isa_name(isa)) + "\ncxx " + compiler_command() + "\nfuse " +
                        (options.fuse ? "1" : "0") + "\nblas " KILN_BLAS_LIBRARY "\n";
  for (const std::string& flag : compile_flags(isa)) content += flag + " ";
  content += "\n" + source;
  Checksum64 a(0), b(0x9E3779B97F4A7C15ULL);
  a.update(content.data(), content.size());
  b.update(content.data(), content.size());
  return hex64(a.digest()) + hex64(b.digest());
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

void build_module(const std::filesystem::path& dir, Isa isa, bool uses_blas) {
  std::vector<std::string> argv = {compiler_command()};
  for (const std::string& flag : compile_flags(isa)) argv.push_back(flag);
  argv.insert(argv.end(), {"module.cpp", "-o", "module.so"});
  if (uses_blas) {
    std::string blas = KILN_BLAS_LIBRARY;
    if (blas.empty()) fail("the model has matrix products, and Kiln was built without a BLAS library (install libopenblas-dev and rebuild)");
    argv.push_back(blas);
  }
  int status = run_process(argv, dir, dir / "compile.log");
  if (status == 127) {
    fail("the C++ compiler '", compiler_command(), "' was not found: install g++ or set $CXX to a C++ compiler");
  }
  if (status != 0) {
    fail("the C++ compiler '", compiler_command(), "' failed (exit ", status, ") on the generated code in ",
         (dir / "module.cpp").string(), ":\n", read_head(dir / "compile.log", 20));
  }
}

struct Generated {
  codegen::CppModule module;
  codegen::ScheduledProgram scheduled;
};

Generated generate(const ir::Graph& graph, const CpuCompileOptions& options, StageTimer& timer,
                   const std::string& title) {
  codegen::LoopProgram loops = codegen::lower(graph);
  timer.done("lower");
  codegen::ScheduleOptions schedule_options;
  schedule_options.fuse = options.fuse;
  Generated g;
  g.scheduled = codegen::schedule(std::move(loops), schedule_options);
  timer.done("schedule");
  codegen::CppEmitOptions emit_options;
  emit_options.title = title;
  g.module = codegen::emit_cpp(g.scheduled, emit_options);
  timer.done("codegen");
  return g;
}

ArtifactManifest make_manifest(const codegen::ScheduledProgram& scheduled, const codegen::CppModule& module,
                               Isa isa, const std::string& key) {
  const codegen::LoopProgram& p = scheduled.program;
  ArtifactManifest m;
  m.kiln_version = KILN_VERSION;
  m.isa = isa;
  m.key = key;
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

void copy_artifact(const std::filesystem::path& from, const std::filesystem::path& to, bool overwrite) {
  namespace fs = std::filesystem;
  if (fs::exists(to) && !fs::is_directory(to)) fail("output directory ", to.string(), " is a file");
  if (fs::exists(to) && !fs::is_empty(to) && !overwrite) {
    fail("output directory ", to.string(), " exists and is not empty (pass --force to overwrite it)");
  }
  fs::create_directories(to);
  for (const char* name : {"module.so", "manifest.json", "module.cpp"}) {
    fs::copy_file(from / name, to / name, fs::copy_options::overwrite_existing);
  }
}

}  // namespace

CpuModel::CpuModel(ir::Graph graph, CompiledArtifact artifact, CpuCompileResult result)
    : graph_(std::move(graph)), artifact_(std::move(artifact)), result_(std::move(result)) {
  for (const ArtifactParameter& parameter : artifact_.parameters()) {
    auto it = graph_.parameters().find(parameter.name);
    if (it == graph_.parameters().end()) fail("the model has no parameter '", parameter.name, "'");
    Tensor value = it->second.contiguous();
    if (value.dtype() != parameter.dtype || value.sizes() != parameter.shape) {
      fail("parameter '", parameter.name, "' is ", dtype_name(value.dtype()), " with another shape than the compiled model's");
    }
    parameters_.push_back(value);
  }
}

CpuModel CpuModel::compile(const ir::Graph& graph, const CpuCompileOptions& options) {
  StageTimer timer(options);
  ir::Graph g = simplified_graph(graph, options.freeze);
  timer.done("passes");
  Isa isa = resolve_isa(options.isa);
  std::string title = "a graph of " + std::to_string(g.size()) + " nodes";
  // The key covers the generated source itself, so any change of the code generator gives a
  // new key (generation takes milliseconds; the C++ compile is what the cache saves).
  Generated generated = generate(g, options, timer, title);
  std::string key = cache_key(generated.module.source, options, isa);
  CompileCache cache(options.cache_dir);
  CpuCompileResult result;
  result.key = key;
  result.kernel_count = generated.scheduled.kernels.size();

  auto build_into = [&](const std::filesystem::path& staging) {
    {
      std::ofstream out(staging / "module.cpp", std::ios::binary);
      out << generated.module.source;
      if (!out) fail("cannot write ", (staging / "module.cpp").string());
    }
    write_artifact_manifest(staging / kArtifactManifestFile,
                            make_manifest(generated.scheduled, generated.module, isa, key));
    build_module(staging, isa, generated.module.uses_blas);
    timer.done("c++ compile");
  };

  std::filesystem::path dir;
  if (options.use_cache) {
    if (auto hit = cache.lookup(key)) {
      dir = *hit;
      result.cache_hit = true;
    } else {
      CacheLock lock = cache.lock(key);
      if (auto raced = cache.lookup(key)) {  // another process built it while we waited
        dir = *raced;
        result.cache_hit = true;
      } else {
        std::filesystem::path staging = cache.make_staging_directory();
        build_into(staging);
        dir = cache.publish(key, staging);
      }
    }
    timer.done(result.cache_hit ? "cache hit" : "cache store");
  } else {
    dir = cache.make_staging_directory();
    build_into(dir);
  }
  result.artifact_dir = dir;
  CompiledArtifact artifact = CompiledArtifact::load(dir);
  timer.done("load");
  if (options.output_dir) {
    copy_artifact(dir, *options.output_dir, options.overwrite);
    result.artifact_dir = *options.output_dir;
  }
  return CpuModel(std::move(g), std::move(artifact), std::move(result));
}

std::vector<Tensor> CpuModel::run(const std::map<std::string, Tensor>& inputs, int num_threads) {
  std::map<std::string, int64_t> bindings = ir::bind_symbols(graph_, inputs);
  std::vector<Tensor> ordered;
  for (const ArtifactTensor& input : artifact_.inputs()) {
    auto it = inputs.find(input.name);
    if (it == inputs.end()) fail("missing input '", input.name, "'");
    ordered.push_back(it->second.contiguous());
  }
  FallbackHandler fallback = [&](int index, const std::vector<Tensor>& args, std::vector<Tensor>& outputs) {
    const std::string& name = artifact_.fallbacks().at(size_t(index));
    std::vector<Tensor> results = run_fallback_node(graph_, name, args, bindings);
    KILN_CHECK(results.size() == outputs.size(), "fallback " + name + ": result count");
    for (size_t i = 0; i < results.size(); ++i) outputs[i].copy_from(results[i]);
  };
  std::vector<Tensor> outputs = artifact_.run(ordered, parameters_, fallback, num_threads);
  // Mutated inputs and parameters: the functionalized graph returns their final values as
  // the mutation outputs of its signature; write them back as PyTorch's in-place semantics
  // require, and return the others.
  std::vector<Tensor> returned;
  for (size_t i = 0; i < outputs.size(); ++i) {
    ir::OutputSpec spec = graph_.signature().output(i);
    if (!spec.is_mutation()) {
      returned.push_back(outputs[i]);
    } else if (spec.kind == ir::OutputKind::user_input_mutation) {
      inputs.at(spec.target).copy_from(outputs[i]);
    } else {
      graph_.parameters().at(spec.target).copy_from(outputs[i]);
    }
  }
  return returned;
}

}  // namespace kiln::compiler
