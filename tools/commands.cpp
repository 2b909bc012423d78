// What the subcommands share: the MODEL argument, the --target flag (and its deprecated
// spelling --backend), and the dispatch from a parsed subcommand to its action.
#include "tools/commands.h"

#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "compiler/target_registry.h"
#include "kiln/error.h"

namespace kiln::tools {

namespace {
std::map<CLI::App*, std::function<int()>>& actions() {
  static std::map<CLI::App*, std::function<int()>> table;
  return table;
}
}  // namespace

void add_model_argument(CLI::App& command, std::string& model) {
  command.add_option("MODEL", model, "Model file: .pt2 (torch.export), .onnx (ONNX), .kiln (IR text) or .json (IR JSON); run and bench "
                                     "also take a package folder (kiln compile -o)")->required();
}

CLI::Option* add_target_option(CLI::App& command, std::string& target, const std::string& what) {
  std::string help = what;
  for (const compiler::TargetInfo& row : compiler::targets())
    help += "\n  " + std::string(row.name) + ": " + std::string(row.summary);
  return command.add_option("--target", target, help)->type_name("TARGET");
}

CLI::Option* add_backend_alias(CLI::App& command, std::string& target, CLI::Option* target_option) {
  return command.add_option("--backend", target, "Deprecated: the old name of --target (removed in the next release)")
      ->type_name("TARGET")
      ->excludes(target_option);
}

void warn_if_used(const CLI::Option* backend) {
  if (backend != nullptr && backend->count() > 0)
    std::cerr << "kiln: warning: --backend is deprecated and will be removed in the next release; use --target\n";
}

void check_target(const std::string& target) { compiler::find_target(target); }

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
