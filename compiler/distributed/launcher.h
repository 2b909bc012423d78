// `kiln launch -n N PROGRAM [ARGS...]`: starts N processes of PROGRAM on this machine as one MPI
// job (Open MPI's mpirun, from Debian's openmpi-bin), for data-parallel training
// (kiln/distributed.h). It is mpirun with the options one machine needs: -np N, --oversubscribe
// (more ranks than cores is allowed), and --allow-run-as-root only when asked. mpirun replaces
// the calling process, so its exit status and its handling of signals are the launch's own.
#pragma once

#include <string>
#include <vector>

namespace kiln::compiler {

struct LaunchOptions {
  int ranks = 0;
  std::vector<std::string> command;  // the program and its arguments
  bool allow_run_as_root = false;    // mpirun refuses root without it
};

// The mpirun command line for `options`: mpirun's path first. Throws kiln::Error for fewer than one
// rank, an empty command, a program that is not an executable file (or on PATH), or no mpirun on PATH.
std::vector<std::string> launch_command_line(const LaunchOptions& options);

// Replaces this process with `command_line` (launch_command_line's); throws kiln::Error when that fails.
[[noreturn]] void exec_launch(const std::vector<std::string>& command_line);

}  // namespace kiln::compiler
