// `kiln launch`'s bad inputs, each one line on stderr and exit status 1 (the launch of a real
// 2-rank job is tests/distributed/launcher_test.cpp, which has the worker program to run).
#include "tests/tools/cli_runner.h"

namespace kiln::cli_test {
namespace {

class LaunchCommand : public KilnCliTest {};

TEST_F(LaunchCommand, ZeroRanksIsAnError) {
  expect_user_error(kiln("launch -n 0 /bin/true"), "kiln launch: -n is 0; it must be at least 1");
}

TEST_F(LaunchCommand, TheRankCountIsRequired) { expect_usage_error(kiln("launch /bin/true"), "--ranks is required"); }

TEST_F(LaunchCommand, ARankCountThatIsNotANumberIsAnError) {
  expect_usage_error(kiln("launch -n two /bin/true"), "two");
}

TEST_F(LaunchCommand, NoProgramIsAnError) {
  expect_user_error(kiln("launch -n 2"), "kiln launch: no program to start (kiln launch -n N PROGRAM [ARGS...])");
}

TEST_F(LaunchCommand, AProgramThatIsNotThereIsAnError) {
  expect_user_error(kiln("launch -n 2 /nonexistent/train --epochs 3"),
                    "kiln launch: program '/nonexistent/train' is not an executable file");
}

TEST_F(LaunchCommand, AProgramNotOnPathIsAnError) {
  expect_user_error(kiln("launch -n 2 kiln-no-such-program"),
                    "kiln launch: program 'kiln-no-such-program' is not an executable file on PATH");
}

TEST_F(LaunchCommand, NoMpirunOnPathIsAnError) {
  expect_user_error(kiln("launch -n 2 /bin/true", "PATH=/nonexistent"),
                    "kiln launch: mpirun is not on PATH: install Open MPI (Debian's openmpi-bin; scripts/setup does)");
}

}  // namespace
}  // namespace kiln::cli_test
