// Running another program. See compiler/child_process.h.
#include "compiler/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "kiln/error.h"

namespace kiln::compiler {

int run_child_process(const std::vector<std::string>& argv, const std::filesystem::path& directory,
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

}  // namespace kiln::compiler
