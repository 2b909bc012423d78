// Running another program (the system C++ compiler for the cpu target's builds, Graphviz's `dot`
// for the pictures of `kiln report`): argv in a directory, with its stdout and stderr in a log file.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::compiler {

// Runs argv (argv[0] found on $PATH) in `directory` with its stdout and stderr written to `log`;
// returns its exit status: 127 when the program could not be started, 128 + N when signal N
// ended it. Throws kiln::Error only when the process cannot be made or waited for.
int run_child_process(const std::vector<std::string>& argv, const std::filesystem::path& directory,
                      const std::filesystem::path& log);

}  // namespace kiln::compiler
