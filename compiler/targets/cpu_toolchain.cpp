// The system C++ toolchain of the cpu target. See compiler/targets/cpu_toolchain.h.
#include "compiler/targets/cpu_toolchain.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "kiln/error.h"

#ifndef KILN_BLAS_LIBRARY
#define KILN_BLAS_LIBRARY ""
#endif
// oneDNN, which modules with convolutions link (compiler/CMakeLists.txt; "" when not found:
// convolutions then lower to im2col + GEMM).
#ifndef KILN_DNNL_LIBRARY
#define KILN_DNNL_LIBRARY ""
#endif

namespace kiln::compiler {

namespace {

// Runs argv in `directory` with stdout and stderr to `log`; returns the exit status (127 when
// the program could not be started).
int run_process(const std::vector<std::string>& argv, const std::filesystem::path& directory,
                const std::filesystem::path& log) {
  pid_t pid = fork();
  if (pid < 0) fail("cannot start '", argv[0], "': fork failed");
  if (pid == 0) {
    if (chdir(directory.c_str()) != 0) _exit(126);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail("cannot wait for '", argv[0], "'");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string read_head(const std::filesystem::path& file, size_t max_lines) {
  std::ifstream in(file);
  std::string line, out;
  for (size_t i = 0; i < max_lines && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

}  // namespace

std::string cxx_command() {
  const char* cxx = std::getenv("CXX");
  return cxx != nullptr && *cxx != '\0' ? cxx : "c++";
}

std::vector<std::string> generated_code_flags(Isa isa) {
  std::vector<std::string> flags = {"-O3", "-std=c++17", "-fPIC", "-fopenmp", "-fno-math-errno", "-fno-trapping-math",
                                    "-fno-semantic-interposition"};
  for (const std::string& flag : isa_compiler_flags(isa)) flags.push_back(flag);
  return flags;
}

std::string blas_library() { return KILN_BLAS_LIBRARY; }
std::string dnnl_library() { return KILN_DNNL_LIBRARY; }

void run_build_step(const std::vector<std::string>& argv, const std::filesystem::path& directory,
                    const std::filesystem::path& log, const std::string& what) {
  int status = run_process(argv, directory, log);
  if (status == 127) {
    if (argv[0] == cxx_command())
      fail("the C++ compiler '", argv[0], "' was not found: install g++ or set $CXX to a C++ compiler");
    fail("'", argv[0], "' was not found (needed to build ", what, ")");
  }
  if (status != 0) {
    std::string tool = argv[0] == cxx_command() ? "the C++ compiler '" + argv[0] + "'" : "'" + argv[0] + "'";
    fail(tool, " failed (exit ", status, ") on ", what, ":\n", read_head(log, 20));
  }
}

}  // namespace kiln::compiler
