// `--target` on every command that runs or compiles a model (run, bench, compile, dump), read from
// the target registry (compiler/target_registry.h): each command accepts each target it can use
// and refuses an unknown one in one line naming the known ones (exit 1); run and bench keep
// --backend as a deprecated alias; compile refuses the targets that generate no code; dump's
// code stages follow --target; target-specific flags are refused with another target.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/nvrtc.h"
#include "kiln/error.h"
#include "sample_models.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using ::testing::HasSubstr;
using ::testing::Not;

bool have_nvrtc() {
  try {
    cuda::nvrtc();
    return true;
  } catch (const Error&) {
    return false;
  }
}

class TargetFlag : public cli_test::KilnCliTest {
 protected:
  static std::string mlp() { return cli_test::sample_model("mlp"); }
  static std::string mlp_input() { return " --input " + cli_test::sample_input("mlp"); }
};

TEST_F(TargetFlag, EveryCommandListsTheRegistrysTargetsInItsHelp) {
  for (const char* command : {"run", "bench", "compile", "dump"}) {
    SCOPED_TRACE(command);
    CliResult help = kiln(std::string(command) + " --help");
    ASSERT_EQ(help.status, 0) << help.err;
    EXPECT_THAT(help.out, HasSubstr("--target"));
    for (const char* line : {"cpu: compiled C++", "cuda: compiled CUDA", "interp: the reference interpreter",
                             "eager: the interpreter's kernels"})
      EXPECT_THAT(help.out, HasSubstr(line));
  }
  EXPECT_THAT(kiln("bench --help").out, HasSubstr("--backend"));
  EXPECT_THAT(kiln("compile --help").out, Not(HasSubstr("--backend")));
}

TEST_F(TargetFlag, AnUnknownTargetIsOneLineNamingTheKnownOnes) {
  const std::string known = "unknown target 'tpu' (known: cpu, cuda, interp, eager)";
  cli_test::expect_user_error(kiln("run " + mlp() + mlp_input() + " --target tpu"), known);
  cli_test::expect_user_error(kiln("bench " + mlp() + " --dim s0=2 --target tpu"), known);
  cli_test::expect_user_error(kiln("compile " + mlp() + " --target tpu"), known);
  cli_test::expect_user_error(kiln("dump " + mlp() + " --stage code --target tpu"), known);
}

TEST_F(TargetFlag, RunOnEveryTargetOfThisMachine) {
  for (const char* target : {"interp", "eager", "cpu"}) {
    SCOPED_TRACE(target);
    CliResult result = kiln("run " + mlp() + mlp_input() + " --check --target " + target);
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_THAT(result.out, HasSubstr("check probs: max abs err"));
  }
  if (std::optional<std::string> reason = cuda::cuda_unavailable_reason(); reason && have_nvrtc()) {
    // Compiles, then cannot run: the runtime's one-line reason.
    cli_test::expect_user_error(kiln("run " + mlp() + mlp_input() + " --target cuda"), "no CUDA device: ");
  }
}

TEST_F(TargetFlag, BenchOnEachTargetReportsIt) {
  for (const char* target : {"interp", "eager", "cpu"}) {
    SCOPED_TRACE(target);
    CliResult result = kiln("bench " + mlp() + " --dim s0=4 --iters 2 --warmup 0 --json --target " + target);
    ASSERT_EQ(result.status, 0) << result.err;
    nlohmann::json out = nlohmann::json::parse(result.out);
    EXPECT_EQ(out["target"], target);
    EXPECT_GT(out["median_ms"].get<double>(), 0);
  }
  CliResult text = kiln("bench " + mlp() + " --dim s0=4 --iters 2 --warmup 0 --target cpu");
  EXPECT_THAT(text.out, HasSubstr("on cpu: median"));
  EXPECT_THAT(text.out, HasSubstr("compile: "));
  EXPECT_THAT(kiln("bench " + mlp() + " --dim s0=4 --iters 2 --warmup 0 --target interp").out, Not(HasSubstr("compile: ")));
  CliResult alias = kiln("bench " + mlp() + " --dim s0=4 --iters 2 --warmup 0 --json --backend interp");
  ASSERT_EQ(alias.status, 0) << alias.err;
  EXPECT_EQ(nlohmann::json::parse(alias.out)["target"], "interp");
  EXPECT_THAT(alias.err, HasSubstr("--backend is deprecated"));
}

TEST_F(TargetFlag, CompileForEachCodeTargetAndRefuseTheOthers) {
  CliResult cpu = kiln("compile " + mlp() + " --target cpu");
  ASSERT_EQ(cpu.status, 0) << cpu.err;
  EXPECT_THAT(cpu.out, HasSubstr("compiling " + mlp() + " for cpu"));
  EXPECT_THAT(cpu.out, HasSubstr(", isa "));
  if (have_nvrtc()) {
    CliResult cuda = kiln("compile " + mlp() + " --target cuda --sm 80");
    ASSERT_EQ(cuda.status, 0) << cuda.err;
    for (const char* stage : {"passes", "lower", "schedule", "codegen", "nvrtc", "cache store", "load"})
      EXPECT_THAT(cuda.out, HasSubstr(stage));
    EXPECT_THAT(cuda.out, HasSubstr("compiled: key "));
    EXPECT_THAT(cuda.out, HasSubstr("1 kernel, 2 library calls, sm_80"));
    EXPECT_THAT(kiln("compile " + mlp() + " --target cuda --sm 80").out, HasSubstr("cache hit: key "));
    // -o: a package, as on cpu (tests/packages/cuda_package_test.cpp tests it further).
    CliResult package = kiln("compile " + mlp() + " --target cuda --sm 80 -o " + (dir_ / "cuda").string());
    ASSERT_EQ(package.status, 0) << package.err;
    EXPECT_THAT(package.out, HasSubstr("into package mlp for cuda"));
    for (const char* file : {"mlp.h", "mlp.cpp", "mlp_cuda.cpp", "mlp_kernels.cu", "libmlp.so", "libmlp.a", "manifest.json"})
      EXPECT_TRUE(fs::exists(dir_ / "cuda" / file)) << file;
  }
  for (const char* target : {"interp", "eager"}) {
    cli_test::expect_user_error(kiln("compile " + mlp() + " --target " + target),
                                "target '" + std::string(target) +
                                    "' runs the graph and generates no code (the targets that compile: cpu, cuda)");
  }
  cli_test::expect_user_error(kiln("compile " + mlp() + " --target cpu --sm 90"), "--sm applies only to --target cuda");
  cli_test::expect_user_error(kiln("compile " + mlp() + " --target cuda --isa avx2"), "--isa applies only to --target cpu");
  cli_test::expect_user_error(kiln("run " + mlp() + mlp_input() + " --isa avx2"), "--isa applies only to --target cpu");
}

TEST_F(TargetFlag, DumpsCodeStagesPerTarget) {
  CliResult code = kiln("dump " + mlp() + " --stage code");
  ASSERT_EQ(code.status, 0) << code.err;
  EXPECT_EQ(code.out, kiln("dump " + mlp() + " --stage cpp").out);
  EXPECT_EQ(kiln("dump " + mlp() + " --stage code --target cpu").out, code.out);
  CliResult cuda = kiln("dump " + mlp() + " --stage code --target cuda");
  ASSERT_EQ(cuda.status, 0) << cuda.err;
  EXPECT_EQ(cuda.out, kiln("dump " + mlp() + " --stage cuda").out);
  EXPECT_EQ(kiln("dump " + mlp() + " --stage cuda --target cuda").out, cuda.out);
  cli_test::expect_user_error(kiln("dump " + mlp() + " --stage cpp --target cuda"),
                              "--stage cpp is the code of target cpu, not of --target cuda");
  cli_test::expect_user_error(kiln("dump " + mlp() + " --stage code --target eager"),
                              "target 'eager' runs the graph and generates no code");
  cli_test::expect_user_error(kiln("dump " + mlp() + " --stage simplified --target cpu"),
                              "--target applies to the stages of generated code (code, cpp, cuda), not --stage simplified");
  CliResult help = kiln("dump --help");
  EXPECT_THAT(help.out, HasSubstr("cpp: the generated C++ source"));
  EXPECT_THAT(help.out, HasSubstr("code: the generated code of --target"));
}

}  // namespace
}  // namespace kiln
