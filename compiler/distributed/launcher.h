// `kiln launch -n N PROGRAM [ARGS...]`: starts N processes of PROGRAM on this machine as one MPI
// job (Open MPI's mpirun, from Debian's openmpi-bin), for data-parallel training
// (kiln/distributed.h). It is mpirun with the options one machine needs: -np N, --oversubscribe
// (more ranks than cores is allowed), and --allow-run-as-root only when asked. mpirun replaces
// the calling process, so its exit status and its handling of signals are the launch's own.
//
// Each launch gets a session directory base of its own (OMPI_MCA_orte_tmpdir_base, unless the user
// set it): Open MPI 4's mpirun creates TMPDIR/ompi.HOST.UID when it starts, and two started in the
// same instant race for it, the loser failing with "A call to mkdir was unable to create the
// desired directory ... File exists" (open-mpi/ompi#8510). The base is TMPDIR/kiln-launch-UID/PID,
// PID being mpirun's own (exec keeps it); mpirun empties it at exit, and each launch removes the
// bases of launches no longer running.
#pragma once

#include <filesystem>
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

// Makes `parent`/PID for the launch of process `pid`, first removing the folders of `parent` named
// after processes no longer running; returns the new folder, or an empty path when it cannot be made
// (mpirun then uses its default).
std::filesystem::path make_session_directory_base(const std::filesystem::path& parent, int pid);

// Replaces this process with `command_line` (launch_command_line's), with the session directory
// base above set; throws kiln::Error when that fails.
[[noreturn]] void exec_launch(const std::vector<std::string>& command_line);

}  // namespace kiln::compiler
