// `kiln opt MODEL --passes a,b,c [--verbose] [--freeze]`: runs any list of passes on a model
// and prints the result (as `mlir-opt` does).
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "compiler/graph_formats.h"
#include "compiler/graph_stages.h"
#include "compiler/model_files.h"
#include "kiln/error.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {
struct OptOptions {
  std::string model;
  std::vector<std::string> passes;
  bool verbose = false;
  bool freeze = false;
  bool verify = true;
};

int run_opt(const OptOptions& options) {
  ir::Graph graph = compiler::load_model(options.model);
  compiler::GraphRunOptions run_options;
  run_options.verbose = options.verbose;
  run_options.verify = options.verify;
  run_options.freeze = options.freeze;
  compiler::run_graph_passes(graph, options.passes, run_options);
  std::cout << compiler::render_graph(graph, compiler::GraphFormat::text);
  return 0;
}

std::string passes_help() {
  std::string text = "Comma-separated passes to run, in order:";
  for (const compiler::GraphStep& pass : compiler::graph_passes()) text += "\n  " + pass.name + ": " + pass.summary;
  return text;
}
}  // namespace

void add_opt_command(CLI::App& app) {
  auto options = std::make_shared<OptOptions>();
  CLI::App* opt = app.add_subcommand("opt", "Run a list of graph passes on a model and print the result.");
  add_model_argument(*opt, options->model);
  opt->add_option("--passes,-p", options->passes, passes_help())->delimiter(',')->required();
  opt->add_flag("--verbose,-v", options->verbose, "Print each pass's time and the IR after it (to stderr)");
  opt->add_flag("--freeze", options->freeze, "Let constant folding fold parameters");
  opt->add_flag("!--no-verify", options->verify, "Skip the verifier after each pass");
  opt->footer(
      "Examples:\n"
      "  kiln opt samples/models/inplace.kiln --passes functionalize,dce --verbose\n"
      "  kiln opt samples/models/attention.kiln --passes decompose,simplify");
  register_action(opt, [options] { return run_opt(*options); });
}

}  // namespace kiln::tools
