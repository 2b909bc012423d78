// `kiln dump MODEL [--format text|json|dot] [--show-source]`: prints a model's graph IR.
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "ir/dot_format.h"
#include "ir/json_format.h"
#include "ir/model_file.h"
#include "ir/printer.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {
struct DumpOptions {
  std::string model;
  std::string format = "text";
  bool show_source = false;
};

int run_dump(const DumpOptions& options) {
  ir::Graph graph = ir::load_model(options.model);
  if (options.format == "json") {
    std::cout << ir::graph_to_json(graph).dump(2) << "\n";
  } else if (options.format == "dot") {
    std::cout << ir::graph_to_dot(graph);
  } else {
    ir::PrintOptions print_options;
    print_options.show_source = options.show_source;
    std::cout << ir::print_graph(graph, print_options);
  }
  return 0;
}
}  // namespace

void add_dump_command(CLI::App& app) {
  auto options = std::make_shared<DumpOptions>();
  CLI::App* dump = app.add_subcommand("dump", "Print a model's graph IR (as torch.fx prints a graph).");
  dump->add_option("MODEL", options->model, "Model file: .kiln (IR text) or .json (IR JSON)")->required();
  dump->add_option("--format", options->format, "Output format")
      ->check(CLI::IsMember({"text", "json", "dot"}))
      ->capture_default_str();
  dump->add_flag("--show-source", options->show_source, "Append each node's origin as a comment");
  register_action(dump, [options] { return run_dump(*options); });
}

}  // namespace kiln::tools
