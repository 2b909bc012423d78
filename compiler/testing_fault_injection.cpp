// KILN_TESTING_INJECT_BUG: see compiler/testing_fault_injection.h.
#include "compiler/testing_fault_injection.h"

#include <cstdlib>
#include <string>

#include "kiln/error.h"

namespace kiln::compiler {

namespace {

// The op named for `point`, or "" when the fault is not for it.
std::string faulty_op(std::string_view point) {
  const char* value = std::getenv("KILN_TESTING_INJECT_BUG");
  if (value == nullptr || *value == '\0') return "";
  std::string_view spec(value);
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon + 1 == spec.size())
    fail("KILN_TESTING_INJECT_BUG='", spec, "' is not POINT:OP (POINT: lowering, schedule or code)");
  std::string_view where = spec.substr(0, colon);
  if (where != "lowering" && where != "schedule" && where != "code" && where != "source")
    fail("KILN_TESTING_INJECT_BUG: unknown point '", where, "' (known: lowering, schedule, code, source)");
  return where == point ? std::string(spec.substr(colon + 1)) : "";
}

bool computes(const codegen::LoopNode& node, const ir::Graph& graph, const std::string& op) {
  if (node.kind != codegen::NodeKind::Pointwise || !node.body) return false;
  for (const std::string& origin : node.origins) {
    const ir::Node* from = graph.find(origin);
    if (from != nullptr && from->target() == op) return true;
  }
  return false;
}

codegen::Expr plus_one(const codegen::Expr& body) {
  return codegen::binary(codegen::LoopOp::add, body, codegen::constant(1, body->dtype));
}

}  // namespace

void check_testing_fault() { faulty_op("lowering"); }

void inject_lowering_fault(const ir::Graph& graph, codegen::LoopProgram& program) {
  std::string op = faulty_op("lowering");
  if (op.empty()) return;
  for (codegen::LoopNode& node : program.nodes)
    if (computes(node, graph, op)) node.body = plus_one(node.body);
}

namespace {
// The kernels' steps are what the emitters print; the scheduled program's nodes are what the
// loop evaluator runs.
void add_one_to_steps(const ir::Graph& graph, codegen::ScheduledProgram& scheduled, const std::string& op) {
  for (codegen::Kernel& kernel : scheduled.kernels)
    for (codegen::KernelStep& step : kernel.steps)
      if (step.kind != codegen::KernelStep::Kind::Reduce && step.node >= 0 &&
          computes(scheduled.program.nodes.at(size_t(step.node)), graph, op))
        step.body = plus_one(step.body);
}
}  // namespace

void inject_schedule_fault(const ir::Graph& graph, codegen::ScheduledProgram& scheduled) {
  std::string op = faulty_op("schedule");
  if (op.empty()) return;
  add_one_to_steps(graph, scheduled, op);
  for (codegen::LoopNode& node : scheduled.program.nodes)
    if (computes(node, graph, op)) node.body = plus_one(node.body);
}

void inject_code_fault(const ir::Graph& graph, codegen::ScheduledProgram& scheduled) {
  std::string op = faulty_op("code");
  if (!op.empty()) add_one_to_steps(graph, scheduled, op);
}

void inject_source_fault(std::string& source) {
  if (faulty_op("source").empty()) return;
  source += "static_assert(false, \"KILN_TESTING_INJECT_BUG: a compile error injected into the generated code\");\n";
}

}  // namespace kiln::compiler
