// The train_ddp sample (samples/train_ddp) run as a user runs it: 2 ranks through `kiln launch`,
// 12 epochs. It must print one line per epoch, report that the ranks hold the same weights and a
// final accuracy of at least 95%, write the loss curve, and exit 0; and its loss curve must match
// train_mlp's (samples/train_mlp: the same model, data, seed and optimizer in one process on the
// whole batches), run here too, epoch by epoch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/distributed/mpi_job.h"
#include "tests/support/test_paths.h"

namespace kiln::distributed_test {
namespace {

// The loss column of a loss.csv ("epoch,loss,accuracy,ms").
std::vector<double> losses_of(const std::filesystem::path& csv) {
  std::ifstream in(csv);
  std::string row;
  std::getline(in, row);
  EXPECT_EQ(row, "epoch,loss,accuracy,ms") << csv;
  std::vector<double> losses;
  while (std::getline(in, row)) {
    std::stringstream fields(row);
    std::string epoch, loss;
    std::getline(fields, epoch, ',');
    std::getline(fields, loss, ',');
    EXPECT_EQ(std::stoi(epoch), int(losses.size()) + 1) << row;
    losses.push_back(std::stod(loss));
  }
  return losses;
}

TEST(TrainDdpSample, TwoRanksTrainTheModelThatOneProcessTrains) {
  KILN_SKIP_WITHOUT_MPI();
  const std::filesystem::path directory = std::filesystem::temp_directory_path();
  const std::filesystem::path ddp_csv = directory / ("kiln-train-ddp-" + std::to_string(getpid()) + ".csv");
  const std::filesystem::path mlp_csv = directory / ("kiln-train-mlp-" + std::to_string(getpid()) + ".csv");
  const int epochs = 12;
  const JobResult job = run_command(job_environment() + KILN_EXECUTABLE + " launch -n 2 " + KILN_TRAIN_DDP_SAMPLE +
                                    " " + ddp_csv.string() + " --epochs " + std::to_string(epochs));
  EXPECT_EQ(job.status, 0) << job.output;
  const std::regex epoch_line(R"(epoch +(\d+) +loss ([0-9.]+) +accuracy +([0-9.]+)% +([0-9.]+) ms)");
  int lines = 0;
  for (std::sregex_iterator it(job.output.begin(), job.output.end(), epoch_line), end; it != end; ++it)
    EXPECT_EQ(std::stoi((*it)[1]), ++lines);
  EXPECT_EQ(lines, epochs) << job.output;  // rank 0 alone prints them
  EXPECT_NE(job.output.find("2 ranks, 32 points of each batch of 64 per rank"), std::string::npos) << job.output;
  EXPECT_NE(job.output.find("the 2 ranks hold the same weights"), std::string::npos) << job.output;
  std::smatch final_line;
  ASSERT_TRUE(std::regex_search(job.output, final_line, std::regex(R"(final accuracy ([0-9.]+)%)"))) << job.output;
  EXPECT_GE(std::stod(final_line[1]), 95.0) << job.output;

  const JobResult single =
      run_command(std::string(KILN_TRAIN_MLP_SAMPLE) + " " + mlp_csv.string() + " --epochs " + std::to_string(epochs));
  EXPECT_EQ(single.status, 0) << single.output;
  const std::vector<double> ddp = losses_of(ddp_csv), one = losses_of(mlp_csv);
  std::filesystem::remove(ddp_csv);
  std::filesystem::remove(mlp_csv);
  ASSERT_EQ(int(ddp.size()), epochs);
  ASSERT_EQ(int(one.size()), epochs);
  double worst = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const double difference = std::fabs(ddp[size_t(epoch)] - one[size_t(epoch)]) / one[size_t(epoch)];
    worst = std::max(worst, difference);
    EXPECT_LE(difference, 1e-3) << "epoch " << epoch + 1 << ": 2 ranks " << ddp[size_t(epoch)] << ", one process "
                                << one[size_t(epoch)];
  }
  std::printf("loss curves of 2 ranks and of one process: worst relative difference %.2e over %d epochs\n", worst,
              epochs);
  EXPECT_LT(ddp.back(), 0.5 * ddp.front());
}

TEST(TrainDdpSample, WithoutALauncherItSaysHowToStartIt) {
  KILN_SKIP_WITHOUT_MPI();
  const JobResult run = run_command(std::string("env -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u PMIX_RANK ") +
                                    KILN_TRAIN_DDP_SAMPLE + " --epochs 1");
  EXPECT_EQ(run.status, 2) << run.output;
  EXPECT_NE(run.output.find("train_ddp: init_process_group: this program was not started by an MPI launcher"),
            std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace kiln::distributed_test
