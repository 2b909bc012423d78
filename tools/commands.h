// The subcommands of the `kiln` tool. Each add_*_command registers its flags on the app
// and remembers what to run; run_selected_command runs the one the user chose.
#pragma once

#include <functional>
#include <string>

namespace CLI { class App; }

namespace kiln::tools {

void add_dump_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_opt_command(CLI::App& app);
void add_cache_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_bench_command(CLI::App& app);

// Adds the MODEL argument (required) of a command that loads a model, into `model`: any file
// frontends/model_loader.h reads.
void add_model_argument(CLI::App& command, std::string& model);

// Registers the action of a subcommand (called by the add_*_command functions).
void register_action(CLI::App* subcommand, std::function<int()> action);
// Runs the action of the subcommand that was parsed; returns the exit status.
int run_selected_command(CLI::App& app);

}  // namespace kiln::tools
