// `kiln run --backend`: eager mode prints and writes exactly what the interpreter does on
// every sample model (both run the same reference kernels), the interpreter is the default,
// and an unknown backend is a user error naming the flag.
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

class RunBackend : public cli_test::KilnCliTest {
 protected:
  // `kiln run` of a sample on its bundled inputs, writing the outputs under dir_/out_dir.
  CliResult run_sample(const std::string& name, const std::string& flags, const std::string& out_dir) {
    return kiln("run " + cli_test::sample_model(name) + " --input " + cli_test::sample_input(name) +
                " --show 1000 --out " + (dir_ / out_dir).string() + " " + flags);
  }
};

TEST_F(RunBackend, EagerPrintsAndWritesWhatTheInterpreterDoes) {
  for (const char* name : {"mlp", "cnn", "attention", "inplace"}) {
    SCOPED_TRACE(name);
    CliResult interp = run_sample(name, "--backend interp", "interp");
    CliResult eager = run_sample(name, "--backend eager", "eager");
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

TEST_F(RunBackend, InterpreterIsTheDefault) {
  EXPECT_EQ(run_sample("mlp", "", "default").out, run_sample("mlp", "--backend interp", "default").out);
  CliResult help = kiln("run --help");
  EXPECT_THAT(help.out, HasSubstr("--backend"));
  EXPECT_THAT(help.out, HasSubstr("interp"));
}

TEST_F(RunBackend, UnknownBackendIsAUserError) {
  CliResult result = run_sample("mlp", "--backend jit", "out");
  cli_test::expect_usage_error(result, "--backend");
  EXPECT_THAT(result.err, HasSubstr("jit"));
}

}  // namespace
}  // namespace kiln
