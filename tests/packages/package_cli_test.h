// What the package tests share (tests/packages/package_test.cpp, cuda_package_test.cpp):
// a KilnCliTest that runs `kiln run` into a folder and reads the outputs back, compares two
// sets of outputs within a tolerance, and runs shell commands (CMake builds of the apps) with
// their log. Header-only: a suite builds only its *_test.cpp files.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "tests/tools/cli_runner.h"
#include "kiln/npy.h"
#include "kiln/tensor.h"

namespace kiln::cli_test {

class PackageCliTest : public KilnCliTest {
 protected:
  // The outputs of `kiln run ARGUMENTS --out DIR/NAME`, by output name.
  std::map<std::string, Tensor> run_outputs(const std::string& arguments, const std::string& name,
                                            const std::string& environment = "") {
    std::filesystem::path out = dir_ / name;
    CliResult result = kiln("run " + arguments + " --out " + out.string(), environment);
    EXPECT_EQ(result.status, 0) << result.err;
    std::map<std::string, Tensor> outputs;
    if (std::filesystem::exists(out))
      for (const auto& entry : std::filesystem::directory_iterator(out))
        outputs[entry.path().stem().string()] = read_npy(entry.path().string());
    return outputs;
  }

  // The same names, dtypes and shapes, and every element within tolerance * (1 + |expected|).
  static void expect_close(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& expected,
                           double tolerance) {
    ASSERT_EQ(got.size(), expected.size());
    ASSERT_FALSE(expected.empty());
    for (const auto& [name, want] : expected) {
      ASSERT_TRUE(got.count(name)) << name;
      const Tensor& have = got.at(name);
      ASSERT_EQ(have.dtype(), want.dtype()) << name;
      ASSERT_EQ(have.sizes(), want.sizes()) << name;
      for (int64_t i = 0; i < want.numel(); ++i)
        ASSERT_NEAR(have.flat_double(i), want.flat_double(i), tolerance * (1 + std::fabs(want.flat_double(i))))
            << name << " element " << i;
    }
  }

  // Runs `command` through the shell; its exit status, and its stdout and stderr in `output`.
  int shell(const std::string& command, std::string* output = nullptr) const {
    std::filesystem::path log = dir_ / "shell.log";
    int raw = std::system((command + " >" + log.string() + " 2>&1").c_str());
    if (output != nullptr) *output = read_file(log);
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  }
};

}  // namespace kiln::cli_test
