// For tests of what the runtime sets once per process before it loads a library (libgomp's spin,
// OpenBLAS's kernels): a check run in a forked child, whose environment and loaded libraries the
// test may change freely, and whether a shared library is loaded in this process.
#pragma once

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace kiln::test_support {

// Runs `check` in a child process; true when it returned true.
inline bool in_child(const std::function<bool()>& check) {
  pid_t pid = fork();
  if (pid == 0) _exit(check() ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Whether the library of this soname is loaded in this process (loads nothing).
inline bool library_loaded(const char* soname) {
  void* library = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
  if (library) dlclose(library);
  return library != nullptr;
}

}  // namespace kiln::test_support
