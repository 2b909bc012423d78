// The CPU backend from the command line: `kiln compile` (stages and times, the cache hit on a
// second compile, -o writing the source, --isa), `kiln run --backend cpu --check` (errors
// printed, exit 1 past the tolerance), `kiln bench` (median and spread, --json, the products'
// FLOPs), `kiln dump --stage loops|scheduled|cpp`, KILN_LOG=fusion, and bad flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "runtime/cpu_features.h"
#include "sample_models.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::read_file;
using ::testing::HasSubstr;
using ::testing::Not;

class CompileCli : public cli_test::KilnCliTest {
 protected:
  static std::string mlp() { return cli_test::sample_model("mlp"); }
  static std::string mlp_input() { return cli_test::sample_input("mlp"); }
};

TEST_F(CompileCli, CompilePrintsStagesThenHitsTheCache) {
  CliResult first = kiln("compile " + mlp());
  ASSERT_EQ(first.status, 0) << first.err;
  for (const char* stage : {"passes", "lower", "schedule", "codegen", "c++ compile", "load", "total"}) {
    EXPECT_THAT(first.out, HasSubstr(stage));
  }
  EXPECT_THAT(first.out, HasSubstr("compiled: key "));
  CliResult second = kiln("compile " + mlp());
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("cache hit: key "));
  EXPECT_THAT(second.out, Not(HasSubstr("c++ compile")));
}

// The first build in a fresh cache makes the link stubs (compiler/targets/link_stubs.h) and
// reports their time apart; later builds, --no-cache ones too, use them without a stage of theirs.
TEST_F(CompileCli, LinkStubsAreMadeOnceAndReportedApart) {
  CliResult first = kiln("compile --no-cache " + mlp());
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("link stubs (once per cache)"));
  CliResult second = kiln("compile --no-cache " + mlp(), "KILN_LOG=cache");
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("c++ compile"));
  EXPECT_THAT(second.out, Not(HasSubstr("link stubs")));
  EXPECT_THAT(second.err, Not(HasSubstr("link stub")));  // nothing rebuilt, nothing linked in full
}

// A C++ compiler that rejects the generated code is Kiln's bug: exit 2, the compiler's
// diagnostic, and the generated source kept (under $TMPDIR) for the report.
TEST_F(CompileCli, CompilerErrorInGeneratedCodeIsAnInternalErrorThatKeepsTheSource) {
  CliResult result = kiln("compile --no-cache " + mlp(), "TMPDIR=" + dir_.string() + " KILN_TESTING_INJECT_BUG=source:any");
  EXPECT_EQ(result.status, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr("kiln: internal error"));
  EXPECT_THAT(result.err, HasSubstr("rejected the generated code"));
  EXPECT_THAT(result.err, HasSubstr("a compile error injected into the generated code"));  // the diagnostic
  const std::string marker = "the generated source is kept at ";
  size_t at = result.err.find(marker);
  ASSERT_NE(at, std::string::npos) << result.err;
  std::string kept = result.err.substr(at + marker.size());
  kept = kept.substr(0, kept.find(' '));
  EXPECT_EQ(fs::path(kept).parent_path().parent_path(), dir_) << kept;
  EXPECT_THAT(read_file(kept), HasSubstr("KILN_TESTING_INJECT_BUG"));
  EXPECT_TRUE(fs::exists(fs::path(kept).parent_path() / "compile.log"));
}

// A compiler that fails without an error in the generated source (here one that is no compiler)
// is the user's toolchain: exit 1, no internal error.
TEST_F(CompileCli, ACompilerThatFailsWithoutADiagnosticIsAUserError) {
  CliResult result = kiln("compile --no-cache " + mlp(), "CXX=/bin/false");
  EXPECT_EQ(result.status, 1) << result.err;
  EXPECT_THAT(result.err, HasSubstr("kiln: error: the C++ compiler '/bin/false' failed (exit 1) on the generated code in "));
}

// -o writes a package (tests/packages/package_test.cpp has the rest).
TEST_F(CompileCli, OutputDirectoryHoldsThePackage) {
  fs::path out = dir_ / "artifact";
  CliResult result = kiln("compile " + mlp() + " -o " + out.string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("package: " + out.string() + " (mlp.h, libmlp.so, libmlp.a, mlp.safetensors of "));
  for (const char* file : {"mlp.h", "mlp.cpp", "mlp_kernels.inc", "libmlp.so", "libmlp.a", "mlp.safetensors", "manifest.json"})
    EXPECT_TRUE(fs::exists(out / file)) << file;
  EXPECT_THAT(read_file(out / "mlp_kernels.inc"), HasSubstr("kiln_run"));
  CliResult again = kiln("compile " + mlp() + " -o " + out.string());
  EXPECT_EQ(again.status, 1);
  EXPECT_THAT(again.err, HasSubstr("exists and is not empty"));
  EXPECT_EQ(kiln("compile " + mlp() + " -o " + out.string() + " --force").status, 0);
}

TEST_F(CompileCli, RunCpuCheckPrintsErrorsAgainstTheInterpreter) {
  CliResult result = kiln("run " + mlp() + " --backend cpu --check --input " + mlp_input());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("check probs: max abs err"));
  EXPECT_THAT(result.out, HasSubstr(": ok"));
}

TEST_F(CompileCli, RunCheckFailsPastTheTolerance) {
  // A tolerance below f32 rounding: the compiled softmax cannot match the double-precision
  // interpreter to 1e-30 relative, so the check must fail with exit 1.
  CliResult result = kiln("run " + cli_test::sample_model("attention") +
                          " --target cpu --check --random-inputs 3 --rtol 0 --atol 0");
  EXPECT_EQ(result.status, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL"));
  // Exit 1 says why on stderr, in one line (it said nothing there).
  EXPECT_THAT(result.err, HasSubstr("kiln: error: --check: the cpu target disagrees with the interpreter: 'out' has "));
  EXPECT_THAT(result.err, HasSubstr(" elements past atol 0.000000 + rtol 0.000000 (max abs err "));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

TEST_F(CompileCli, ScalarAndAvx2CodeGiveTheSameAnswers) {
  for (const char* isa : {"scalar", "avx2"}) {
    CliResult result =
        kiln("run " + cli_test::sample_model("cnn") + " --backend cpu --check --random-inputs 5 --isa " + isa);
    EXPECT_EQ(result.status, 0) << isa << ": " << result.out << result.err;
  }
}

TEST_F(CompileCli, BenchPrintsMedianAndSpread) {
  CliResult text = kiln("bench " + mlp() + " --iters 5 --warmup 1 --dim s0=8");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("median"));
  EXPECT_THAT(text.out, HasSubstr("p90"));
  CliResult json = kiln("bench " + mlp() + " --iters 3 --warmup 0 --dim s0=8 --json --backend interp");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"median_ms\""));
}

// Without --freeze `kiln bench` says that the parameters are read as inputs and what --freeze does
// (a user timing a model against ONNX Runtime, whose initializers are constants); with it, or on
// the interpreter, it says nothing of them. The JSON says whether the model was frozen.
TEST_F(CompileCli, BenchSaysWhenTheParametersAreNotFrozen) {
  CliResult loose = kiln("bench " + mlp() + " --iters 2 --warmup 0 --dim s0=8");
  ASSERT_EQ(loose.status, 0) << loose.err;
  // The MLP's parameters: 784 x 128 + 128 + 128 x 10 + 10 values.
  EXPECT_THAT(loose.out, HasSubstr("parameters: not frozen (101770 values, read as inputs that may change between calls); --freeze"));
  CliResult frozen = kiln("bench " + mlp() + " --iters 2 --warmup 0 --dim s0=8 --freeze");
  ASSERT_EQ(frozen.status, 0) << frozen.err;
  EXPECT_THAT(frozen.out, Not(HasSubstr("parameters: not frozen")));
  CliResult interp = kiln("bench " + mlp() + " --iters 2 --warmup 0 --dim s0=8 --target interp");
  ASSERT_EQ(interp.status, 0) << interp.err;
  EXPECT_THAT(interp.out, Not(HasSubstr("parameters: not frozen")));
  CliResult json = kiln("bench " + mlp() + " --iters 2 --warmup 0 --dim s0=8 --json --freeze");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out).at("frozen"), true) << json.out;
}

// `kiln bench` says which OpenBLAS kernels the model's BLAS calls ran: the user's OPENBLAS_CORETYPE,
// or, unset, the kernels the loader chose for this CPU's instruction set, never OpenBLAS's SSE3
// fallback on a CPU with AVX2 or AVX-512 (runtime/cpu/openblas_core_type.h).
TEST_F(CompileCli, BenchSaysWhichOpenBlasKernelsRan) {
  if (host_isa() == Isa::scalar) GTEST_SKIP() << "Haswell's kernels need AVX2, which this CPU lacks";
  CliResult chosen = kiln("bench " + mlp() + " --iters 2 --warmup 0 --dim s0=8 --json", "OPENBLAS_CORETYPE=Haswell");
  ASSERT_EQ(chosen.status, 0) << chosen.err;
  nlohmann::json out = nlohmann::json::parse(chosen.out);
  if (!out.contains("openblas_core")) GTEST_SKIP() << "the compiled MLP loads no OpenBLAS in this build: " << chosen.out;
  EXPECT_EQ(out["openblas_core"], "Haswell") << chosen.out;
  EXPECT_THAT(kiln("bench " + mlp() + " --iters 2 --warmup 0 --dim s0=8", "OPENBLAS_CORETYPE=Haswell").out,
              HasSubstr("OpenBLAS kernels: Haswell"));
  unsetenv("OPENBLAS_CORETYPE");  // for the kiln process below (ctest runs each test in a process of its own)
  CliResult own = kiln("bench " + mlp() + " --iters 2 --warmup 0 --dim s0=8 --json");
  ASSERT_EQ(own.status, 0) << own.err;
  const std::string core = nlohmann::json::parse(own.out).value("openblas_core", "");
  EXPECT_FALSE(core.empty()) << own.out;
  EXPECT_NE(core, "Prescott") << own.out;
}

// `kiln bench` counts the model's products (passes/flop_count.h) at the bound sizes: the MLP at
// batch 8 is 8 x 784 x 128 and 8 x 128 x 10 multiply-adds, 2 FLOPs each, and gives their rate at
// the median.
TEST_F(CompileCli, BenchCountsTheModelsProductsAndTheirRate) {
  const double flops = 2.0 * 8 * (784 * 128 + 128 * 10);
  CliResult json = kiln("bench " + mlp() + " --iters 3 --warmup 0 --dim s0=8 --json");
  ASSERT_EQ(json.status, 0) << json.err;
  nlohmann::json out = nlohmann::json::parse(json.out);
  EXPECT_DOUBLE_EQ(out.at("gflop").get<double>(), flops / 1e9) << json.out;
  const double rate = flops / (out.at("median_ms").get<double>() * 1e-3) / 1e9;
  EXPECT_NEAR(out.at("gflops").get<double>(), rate, rate * 1e-12) << json.out;
  CliResult text = kiln("bench " + mlp() + " --iters 3 --warmup 0 --dim s0=8");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("products: 0.001626 GFLOP per run (convolutions and matrix products, 2 per multiply-add)"));
}

TEST_F(CompileCli, DumpCodegenStages) {
  CliResult loops = kiln("dump " + mlp() + " --stage loops");
  ASSERT_EQ(loops.status, 0) << loops.err;
  EXPECT_THAT(loops.out, HasSubstr("Gemm"));
  CliResult scheduled = kiln("dump " + mlp() + " --stage scheduled");
  ASSERT_EQ(scheduled.status, 0) << scheduled.err;
  EXPECT_THAT(scheduled.out, HasSubstr("# 3 kernels"));
  EXPECT_THAT(scheduled.out, HasSubstr("fuses:"));
  EXPECT_THAT(scheduled.out, HasSubstr("# memory plan"));
  CliResult cpp = kiln("dump " + mlp() + " --stage cpp");
  ASSERT_EQ(cpp.status, 0) << cpp.err;
  EXPECT_THAT(cpp.out, HasSubstr("#pragma omp"));
  CliResult json = kiln("dump " + mlp() + " --stage cpp --format json");
  EXPECT_EQ(json.status, 1);
  EXPECT_THAT(json.err, HasSubstr("prints text only"));
}

TEST_F(CompileCli, FusionLogExplainsDecisions) {
  CliResult result = kiln("compile " + mlp(), "KILN_LOG=fusion");
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("kiln[fusion]: relu is stored: a library call reads it"));
}

// Was silent: a misspelt channel logged nothing and said nothing, on commands that log nothing too.
TEST_F(CompileCli, AnUnknownLogChannelIsWarnedAboutByEveryCommand) {
  CliResult result = kiln("dump " + mlp(), "KILN_LOG=fusoin");
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("unknown log channel 'fusoin' (known: recompiles"));
}

// --no-cache left a tmp/stage-* folder in the cache directory on every call, also when the
// build failed.
TEST_F(CompileCli, NoCacheLeavesNothingBehind) {
  CliResult built = kiln("compile " + mlp() + " --no-cache");
  ASSERT_EQ(built.status, 0) << built.err;
  CliResult failed = kiln("compile " + mlp() + " --no-cache", "CXX=/nonexistent/c++");
  EXPECT_EQ(failed.status, 1);
  fs::path staging = dir_ / "cache" / "tmp";
  if (fs::exists(staging)) {
    EXPECT_TRUE(fs::is_empty(staging)) << fs::directory_iterator(staging)->path();
  }
}

TEST_F(CompileCli, BadFlagsAreUserErrors) {
  CliResult isa = kiln("compile " + mlp() + " --isa avx9000");
  EXPECT_EQ(isa.status, 1);
  CliResult missing = kiln("compile " + (dir_ / "nope.kiln").string());
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.err, HasSubstr("nope.kiln"));
  CliResult env = kiln("compile " + mlp(), "KILN_ISA=bogus");
  EXPECT_EQ(env.status, 1);
  EXPECT_THAT(env.err, HasSubstr("KILN_ISA"));
  CliResult compiler = kiln("compile " + mlp() + " --no-cache", "CXX=/nonexistent/c++");
  EXPECT_EQ(compiler.status, 1);
  EXPECT_THAT(compiler.err, HasSubstr("was not found"));
}

}  // namespace
}  // namespace kiln
