// `kiln kernel`'s pipeline (see compiler/standalone_kernel.h): the graph scheduled by the
// driver's steps, the kernel chosen by name or by node, and the header emitted.
#include "compiler/standalone_kernel.h"

#include <algorithm>
#include <cctype>

#include "codegen/c_like/c_printer.h"
#include "codegen/cpp/kernel_header.h"
#include "codegen/cuda/cuda_kernel_header.h"
#include "compiler/compile_driver.h"
#include "frontends/expression/expression_parser.h"
#include "runtime/error.h"
#include "runtime/message_text.h"

namespace kiln::compiler {

namespace {

void check_entry_name(const std::string& name) {
  bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) fail("--name '", excerpt(name, 40), "' is not a C identifier (letters, digits and '_', not starting with a digit)");
  if (name.size() > 200) fail("--name is longer than 200 characters");
  if (codegen::is_reserved_c_word(name)) fail("--name '", name, "' is a word of C++ (or a type the header uses): choose another");
}

std::string kernel_names(const codegen::ScheduledProgram& scheduled) {
  std::string names;
  for (const codegen::Kernel& kernel : scheduled.kernels) names += (names.empty() ? "" : ", ") + kernel.name;
  return names.empty() ? "none" : names;
}

// The kernel that computes graph node `node`: the one that stores its value, else the first that
// computes it inline (a value fused into its readers is computed in each of them).
int kernel_of_node(const codegen::ScheduledProgram& scheduled, std::string node) {
  if (!node.empty() && node[0] == '%') node.erase(0, 1);
  const codegen::LoopProgram& p = scheduled.program;
  for (size_t k = 0; k < scheduled.kernels.size(); ++k) {
    const codegen::Kernel& kernel = scheduled.kernels[k];
    std::vector<int> written;
    for (const codegen::KernelStep& step : kernel.steps) written.insert(written.end(), step.outputs.begin(), step.outputs.end());
    if (kernel.extern_node >= 0)
      for (const codegen::StridedView& v : p.nodes[size_t(kernel.extern_node)].extern_call.outputs) written.push_back(v.buffer);
    for (int b : written)
      if (p.buffer(b).name == node) return int(k);
  }
  for (size_t k = 0; k < scheduled.kernels.size(); ++k) {
    const std::vector<std::string>& origins = scheduled.kernels[k].origins;
    if (std::find(origins.begin(), origins.end(), node) != origins.end()) return int(k);
  }
  fail("no kernel computes node '", excerpt(node, 60), "' (an input, a parameter, or a node the passes removed or ",
       "that is only a view; `kiln dump MODEL --stage scheduled` lists what each kernel fuses)");
}

}  // namespace

ir::Graph expression_graph(std::string_view expression, const std::vector<std::string>& input_specs) {
  std::vector<frontends::ExpressionInput> inputs;
  for (const std::string& spec : input_specs) inputs.push_back(frontends::parse_expression_input(spec));
  return frontends::parse_expression(expression, inputs);
}

std::string standalone_kernel_header(const ir::Graph& graph, const StandaloneKernelRequest& request) {
  if (request.target != "cpu" && request.target != "cuda")
    fail("--target ", excerpt(request.target, 40), " has no standalone kernels (kiln kernel writes the code of cpu and cuda)");
  check_entry_name(request.name);
  if (request.target == "cuda") {
    if (request.kernel || request.node)
      fail("--target cuda writes the kernels of --expr only: one kernel of a model as a CUDA header is not supported yet");
    codegen::ScheduledProgram scheduled = scheduled_program(graph, {}, "cuda");
    if (scheduled.kernels.empty())
      fail("the computation needs no kernel (its result is a view of an input): there is no code to write");
    codegen::cuda::CudaKernelHeaderOptions options;
    options.name = request.name;
    options.description = request.description;
    options.output_names = request.output_names;
    return codegen::cuda::emit_cuda_kernel_header(scheduled, options);
  }
  codegen::ScheduledProgram scheduled = scheduled_program(graph);
  codegen::KernelHeaderOptions options;
  options.name = request.name;
  options.description = request.description;
  options.output_names = request.output_names;
  if (request.kernel) {
    auto found = std::find_if(scheduled.kernels.begin(), scheduled.kernels.end(),
                              [&](const codegen::Kernel& kernel) { return kernel.name == *request.kernel; });
    if (found == scheduled.kernels.end())
      fail("unknown kernel '", excerpt(*request.kernel, 60), "' (the kernels: ", excerpt(kernel_names(scheduled), 2000), ")");
    options.kernels = {int(found - scheduled.kernels.begin())};
  } else if (request.node) {
    options.kernels = {kernel_of_node(scheduled, *request.node)};
  } else if (scheduled.kernels.empty()) {
    fail("the computation needs no kernel (its result is a view of an input): there is no code to write");
  }
  const codegen::Kernel& first = scheduled.kernels.at(size_t(options.kernels.empty() ? 0 : options.kernels[0]));
  if (!options.kernels.empty()) options.description.push_back("Kernel " + first.name + ": computes " +
                                                             codegen::origins_text(first.origins) + ".");
  return codegen::emit_kernel_header(scheduled, options);
}

}  // namespace kiln::compiler
