// `kiln run --target`: eager mode prints and writes exactly what the interpreter does on every
// sample model (both run the same reference kernels), the interpreter is the default, and the
// deprecated spelling --backend still selects the target, with a warning.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "sample_models.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::read_file;
using ::testing::HasSubstr;

class RunTarget : public cli_test::KilnCliTest {
 protected:
  // `kiln run` of a sample on its bundled inputs, writing the outputs under dir_/out_dir.
  CliResult run_sample(const std::string& name, const std::string& flags, const std::string& out_dir) {
    return kiln("run " + cli_test::sample_model(name) + " --input " + cli_test::sample_input(name) +
                " --show 1000 --out " + (dir_ / out_dir).string() + " " + flags);
  }
};

TEST_F(RunTarget, EagerPrintsAndWritesWhatTheInterpreterDoes) {
  for (const char* name : {"mlp", "cnn", "attention", "inplace"}) {
    SCOPED_TRACE(name);
    CliResult interp = run_sample(name, "--target interp", "interp");
    CliResult eager = run_sample(name, "--target eager", "eager");
    ASSERT_EQ(interp.status, 0) << interp.err;
    ASSERT_EQ(eager.status, 0) << eager.err;
    // The summaries match up to the folder each run wrote to.
    std::string expected = interp.out.substr(0, interp.out.rfind("wrote "));
    EXPECT_EQ(eager.out.substr(0, eager.out.rfind("wrote ")), expected);
    size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir_ / "interp")) {
      ++files;
      EXPECT_EQ(read_file(dir_ / "eager" / entry.path().filename()), read_file(entry.path()))
          << entry.path().filename();
    }
    EXPECT_GT(files, 0u);
    fs::remove_all(dir_ / "interp");
    fs::remove_all(dir_ / "eager");
  }
}

TEST_F(RunTarget, InterpreterIsTheDefault) {
  EXPECT_EQ(run_sample("mlp", "", "default").out, run_sample("mlp", "--target interp", "default").out);
  CliResult help = kiln("run --help");
  EXPECT_THAT(help.out, HasSubstr("--target"));
  EXPECT_THAT(help.out, HasSubstr("interp: the reference interpreter"));
}

TEST_F(RunTarget, TheDeprecatedBackendFlagStillSelectsTheTarget) {
  CliResult target = run_sample("mlp", "--target eager", "a");
  CliResult backend = run_sample("mlp", "--backend eager", "b");
  ASSERT_EQ(backend.status, 0) << backend.err;
  EXPECT_EQ(backend.out.substr(0, backend.out.rfind("wrote ")), target.out.substr(0, target.out.rfind("wrote ")));
  EXPECT_EQ(target.err, "");
  EXPECT_EQ(backend.err, "kiln: warning: --backend is deprecated and will be removed in the next release; use --target\n");
  EXPECT_THAT(kiln("run --help").out, HasSubstr("Deprecated: the old name of --target"));
  cli_test::expect_usage_error(run_sample("mlp", "--target eager --backend interp", "c"), "--backend");
}

TEST_F(RunTarget, UnknownTargetIsAUserError) {
  cli_test::expect_user_error(run_sample("mlp", "--target jit", "out"), "unknown target 'jit' (known: cpu, cuda, interp, eager)");
  cli_test::expect_user_error(run_sample("mlp", "--backend jit", "out2"), "unknown target 'jit'");
}

}  // namespace
}  // namespace kiln
