// The prelude (kiln::codegen::cpp_prelude(), the text of codegen/cpp/kiln_prelude.h) as the
// C++ backend uses it, compiled at test time with the system compiler (`$CXX`, default c++):
// it compiles warning-free as the top of a main file (and with clang++ where installed); GCC
// reports the `omp simd` loops calling its math vectorized with generated code's flags and no
// -ffast-math; a program built with those flags (FMA, AVX-512 where the host has it)
// meets the stated ulp bounds; and the parse cost of the prelude is reported.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sys/wait.h>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpp/prelude.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string compiler() {
  const char* cxx = std::getenv("CXX");
  return cxx && *cxx ? cxx : "c++";
}

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr
};

// A fresh directory per test for sources, objects and compiler output.
class PreludeCompileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("kiln_prelude_" + std::to_string(getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
    if (run(compiler() + " --version").status != 0) GTEST_SKIP() << "no C++ compiler: `" << compiler() << "` does not run";
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string write(const std::string& name, const std::string& text) {
    fs::path path = directory_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }
  CommandResult run(const std::string& command) {
    std::string log = (directory_ / "command.log").string();
    CommandResult result;
    int raw = std::system((command + " > " + log + " 2>&1").c_str());
    result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    std::ifstream file(log);
    std::ostringstream text;
    text << file.rdbuf();
    result.output = text.str();
    return result;
  }
  bool is_gcc() {
    std::string version = run(compiler() + " --version").output;
    return version.find("Free Software Foundation") != std::string::npos && version.find("clang") == std::string::npos;
  }
  std::string path(const std::string& name) const { return (directory_ / name).string(); }

  fs::path directory_;
};

// A main file as the backend writes it: the prelude, then code that uses it.
std::string prelude_with(const std::string& code) { return std::string(codegen::cpp_prelude()) + "\n" + code; }

const char kUsage[] = R"(
extern "C" float kiln_test_use(float x, uint16_t h) {
  return kiln_exp(x) + kiln_tanh(x) + kiln_pow(x, 2.5f) + kiln_f16_to_f32(h) + kiln_philox_uniform(1, 2, 3);
}
)";

TEST_F(PreludeCompileTest, CompilesWithoutWarnings) {
  std::string source = write("prelude_main.cpp", prelude_with(kUsage));
  const std::string flags = " -std=c++17 -O2 -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror -c ";
  CommandResult result = run(compiler() + flags + source + " -o " + path("prelude_main.o"));
  EXPECT_EQ(result.status, 0) << result.output;
  if (run("clang++ --version").status != 0) {
    std::printf("clang++ not installed: checked %s only\n", compiler().c_str());
    return;
  }
  result = run("clang++" + flags + source + " -o " + path("prelude_clang.o"));
  EXPECT_EQ(result.status, 0) << result.output;
}

// The loop of each function on its own line, so the vectorizer's report names them.
struct VectorLoop {
  std::string name, code;
};
std::vector<VectorLoop> vector_loops() {
  std::vector<VectorLoop> loops;
  const char* unary[] = {"kiln_exp",  "kiln_tanh",  "kiln_erf",   "kiln_sigmoid", "kiln_log",  "kiln_expm1",
                         "kiln_log1p", "kiln_sin",  "kiln_cos",   "kiln_floor",   "kiln_ceil", "kiln_trunc",
                         "kiln_round", "kiln_sqrt", "kiln_rsqrt", "kiln_relu",    "kiln_sign", "kiln_erfinv",
                         "kiln_one_plus_erf", "kiln_exp_nonpositive"};
  for (const char* fn : unary)
    loops.push_back({fn, std::string("void loop_") + fn +
                             "(const float* __restrict in, float* __restrict out, long n) { _Pragma(\"omp simd\") "
                             "for (long i = 0; i < n; ++i) out[i] = " + fn + "(in[i]); }"});
  for (const char* fn : {"kiln_pow", "kiln_maximum", "kiln_minimum", "kiln_div_trunc"})
    loops.push_back({fn, std::string("void loop_") + fn +
                             "(const float* __restrict a, const float* __restrict b, float* __restrict out, long n) "
                             "{ _Pragma(\"omp simd\") for (long i = 0; i < n; ++i) out[i] = " + fn + "(a[i], b[i]); }"});
  loops.push_back({"f16 round trip",
                   "void loop_f16(const uint16_t* __restrict in, uint16_t* __restrict out, long n) { _Pragma(\"omp "
                   "simd\") for (long i = 0; i < n; ++i) out[i] = kiln_f32_to_f16(2.0f * kiln_f16_to_f32(in[i])); }"});
  loops.push_back({"bf16 round trip",
                   "void loop_bf16(const uint16_t* __restrict in, uint16_t* __restrict out, long n) { _Pragma(\"omp "
                   "simd\") for (long i = 0; i < n; ++i) out[i] = kiln_f32_to_bf16(2.0f * kiln_bf16_to_f32(in[i])); }"});
  loops.push_back({"kiln_philox_uniform",
                   "void loop_uniform(float* __restrict out, long n, uint64_t seed) { _Pragma(\"omp simd\") for (long "
                   "i = 0; i < n; ++i) out[i] = kiln_philox_uniform(seed, 0, uint64_t(i)); }"});
  loops.push_back({"kiln_max_accumulate (declared reduction)",
                   "float loop_max(const float* __restrict in, long n) { float acc = -__builtin_inff(); _Pragma(\"omp "
                   "simd reduction(kiln_max : acc)\") for (long i = 0; i < n; ++i) acc = kiln_max_accumulate(acc, "
                   "in[i]); return acc; }"});
  return loops;
}

TEST_F(PreludeCompileTest, OmpSimdLoopsVectorizeWithoutFastMath) {
  if (!is_gcc()) GTEST_SKIP() << compiler() << " is not GCC: the vectorizer report (-fopt-info) is GCC's";
  std::vector<VectorLoop> loops = vector_loops();
  std::string code =
      "#pragma omp declare reduction(kiln_max : float : omp_out = kiln_max_accumulate(omp_out, omp_in)) "
      "initializer(omp_priv = -__builtin_inff())\n";
  std::string prelude(codegen::cpp_prelude());
  int first_line = int(std::count(prelude.begin(), prelude.end(), '\n')) + 3;  // after the prelude and the pragma
  for (const VectorLoop& loop : loops) code += loop.code + "\n";
  std::string source = write("loops.cpp", prelude_with(code));
  // AVX-512 as generated code is built on the target machines, and AVX2 + FMA.
  const std::pair<const char*, const char*> targets[] = {
      {"AVX-512", "-mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma"}, {"AVX2", "-mavx2 -mfma"}};
  for (const auto& [target, target_flags] : targets) {
    CommandResult result = run(compiler() + " -O3 -fopenmp-simd -fno-math-errno " + target_flags +
                               " -fopt-info-vec-optimized -c " + source + " -o " + path("loops.o"));
    ASSERT_EQ(result.status, 0) << result.output;
    for (size_t i = 0; i < loops.size(); ++i) {
      std::string marker = "loops.cpp:" + std::to_string(first_line + int(i)) + ":";
      bool vectorized = false;
      std::istringstream lines(result.output);
      for (std::string line; std::getline(lines, line);)
        if (line.find(marker) != std::string::npos && line.find("loop vectorized") != std::string::npos)
          vectorized = true;
      EXPECT_TRUE(vectorized) << target << ": " << loops[i].name << " (line " << first_line + int(i)
                              << ") was not vectorized:\n" << result.output;
      std::printf("%-8s %-42s %s\n", target, loops[i].name.c_str(), vectorized ? "vectorized" : "NOT vectorized");
    }
  }
}

// Builds the accuracy sweep of prelude_functions.h with generated code's flags and runs it:
// each function is called from a lambda in an `omp simd` loop, so it is inlined and
// vectorized (FMA contracted) as in a generated kernel.
TEST_F(PreludeCompileTest, StatedBoundsHoldWithGeneratedCodeFlags) {
  std::string program = R"(
#include <cstdio>
#include "tests/codegen/prelude_functions.h"
#include "tests/codegen/prelude_ulp.h"
using namespace kiln::prelude_test;
template <typename Approx>
void check(size_t index, Approx approx) {
  const UnaryFunction& f = unary_functions()[index];
  std::vector<float> inputs = bit_stride_inputs(1021);
  std::vector<float> grid = even_grid(f.grid_low, f.grid_high, 1000000), special = special_inputs();
  inputs.insert(inputs.end(), grid.begin(), grid.end());
  inputs.insert(inputs.end(), special.begin(), special.end());
  ErrorStats stats = measure(within_domain(inputs, f.max_magnitude), approx, f.exact, f.absolute_unit);
  std::printf("%s %.6f %g %a\n", f.name, stats.max_ulp, f.bound_ulp, double(stats.worst_input));
}
int main() {
)";
  const char* names[] = {"exp", "expm1", "log", "log1p", "sigmoid", "tanh",
                         "erf", "one_plus_erf", "sin", "cos", "erfinv", "exp_nonpositive"};
  for (size_t i = 0; i < std::size(names); ++i) {
    // exp_nonpositive's domain is x <= 0: swept as e^-|x|, as prelude_functions.h's entry is.
    std::string argument = std::string(names[i]) == "exp_nonpositive" ? "-__builtin_fabsf(x)" : "x";
    program += "  check(" + std::to_string(i) + ", [](float x) { return kiln_" + names[i] + "(" + argument + "); });\n";
  }
  program += "}\n";
  std::string source = write("accuracy.cpp", program);
  std::string binary = path("accuracy");
  CommandResult build = run(compiler() + " -std=gnu++17 -O3 -march=native -fno-math-errno -fopenmp-simd "
                                         "-DKILN_PRELUDE_TEST_SIMD -I" + KILN_SOURCE_DIR + " " + source + " -o " + binary);
  ASSERT_EQ(build.status, 0) << build.output;
  CommandResult sweep = run(binary);
  ASSERT_EQ(sweep.status, 0) << sweep.output;
  std::istringstream lines(sweep.output);
  size_t functions = 0;
  for (std::string name; lines >> name;) {
    double measured, bound;
    std::string worst;
    lines >> measured >> bound >> worst;
    EXPECT_EQ(name, names[std::min(functions, std::size(names) - 1)]);
    ++functions;
    std::printf("kiln_%-8s %.4f ulp (bound %g) with -O3 -march=native, worst at x = %s\n", name.c_str(), measured,
                bound, worst.c_str());
    EXPECT_LE(measured, bound) << name << " at x = " << worst;
  }
  EXPECT_EQ(functions, std::size(names)) << sweep.output;
}

// Reported, not asserted: what including the prelude adds to a compile (minimum and median of
// 9 compiles each, interleaved, so that load on the machine affects both alike).
TEST_F(PreludeCompileTest, ReportsParseCost) {
  std::string empty = write("empty.cpp", "int kiln_empty;\n");
  std::string with_prelude = write("prelude_only.cpp", prelude_with("int kiln_empty;\n"));
  auto time_ms = [&](const std::string& source) {
    auto start = std::chrono::steady_clock::now();
    CommandResult result = run(compiler() + " -std=c++17 -O3 -c " + source + " -o " + path("timed.o"));
    EXPECT_EQ(result.status, 0) << result.output;
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> empty_ms, prelude_ms;
  for (int i = 0; i < 9; ++i) {
    empty_ms.push_back(time_ms(empty));
    prelude_ms.push_back(time_ms(with_prelude));
  }
  std::sort(empty_ms.begin(), empty_ms.end());
  std::sort(prelude_ms.begin(), prelude_ms.end());
  std::printf("%s -std=c++17 -O3 -c: empty TU min %.1f / median %.1f ms; prelude only min %.1f / median %.1f ms "
              "(+%.1f ms at the minimum)\n",
              compiler().c_str(), empty_ms[0], empty_ms[4], prelude_ms[0], prelude_ms[4], prelude_ms[0] - empty_ms[0]);
  RecordProperty("empty_tu_min_ms", std::to_string(empty_ms[0]));
  RecordProperty("prelude_tu_min_ms", std::to_string(prelude_ms[0]));
}

}  // namespace
}  // namespace kiln
