// What `kiln report` shows about one compile. See compiler/report/compile_report.h.
#include "compiler/report/compile_report.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <set>
#include <sstream>

#include "compiler/compile_driver.h"
#include "compiler/graph_formats.h"
#include "compiler/graph_stages.h"
#include "compiler/target_registry.h"
#include "kiln/error.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln::compiler {

namespace {

using ReportClock = std::chrono::steady_clock;

// Collects what is written to std::cerr while it lives (the driver's "kiln: warning: ..." lines),
// then writes it on to the real stderr: the user still sees every warning, and the page lists them.
class StderrCapture {
 public:
  StderrCapture() : previous_(std::cerr.rdbuf(captured_.rdbuf())) {}
  ~StderrCapture() { finish(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Restores std::cerr, echoes what was captured, and returns its "kiln: warning: " lines.
  std::vector<std::string> finish() {
    std::vector<std::string> warnings;
    if (previous_ == nullptr) return warnings;
    std::cerr.rdbuf(previous_);
    previous_ = nullptr;
    std::string text = captured_.str();
    std::cerr << text;
    std::istringstream lines(text);
    const std::string prefix = "kiln: warning: ";
    for (std::string line; std::getline(lines, line);)
      if (line.rfind(prefix, 0) == 0) warnings.push_back(line.substr(prefix.size()));
    return warnings;
  }

 private:
  std::ostringstream captured_;
  std::streambuf* previous_;
};

std::string buffer_type_text(const codegen::Buffer& buffer) {
  return std::string(dtype_name(buffer.dtype)) + ir::shape_string(buffer.shape);
}

// What the compiled artifact checks on every call before any kernel runs (the cpu module's
// kiln_bind, the cuda launch plan: the same checks, made from the same loop program).
std::vector<std::string> artifact_guards(const codegen::LoopProgram& program, size_t parameters) {
  std::vector<std::string> guards;
  guards.push_back("the model takes " + std::to_string(program.inputs.size()) + " input" +
                   (program.inputs.size() == 1 ? "" : "s"));
  std::map<std::string, std::string> bound_by;
  for (const auto& source : program.symbol_sources)
    bound_by[source.symbol] = "input '" + program.buffer(program.inputs[size_t(source.input)]).source + "' dim " +
                              std::to_string(source.dim);
  for (int id : program.inputs) {
    const codegen::Buffer& b = program.buffer(id);
    std::string who = "input '" + b.source + "'";
    guards.push_back(who + ": dtype " + std::string(dtype_name(b.dtype)) + ", rank " + std::to_string(b.shape.size()) +
                     " (" + buffer_type_text(b) + ")");
    for (size_t d = 0; d < b.shape.size(); ++d) {
      const ir::SymInt& size = b.shape[d];
      std::string dim = who + " dim " + std::to_string(d);
      if (size.is_constant()) {
        guards.push_back(dim + " == " + std::to_string(size.constant()));
      } else if (auto found = bound_by.find(size.to_string()); found != bound_by.end() && found->second == dim) {
        guards.push_back(dim + " binds " + size.to_string());
      } else {
        guards.push_back(dim + " == " + size.to_string());
      }
    }
    guards.push_back(who + ": contiguous strides (any stride on a size-1 dim; any strides when it has no elements)");
  }
  for (const auto& range : program.symbol_ranges) {
    std::string bounds = "[" + std::to_string(range.min) + ", " + (range.max ? std::to_string(*range.max) : "int_oo") + "]";
    guards.push_back(range.symbol + " in " + bounds + (bound_by.count(range.symbol) ? " (" + bound_by[range.symbol] + ")" : ""));
  }
  if (parameters > 0)
    guards.push_back(std::to_string(parameters) + " parameter" + (parameters == 1 ? "" : "s") +
                     ": exactly the compiled dtype and shape, contiguous (checked when the artifact is loaded)");
  return guards;
}

std::string report_kernel_kind(const codegen::Kernel& kernel, const codegen::LoopProgram& program) {
  if (kernel.kind == codegen::KernelKind::Pointwise) return "pointwise";
  if (kernel.kind == codegen::KernelKind::Reduction) return "reduction";
  switch (program.nodes[size_t(kernel.extern_node)].extern_call.kind) {
    case codegen::ExternKind::Gemm: return "gemm";
    case codegen::ExternKind::Convolution: return "convolution";
    case codegen::ExternKind::Fallback: return "fallback";
  }
  return "extern";
}

std::string report_loop_header(const std::string& var, const ir::SymShape& ranges) {
  std::string vars, line = "for ";
  for (size_t d = 0; d < ranges.size(); ++d) vars += (d ? ", " : "") + var + std::to_string(d);
  return line + "(" + vars + ") in " + ir::shape_string(ranges);
}

std::string report_step_text(const codegen::KernelStep& step, const codegen::LoopProgram& program) {
  static const char* const kReductions[] = {"sum", "prod", "max", "min", "argmax", "argmin", "welford"};
  std::string text = step.kind == codegen::KernelStep::Kind::Reduce
                         ? std::string("reduce ") + kReductions[int(step.reduction)]
                         : std::string(step.kind == codegen::KernelStep::Kind::StoreInner ? "row" : "point");
  text += " " + program.nodes[size_t(step.node)].name + " -> ";
  for (size_t i = 0; i < step.outputs.size(); ++i) text += (i ? ", " : "") + program.buffer(step.outputs[i]).name;
  return text;
}

// The kernel's loops, one per line, indented as they nest.
std::string report_loop_nest(const codegen::Kernel& kernel, const codegen::LoopProgram& program) {
  if (kernel.kind == codegen::KernelKind::Extern) {
    const codegen::ExternCall& call = program.nodes[size_t(kernel.extern_node)].extern_call;
    std::string text = "library call:";
    for (const codegen::StridedView& out : call.outputs) text += " " + program.buffer(out.buffer).name + ir::shape_string(out.shape);
    text += " <-";
    for (const codegen::StridedView& in : call.inputs) text += " " + program.buffer(in.buffer).name + ir::shape_string(in.shape);
    if (call.kind == codegen::ExternKind::Convolution) text += "\n" + codegen::geometry_text(call.convolution);
    for (const codegen::KernelStep& step : kernel.steps) text += "\nepilogue per block of rows: " + report_step_text(step, program);
    return text;
  }
  std::string text = report_loop_header("x", kernel.outer) + "  (parallel)";
  for (const codegen::KernelStep& step : kernel.steps) {
    if (step.kind == codegen::KernelStep::Kind::StoreOuter) text += "\n    " + report_step_text(step, program);
    else text += "\n    " + report_loop_header("r", kernel.inner) + ": " + report_step_text(step, program);
  }
  return text;
}

// "128 points" or "128 points (16*s0)": how many points a kernel's loops visit (a library call:
// how many elements it writes), under the picture's symbol values.
std::string kernel_size(const codegen::Kernel& kernel, const codegen::LoopProgram& program,
                        const std::map<std::string, int64_t>& bindings) {
  ir::SymInt count = 1;
  const char* what = " points";
  if (kernel.kind == codegen::KernelKind::Extern) {
    what = " elements written";
    for (const codegen::StridedView& out : program.nodes[size_t(kernel.extern_node)].extern_call.outputs)
      count = count * codegen::numel(out.shape);
  } else {
    count = codegen::numel(kernel.outer) * codegen::numel(kernel.inner);
  }
  std::string text = std::to_string(count.evaluate(bindings)) + what;
  return count.is_constant() ? text : text + " (" + count.to_string() + ")";
}

std::vector<KernelReport> kernel_reports(const CodegenPrograms& programs, const std::string& code,
                                         const std::map<std::string, int64_t>& bindings) {
  const codegen::LoopProgram& program = programs.scheduled.program;
  std::vector<KernelReport> kernels;
  for (const codegen::Kernel& kernel : programs.scheduled.kernels) {
    KernelReport report{kernel.name, report_kernel_kind(kernel, program), report_loop_nest(kernel, program),
                        kernel_size(kernel, program, bindings), {}, {}};
    std::set<std::string> seen;
    for (const std::string& origin : kernel.origins) {
      if (!seen.insert(origin).second) continue;
      const ir::Node* node = programs.graph.find(origin);
      report.fused.push_back({origin, node ? node->target() : "", node && !node->source.empty() ? node->source.to_string() : ""});
    }
    if (!code.empty()) report.source = kernel_source(code, kernel.name);
    kernels.push_back(std::move(report));
  }
  return kernels;
}

// The value a symbol takes in the memory picture: the user's, else 8 moved into its range.
int64_t memory_picture_value(const std::string& symbol, const codegen::LoopProgram& program,
                             const std::map<std::string, int64_t>& dims) {
  if (auto given = dims.find(symbol); given != dims.end()) return given->second;
  int64_t value = 8;
  for (const auto& range : program.symbol_ranges) {
    if (range.symbol != symbol) continue;
    value = std::max(value, range.min);
    if (range.max) value = std::min(value, *range.max);
  }
  return value;
}

// Every shape symbol's value for the pictures and sizes. Throws kiln::Error for a --dim that
// names no symbol of the model or lies outside its symbol's range.
std::map<std::string, int64_t> picture_bindings(const codegen::LoopProgram& program, const std::map<std::string, int64_t>& dims) {
  for (const auto& [symbol, value] : dims) {
    if (std::find(program.symbols.begin(), program.symbols.end(), symbol) == program.symbols.end())
      fail("--dim ", symbol, "=", value, ": the model has no shape symbol ", symbol, program.symbols.empty() ? " (its shapes are static)" : "");
    for (const auto& range : program.symbol_ranges)
      if (range.symbol == symbol && (value < range.min || (range.max && value > *range.max)))
        fail("--dim ", symbol, "=", value, " is outside the range [", range.min, ", ",
             range.max ? std::to_string(*range.max) : std::string("int_oo"), "] the model was compiled for");
  }
  std::map<std::string, int64_t> bindings;
  for (const std::string& symbol : program.symbols) bindings[symbol] = memory_picture_value(symbol, program, dims);
  return bindings;
}

MemoryReport memory_report(const codegen::ScheduledProgram& scheduled, const std::map<std::string, int64_t>& bindings) {
  const codegen::LoopProgram& program = scheduled.program;
  MemoryReport memory;
  memory.bindings = bindings;
  for (const codegen::Kernel& kernel : scheduled.kernels) memory.kernels.push_back(kernel.name);
  for (const auto& [buffer, offset] : scheduled.memory.offsets) {
    const codegen::BufferLifetime& life = scheduled.memory.lifetimes.at(buffer);
    // A result written over an operand (MemoryPlan::in_place_of) shares its bytes at the kernel
    // where the one ends and the other begins: the label says so.
    auto in_place = scheduled.memory.in_place_of.find(buffer);
    std::string name = program.buffer(buffer).name;
    if (in_place != scheduled.memory.in_place_of.end()) name += " (in place of " + program.buffer(in_place->second).name + ")";
    memory.blocks.push_back({name, buffer_type_text(program.buffer(buffer)), life.first_kernel, life.last_kernel,
                             offset.to_string(), offset.evaluate(memory.bindings), life.bytes.evaluate(memory.bindings)});
  }
  memory.peak_expression = scheduled.memory.peak_bytes.to_string();
  memory.naive_expression = scheduled.memory.naive_bytes.to_string();
  memory.peak_bytes = scheduled.memory.peak_bytes.evaluate(memory.bindings);
  memory.naive_bytes = scheduled.memory.naive_bytes.evaluate(memory.bindings);
  return memory;
}

// The graph stages as `kiln dump --stage S` prints them, with each stage's dot and time.
std::vector<StageReport> graph_stage_reports(const ir::Graph& graph, const ReportOptions& options) {
  std::map<std::string, std::string> summaries;
  for (const GraphStep& step : graph_stages()) summaries[step.name] = step.summary;
  std::vector<StageReport> stages;
  ir::Graph copy = graph.clone();
  GraphRunOptions run;
  run.freeze = options.compile.freeze;
  ReportClock::time_point last = ReportClock::now();
  run_graph_stages(copy, graph_stages().back().name, run, [&](std::string_view stage, const ir::Graph& at) {
    double ms = std::chrono::duration<double, std::milli>(ReportClock::now() - last).count();
    std::string name(stage);
    stages.push_back({name, summaries[name], render_graph(at, GraphFormat::text, options.show_source),
                      render_graph(at, GraphFormat::dot), true, ms});
    last = ReportClock::now();
  });
  return stages;
}

}  // namespace

CompileReport make_compile_report(const ir::Graph& graph, const ReportOptions& options) {
  const std::string& target = options.compile.target;
  CompileReport report;
  report.model = options.model;
  report.options = options.options;
  report.target = target.empty() ? "none" : target;
  report.kiln_version = KILN_VERSION;
  report.graph_nodes = graph.size();
  if (!target.empty()) find_code_target(target);  // an unknown target, or one that compiles nothing, fails first

  StderrCapture capture;
  report.stages = graph_stage_reports(graph, options);
  CodegenStageOptions stage_options;
  stage_options.freeze = options.compile.freeze;
  stage_options.show_source = options.show_source;
  std::string code;
  for (const CodegenStage& stage : codegen_stages()) {
    if (!stage.target.empty() && stage.target != target) continue;
    std::string text = dump_codegen_stage(graph, stage.name, stage_options);
    if (!stage.target.empty()) code = text;
    report.stages.push_back({stage.name, stage.summary, text, "", false, -1});
  }
  CodegenPrograms programs = codegen_programs(graph, stage_options, target.empty() ? "cpu" : target);
  std::map<std::string, int64_t> bindings = picture_bindings(programs.scheduled.program, options.dims);
  report.kernels = kernel_reports(programs, code, bindings);
  report.fusion_decisions = programs.scheduled.fusion_log;
  report.memory = memory_report(programs.scheduled, bindings);
  for (const codegen::Kernel& kernel : programs.scheduled.kernels) {
    const codegen::LoopProgram& program = programs.scheduled.program;
    if (kernel.kind == codegen::KernelKind::Extern &&
        program.nodes[size_t(kernel.extern_node)].extern_call.kind == codegen::ExternKind::Fallback) {
      const std::string& node = program.nodes[size_t(kernel.extern_node)].extern_call.graph_node;
      const ir::Node* found = programs.graph.find(node);
      report.fallbacks.push_back(node + (found ? " (" + found->target() + ")" : "") + " in " + kernel.name +
                                 ": run on the host by its reference kernel");
    }
  }
  report.guards = artifact_guards(programs.scheduled.program, programs.scheduled.program.parameters.size());

  if (!target.empty()) {
    CompileOptions compile_options = options.compile;
    compile_options.on_stage = [&](const std::string& stage, double ms) {
      report.compile_times.emplace_back(stage, ms);
      report.total_milliseconds += ms;
    };
    try {
      report.result = compile(graph, compile_options).result();
    } catch (const Error& error) {
      report.compile_error = error.what();
    }
  }
  report.warnings = capture.finish();
  return report;
}

}  // namespace kiln::compiler
