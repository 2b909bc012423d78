// The cpu target: emitter, build step (the system C++ compiler) and loader. See
// compiler/targets/cpu_target.h.
#include "compiler/targets/cpu_target.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>

#include <fstream>

#include "codegen/cpp/cpp_emitter.h"
#include "compiler/backend_common.h"
#include "compiler/targets/cpu_package.h"
#include "compiler/targets/cpu_toolchain.h"
#include "compiler/targets/in_process_compiler.h"
#include "compiler/targets/link_stubs.h"
#include "compiler/targets/package_build.h"
#include "compiler/testing_fault_injection.h"
#include "runtime/atomic_file.h"
#include "runtime/checksum.h"
#include "runtime/compile_cache.h"
#include "runtime/log.h"
#include "runtime/cpu/artifact_manifest.h"
#include "runtime/cpu/cpu_artifact.h"
#include "kiln/error.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln::compiler {

namespace {

struct CpuCode final : GeneratedCode {
  bool uses_library() const override { return module.uses_dnnl; }
  codegen::CppModule module;
  ArtifactManifest manifest;  // all but the build's own fields (isa, key, version)
  std::vector<codegen::PackageTensor> inputs, outputs;  // with their shapes, for packages
  int64_t batch_chunks = 1;  // LoopProgram::batch_chunks
};

// The libraries `module` calls into.
std::vector<std::string> module_libraries(const codegen::CppModule& module) {
  std::vector<std::string> libraries = {openmp_library()};
  if (module.uses_blas) {
    if (blas_library().empty()) fail("the model has matrix products, and Kiln was built without a BLAS library (install libopenblas-dev and rebuild)");
    libraries.push_back(blas_library());
  }
  if (module.uses_dnnl) libraries.push_back(dnnl_library());  // lowering makes no convolution call without it
  return libraries;
}

// The flags of a module built by the in-process compiler: the system compiler's, no loop
// unrolling beyond what the vectorizer does, and multiplies and adds fused across statements as
// GCC fuses them by default. Clang's -O3 unrolls loops GCC's -O3 leaves alone; on the attention
// sample that was 272 ms of compile instead of 166. Clang fuses only within one expression by
// default, and the polynomials of the prelude's exp, erf and tanh are written in statements: the
// attention sample's softmax ran 7% slower than g++'s (bench/README.md, "In-process compilation").
std::vector<std::string> in_process_flags(Isa isa) {
  std::vector<std::string> flags = generated_code_flags(isa);
  flags.push_back("-fno-unroll-loops");
  flags.push_back("-ffp-contract=fast");
  return flags;
}

// The flags of a module's units when its prelude is precompiled: the pool's code is then not in
// the units but in the prelude entry's runner.o (codegen/cpp/kiln_thread_pool.h), compiled once
// per cache: ~12 ms of each unit's compile (bench/README.md, "Cold compile latency").
std::vector<std::string> runner_separate(std::vector<std::string> flags) {
  flags.push_back("-DKILN_RUNNER_SEPARATE");
  return flags;
}

// What a module built in units with the precompiled prelude takes from the compile cache: the
// precompiled header of its fixed text and the object of the pool's code (runner.o).
struct PrecompiledPrelude {
  std::filesystem::path header, runner_object;
};

// The precompiled prelude of the text `module` starts with (its fixed text) for `flags` (with
// KILN_RUNNER_SEPARATE), from the compile cache, made there when missing (`made`); std::nullopt
// (logged) when it cannot be made: the module is then compiled whole.
std::optional<PrecompiledPrelude> precompiled_prelude(const InProcessCompiler& compiler,
                                                         const codegen::CppModule& module,
                                                         const std::vector<std::string>& flags,
                                                         const std::optional<std::filesystem::path>& cache_dir,
                                                         bool* made = nullptr) {
  if (module.fixed_end <= module.fixed_begin) return std::nullopt;
  const std::string fixed = module.source.substr(module.fixed_begin, module.fixed_end - module.fixed_begin);
  try {
    CompileCache cache(cache_dir);
    CacheEntry entry = cache.get_or_build(precompiled_header_key(compiler, fixed, flags), [&](const std::filesystem::path& staging) {
      compiler.make_pch(fixed, "kiln_module_prelude.h", flags, staging / "prelude.pch");
      compiler.compile_object("#define KILN_RUNNER_DEFINITIONS 1\n" + fixed, "kiln_module_runner.cpp", flags,
                              staging / "runner.o");
    });
    if (std::string damage = cache.last_damage(); !damage.empty())
      log("cache", "the precompiled prelude entry " + damage + "; it was rebuilt, not used");
    if (made != nullptr) *made = !entry.hit;
    return PrecompiledPrelude{entry.directory / "prelude.pch", entry.directory / "runner.o"};
  } catch (const Error& error) {
    log("cache", std::string("no precompiled prelude (") + error.what() + "): the module is compiled whole");
  } catch (const std::filesystem::filesystem_error& error) {
    log("cache", std::string("no precompiled prelude (") + error.what() + "): the module is compiled whole");
  }
  return std::nullopt;
}

// How many translation units the in-process compiler splits `module` into, compiled on threads
// at once: one per CPU this process may run on, each with at least kMinUnitBytes of kernel text
// (a unit costs ~5 ms more: it loads the precompiled prelude and compiles the support functions
// it uses again), at most kMaxUnits. bench/README.md ("Cold compile latency") has the measurements.
// $KILN_COMPILE_UNITS (1 to 64) sets the count instead (at most one unit per kernel).
size_t unit_count(const codegen::CppModule& module) {
  constexpr size_t kMinUnitBytes = 3000, kMaxUnits = 4;
  if (const char* chosen = std::getenv("KILN_COMPILE_UNITS"); chosen != nullptr && *chosen != '\0') {
    char* end = nullptr;
    long units = std::strtol(chosen, &end, 10);
    if (*end != '\0' || units < 1 || units > 64)
      fail("$KILN_COMPILE_UNITS must be a count of translation units from 1 to 64, got '", chosen, "'");
    return std::max<size_t>(1, std::min(size_t(units), module.kernel_spans.size()));
  }
  size_t kernel_bytes = 0;
  for (const codegen::CppModule::KernelSpan& span : module.kernel_spans) kernel_bytes += span.end - span.begin;
  const size_t available = size_t(available_cpus());
  return std::max<size_t>(1, std::min({available, kMaxUnits, module.kernel_spans.size(), kernel_bytes / kMinUnitBytes}));
}

// The translation units of `source` (module.cpp, whose parts `module` locates), the kernels dealt
// to `units` units by size (the largest first, each to the lightest unit; unit 0 also holds the
// entry points, and declares the kernels the others define); each unit's lines numbered as in
// module.cpp. With `pch`, the fixed text comes from the precompiled header, else each unit starts
// with it.
std::vector<std::string> module_units(const codegen::CppModule& module, const std::string& source,
                                      const std::filesystem::path& source_path, size_t units, bool pch) {
  std::vector<size_t> line_starts = {0};  // offset -> line, by the lines' starts
  for (size_t at = 0; at < source.size(); ++at)
    if (source[at] == '\n') line_starts.push_back(at + 1);
  auto from = [&](size_t offset) {
    size_t line = size_t(std::upper_bound(line_starts.begin(), line_starts.end(), offset) - line_starts.begin());
    return "#line " + std::to_string(line) + " \"" + source_path.string() + "\"\n";
  };
  const auto& spans = module.kernel_spans;
  std::vector<size_t> unit_of(spans.size(), 0), load(units, 0);
  // Entry points (argument checks, calls of the kernels) compile several times faster per byte
  // than kernels (loops, runners' lambdas): the MLP sample's 5.6 KB of them alone in a unit took
  // 26 ms, its 7 KB of kernels 65 ms; counted at a quarter of their size.
  load[0] = (source.size() - module.entries_begin) / 4;
  std::vector<size_t> order(spans.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return spans[a].end - spans[a].begin > spans[b].end - spans[b].begin;
  });
  for (size_t k : order) {
    size_t lightest = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    unit_of[k] = lightest;
    load[lightest] += spans[k].end - spans[k].begin;
  }
  const std::string common = (pch ? from(module.fixed_end) : std::string()) +
                             source.substr(pch ? module.fixed_end : 0, module.kernels_begin - (pch ? module.fixed_end : 0));
  std::vector<std::string> texts(units, common);
  for (size_t k = 0; k < spans.size(); ++k)
    texts[unit_of[k]] += from(spans[k].begin) + source.substr(spans[k].begin, spans[k].end - spans[k].begin);
  for (size_t k = 0; k < spans.size(); ++k)
    if (unit_of[k] != 0) texts[0] += spans[k].declaration + "\n";
  texts[0] += from(module.entries_begin) + source.substr(module.entries_begin);
  return texts;
}

// module.cpp built by the in-process compiler: the text after the fixed part, its lines numbered
// as in module.cpp, with the fixed part from the precompiled header; in several units at once
// where the module is large enough (unit_count).
void build_module_in_process(const InProcessCompiler& compiler, const std::filesystem::path& dir, Isa isa,
                             const codegen::CppModule& module, const std::string& source,
                             const std::optional<std::filesystem::path>& cache_dir) {
  std::vector<std::string> flags = in_process_flags(isa);
  // A source that is not the module's (a fault injected by a test) is compiled whole.
  std::optional<PrecompiledPrelude> prelude;
  if (source == module.source) prelude = precompiled_prelude(compiler, module, runner_separate(flags), cache_dir);
  const std::filesystem::path source_path = dir / "module.cpp";
  std::vector<std::string> texts = {source}, inputs = link_inputs(module_libraries(module), cache_dir).arguments;
  std::optional<std::filesystem::path> pch;
  if (source == module.source) texts = module_units(module, source, source_path, unit_count(module), prelude.has_value());
  if (prelude) {
    flags = runner_separate(flags);
    pch = prelude->header;
    inputs.insert(inputs.begin(), prelude->runner_object.string());
  }
  log("cache", "building " + source_path.string() + " in process, in " + std::to_string(texts.size()) +
                   " translation unit" + (texts.size() == 1 ? "" : "s") + (pch ? ", the prelude precompiled" : ""));
  compiler.build_shared(texts, source_path, source_path, flags, pch, inputs, dir / "module.so");
}

void build_module(const std::filesystem::path& dir, Isa isa, const codegen::CppModule& module, const std::string& source,
                  const std::optional<std::filesystem::path>& cache_dir) {
  if (const InProcessCompiler* compiler = in_process_compiler()) {
    build_module_in_process(*compiler, dir, isa, module, source, cache_dir);
    return;
  }
  std::vector<std::string> argv = {cxx_command()};
  for (const std::string& flag : generated_code_flags(isa)) argv.push_back(flag);
  argv.insert(argv.end(), {"-shared", "module.cpp", "-o", "module.so"});
  for (const std::string& input : link_inputs(module_libraries(module), cache_dir).arguments) argv.push_back(input);
  compile_generated_code(argv, dir, dir / "compile.log", dir / "module.cpp", /*copy_kept=*/true);
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

class CpuTarget final : public CodeTarget {
 public:
  std::string_view code_stage() const override { return "cpp"; }
  std::string_view code_stage_summary() const override { return "the generated C++ source"; }

  codegen::LoweringOptions lowering_options() const override {
    codegen::LoweringOptions options;
    options.library_convolution = !dnnl_library().empty();
    options.library_matmul = options.library_convolution;
    return options;
  }
  bool splits_batches() const override { return true; }
  codegen::SideBySideOptions side_by_side() const override {
    codegen::SideBySideOptions options;
    options.enabled = true;
    options.loop_work = codegen::CppEmitOptions().parallel_threshold;
    return options;
  }

  std::unique_ptr<GeneratedCode> emit(const codegen::ScheduledProgram& scheduled,
                                      const std::optional<std::string>& title,
                                      const CompileOptions& options) const override {
    codegen::CppEmitOptions emit_options;
    if (title) emit_options.title = *title;
    emit_options.constant_parameters = options.freeze;
    emit_options.library_matmul = scheduled.program.library_matmul;
    auto code = std::make_unique<CpuCode>();
    code->module = codegen::emit_cpp(scheduled, emit_options);
    code->source = code->module.source;
    code->kernel_count = scheduled.kernels.size();
    code->manifest = manifest_of(scheduled, code->module);
    code->inputs = package_tensors(scheduled.program, scheduled.program.inputs);
    code->outputs = package_tensors(scheduled.program, scheduled.program.outputs);
    code->batch_chunks = scheduled.program.batch_chunks.chunks;
    return code;
  }

  std::string dump(const GeneratedCode& code) const override { return code.source; }

  // 128 bits of XXH64 (two seeds) over everything that decides the built module, and its
  // manifest: two graphs whose code is the same may name their parameters and outputs
  // differently (a cached artifact of one would ask the other for parameters it lacks).
  std::string cache_key(const GeneratedCode& generated, const CompileOptions& options) const override {
    const CpuCode& code = static_cast<const CpuCode&>(generated);
    Isa isa = resolve_isa(options.isa);
    std::string content = "kiln " KILN_VERSION "\nabi " + std::to_string(kKilnAbiVersion) + "\nisa " +
                          std::string(isa_name(isa)) + "\ncxx " + generated_code_compiler() + "\nfuse " +
                          (options.fuse ? "1" : "0") + "\nblas " + blas_library() + "\ndnnl " + dnnl_library() + "\n";
    for (const std::string& flag : in_process_compiler_chosen() ? in_process_flags(isa) : generated_code_flags(isa))
      content += flag + " ";
    content += "\n" + code.source + "\nmanifest\n" + artifact_manifest_to_json(code.manifest);
    Checksum64 a(0), b(0x9E3779B97F4A7C15ULL);
    a.update(content.data(), content.size());
    b.update(content.data(), content.size());
    return checksum_hex(a.digest()) + checksum_hex(b.digest());
  }

  void build(const GeneratedCode& generated, const std::string& key, const CompileOptions& options,
             const std::filesystem::path& directory) const override {
    const CpuCode& code = static_cast<const CpuCode&>(generated);
    Isa isa = resolve_isa(options.isa);
    std::string source = code.source;
    inject_source_fault(source);
    write_file_atomically((directory / "module.cpp").string(), source);
    ArtifactManifest manifest = code.manifest;
    manifest.kiln_version = KILN_VERSION;
    manifest.isa = isa;
    manifest.key = key;
    write_artifact_manifest(directory / kArtifactManifestFile, manifest);
    build_module(directory, isa, code.module, source, options.cache_dir);
  }
  void prepare_build(const GeneratedCode& generated, const CompileOptions& options,
                     const std::function<void(const std::string&)>& made) const override {
    const CpuCode& code = static_cast<const CpuCode&>(generated);
    static std::once_flag load;
    bool loaded_now = false;
    std::call_once(load, [&] { loaded_now = in_process_compiler() != nullptr; });
    if (loaded_now) made("in-process compiler load (once per process)");
    if (link_inputs(module_libraries(code.module), options.cache_dir).made_stub) made("link stubs (once per cache)");
    if (const InProcessCompiler* compiler = in_process_compiler()) {
      bool made_pch = false;
      precompiled_prelude(*compiler, code.module, runner_separate(in_process_flags(resolve_isa(options.isa))), options.cache_dir, &made_pch);
      if (made_pch) made("precompiled prelude (once per cache)");
    }
  }
  std::string_view build_stage() const override { return "c++ compile"; }
  std::vector<std::string> artifact_files() const override { return {"module.so", kArtifactManifestFile, "module.cpp"}; }

  PackageResult write_package(const GeneratedCode& generated, const ir::Graph& graph,
                              const PackageOptions& options) const override {
    auto package_code = [](const CpuCode& code) {
      return CpuPackageCode{&code.module, code.inputs, code.outputs, code.manifest.parameters, code.manifest.symbols,
                            code.kernel_count};
    };
    std::optional<CpuPackageCode> portable;
    if (options.portable_code) portable = package_code(static_cast<const CpuCode&>(*options.portable_code));
    return write_cpu_package(package_code(static_cast<const CpuCode&>(generated)), graph, options,
                             portable ? &*portable : nullptr);
  }

  std::unique_ptr<Artifact> load(const std::filesystem::path& directory) const override {
    return std::make_unique<CpuArtifact>(CpuArtifact::load(directory));
  }
  std::string describe(const GeneratedCode& generated, const Artifact& artifact) const override {
    const int64_t chunks = static_cast<const CpuCode&>(generated).batch_chunks;
    return "isa " + std::string(isa_name(static_cast<const CpuArtifact&>(artifact).isa())) +
           (chunks > 1 ? ", the batch in " + std::to_string(chunks) + " chunks side by side" : "");
  }
};

}  // namespace

const CodeTarget& cpu_target() {
  static const CpuTarget target;
  return target;
}

}  // namespace kiln::compiler
