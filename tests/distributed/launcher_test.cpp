// `kiln launch` (compiler/distributed/launcher.h): the mpirun command line it runs, and a real
// launch of distributed_worker on 2 ranks through the kiln tool. Its bad inputs are tested as the
// CLI's (tests/tools/launch_command_test.cpp).
#include "compiler/distributed/launcher.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/distributed/mpi_job.h"
#include "tests/support/test_paths.h"

namespace kiln::distributed_test {
namespace {

TEST(Launch, RunsMpirunWithTheRanksAndTheProgram) {
  KILN_SKIP_WITHOUT_MPI();
  compiler::LaunchOptions options{2, {KILN_DISTRIBUTED_WORKER, "parity", "mlp"}, false};
  const std::vector<std::string> line = compiler::launch_command_line(options);
  ASSERT_EQ(line.size(), 7u);
  EXPECT_EQ(line[0].substr(line[0].rfind('/') + 1), "mpirun");
  EXPECT_EQ(std::vector<std::string>(line.begin() + 1, line.end()),
            (std::vector<std::string>{"-np", "2", "--oversubscribe", KILN_DISTRIBUTED_WORKER, "parity", "mlp"}));
  options.allow_run_as_root = true;
  EXPECT_EQ(compiler::launch_command_line(options)[4], "--allow-run-as-root");
}

TEST(Launch, TheKilnToolRunsAJobOfTwoRanks) {
  KILN_SKIP_WITHOUT_MPI();
  const JobResult job =
      run_command(job_environment() + KILN_EXECUTABLE + " launch -n 2 " + KILN_DISTRIBUTED_WORKER + " collectives");
  EXPECT_EQ(job.status, 0) << job.output;
  EXPECT_NE(job.output.find("rank 0: collectives ok"), std::string::npos) << job.output;
  EXPECT_NE(job.output.find("rank 1: collectives ok"), std::string::npos) << job.output;
}

// A launch's session directory base: a folder per launch, named after its process, and the folders
// of launches that ended removed (a folder that is not a process id is left alone).
TEST(Launch, EachLaunchHasASessionDirectoryBaseOfItsOwn) {
  const std::filesystem::path parent =
      std::filesystem::temp_directory_path() / ("kiln-launch-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(parent);
  const pid_t ended = fork();
  if (ended == 0) _exit(0);
  waitpid(ended, nullptr, 0);
  std::filesystem::create_directories(parent / std::to_string(ended) / "ompi.host.0");
  std::ofstream(parent / std::to_string(ended) / "ompi.host.0" / "left") << "x";
  std::filesystem::create_directories(parent / std::to_string(getppid()));
  std::filesystem::create_directories(parent / "notes");
  const std::filesystem::path base = compiler::make_session_directory_base(parent, int(getpid()));
  EXPECT_EQ(base, parent / std::to_string(getpid()));
  EXPECT_TRUE(std::filesystem::is_directory(base));
  EXPECT_FALSE(std::filesystem::exists(parent / std::to_string(ended)));
  EXPECT_TRUE(std::filesystem::is_directory(parent / std::to_string(getppid())));
  EXPECT_TRUE(std::filesystem::is_directory(parent / "notes"));
  std::ofstream(parent / "plain-file") << "x";
  EXPECT_TRUE(compiler::make_session_directory_base(parent / "plain-file", int(getpid())).empty());
  std::filesystem::remove_all(parent);
}

// The ranks of a launch run with that base (the user's own OMPI_MCA_orte_tmpdir_base unset here).
TEST(Launch, TheRanksRunWithTheLaunchsSessionDirectoryBase) {
  KILN_SKIP_WITHOUT_MPI();
  const std::filesystem::path scratch =
      std::filesystem::temp_directory_path() / ("kiln-launch-tmpdir-" + std::to_string(getpid()));
  std::filesystem::create_directories(scratch);
  const JobResult job = run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TMPDIR='" + scratch.string() +
                                    "' env -u OMPI_MCA_orte_tmpdir_base " + KILN_EXECUTABLE +
                                    " launch -n 2 sh -c 'echo \"base=$OMPI_MCA_orte_tmpdir_base\"'");
  EXPECT_EQ(job.status, 0) << job.output;
  const std::string expected = "base=" + (scratch / ("kiln-launch-" + std::to_string(getuid()))).string() + "/";
  size_t first = job.output.find(expected), second = first == std::string::npos ? first : job.output.find(expected, first + 1);
  EXPECT_NE(second, std::string::npos) << "both ranks: " << expected << "PID\n" << job.output;
  std::filesystem::remove_all(scratch);
}

}  // namespace
}  // namespace kiln::distributed_test
