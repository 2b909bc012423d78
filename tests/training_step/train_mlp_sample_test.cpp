// The train_mlp sample (samples/train_mlp) run as a user runs it, with few epochs: it prints one
// progress line per epoch and a final accuracy of at least 95%, writes the loss curve as CSV
// (one row per epoch, the loss falling), and exits 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_paths.h"

namespace {

struct RunResult {
  int status = -1;
  std::string output;
};

RunResult run(const std::string& command) {
  RunResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(TrainMlpSample, ReachesNinetyFivePercentAndWritesTheLossCurve) {
  const std::filesystem::path csv =
      std::filesystem::temp_directory_path() / ("kiln-train-mlp-" + std::to_string(getpid()) + ".csv");
  const int epochs = 12;
  RunResult result = run(std::string(KILN_TRAIN_MLP_SAMPLE) + " " + csv.string() + " --epochs " + std::to_string(epochs));
  EXPECT_EQ(result.status, 0) << result.output;

  // One progress line per epoch, then the final accuracy.
  const std::regex epoch_line(R"(epoch +(\d+) +loss ([0-9.]+) +accuracy +([0-9.]+)% +([0-9.]+) ms)");
  int lines = 0;
  for (std::sregex_iterator it(result.output.begin(), result.output.end(), epoch_line), end; it != end; ++it) {
    EXPECT_EQ(std::stoi((*it)[1]), ++lines);
  }
  EXPECT_EQ(lines, epochs) << result.output;
  std::smatch final_line;
  ASSERT_TRUE(std::regex_search(result.output, final_line, std::regex(R"(final accuracy ([0-9.]+)%)"))) << result.output;
  EXPECT_GE(std::stod(final_line[1]), 95.0) << result.output;

  // The CSV: a header, one row per epoch, the loss falling from the first epoch to the last.
  std::ifstream in(csv);
  ASSERT_TRUE(in) << csv;
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "epoch,loss,accuracy,ms");
  std::vector<double> losses;
  for (std::string row; std::getline(in, row);) {
    std::stringstream fields(row);
    std::string epoch, loss, accuracy, ms;
    std::getline(fields, epoch, ',');
    std::getline(fields, loss, ',');
    std::getline(fields, accuracy, ',');
    std::getline(fields, ms, ',');
    EXPECT_EQ(std::stoi(epoch), int(losses.size()) + 1) << row;
    EXPECT_GT(std::stod(ms), 0) << row;
    losses.push_back(std::stod(loss));
  }
  std::filesystem::remove(csv);
  ASSERT_EQ(int(losses.size()), epochs);
  EXPECT_LT(losses.back(), 0.5 * losses.front());
}

TEST(TrainMlpSample, ABadArgumentIsReportedWithUsage) {
  RunResult result = run(std::string(KILN_TRAIN_MLP_SAMPLE) + " --epochs zero");
  EXPECT_EQ(result.status, 2);
  EXPECT_THAT(result.output, ::testing::HasSubstr("train_mlp: --epochs must be a positive number, got 'zero'"));
}

}  // namespace
