// What `kiln report` shows about one compile, gathered through the driver's own entry points
// (compiler/compile_driver.h, compiler/graph_stages.h) — the report is a view, not a second
// pipeline: the graph stages as `kiln dump --stage S` prints them (and as Graphviz dot), the code
// generator's stages (loops, scheduled, the target's code), the scheduled kernels with the graph
// nodes each fuses and its generated function, the memory plan with every buffer's lifetime, the
// guards the compiled artifact checks, the compile's per-stage times, cache key and hit or miss,
// and what the compile warned about. compiler/report/report_html.h renders it as one page.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/compile_options.h"

namespace kiln::compiler {

struct ReportOptions {
  std::string model;    // the model file, as the user named it (shown, not read)
  std::string options;  // the options as the user gave them, for the page ("--target cpu --freeze")
  // The compile: target "cpu" or "cuda", or "" for none (stop after scheduling; no code, no build).
  // on_stage is the report's own.
  CompileOptions compile;
  bool show_source = false;  // stage texts and kernels say where each node comes from
  // Values of the shape symbols for the memory picture and the kernels' sizes; a symbol not given
  // takes 8, moved into its range.
  std::map<std::string, int64_t> dims;
};

// One stage: its text exactly as `kiln dump --stage NAME` prints it; graph stages also as dot.
struct StageReport {
  std::string name;
  std::string summary;  // one line
  std::string text;
  std::string dot;  // graph stages only
  bool graph = false;
  double milliseconds = -1;  // graph stages: the time the pass pipeline took to reach it
};

// A graph node a kernel computes, and where it comes from (the user's file:line and module path).
struct FusedNode {
  std::string name;
  std::string op;
  std::string source;  // empty when unknown
};

struct KernelReport {
  std::string name;
  std::string kind;       // "pointwise", "reduction", "gemm", "convolution", "fallback"
  std::string loop_nest;  // "for (x0) in [16]  (parallel)" and its steps, one per line
  std::string size;       // "512 points" or "64 points (8*s0)" (a library call: "... elements written")
  std::vector<FusedNode> fused;
  std::string source;  // its function in the generated code (empty with no code target)
};

// One workspace buffer of the memory plan, with its sizes under the picture's symbol values.
struct MemoryBlock {
  std::string buffer;
  std::string type;  // "f32[2, 8, 32]"
  int first_kernel = 0;
  int last_kernel = 0;
  std::string offset_expression;  // the plan's (symbolic) offset
  int64_t offset = 0;
  int64_t bytes = 0;
};

struct MemoryReport {
  std::vector<MemoryBlock> blocks;  // in the plan's buffer order
  std::vector<std::string> kernels;  // kernel names by id: the picture's time axis
  std::map<std::string, int64_t> bindings;  // the symbol values the picture is drawn for
  std::string peak_expression, naive_expression;  // symbolic; "14336" when static
  int64_t peak_bytes = 0;
  int64_t naive_bytes = 0;
};

struct CompileReport {
  std::string model;
  std::string options;
  std::string target;  // "cpu", "cuda" or "none"
  std::string kiln_version;
  size_t graph_nodes = 0;  // of the graph as loaded
  // The compile (absent with target none, or when it failed: compile_error says why).
  std::optional<CompileResult> result;
  std::string compile_error;
  std::vector<std::pair<std::string, double>> compile_times;  // the driver's stages, in order (ms)
  double total_milliseconds = 0;
  std::vector<std::string> guards;  // one line each
  std::vector<StageReport> stages;
  std::vector<KernelReport> kernels;
  std::vector<std::string> fusion_decisions;  // why nodes were kept apart
  MemoryReport memory;
  std::vector<std::string> fallbacks;  // graph nodes the host runs by their reference kernels
  std::vector<std::string> warnings;   // what the compile printed as "kiln: warning: ..."
};

// Runs the stages of `graph` through the driver and compiles it (unless options.compile.target
// is empty), collecting the report. A failed compile is recorded (compile_error), not thrown;
// errors before it (a stage that rejects the graph) throw kiln::Error as `kiln dump` would.
CompileReport make_compile_report(const ir::Graph& graph, const ReportOptions& options);

}  // namespace kiln::compiler
