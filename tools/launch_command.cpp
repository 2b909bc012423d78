// `kiln launch -n N [--allow-run-as-root] PROGRAM [ARGS...]`: runs N processes of PROGRAM on this
// machine as one MPI job, for data-parallel training (compiler/distributed/launcher.h).
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "compiler/distributed/launcher.h"
#include "tools/commands.h"

namespace kiln::tools {

void add_launch_command(CLI::App& app) {
  auto options = std::make_shared<compiler::LaunchOptions>();
  CLI::App* launch = app.add_subcommand(
      "launch", "Run N processes of a program on this machine as one MPI job (data-parallel training).");
  // Everything from PROGRAM on is the program's own: `kiln launch -n 2 ./train --epochs 3`.
  launch->prefix_command();
  launch->add_option("-n,--ranks", options->ranks, "Number of processes (ranks)")->required();
  launch->add_flag("--allow-run-as-root", options->allow_run_as_root,
                   "Let mpirun run as root (it refuses otherwise; or set OMPI_ALLOW_RUN_AS_ROOT=1 and "
                   "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)");
  launch->footer(
      "It runs: mpirun -np N --oversubscribe PROGRAM ARGS... (Open MPI, Debian's openmpi-bin), with\n"
      "OMPI_MCA_orte_tmpdir_base set to a folder of its own unless it is set already.\n"
      "Examples:\n"
      "  kiln launch -n 2 build/samples/train_ddp/train_ddp --epochs 20");
  register_action(launch, [options, launch] {
    options->command = launch->remaining();
    if (!options->command.empty() && options->command.front() == "--") options->command.erase(options->command.begin());
    compiler::exec_launch(compiler::launch_command_line(*options));
    return 0;
  });
}

}  // namespace kiln::tools
