// The one compile driver. See compiler/compile_driver.h.
#include "compiler/compile_driver.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "codegen/loop_printer.h"
#include "codegen/lowering.h"
#include "codegen/package/package_sources.h"
#include "compiler/backend_common.h"
#include "compiler/package_writer.h"
#include "compiler/target_registry.h"
#include "compiler/testing_fault_injection.h"
#include "passes/batch_split.h"
#include "runtime/artifact.h"
#include "runtime/compile_cache.h"
#include "kiln/error.h"
#include "runtime/log.h"

namespace kiln::compiler {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Reports each stage's wall time to CompileOptions::on_stage.
class StageTimer {
 public:
  explicit StageTimer(const CompileOptions& options) : on_stage_(options.on_stage), start_(Clock::now()) {}
  void done(const std::string& stage) {
    Clock::time_point now = Clock::now();
    if (on_stage_) on_stage_(stage, std::chrono::duration<double, std::milli>(now - start_).count());
    start_ = now;
  }

 private:
  const std::function<void(const std::string&, double)>& on_stage_;
  Clock::time_point start_;
};

// Where generate() stops: after lowering, after scheduling, or after the target's emitter.
enum class StopAfter { lower, schedule, emit };

// What the code generation steps made, up to where they stopped.
struct Generated {
  ir::Graph graph;  // the simplified graph the code computes
  codegen::LoopProgram loops;
  codegen::ScheduledProgram scheduled;
  std::unique_ptr<GeneratedCode> code;
};

// The batch split of `graph` for a target that splits batches (CodeTarget::splits_batches), or
// std::nullopt: CompileOptions::batch_chunks 1, a graph whose samples mix, or a batch that does
// not divide (logged under KILN_LOG=batch_split).
std::optional<passes::BatchSplit> batch_split(const ir::Graph& graph, const CodeTarget& target, const CompileOptions& options) {
  if (!target.splits_batches() || options.batch_chunks == 1) return std::nullopt;
  passes::BatchChunking chunking;
  chunking.chunks = options.batch_chunks;
  chunking.cpus = available_cpus();
  if (chunking.chunks == 0 && chunking.cpus < 2) return std::nullopt;
  // (At most 64: the chunks' workspaces are claimed through the bits of one 64-bit word.)
  chunking.max_chunks = 64;
  std::string why_not;
  std::optional<passes::BatchSplit> split = passes::split_batch(graph, chunking, &why_not);
  if (split) {
    log("batch_split", "the batch of " + std::to_string(split->batch) + " runs as " + std::to_string(split->chunks) +
                           " chunks of " + std::to_string(split->batch / split->chunks));
  } else {
    log("batch_split", "not split: " + why_not);
    // Chunks the user asked for are not silently dropped.
    if (options.batch_chunks > 1)
      std::cerr << "kiln: warning: the batch runs whole, not in the " << options.batch_chunks
                << " chunks asked for: " << why_not << "\n";
  }
  return split;
}

// Whether the loop program calls the host back for a graph node (a fallback kernel).
bool has_fallbacks(const codegen::LoopProgram& loops) {
  return std::any_of(loops.nodes.begin(), loops.nodes.end(), [](const codegen::LoopNode& node) {
    return node.kind == codegen::NodeKind::Extern && node.extern_call.kind == codegen::ExternKind::Fallback;
  });
}

// passes -> lower -> schedule -> emit: the steps every target shares, then its emitter. With
// `titled`, the source's first comment names the graph by its size ("a graph of 12 nodes");
// without, it keeps the emitter's default title (as dumps print it). `lowering`: how to lower
// (default: the target's lowering_options()).
Generated generate(const ir::Graph& graph, const CodeTarget* target, const CompileOptions& options, StopAfter stop,
                   bool titled, StageTimer& timer, const std::optional<codegen::LoweringOptions>& lowering = std::nullopt) {
  Generated g;
  g.graph = simplified_graph(graph, options.freeze);
  timer.done("passes");
  // The dump stages before code (loops, scheduled) have no target: they show what the cpu
  // target compiles.
  const CodeTarget& lowering_target = target != nullptr ? *target : find_code_target("cpu");
  codegen::LoweringOptions lowering_options = lowering ? *lowering : lowering_target.lowering_options();
  lowering_options.frozen_parameters = options.freeze;
  // A code target may run the batch as chunks side by side: the program is then one chunk's
  // (never one that calls the host back: fallbacks are not made to run concurrently).
  std::optional<passes::BatchSplit> split;
  if (stop == StopAfter::emit && target != nullptr) split = batch_split(g.graph, *target, options);
  if (split) {
    g.loops = codegen::lower(split->chunk, lowering_options);
    g.loops.batch_chunks.chunks = split->chunks;
    for (const passes::BatchSlice& input : split->inputs) g.loops.batch_chunks.inputs.push_back({input.dim, input.outer});
    for (const passes::BatchSlice& output : split->outputs) g.loops.batch_chunks.outputs.push_back({output.dim, output.outer});
    if (has_fallbacks(g.loops)) {
      log("batch_split", "not split: the program runs fallback kernels");
      split.reset();
    } else if (g.loops.inputs.size() != split->inputs.size() || g.loops.outputs.size() != split->outputs.size()) {
      log("batch_split", "not split: the program's inputs or outputs are not the graph's");  // (never expected)
      split.reset();
    }
  }
  if (!split) g.loops = codegen::lower(g.graph, lowering_options);
  inject_lowering_fault(g.graph, g.loops);
  timer.done("lower");
  if (stop == StopAfter::lower) return g;
  codegen::ScheduleOptions schedule_options;
  schedule_options.fuse = options.fuse;
  schedule_options.side_by_side = lowering_target.side_by_side();
  g.scheduled = codegen::schedule(std::move(g.loops), schedule_options);
  inject_schedule_fault(g.graph, g.scheduled);
  timer.done("schedule");
  if (stop == StopAfter::schedule) return g;
  inject_code_fault(g.graph, g.scheduled);
  std::optional<std::string> title;
  if (titled) title = "a graph of " + std::to_string(g.graph.size()) + " nodes";
  g.code = target->emit(g.scheduled, title, options);
  timer.done("codegen");
  return g;
}

// The artifact's directory: the cache entry of `key` (built when missing), or without the
// cache a fresh directory in its staging area.
CacheEntry build_artifact(const CodeTarget& target, const GeneratedCode& code, const std::string& key,
                          const CompileOptions& options, StageTimer& timer) {
  CompileCache cache(options.cache_dir);
  auto build = [&](const fs::path& directory) {
    target.prepare_build(code, options, [&](const std::string& made) { timer.done(made); });
    target.build(code, key, options, directory);
    timer.done(std::string(target.build_stage()));
  };
  if (!options.use_cache) {
    log("cache", "off: built " + key + " (" + options.target + ") without the compile cache");
    fs::path directory = cache.make_staging_directory();
    try {
      build(directory);
    } catch (...) {
      std::error_code ignored;
      fs::remove_all(directory, ignored);
      throw;
    }
    return {directory, false};
  }
  CacheEntry entry = cache.get_or_build(key, build);
  timer.done(entry.hit ? "cache hit" : "cache store");
  // A damaged entry is never trusted: it was rebuilt (or another process's copy verified). Say
  // so: a cache that keeps getting damaged points at the disk or at something writing into it.
  if (std::string damage = cache.last_damage(); !damage.empty())
    std::cerr << "kiln: warning: the compile cache entry " << damage << "; it was rebuilt\n";
  log("cache", std::string(entry.hit ? "hit " : "miss (built and stored) ") + key + " (" + options.target + ")");
  return entry;
}

// An artifact built without the cache, in a staging directory of its own that nothing else
// will use: the directory is removed with the artifact (--no-cache left a tmp/stage-* folder
// behind on every call, which `kiln cache stats` did not count and `cache clear` kept).
class ScratchArtifact : public Artifact {
 public:
  ScratchArtifact(std::unique_ptr<Artifact> inner, fs::path directory)
      : inner_(std::move(inner)), directory_(std::move(directory)) {}
  ~ScratchArtifact() override {
    inner_.reset();
    std::error_code ignored;
    fs::remove_all(directory_, ignored);
  }
  ScratchArtifact(const ScratchArtifact&) = delete;
  ScratchArtifact& operator=(const ScratchArtifact&) = delete;

  const fs::path& directory() const override { return inner_->directory(); }
  const std::vector<ArtifactTensor>& inputs() const override { return inner_->inputs(); }
  const std::vector<ArtifactTensor>& outputs() const override { return inner_->outputs(); }
  const std::vector<ArtifactParameter>& parameters() const override { return inner_->parameters(); }
  const std::vector<std::string>& fallbacks() const override { return inner_->fallbacks(); }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                          const FallbackHandler& fallback, int num_threads) override {
    return inner_->run(inputs, parameters, fallback, num_threads);
  }
  void parameter_changed(size_t index) override { inner_->parameter_changed(index); }
  double last_device_milliseconds() const override { return inner_->last_device_milliseconds(); }

 private:
  std::unique_ptr<Artifact> inner_;
  fs::path directory_;
};

// Copies the target's artifact files into `to`, which must be empty unless `overwrite`.
void copy_artifact(const CodeTarget& target, const fs::path& from, const fs::path& to, bool overwrite) {
  if (fs::exists(to) && !fs::is_directory(to)) fail("output directory ", to.string(), " is a file");
  if (fs::exists(to) && !fs::is_empty(to) && !overwrite) {
    fail("output directory ", to.string(), " exists and is not empty (pass --force to overwrite it)");
  }
  fs::create_directories(to);
  for (const std::string& name : target.artifact_files()) {
    if (fs::exists(from / name)) fs::copy_file(from / name, to / name, fs::copy_options::overwrite_existing);
  }
}

// Whether `line` of generated code begins the definition of kernel `name`: it names it followed
// by "(" (not as the tail of a longer name), does not end in ";" and returns nothing.
bool defines_kernel(const std::string& line, const std::string& name) {
  size_t at = line.find(name + "(");
  bool named = at != std::string::npos && (at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_'));
  return named && !line.empty() && line.back() != ';' && line.find("return") == std::string::npos;
}

// Generated code with a "// from ..." line before the definition of each kernel that has
// known sources (`kiln dump --stage cpp --show-source`). A kernel's definition is the first
// line that defines_kernel.
std::string with_kernel_sources(const std::string& code, const codegen::ScheduledProgram& scheduled,
                                const codegen::SourceNotes* sources) {
  if (sources == nullptr) return code;
  std::map<std::string, std::string> notes;  // kernel name -> its note
  for (const codegen::Kernel& kernel : scheduled.kernels)
    if (std::string note = codegen::source_note(kernel.origins, sources); !note.empty()) notes[kernel.name] = note.substr(4);  // "from ..."
  std::istringstream lines(code);
  std::string out, line;
  while (std::getline(lines, line)) {
    for (auto it = notes.begin(); it != notes.end(); ++it) {
      if (defines_kernel(line, it->first)) {
        size_t indent = line.find_first_not_of(' ');
        out += std::string(indent == std::string::npos ? 0 : indent, ' ') + "// " + it->second + "\n";
        notes.erase(it);
        break;
      }
    }
    out += line + "\n";
  }
  return out;
}

// The compile options of a code generator's stage run (dumps, `kiln kernel`, verify).
CompileOptions stage_compile_options(const CodegenStageOptions& stage_options) {
  CompileOptions options;
  options.fuse = stage_options.fuse;
  options.freeze = stage_options.freeze;
  // Dumps show the same code on every machine: no split for this one's CPUs.
  options.batch_chunks = 1;
  return options;
}

}  // namespace

CompiledModel compile(const ir::Graph& graph, const CompileOptions& options) {
  const CodeTarget& target = find_code_target(options.target);
  StageTimer timer(options);
  Generated g = generate(graph, &target, options, StopAfter::emit, /*titled=*/true, timer);
  std::string key = target.cache_key(*g.code, options);
  CacheEntry entry = build_artifact(target, *g.code, key, options, timer);
  std::unique_ptr<Artifact> artifact;
  try {
    artifact = target.load(entry.directory);
  } catch (...) {
    if (!options.use_cache) {
      std::error_code ignored;
      fs::remove_all(entry.directory, ignored);
    }
    throw;
  }
  timer.done("load");
  std::string description = target.describe(*g.code, *artifact);  // (reads the target's own artifact type)
  if (!options.use_cache) artifact = std::make_unique<ScratchArtifact>(std::move(artifact), entry.directory);

  CompileResult result{options.target, key, entry.hit, g.code->kernel_count, description, entry.directory};
  if (options.output_dir) {
    copy_artifact(target, entry.directory, *options.output_dir, options.overwrite);
    result.artifact_dir = *options.output_dir;
  }
  return CompiledModel(std::move(g.graph), std::move(artifact), std::move(result));
}

PackageResult write_package(const ir::Graph& graph, const CompileOptions& options, const PackageOptions& package) {
  const CodeTarget& target = find_code_target(options.target);
  // The convolutions: the library's (oneDNN) kernels, im2col + GEMM ones (which need only a C++
  // compiler, OpenMP and BLAS), or both sets, chosen where the package is built
  // (PackageOptions::Convolutions).
  using Convolutions = PackageOptions::Convolutions;
  codegen::LoweringOptions lowering = target.lowering_options();
  const bool has_library = lowering.library_convolution;
  if (package.convolutions == Convolutions::library && !has_library)
    fail("--onednn: Kiln was built without oneDNN (install libdnnl-dev and rebuild), or the target '", options.target,
         "' calls no convolution library");
  const bool library = has_library && package.convolutions != Convolutions::portable;
  lowering.library_convolution = library;
  // A package's GEMMs call oneDNN only with frozen weights (prepacked once): one without them
  // links nothing but BLAS for its matrix products, as its README promises, although `kiln run`
  // runs such GEMMs through oneDNN (CppEmitOptions::library_matmul).
  lowering.library_matmul = library && options.freeze;
  // A package runs on machines other than the one that builds it: its batch is never split for
  // this one's CPUs.
  CompileOptions unsplit = options;
  unsplit.batch_chunks = 1;
  StageTimer timer(options);
  Generated g = generate(graph, &target, unsplit, StopAfter::emit, /*titled=*/true, timer, lowering);
  PackageOptions named = package;
  named.output_names = graph.output_names();
  named.convolutions = library ? package.convolutions : Convolutions::portable;
  // Both sets only where the library's kernels call it (a model without convolutions has one).
  std::optional<Generated> portable;
  if (named.convolutions == Convolutions::both && g.code->uses_library()) {
    lowering.library_convolution = false;
    lowering.library_matmul = false;
    CompileOptions untimed = unsplit;  // (its stages are not printed twice)
    untimed.on_stage = nullptr;
    StageTimer portable_timer(untimed);
    portable.emplace(generate(graph, &target, untimed, StopAfter::emit, /*titled=*/true, portable_timer, lowering));
    named.portable_code = portable->code.get();
  } else if (named.convolutions == Convolutions::both) {
    named.convolutions = Convolutions::portable;
  }
  PackageResult result = target.write_package(*g.code, g.graph, named);
  timer.done("package");
  return result;
}

std::string default_package_name(const std::string& model_path) {
  std::string stem = fs::path(model_path).stem().string();
  std::string name;
  for (char c : stem) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (name.empty()) return "model";
  if (std::isdigit(static_cast<unsigned char>(name[0]))) name = "m_" + name;
  if (name[0] == '_') name = "m" + name;
  while (name.find("__") != std::string::npos) name.replace(name.find("__"), 2, "_");
  if (codegen::is_reserved_package_name(name)) name += "_model";
  return name;
}

std::string kernel_source(const std::string& code, const std::string& kernel) {
  std::vector<std::string> lines;
  std::istringstream in(code);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto trimmed = [&](size_t i) {
    size_t start = lines[i].find_first_not_of(' ');
    return start == std::string::npos ? std::string() : lines[i].substr(start);
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!defines_kernel(lines[i], kernel)) continue;
    size_t first = i;
    while (first > 0 && trimmed(first - 1).rfind("//", 0) == 0) --first;  // the comment lines just above it
    std::string text;
    int depth = 0;
    bool opened = false;
    for (size_t j = first; j < lines.size(); ++j) {
      text += lines[j] + "\n";
      if (j < i) continue;
      for (char c : lines[j]) {
        depth += c == '{' ? 1 : c == '}' ? -1 : 0;
        opened |= c == '{';
      }
      if (opened && depth <= 0) break;
    }
    return text;
  }
  // No function of its own (a library call the wrapper makes): the comment lines that name it.
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i)
    if (trimmed(i).rfind("// " + kernel + ":", 0) == 0) text += trimmed(i) + "\n";
  return text;
}

std::vector<CodegenStage> codegen_stages() {
  std::vector<CodegenStage> stages = {
      {"loops", "the loop IR lowered from the simplified graph", ""},
      {"scheduled", "the kernels, the nodes fused into each, and the memory plan", ""},
  };
  for (const TargetInfo& row : targets())
    if (row.code != nullptr)
      stages.push_back({std::string(row.code->code_stage()), std::string(row.code->code_stage_summary()), std::string(row.name)});
  return stages;
}

bool is_codegen_stage(std::string_view stage) {
  for (const CodegenStage& known : codegen_stages())
    if (known.name == stage) return true;
  return false;
}

std::string dump_codegen_stage(const ir::Graph& graph, std::string_view stage, const CodegenStageOptions& stage_options) {
  std::vector<CodegenStage> stages = codegen_stages();
  auto found = std::find_if(stages.begin(), stages.end(), [&](const CodegenStage& s) { return s.name == stage; });
  if (found == stages.end()) {
    std::string known;
    for (const CodegenStage& s : stages) known += (known.empty() ? "" : ", ") + s.name;
    fail("unknown codegen stage '", stage, "' (known: ", known, ")");
  }
  CompileOptions options = stage_compile_options(stage_options);
  StageTimer timer(options);
  const CodeTarget* target = found->target.empty() ? nullptr : &find_code_target(found->target);
  StopAfter stop = stage == "loops" ? StopAfter::lower : target == nullptr ? StopAfter::schedule : StopAfter::emit;
  Generated g = generate(graph, target, options, stop, /*titled=*/false, timer);
  codegen::SourceNotes notes;
  for (const ir::Node* node : g.graph.nodes())
    if (!node->source.empty()) notes[node->name()] = node->source.to_string();
  const codegen::SourceNotes* sources = stage_options.show_source ? &notes : nullptr;
  if (stop == StopAfter::lower) return codegen::print_loop_program(g.loops, sources);
  if (stop == StopAfter::emit) return with_kernel_sources(target->dump(*g.code), g.scheduled, sources);
  std::string text = codegen::print_schedule(g.scheduled, sources);
  if (!g.scheduled.fusion_log.empty()) {
    text += "# fusion decisions\n";
    for (const std::string& line : g.scheduled.fusion_log) text += "    " + line + "\n";
  }
  return text;
}

codegen::ScheduledProgram scheduled_program(const ir::Graph& graph, const CodegenStageOptions& stage_options,
                                            const std::string& target) {
  CompileOptions options = stage_compile_options(stage_options);
  StageTimer timer(options);
  const CodeTarget& lowering_target = find_code_target(target);
  return std::move(generate(graph, &lowering_target, options, StopAfter::schedule, /*titled=*/false, timer).scheduled);
}

CodegenPrograms codegen_programs(const ir::Graph& graph, const CodegenStageOptions& stage_options,
                                 const std::string& target) {
  CompileOptions options = stage_compile_options(stage_options);
  StageTimer timer(options);
  const CodeTarget& lowering_target = find_code_target(target);
  Generated g = generate(graph, &lowering_target, options, StopAfter::lower, /*titled=*/false, timer);
  CodegenPrograms programs{std::move(g.graph), g.loops, {}};
  codegen::ScheduleOptions schedule_options;
  schedule_options.fuse = options.fuse;
  schedule_options.side_by_side = lowering_target.side_by_side();
  programs.scheduled = codegen::schedule(std::move(g.loops), schedule_options);
  inject_schedule_fault(programs.graph, programs.scheduled);
  return programs;
}

}  // namespace kiln::compiler
