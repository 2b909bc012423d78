// `kiln kernel`: one fused kernel as a standalone C++ header (compiler/standalone_kernel.h),
//   from an expression:  kiln kernel --expr 'gelu(x * w + b)' --input x=f32[s0,4096] ... --name fused_gelu
//   from a model:        kiln kernel MODEL --kernel kernel3_softmax_max   (or --node NODE)
// printed, or written to -o FILE (an existing file only with --force).
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/model_files.h"
#include "compiler/standalone_kernel.h"
#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "runtime/message_text.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {

struct KernelOptions {
  std::string model;
  std::string expression;
  std::vector<std::string> inputs;
  std::string kernel;
  std::string node;
  std::string name;
  std::string output;
  std::string target = "cpu";
  bool force = false;
};

// The flags that go together, checked before anything is read.
void check_flags(const KernelOptions& o, bool has_expression, bool has_kernel, bool has_node) {
  if (has_expression && has_kernel)
    fail("--kernel and --expr cannot be used together: --expr makes a kernel from an expression, --kernel picks one of MODEL's");
  if (has_expression && has_node)
    fail("--node and --expr cannot be used together: --expr makes a kernel from an expression, --node picks one of MODEL's");
  if (has_kernel && has_node) fail("--kernel and --node cannot be used together: give one");
  if (has_expression && !o.model.empty()) fail("give either MODEL (with --kernel or --node) or --expr, not both");
  if (!has_expression && o.model.empty()) fail("nothing to generate: give --expr EXPRESSION, or MODEL with --kernel NAME or --node NODE");
  if (!o.model.empty() && !has_kernel && !has_node)
    fail("which kernel of ", o.model, "? give --kernel NAME (as `kiln dump MODEL --stage scheduled` names them) or --node NODE");
  if (!has_expression && !o.inputs.empty()) fail("--input applies only to --expr");
}

int run_kernel(const KernelOptions& o, bool has_expression, bool has_kernel, bool has_node) {
  check_flags(o, has_expression, has_kernel, has_node);
  check_target(o.target);
  compiler::StandaloneKernelRequest request;
  request.target = o.target;
  ir::Graph graph;
  if (has_expression) {
    graph = compiler::expression_graph(o.expression, o.inputs);
    request.name = o.name.empty() ? "kernel" : o.name;
    request.description.push_back("Computes out = " + excerpt(o.expression, 400));
    std::string inputs;
    for (const std::string& spec : o.inputs) inputs += (inputs.empty() ? "" : ", ") + spec;
    if (!inputs.empty()) request.description.push_back("over " + inputs + ".");
    request.output_names = {"out"};
  } else {
    graph = compiler::load_model(o.model);
    if (has_kernel) request.kernel = o.kernel;
    if (has_node) request.node = o.node;
    request.name = o.name.empty() ? (has_kernel ? o.kernel : "kernel") : o.name;
    request.description.push_back("From the model " + std::filesystem::path(o.model).filename().string() + ", " +
                                  (has_kernel ? "kernel " + o.kernel : "the kernel computing node " + o.node) + ".");
  }
  std::string header = compiler::standalone_kernel_header(graph, request);
  if (o.output.empty()) {
    std::cout << header;
    return 0;
  }
  if (std::filesystem::is_directory(o.output)) fail("-o ", o.output, " is a directory (give a file name, e.g. ", request.name, ".h)");
  if (std::filesystem::exists(o.output) && !o.force) fail("-o ", o.output, " exists (pass --force to overwrite it)");
  write_file_atomically(o.output, header, /*overwrite=*/true);
  std::cout << "wrote " << o.output << "\n";
  return 0;
}

}  // namespace

void add_kernel_command(CLI::App& app) {
  auto options = std::make_shared<KernelOptions>();
  CLI::App* command = app.add_subcommand(
      "kernel",
      "Write one fused kernel as a self-contained header (C++, or CUDA with --target cuda), from an expression or "
      "from a model.");
  command->add_option("MODEL", options->model,
                      "Model file: .pt2 (torch.export), .onnx (ONNX), .kiln (IR text) or .json (IR JSON), to take a "
                      "kernel from (with --kernel or --node)");
  auto* expression = command->add_option(
      "--expr", options->expression,
      "A tensor expression: op names as functions (gelu(x), softmax(x, -1), sum(x * x, 1), mean(x, [0, 1])), "
      "+ - * / with the usual precedence, unary minus, parentheses and numbers");
  command->add_option("--input", options->inputs, "An input of --expr: NAME=DTYPE[DIMS], e.g. x=f32[s0,4096] (repeat for each)")
      ->type_name("SPEC");
  auto* kernel = command->add_option("--kernel", options->kernel,
                                     "With MODEL: the kernel to write, as `kiln dump MODEL --stage scheduled` names it");
  auto* node = command->add_option("--node", options->node, "With MODEL: write the kernel that computes this graph node");
  command->add_option("--name", options->name,
                      "The entry function's name, a C identifier (default: the kernel's name, or 'kernel' for --expr)");
  command->add_option("-o,--output", options->output, "Write the header to FILE instead of printing it")->type_name("FILE");
  command->add_flag("--force", options->force, "With -o: overwrite an existing file");
  command->add_option("--target", options->target, "cpu: a C++ header (.h); cuda: a CUDA header (.cuh) for nvcc and NVRTC")
      ->capture_default_str();
  command->footer(
      "Examples:\n"
      "  kiln kernel --expr 'gelu(x * w + b)' --input x=f32[s0,4096] --input w=f32[4096] --input b=f32[4096] --name fused_gelu\n"
      "  kiln kernel samples/models/attention.kiln --kernel kernel3_softmax_max");
  register_action(command, [options, expression, kernel, node] {
    return run_kernel(*options, expression->count() > 0, kernel->count() > 0, node->count() > 0);
  });
}

}  // namespace kiln::tools
