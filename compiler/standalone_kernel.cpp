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
#include "kiln/error.h"
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
  // The kernels as the target lowers them (cpu: what `kiln dump --stage scheduled` prints).
  codegen::ScheduledProgram scheduled = scheduled_program(graph, {}, request.target);
  std::vector<int> kernels;  // empty: all of them
  if (request.kernel) {
    auto found = std::find_if(scheduled.kernels.begin(), scheduled.kernels.end(),
                              [&](const codegen::Kernel& kernel) { return kernel.name == *request.kernel; });
    if (found == scheduled.kernels.end())
      fail("unknown kernel '", excerpt(*request.kernel, 60), "' (the kernels: ", excerpt(kernel_names(scheduled), 2000), ")");
    kernels = {int(found - scheduled.kernels.begin())};
  } else if (request.node) {
    kernels = {kernel_of_node(scheduled, *request.node)};
  } else if (scheduled.kernels.empty()) {
    fail("the computation needs no kernel (its result is a view of an input): there is no code to write");
  }
  std::vector<std::string> description = request.description;
  if (!kernels.empty()) {
    const codegen::Kernel& kernel = scheduled.kernels[size_t(kernels[0])];
    description.push_back("Kernel " + kernel.name + ": computes " + codegen::origins_text(kernel.origins) + ".");
  }
  if (request.target == "cuda") {
    codegen::cuda::CudaKernelHeaderOptions options{request.name, kernels, description, request.output_names};
    return codegen::cuda::emit_cuda_kernel_header(scheduled, options);
  }
  codegen::KernelHeaderOptions options{request.name, kernels, description, request.output_names};
  return codegen::emit_kernel_header(scheduled, options);
}

}  // namespace kiln::compiler
