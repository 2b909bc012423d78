// The target registry: every way Kiln runs a model, one row each, in the order the CLI lists
// them (`--target cpu|cuda|interp|eager` on run, bench, compile and dump):
//   cpu     compiled C++ (compiler/targets/cpu_target.h)
//   cuda    compiled CUDA on a GPU (compiler/targets/cuda_target.h)
//   interp  the reference interpreter (ir/interpreter.h): runs the graph, compiles nothing
//   eager   the interpreter's kernels as instructions of the VM (compiler/eager_executor.h)
// A row that generates code names its CodeTarget (compiler/target.h), which the one driver
// (compiler/compile_driver.h) runs; every row makes an Executable. Adding a target is its
// emitter and prelude (codegen/), its runtime loader (runtime/), its CodeTarget and one row here.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/compile_options.h"
#include "compiler/executable.h"
#include "compiler/target.h"
#include "ir/graph.h"

namespace kiln::compiler {

struct TargetInfo {
  std::string_view name;
  std::string_view summary;  // one line for --help
  const CodeTarget* code;    // nullptr: the target runs the graph without generating code
  // The model ready to run on this target (compiled and loaded for a code target; options'
  // target is set to this row's name). The graph is copied.
  std::unique_ptr<Executable> (*prepare)(const ir::Graph& graph, const CompileOptions& options);
};

const std::vector<TargetInfo>& targets();
// The row named `name`; kiln::Error "unknown target 'x' (known: cpu, cuda, interp, eager)".
const TargetInfo& find_target(std::string_view name);
// The row's code target; kiln::Error naming the targets that generate code when it has none.
const CodeTarget& find_code_target(std::string_view name);
std::vector<std::string> target_names();
// "cpu, cuda, interp, eager".
std::string target_list();

// find_target(options.target).prepare(graph, options): what `kiln run` and `kiln bench` call.
std::unique_ptr<Executable> prepare(const ir::Graph& graph, const CompileOptions& options);

}  // namespace kiln::compiler
