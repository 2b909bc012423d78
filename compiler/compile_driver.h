// The one compile driver, for every code target (compiler/target.h):
//
//   graph -> passes (the "simplified" stage) -> lower (loop IR) -> schedule (kernels, memory
//   plan) -> emit (the target's emitter) -> build (the target's build step, through the compile
//   cache's get_or_build: runtime/compile_cache.h) -> load (the target's runtime loader)
//
// read top to bottom in compile_driver.cpp, timing each stage for CompileOptions::on_stage. The
// code generator's stages as `kiln dump --stage` prints them come from the same steps, stopped
// early: the loop IR ("loops"), the kernels with what each fuses and the memory plan
// ("scheduled"), and each code target's generated code under its own stage name ("cpp",
// "cuda"; no build tool and no device needed).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/compile_options.h"
#include "compiler/compiled_model.h"
#include "ir/graph.h"

#include "codegen/schedule.h"

namespace kiln::compiler {

// Compiles (or finds in the compile cache) `graph`, at any stage up to "simplified" (copied),
// for options.target, and loads it. Throws kiln::Error for a target that generates no code
// (naming the code targets), and for anything a stage rejects.
CompiledModel compile(const ir::Graph& graph, const CompileOptions& options = {});

struct CodegenStage {
  std::string name;     // "loops", "scheduled", "cpp", "cuda"
  std::string summary;  // one line for --help
  std::string target;   // the target whose code it shows; empty when every target shares it
};

// "loops", "scheduled", then each code target's stage, in registry order.
std::vector<CodegenStage> codegen_stages();
bool is_codegen_stage(std::string_view stage);

struct CodegenStageOptions {
  bool fuse = true;     // false: one kernel per loop node
  bool freeze = false;  // constant-fold parameters
  // Each loop node, kernel (and, in generated code, each kernel's function) says where its graph
  // nodes come from: the user's file:line and module path (`kiln dump --show-source`).
  bool show_source = false;
};

// Runs the driver's steps on a copy of `graph` up to `stage` and returns its text. Throws
// kiln::Error for an unknown stage, listing the known ones.
std::string dump_codegen_stage(const ir::Graph& graph, std::string_view stage, const CodegenStageOptions& options = {});

// The definition of kernel `kernel` in generated `code` (a code stage's text), with the comment
// lines just above it; for a kernel that has no function of its own (a library call the wrapper
// makes), the comment lines that name it; empty when the code does not name it.
std::string kernel_source(const std::string& code, const std::string& kernel);

// The driver's steps on a copy of `graph` up to scheduling, lowered for code target `target`
// (the cpu target's lowering by default: the kernels `kiln dump --stage scheduled` prints), from
// which `kiln kernel` picks.
codegen::ScheduledProgram scheduled_program(const ir::Graph& graph, const CodegenStageOptions& options = {},
                                            const std::string& target = "cpu");

// The simplified graph, its loop IR as lowered for `target`, and the loop IR after scheduling:
// what `kiln verify` runs through the loop evaluator.
struct CodegenPrograms {
  ir::Graph graph;
  codegen::LoopProgram loops;
  codegen::ScheduledProgram scheduled;
};
CodegenPrograms codegen_programs(const ir::Graph& graph, const CodegenStageOptions& options = {},
                                 const std::string& target = "cpu");

}  // namespace kiln::compiler
