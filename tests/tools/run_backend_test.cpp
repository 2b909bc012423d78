// `kiln run --backend`: eager mode prints and writes exactly what the interpreter does on
// every sample model (both run the same reference kernels), the interpreter is the default,
// and an unknown backend is a user error naming the flag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const fs::path kModels = fs::path(KILN_SOURCE_DIR) / "samples" / "models";

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class RunBackend : public ::testing::Test {
 protected:
  struct Result {
    int status = -1;
    std::string out;
    std::string err;
  };

  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kiln_run_backend_test_" + std::string(info->name()) + "_" +
                                        std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result kiln(const std::string& arguments) {
    fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string command = std::string(KILN_EXECUTABLE) + " " + arguments + " >" + out.string() + " 2>" + err.string();
    int raw = std::system(command.c_str());
    return Result{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(out), read_file(err)};
  }

  // `kiln run` of a sample on its bundled inputs, writing the outputs under dir_/out_dir.
  Result run_sample(const std::string& name, const std::string& flags, const std::string& out_dir) {
    std::string input = "x=" + (kModels / (name + "_data") / "inputs" / "x.npy").string();
    return kiln("run " + (kModels / (name + ".kiln")).string() + " --input " + input + " --show 1000 --out " +
                (dir_ / out_dir).string() + " " + flags);
  }

  fs::path dir_;
};

TEST_F(RunBackend, EagerPrintsAndWritesWhatTheInterpreterDoes) {
  for (const char* name : {"mlp", "cnn", "attention", "inplace"}) {
    SCOPED_TRACE(name);
    Result interp = run_sample(name, "--backend interp", "interp");
    Result eager = run_sample(name, "--backend eager", "eager");
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
  Result help = kiln("run --help");
  EXPECT_THAT(help.out, HasSubstr("--backend"));
  EXPECT_THAT(help.out, HasSubstr("interp"));
}

TEST_F(RunBackend, UnknownBackendIsAUserError) {
  Result result = run_sample("mlp", "--backend jit", "out");
  EXPECT_EQ(result.status, 1) << result.err;
  EXPECT_THAT(result.err, StartsWith("kiln: error: "));
  EXPECT_THAT(result.err, HasSubstr("--backend"));
  EXPECT_THAT(result.err, HasSubstr("jit"));
}

}  // namespace
}  // namespace kiln
