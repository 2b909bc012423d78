// Kiln as an installed library (issue 15 items 5 and 6a): installs this build into a temporary
// prefix (`cmake --install`), builds samples/embed/app against that prefix alone, once with
// CMake (find_package(Kiln)) and once with pkg-config (g++ $(pkg-config --cflags --libs kiln)),
// runs each on the MLP of samples/models and compares its output with the reference
// interpreter's (the installed `kiln run --target interp`). The app sees only the prefix's
// include/ and lib/, so a public header that reaches an internal one fails the build here; and
// each installed header must compile alone.
// Label `install`; Release builds only (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "kiln/npy.h"
#include "tests/support/test_paths.h"

namespace {

namespace fs = std::filesystem;

const fs::path kSource = KILN_SOURCE_DIR;
const fs::path kModel = kSource / "samples/models/mlp.kiln";
const fs::path kInput = kSource / "samples/models/mlp_data/inputs/x.npy";

// Runs `command` in a shell; returns its exit status, with its output in `output`.
int shell(const std::string& command, std::string& output) {
  output.clear();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), int(buffer.size()), pipe) != nullptr) output += buffer.data();
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

class InstallTest : public ::testing::Test {
 protected:
  // One prefix per test binary run: installing is the expensive part.
  static void SetUpTestSuite() {
    root_ = fs::path(KILN_BINARY_DIR) / "install-test" / std::to_string(::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
    prefix_ = root_ / "prefix";
    install_status_ = shell(std::string(KILN_CMAKE_COMMAND) + " --install " + quoted(fs::path(KILN_BINARY_DIR)) + " --prefix " +
                                quoted(prefix_),
                            install_output_);
  }
  static void TearDownTestSuite() {
    if (!::testing::Test::HasFailure()) fs::remove_all(root_);
  }

  void SetUp() override {
    ASSERT_EQ(install_status_, 0) << install_output_;
  }

  // The environment every program of the test runs in: the compile cache inside the test's folder.
  static std::string env() { return "KILN_CACHE_DIR=" + quoted(root_ / "cache") + " "; }

  // The reference: the installed kiln run on the interpreter, its output in DIR/probs.npy.
  static kiln::Tensor reference() {
    fs::path dir = root_ / "reference";
    std::string output;
    int status = shell(env() + quoted(prefix_ / "bin/kiln") + " run " + quoted(kModel) + " --target interp -i x=" +
                           quoted(kInput) + " -o " + quoted(dir),
                       output);
    EXPECT_EQ(status, 0) << output;
    return kiln::read_npy((dir / "probs.npy").string());
  }

  static void expect_matches_reference(const fs::path& out_dir) {
    kiln::Tensor got = kiln::read_npy((out_dir / "probs.npy").string());
    kiln::Tensor want = reference();
    ASSERT_EQ(got.sizes(), want.sizes());
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i) worst = std::max(worst, std::abs(got.flat_double(i) - want.flat_double(i)));
    EXPECT_LT(worst, 1e-5) << "the app's output differs from the interpreter's by " << worst;
  }

  static inline fs::path root_;
  static inline fs::path prefix_;
  static inline int install_status_ = -1;
  static inline std::string install_output_;
};

TEST_F(InstallTest, InstallsTheToolTheLibraryTheHeadersAndThePackageFiles) {
  EXPECT_TRUE(fs::exists(prefix_ / "bin/kiln"));
  EXPECT_TRUE(fs::exists(prefix_ / "lib/libkiln.so"));
  EXPECT_TRUE(fs::exists(prefix_ / "include/kiln/kiln.h"));
  EXPECT_TRUE(fs::exists(prefix_ / "include/kiln/nn/module.h"));
  EXPECT_TRUE(fs::exists(prefix_ / "lib/cmake/Kiln/KilnConfig.cmake"));
  EXPECT_TRUE(fs::exists(prefix_ / "lib/cmake/Kiln/KilnConfigVersion.cmake"));
  EXPECT_TRUE(fs::exists(prefix_ / "lib/pkgconfig/kiln.pc"));
  EXPECT_FALSE(fs::exists(prefix_ / "include/runtime"));
  EXPECT_FALSE(fs::exists(prefix_ / "include/ir"));
}

// Each installed header compiles first in a translation unit, with -I at the prefix only: it
// includes what it uses, and nothing outside the prefix.
TEST_F(InstallTest, EveryInstalledHeaderCompilesAlone) {
  size_t headers = 0;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(prefix_ / "include/kiln")) {
    if (entry.path().extension() != ".h") continue;
    ++headers;
    std::string name = fs::relative(entry.path(), prefix_ / "include").string(), output;
    EXPECT_EQ(shell("echo '#include <" + name + ">' | " + std::string(KILN_CXX_COMPILER) +
                        " -std=c++20 -fsyntax-only -Wall -Wextra -I " + quoted(prefix_ / "include") + " -x c++ -",
                    output),
              0)
        << name << ":\n" << output;
  }
  EXPECT_GE(headers, 20u);
}

TEST_F(InstallTest, CMakeAppBuiltAgainstThePrefixMatchesTheInterpreter) {
  fs::path build = root_ / "cmake-app";
  std::string output;
  ASSERT_EQ(shell(std::string(KILN_CMAKE_COMMAND) + " -S " + quoted(kSource / "samples/embed/app") + " -B " +
                      quoted(build) + " -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + quoted(prefix_) +
                      " -DCMAKE_CXX_COMPILER=" + quoted(KILN_CXX_COMPILER) + " -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF",
                  output),
            0)
      << output;
  ASSERT_EQ(shell(std::string(KILN_CMAKE_COMMAND) + " --build " + quoted(build), output), 0) << output;
  fs::path out = root_ / "cmake-out";
  ASSERT_EQ(shell(env() + quoted(build / "embed_app") + " " + quoted(kModel) + " " + quoted(kInput) + " " + quoted(out),
                  output),
            0)
      << output;
  EXPECT_NE(output.find("compiled for cpu"), std::string::npos) << output;
  expect_matches_reference(out);
  // The second run loads the compiled model from the cache.
  ASSERT_EQ(shell(env() + quoted(build / "embed_app") + " " + quoted(kModel) + " " + quoted(kInput) + " " + quoted(out),
                  output),
            0)
      << output;
  EXPECT_NE(output.find("from the compile cache"), std::string::npos) << output;
  // A bad input is one kiln::Error line and exit status 1.
  EXPECT_EQ(shell(env() + quoted(build / "embed_app") + " " + quoted(root_ / "missing.kiln"), output), 1) << output;
  EXPECT_NE(output.find("missing.kiln"), std::string::npos) << output;
}

TEST_F(InstallTest, PkgConfigAppBuiltAgainstThePrefixMatchesTheInterpreter) {
  fs::path app = root_ / "pkg-config-app";
  std::string pkg = "PKG_CONFIG_PATH=" + quoted(prefix_ / "lib/pkgconfig") + " pkg-config";
  std::string output;
  ASSERT_EQ(shell(std::string(KILN_CXX_COMPILER) + " -O1 " + quoted(kSource / "samples/embed/app/embed_app.cpp") + " -o " +
                      quoted(app) + " $(" + pkg + " --cflags --libs kiln)",
                  output),
            0)
      << output;
  fs::path out = root_ / "pkg-config-out";
  ASSERT_EQ(shell(env() + "LD_LIBRARY_PATH=" + quoted(prefix_ / "lib") + " " + quoted(app) + " " + quoted(kModel) + " " +
                      quoted(kInput) + " " + quoted(out),
                  output),
            0)
      << output;
  expect_matches_reference(out);
}

// libkiln.so exports the public API (cmake/libkiln.map) and none of Kiln's internals; the
// samples written against the public headers alone (training an MLP, on one process or several;
// compiling a C++ function)
// link against it with -I and -L at the prefix only, every symbol they use resolved.
TEST_F(InstallTest, TheLibraryExportsThePublicApiAndNoInternals) {
  std::string symbols;
  ASSERT_EQ(shell("nm -D -C --defined-only " + quoted(prefix_ / "lib/libkiln.so"), symbols), 0) << symbols;
  for (const char* exported : {" kiln::Tensor::", " kiln::read_npy(", " kiln::compile(", " kiln::nn::Linear::",
                               " typeinfo for kiln::Error", " kiln::Package::"})
    EXPECT_NE(symbols.find(exported), std::string::npos) << exported;
  // Each line is "ADDRESS TYPE NAME"; no exported name is in an internal namespace or the standard library's.
  std::istringstream lines(symbols);
  std::string address, type, name;
  size_t count = 0;
  while (lines >> address >> type && std::getline(lines, name)) {
    name = name.substr(name.find_first_not_of(' '));
    ++count;
    for (const char* internal : {"kiln::ir::", "kiln::passes::", "kiln::codegen::", "kiln::compiler::", "kiln::frontends::",
                                 "kiln::vm::", "kiln::portable::", "kiln::CompileCache::", "std::"})
      EXPECT_NE(name.rfind(internal, 0), 0u) << name;
  }
  EXPECT_GT(count, 100u);
  for (const char* sample : {"train_mlp/train_mlp.cpp", "train_ddp/train_ddp.cpp", "compile_fn/compile_fn.cpp"}) {
    std::string output;
    EXPECT_EQ(shell(std::string(KILN_CXX_COMPILER) + " -std=c++20 -O0 " + quoted(kSource / "samples" / sample) + " -I " +
                        quoted(prefix_ / "include") + " -L " + quoted(prefix_ / "lib") + " -lkiln -Wl,--no-undefined -o " +
                        quoted(root_ / fs::path(sample).stem()),
                    output),
              0)
        << sample << ":\n" << output;
  }
}

}  // namespace
