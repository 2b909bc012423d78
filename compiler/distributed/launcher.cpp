// `kiln launch` through mpirun. See compiler/distributed/launcher.h.
#include "compiler/distributed/launcher.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "kiln/error.h"

namespace kiln::compiler {

namespace {

bool is_executable_file(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && access(path.c_str(), X_OK) == 0;
}

// `name` as execvp would find it: itself when it holds a '/', else the first executable on PATH.
std::optional<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return is_executable_file(name) ? std::optional<std::string>(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::istringstream directories(path ? path : "");
  for (std::string directory; std::getline(directories, directory, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(directory.empty() ? "." : directory) / name;
    if (is_executable_file(candidate)) return candidate.string();
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> launch_command_line(const LaunchOptions& options) {
  if (options.ranks < 1) fail("kiln launch: -n is ", options.ranks, "; it must be at least 1");
  if (options.command.empty() || options.command[0].empty())
    fail("kiln launch: no program to start (kiln launch -n N PROGRAM [ARGS...])");
  if (!find_program(options.command[0]))
    fail("kiln launch: program '", options.command[0], "' is not an executable file",
         options.command[0].find('/') == std::string::npos ? " on PATH" : "");
  const std::optional<std::string> mpirun = find_program("mpirun");
  if (!mpirun) fail("kiln launch: mpirun is not on PATH: install Open MPI (Debian's openmpi-bin; scripts/setup does)");
  std::vector<std::string> line = {*mpirun, "-np", std::to_string(options.ranks), "--oversubscribe"};
  if (options.allow_run_as_root) line.push_back("--allow-run-as-root");
  line.insert(line.end(), options.command.begin(), options.command.end());
  return line;
}

std::filesystem::path make_session_directory_base(const std::filesystem::path& parent, int pid) {
  std::error_code error;
  std::filesystem::create_directories(parent, error);
  if (error) return {};
  chmod(parent.c_str(), 0700);
  for (const std::filesystem::directory_entry& entry : std::filesystem::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos || name.size() > 9) continue;
    const int other = std::stoi(name);
    if (other != pid && kill(other, 0) != 0 && errno == ESRCH) std::filesystem::remove_all(entry.path(), error);
  }
  const std::filesystem::path base = parent / std::to_string(pid);
  std::filesystem::create_directory(base, error);
  if (error || !std::filesystem::is_directory(base, error)) return {};
  return base;
}

void exec_launch(const std::vector<std::string>& command_line) {
  if (std::getenv("OMPI_MCA_orte_tmpdir_base") == nullptr) {
    std::error_code error;
    const std::filesystem::path temp = std::filesystem::temp_directory_path(error);
    const std::filesystem::path base =
        error ? std::filesystem::path()
              : make_session_directory_base(temp / ("kiln-launch-" + std::to_string(getuid())), int(getpid()));
    if (!base.empty()) setenv("OMPI_MCA_orte_tmpdir_base", base.c_str(), /*overwrite=*/1);
  }
  std::vector<char*> argv;
  for (const std::string& argument : command_line) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  execv(argv[0], argv.data());
  fail("kiln launch: cannot start ", command_line[0], ": ", std::strerror(errno));
}

}  // namespace kiln::compiler
