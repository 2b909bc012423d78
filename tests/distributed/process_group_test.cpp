// kiln::distributed::ProcessGroup: the collectives on 2 ranks under mpirun (one job of
// distributed_worker's `collectives` scenario, whose checks are in the worker; its argument
// errors printed one per line and checked here, one test each), and init_process_group's errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kiln/distributed.h"
#include "kiln/error.h"
#include "tests/distributed/mpi_job.h"

namespace kiln::distributed_test {
namespace {

class Collectives : public testing::Test {
 protected:
  static const JobResult& job() {
    static const JobResult result = run_worker_job(2, "collectives");
    return result;
  }
  void expect_line(const std::string& line) {
    EXPECT_NE(job().output.find("rank 0: " + line), std::string::npos) << job().output;
    EXPECT_NE(job().output.find("rank 1: " + line), std::string::npos) << job().output;
  }
};

TEST_F(Collectives, BroadcastAllReduceAllGatherAndTheTrainingSetUp) {
  KILN_SKIP_WITHOUT_MPI();
  EXPECT_EQ(job().status, 0) << job().output;
  expect_line("collectives ok");
}

TEST_F(Collectives, ARootOutOfRangeIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_line("broadcast root error: broadcast: root rank 2 is out of range (the group has ranks 0 to 1)");
}

TEST_F(Collectives, TheAverageOfIntegersIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_line("average error: all_reduce: average needs a floating dtype; the tensor is i64 (use sum for integers)");
}

TEST_F(Collectives, AnUndefinedTensorIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_line("undefined error: all_reduce: the tensor is undefined");
}

TEST_F(Collectives, TheSumOfBoolsIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_line("bool error: all_reduce: a bool tensor has no sum");
}

TEST(InitProcessGroup, AProgramNotStartedByALauncherIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  // The worker run directly, as a user might forget mpirun.
  const JobResult run = run_command(std::string("env -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u PMIX_RANK ") +
                                    KILN_DISTRIBUTED_WORKER + " collectives");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("error: init_process_group: this program was not started by an MPI launcher"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("`kiln launch -n N PROGRAM`"), std::string::npos) << run.output;
}

TEST(InitProcessGroup, AnUnknownBackendIsAnError) {
  distributed::ProcessGroupOptions options;
  options.backend = "gloo";
  try {
    distributed::init_process_group(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "init_process_group: unknown backend 'gloo' (known: mpi)");
  }
}

TEST(InitProcessGroup, TheNcclBackendIsNotImplementedYet) {
  distributed::ProcessGroupOptions options;
  options.backend = "nccl";
  try {
    distributed::init_process_group(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("the nccl backend (CUDA tensors) is not implemented yet"),
              std::string::npos)
        << error.what();
  }
}

TEST(InitProcessGroup, ANonPositiveTimeoutIsAnError) {
  distributed::ProcessGroupOptions options;
  options.timeout_seconds = 0;
  try {
    distributed::init_process_group(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "init_process_group: timeout_seconds is 0; it must be a positive number of seconds");
  }
}

}  // namespace
}  // namespace kiln::distributed_test
