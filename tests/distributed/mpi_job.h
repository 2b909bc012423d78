// Running the data-parallel tests' jobs: a command's exit status, its output (stdout and stderr
// together) and its wall time; the mpirun command line of a job of distributed_worker (or any
// program) on this machine; and the skip when the build found no MPI.
//
// Jobs run with OMPI_ALLOW_RUN_AS_ROOT (CI runs as root, which mpirun refuses otherwise) and, in
// sanitizer builds, with LeakSanitizer off in the ranks: Open MPI's libraries and the components
// they dlopen leave allocations behind at exit that LeakSanitizer reports (seen with a bare
// MPI_Init/MPI_Finalize program); AddressSanitizer's other checks stay on.
//
// Each test process gives its jobs a session directory base of its own (orte_tmpdir_base, made
// with mkdtemp, removed at exit): Open MPI 4's mpirun creates /tmp/ompi.HOST.UID when it starts,
// and two started at once by ctest -j race for it, the loser failing with "A call to mkdir was
// unable to create the desired directory ... File exists" (open-mpi/ompi#8510; seen in CI).
// A test process runs its jobs one after another, so one base per process is enough.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "tests/support/test_paths.h"

namespace kiln::distributed_test {

struct JobResult {
  int status = -1;  // the exit status; -1 when killed by a signal
  std::string output;
  double seconds = 0;
};

inline JobResult run_command(const std::string& command) {
  JobResult result;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

inline bool mpi_available() { return std::string(KILN_MPIEXEC).size() > 0; }

// This test process's session directory base for its jobs (see above).
class SessionDirectoryBase {
 public:
  SessionDirectoryBase() {
    std::error_code error;
    std::string pattern = (std::filesystem::temp_directory_path(error) / "kiln-mpi-test-XXXXXX").string();
    if (error) pattern = "/tmp/kiln-mpi-test-XXXXXX";
    if (mkdtemp(pattern.data())) path_ = pattern;
  }
  ~SessionDirectoryBase() {
    std::error_code error;
    if (!path_.empty()) std::filesystem::remove_all(path_, error);
  }
  SessionDirectoryBase(const SessionDirectoryBase&) = delete;
  SessionDirectoryBase& operator=(const SessionDirectoryBase&) = delete;
  const std::string& path() const { return path_; }  // empty when mkdtemp failed

 private:
  std::string path_;
};

// The environment every job runs in (see above), as a shell prefix.
inline std::string job_environment() {
  static const SessionDirectoryBase session_base;
  const char* asan = std::getenv("ASAN_OPTIONS");
  std::string environment = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS='" +
                            std::string(asan ? asan : "") + ":detect_leaks=0' ";
  if (!session_base.path().empty()) environment += "OMPI_MCA_orte_tmpdir_base='" + session_base.path() + "' ";
  return environment;
}

// `ranks` processes of `program arguments` under mpirun.
inline std::string mpi_job(int ranks, const std::string& program, const std::string& arguments) {
  return job_environment() + KILN_MPIEXEC + " --oversubscribe -np " + std::to_string(ranks) + " " + program + " " +
         arguments;
}

// A job of distributed_worker: `arguments` are its scenario and the scenario's arguments.
inline JobResult run_worker_job(int ranks, const std::string& arguments) {
  return run_command(mpi_job(ranks, KILN_DISTRIBUTED_WORKER, arguments));
}

}  // namespace kiln::distributed_test

// Skips the test where this build has no MPI; fails instead when KILN_MPI_TEST_REQUIRED is set
// (scripts/test sets it: scripts/setup installs Open MPI, so there a missing MPI is a failure).
#define KILN_SKIP_WITHOUT_MPI()                                                                        \
  do {                                                                                                 \
    if (!::kiln::distributed_test::mpi_available()) {                                                  \
      if (std::getenv("KILN_MPI_TEST_REQUIRED"))                                                       \
        FAIL() << "this build has no MPI, and KILN_MPI_TEST_REQUIRED is set (scripts/setup installs "  \
                  "libopenmpi-dev and openmpi-bin; configure again)";                                  \
      GTEST_SKIP() << "this build has no MPI (Debian's libopenmpi-dev and openmpi-bin; scripts/setup " \
                      "installs them)";                                                                \
    }                                                                                                  \
  } while (0)
