// CodeTarget: what a target that generates code gives the one driver (compiler/compile_driver.h),
// which runs passes -> lower -> schedule -> emit -> build (through the compile cache) -> load for
// every target alike. A target supplies the three steps that differ:
//   - lower: the lowering options it wants (the cpu target: convolutions as library calls when
//     Kiln was built with oneDNN);
//   - emit: its emitter (codegen/cpp, codegen/cuda) prints the scheduled program as its source,
//     with the prelude its source starts with;
//   - build: the files of its artifact, from that source (cpu: the system C++ compiler -> a
//     shared object and a manifest; cuda: NVRTC -> a cubin and a launch plan), under a cache key
//     that covers everything that decides them;
//   - load: its runtime loader (runtime/cpu/cpu_artifact.h, runtime/cuda/cuda_artifact.h),
//     which runs the artifact with runtime/ alone.
// Each target is one registration in compiler/target_registry.cpp; the registry also lists the
// targets that run graphs without generating code (the interpreter, eager mode).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/lowering.h"
#include "codegen/schedule.h"
#include "kiln/compile_options.h"
#include "runtime/artifact.h"

namespace kiln::ir {
class Graph;
}

namespace kiln::compiler {

struct PackageOptions;  // compiler/package_writer.h
struct PackageResult;

// What a target's emitter made of a scheduled program; each target derives its own with what
// its build step needs.
struct GeneratedCode {
  virtual ~GeneratedCode() = default;
  // Whether the code calls the target's convolution library (the cpu target's oneDNN).
  virtual bool uses_library() const { return false; }
  std::string source;       // the generated source (module.cpp, kernels.cu)
  size_t kernel_count = 0;  // kernels it defines and runs
};

class CodeTarget {
 public:
  virtual ~CodeTarget() = default;

  // The `kiln dump --stage` name of this target's generated code ("cpp", "cuda") and its help line.
  virtual std::string_view code_stage() const = 0;
  virtual std::string_view code_stage_summary() const = 0;

  // How the driver lowers graphs for this target.
  virtual codegen::LoweringOptions lowering_options() const { return {}; }
  // Whether the emitter runs a program of one chunk of the batch (LoopProgram::batch_chunks) as
  // chunks side by side on its threads, so that the driver may split batches (passes/batch_split.h).
  virtual bool splits_batches() const { return false; }
  // Whether the emitter runs groups of small kernels side by side on two threads, and from what
  // work it runs a kernel on more than one (codegen/schedule.h).
  virtual codegen::SideBySideOptions side_by_side() const { return {}; }

  // The emitter. `title` names the graph in the source's first comment (std::nullopt: the
  // emitter's default, as dumps print it); `options` are the compile's (freeze: the parameters
  // never change, so library calls may keep derived copies of them).
  virtual std::unique_ptr<GeneratedCode> emit(const codegen::ScheduledProgram& scheduled,
                                              const std::optional<std::string>& title,
                                              const CompileOptions& options) const = 0;
  // The code as `kiln dump --stage <code_stage()>` prints it.
  virtual std::string dump(const GeneratedCode& code) const = 0;

  // The compile cache key (hex) of building `code` with `options`: a hash of everything that
  // decides the artifact's files (the source, the build tool and its flags, the target settings,
  // Kiln's version).
  virtual std::string cache_key(const GeneratedCode& code, const CompileOptions& options) const = 0;
  // Writes the artifact's files into `directory` (empty). Its stage name for on_stage.
  virtual void build(const GeneratedCode& code, const std::string& key, const CompileOptions& options,
                     const std::filesystem::path& directory) const = 0;
  virtual std::string_view build_stage() const = 0;
  // Makes what every build of this target shares (the cpu target's link stubs, compiler/targets/
  // link_stubs.h, and precompiled prelude) in the compile cache when it is missing, or in the
  // process (loading its in-process compiler), before build(); calls `made` with a stage name
  // after each such thing made, to report its time under (the default: nothing to make).
  virtual void prepare_build(const GeneratedCode& code, const CompileOptions& options,
                             const std::function<void(const std::string&)>& made) const {
    (void)code;
    (void)options;
    (void)made;
  }
  // The files `kiln compile -o DIR` copies (those of them that exist).
  virtual std::vector<std::string> artifact_files() const = 0;

  // Writes a package (compiler/package_writer.h) of `code`, which the emitter made of `graph`
  // (the simplified graph: its parameters are the package's weights). The default throws: the
  // target makes no packages.
  virtual PackageResult write_package(const GeneratedCode& code, const ir::Graph& graph,
                                      const PackageOptions& options) const;

  // The runtime loader.
  virtual std::unique_ptr<Artifact> load(const std::filesystem::path& directory) const = 0;
  // What `kiln compile` prints about a loaded artifact beside its key and kernel count.
  virtual std::string describe(const GeneratedCode& code, const Artifact& artifact) const = 0;
};

}  // namespace kiln::compiler
