// The subcommands of the `kiln` tool. Each add_*_command registers its flags on the app
// and remembers what to run; run_selected_command runs the one the user chose.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kiln::tools {

void add_dump_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_opt_command(CLI::App& app);
void add_cache_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_kernel_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_launch_command(CLI::App& app);

// Adds the MODEL argument (required) of a command that loads a model, into `model`: any file
// frontends/model_loader.h reads.
void add_model_argument(CLI::App& command, std::string& model);

// The --target flag of a command that runs or compiles a model, into `target`: its help lists
// the targets of the registry (compiler/target_registry.h) with their summaries after `what`.
// The value is checked by check_target (one line naming the known targets), not by the parser.
CLI::Option* add_target_option(CLI::App& command, std::string& target, const std::string& what);
// The deprecated spelling --backend of --target, kept for one release (run and bench had it):
// the same value; --help says it is deprecated; using it prints a warning (warn_if_used).
CLI::Option* add_backend_alias(CLI::App& command, std::string& target, CLI::Option* target_option);
// Prints "kiln: warning: --backend is deprecated ..." to stderr when `backend` was given.
void warn_if_used(const CLI::Option* backend);
// kiln::Error "unknown target 'x' (known: cpu, cuda, interp, eager)" for a name the registry lacks.
void check_target(const std::string& target);

// Registers the action of a subcommand (called by the add_*_command functions).
void register_action(CLI::App* subcommand, std::function<int()> action);
// Runs the action of the subcommand that was parsed; returns the exit status.
int run_selected_command(CLI::App& app);

}  // namespace kiln::tools
