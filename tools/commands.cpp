// What the subcommands share: the MODEL argument, and the dispatch from a parsed subcommand to
// its action.
#include "tools/commands.h"

#include <map>

#include <CLI/CLI.hpp>

#include "runtime/error.h"

namespace kiln::tools {

namespace {
std::map<CLI::App*, std::function<int()>>& actions() {
  static std::map<CLI::App*, std::function<int()>> table;
  return table;
}
}  // namespace

void add_model_argument(CLI::App& command, std::string& model) {
  command.add_option("MODEL", model, "Model file: .kiln (IR text), .json (IR JSON) or .onnx (ONNX)")->required();
}

void register_action(CLI::App* subcommand, std::function<int()> action) {
  actions()[subcommand] = std::move(action);
}

int run_selected_command(CLI::App& app) {
  for (CLI::App* subcommand : app.get_subcommands()) {
    auto found = actions().find(subcommand);
    KILN_CHECK(found != actions().end(), "no action for subcommand ", subcommand->get_name());
    return found->second();
  }
  KILN_CHECK(false, "no subcommand selected");
}

}  // namespace kiln::tools
