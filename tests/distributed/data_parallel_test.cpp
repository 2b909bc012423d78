// Data-parallel training (TrainingOptions::data_parallel) on 2 ranks under mpirun, each case one
// job of distributed_worker (tests/distributed/distributed_worker.cpp, which checks the numbers
// itself and prints "rank R: SCENARIO ok ..."):
//  - the MLP and the CNN of tests/data/training_parity, 20 steps of SGD and of Adam, each rank on
//    half of every batch, equal one process on the whole batches at every step: every averaged
//    gradient and every updated parameter within 1e-5 of one process's as a tensor
//    (||difference||_2 over ||value||_2; not element by element: Adam moves an element whose
//    gradient is at rounding level, |g| near its eps, by a different fraction of lr when the batch
//    is split differently, and the runs part from there; the worker says more and prints both),
//    the ranks' mean loss within 1e-5 relative, the ranks bit-identical, one all-reduce per bucket;
//  - gradient accumulation (two micro-batches per rank, communication only in apply());
//  - buffers (batch norm's running statistics) broadcast from rank 0 before every forward, or not;
//  - buckets out of the arena's order (packed) with a tiny bucket size;
//  - failures: a rank that raises, a rank that stops taking part, ranks that build different
//    trainings: errors on the ranks, never a hang.
#include <gtest/gtest.h>

#include <sched.h>

#include <regex>
#include <string>

#include "tests/distributed/mpi_job.h"
#include "tests/support/test_paths.h"

namespace kiln::distributed_test {
namespace {

void expect_both_ranks_ok(const JobResult& job, const std::string& ok_line) {
  EXPECT_EQ(job.status, 0) << job.output;
  EXPECT_NE(job.output.find("rank 0: " + ok_line), std::string::npos) << job.output;
  EXPECT_NE(job.output.find("rank 1: " + ok_line), std::string::npos) << job.output;
  std::printf("%s", job.output.c_str());
}

TEST(DataParallel, MlpWithSgdEqualsOneProcessOnTheWholeBatch) {
  KILN_SKIP_WITHOUT_MPI();
  expect_both_ranks_ok(run_worker_job(2, "parity mlp sgd"), "parity mlp sgd ok");
}

TEST(DataParallel, MlpWithAdamEqualsOneProcessOnTheWholeBatch) {
  KILN_SKIP_WITHOUT_MPI();
  expect_both_ranks_ok(run_worker_job(2, "parity mlp adam"), "parity mlp adam ok");
}

TEST(DataParallel, CnnWithSgdEqualsOneProcessOnTheWholeBatch) {
  KILN_SKIP_WITHOUT_MPI();
  expect_both_ranks_ok(run_worker_job(2, "parity cnn sgd"), "parity cnn sgd ok");
}

TEST(DataParallel, CnnWithAdamEqualsOneProcessOnTheWholeBatch) {
  KILN_SKIP_WITHOUT_MPI();
  expect_both_ranks_ok(run_worker_job(2, "parity cnn adam"), "parity cnn adam ok");
}

// Several buckets: step() cuts the backward into stages at their boundaries and averages each
// bucket on the VM's communication stream while the later stages run; the training is the same.
TEST(DataParallel, SmallBucketsGiveTheSameTraining) {
  KILN_SKIP_WITHOUT_MPI();
  for (const char* model : {"mlp", "cnn"}) {
    SCOPED_TRACE(model);
    // 64 KiB and 4 KiB buckets: the MLP's first weight (401408 bytes) cannot share one, nor can
    // the CNN's convolution and linear weights, so there are several.
    const std::string bytes = std::string(model) == "mlp" ? "65536" : "4096";
    const JobResult job = run_command(
        "KILN_LOG=distributed " + mpi_job(2, KILN_DISTRIBUTED_WORKER, "parity " + std::string(model) + " sgd " + bytes + " always"));
    expect_both_ranks_ok(job, "parity " + std::string(model) + " sgd ok");
    std::smatch match;
    ASSERT_TRUE(std::regex_search(job.output, match, std::regex(R"(20 steps, (\d+) buckets)"))) << job.output;
    EXPECT_GE(std::stoi(match[1]), 2) << job.output;
    ASSERT_TRUE(std::regex_search(job.output, match, std::regex(R"(the backward runs in (\d+) stage\(s\) for (\d+) gradient bucket\(s\), each bucket averaged on the communication stream)")))
        << job.output;
    EXPECT_GE(std::stoi(match[1]), 2) << job.output;
  }
}

// TrainingOptions::overlap_communication = automatic overlaps where a rank may run on more cores
// than its compute threads (the communication thread needs one), and the training is the same
// either way.
TEST(DataParallel, AutomaticOverlapNeedsACoreToSpare) {
  KILN_SKIP_WITHOUT_MPI();
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  ASSERT_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  const int cores = CPU_COUNT(&cpus);
  for (int threads : {1, cores}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s) on " + std::to_string(cores) + " core(s)");
    // Unbound ranks (mpirun binds each of 2 ranks to a core of its own by default): each may run
    // on every core of this process.
    const JobResult job = run_command("KILN_LOG=distributed OMP_NUM_THREADS=" + std::to_string(threads) + " " +
                                      job_environment() + KILN_MPIEXEC + " --oversubscribe --bind-to none -np 2 " +
                                      KILN_DISTRIBUTED_WORKER + " parity mlp sgd 65536");
    expect_both_ranks_ok(job, "parity mlp sgd ok");
    const bool spare = cores > threads;
    EXPECT_NE(job.output.find(spare ? "each bucket averaged on the communication stream" : "averaged after it (no core to spare"),
              std::string::npos)
        << job.output;
  }
}

TEST(DataParallel, GradientAccumulationCommunicatesOnlyInApply) {
  KILN_SKIP_WITHOUT_MPI();
  expect_both_ranks_ok(run_worker_job(2, "accumulate"), "accumulate ok");
}

TEST(DataParallel, BucketsOutOfTheArenasOrderArePackedAndAveraged) {
  KILN_SKIP_WITHOUT_MPI();
  expect_both_ranks_ok(run_worker_job(2, "buckets"), "buckets ok");
}

// TrainingOptions::broadcast_buffers: rank 0's running statistics before every training forward.
TEST(DataParallel, BuffersAreRankZerosBeforeEveryForward) {
  KILN_SKIP_WITHOUT_MPI();
  expect_both_ranks_ok(run_worker_job(2, "buffers on"), "buffers on ok");
  expect_both_ranks_ok(run_worker_job(2, "buffers off"), "buffers off ok");
}

TEST(DataParallel, ARankThatRaisesIsAnErrorOnTheOthers) {
  KILN_SKIP_WITHOUT_MPI();
  const JobResult job = run_worker_job(2, "raise");
  EXPECT_NE(job.status, 0) << job.output;
  EXPECT_NE(job.output.find("rank 1: error: compile_training: the batch has 1 inputs and 0 targets"), std::string::npos)
      << job.output;
  EXPECT_NE(job.output.find("rank 0: error: all_reduce on rank 0: rank 1 failed: it stopped with an exception"),
            std::string::npos)
      << job.output;
  // Told by rank 1, not by the 120 s timeout.
  EXPECT_LT(job.seconds, 100) << job.output;
}

TEST(DataParallel, ARankThatStopsTakingPartTimesOutOnTheOthers) {
  KILN_SKIP_WITHOUT_MPI();
  const JobResult job = run_worker_job(2, "hang 3");
  EXPECT_NE(job.status, 0) << job.output;
  EXPECT_NE(job.output.find("rank 0: error: all_reduce on rank 0 timed out after 3 s"), std::string::npos)
      << job.output;
  EXPECT_EQ(job.output.find("was not stopped"), std::string::npos) << job.output;
  EXPECT_LT(job.seconds, 25) << job.output;  // rank 1 would sleep 30 s
}

void expect_disagreement(const std::string& what, const std::string& message) {
  const JobResult job = run_worker_job(2, "mismatch " + what);
  EXPECT_NE(job.status, 0) << job.output;
  for (const char* rank : {"rank 0", "rank 1"}) {
    EXPECT_NE(job.output.find(std::string(rank) + ": error: compile_training (data_parallel): the ranks disagree on " +
                              message),
              std::string::npos)
        << job.output;
  }
}

TEST(DataParallel, RanksWithDifferentParametersAreAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_disagreement(
      "parameters",
      "the parameters (names, dtypes, shapes): at line 1 rank 1 has 'fc1.weight f32[64, 784]' where rank 0 "
      "has 'fc1.weight f32[128, 784]'");
}

TEST(DataParallel, RanksWithDifferentOptimizerOptionsAreAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_disagreement("optimizer", "the optimizer's options: at line 2 rank 1 has 'lr 0.02");
}

TEST(DataParallel, RanksWithDifferentModelsAreAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_disagreement("model", "the traced training step");
}

}  // namespace
}  // namespace kiln::distributed_test
