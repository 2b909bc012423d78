// Running the `kiln` executable as a user does, for the command-line tests: a fixture that
// gives each test a scratch folder and a compile cache of its own and runs `kiln ARGUMENTS`,
// capturing its exit status, stdout and stderr; and the checks of the CLI's error contract
// (exit status 1, one line on stderr starting "kiln: error: ", followed by a pointer to
// --help when the command line itself is wrong). Header-only: the tools suite builds only its
// *_test.cpp files.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/test_paths.h"

namespace kiln::cli_test {

// What one run of `kiln` did.
struct CliResult {
  int status = -1;  // the exit status; -1 when the process did not exit normally
  std::string out;
  std::string err;
};

// The whole contents of `path`, byte for byte (empty when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// A test of the `kiln` executable. dir_ is a fresh folder named after the suite, the test and
// the process, removed afterwards.
class KilnCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / ("kiln_" + std::string(info->test_suite_name()) + "_" +
                                                     info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `kiln ARGUMENTS` through the shell with a compile cache private to the test
  // (KILN_CACHE_DIR=dir_/cache, KILN_CACHE_MAX_BYTES unset), then `environment`
  // ("NAME=VALUE ...", which may override those two) set.
  CliResult kiln(const std::string& arguments, const std::string& environment = "") const {
    const std::filesystem::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string command = "env -u KILN_CACHE_MAX_BYTES KILN_CACHE_DIR=" + (dir_ / "cache").string() + " " +
                                environment + " " + KILN_EXECUTABLE + " " + arguments + " >" + out.string() +
                                " 2>" + err.string();
    const int raw = std::system(command.c_str());
    return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(out), read_file(err)};
  }

  std::filesystem::path dir_;
};

// A user error: exit status 1 and exactly one line on stderr, starting "kiln: error: " and
// containing `expected`.
inline void expect_user_error(const CliResult& result, const std::string& expected) {
  EXPECT_EQ(result.status, 1) << result.err;
  EXPECT_THAT(result.err, ::testing::StartsWith("kiln: error: "));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_THAT(result.err, ::testing::HasSubstr(expected));
}

// A usage error (a flag the command line parser refuses): the user error's line containing
// `expected`, then the line pointing to --help.
inline void expect_usage_error(const CliResult& result, const std::string& expected) {
  const std::string help_line = "Run 'kiln --help' for usage.\n";
  ASSERT_THAT(result.err, ::testing::EndsWith("\n" + help_line));
  expect_user_error({result.status, result.out, result.err.substr(0, result.err.size() - help_line.size())}, expected);
}

}  // namespace kiln::cli_test
