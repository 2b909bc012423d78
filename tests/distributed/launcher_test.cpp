// `kiln launch` (compiler/distributed/launcher.h): the mpirun command line it runs, and a real
// launch of distributed_worker on 2 ranks through the kiln tool. Its bad inputs are tested as the
// CLI's (tests/tools/launch_command_test.cpp).
#include "compiler/distributed/launcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/distributed/mpi_job.h"

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

}  // namespace
}  // namespace kiln::distributed_test
