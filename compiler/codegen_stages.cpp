// The code generator's stages for `kiln dump`. See compiler/codegen_stages.h.
#include "compiler/codegen_stages.h"

#include <sstream>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/loop_printer.h"
#include "codegen/lowering.h"
#include "compiler/backend_common.h"
#include "runtime/error.h"

namespace kiln::compiler {

namespace {

// Every line of `text` behind "// ".
std::string as_comments(const std::string& text) {
  std::istringstream lines(text);
  std::string out, line;
  while (std::getline(lines, line)) out += "// " + line + "\n";
  return out;
}

}  // namespace

bool is_codegen_stage(std::string_view stage) {
  return stage == "loops" || stage == "scheduled" || stage == "cpp" || stage == "cuda";
}

std::string dump_codegen_stage(const ir::Graph& graph, std::string_view stage, const CodegenStageOptions& options) {
  if (!is_codegen_stage(stage)) fail("unknown codegen stage '", stage, "' (known: loops, scheduled, cpp, cuda)");
  codegen::LoopProgram loops = codegen::lower(simplified_graph(graph, options.freeze));
  if (stage == "loops") return codegen::print_loop_program(loops);
  codegen::ScheduleOptions schedule_options;
  schedule_options.fuse = options.fuse;
  codegen::ScheduledProgram scheduled = codegen::schedule(std::move(loops), schedule_options);
  if (stage == "scheduled") {
    std::string text = codegen::print_schedule(scheduled);
    if (!scheduled.fusion_log.empty()) {
      text += "# fusion decisions\n";
      for (const std::string& line : scheduled.fusion_log) text += "    " + line + "\n";
    }
    return text;
  }
  if (stage == "cpp") return codegen::emit_cpp(scheduled).source;
  codegen::cuda::CudaModule module = codegen::cuda::emit_cuda(scheduled);
  return "// launch plan\n" + as_comments(codegen::cuda::launch_plan_text(module)) + "\n" +
         codegen::cuda::kernels_text(module);
}

}  // namespace kiln::compiler
