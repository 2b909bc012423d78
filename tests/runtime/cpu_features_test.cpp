// Tests for runtime/cpu_features: the detected ISA agrees with the flags Linux reports in
// /proc/cpuinfo (which the kernel clears when the OS does not save a feature's registers), names
// round-trip, unknown names list the choices, compiler flags per ISA, and the ISA choice
// (request, KILN_ISA, host) including requests the host cannot run.
#include "runtime/cpu_features.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "kiln/error.h"

namespace kiln {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// The flags of the first processor in /proc/cpuinfo; empty when unavailable.
std::set<std::string> cpuinfo_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string word; words >> word;) flags.insert(word);
    return flags;
  }
  return {};
}

TEST(CpuFeatures, HostIsaAgreesWithProcCpuinfo) {
  std::set<std::string> flags = cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags on this system";
  auto has = [&](const char* flag) { return flags.count(flag) > 0; };
  Isa expected = Isa::scalar;
  if (has("avx2") && has("fma") && has("avx")) expected = Isa::avx2;
  if (expected == Isa::avx2 && has("avx512f") && has("avx512dq") && has("avx512bw") && has("avx512vl"))
    expected = Isa::avx512;
  EXPECT_EQ(host_isa(), expected) << "detected " << isa_name(host_isa());
  EXPECT_TRUE(host_supports(Isa::scalar));
  EXPECT_TRUE(host_supports(host_isa()));
}

TEST(CpuFeatures, NamesRoundTrip) {
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  EXPECT_EQ(isa_name(Isa::avx512), "avx512");
}

TEST(CpuFeatures, UnknownNameListsTheChoices) {
  EXPECT_EQ(error_of([] { parse_isa("sse4"); }),
            "unknown instruction set 'sse4' (choose one of: scalar, avx2, avx512)");
  EXPECT_THAT(error_of([] { parse_isa("AVX2"); }), HasSubstr("unknown instruction set 'AVX2'"));
  EXPECT_THAT(error_of([] { parse_isa(""); }), HasSubstr("unknown instruction set ''"));
}

TEST(CpuFeatures, CompilerFlags) {
  EXPECT_TRUE(isa_compiler_flags(Isa::scalar).empty());
  EXPECT_THAT(isa_compiler_flags(Isa::avx2), ElementsAre("-mavx2", "-mfma"));
  EXPECT_THAT(isa_compiler_flags(Isa::avx512),
              ElementsAre("-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-mavx2", "-mfma",
                          "-mprefer-vector-width=512"));
}

TEST(CpuFeatures, ResolveTakesRequestThenVariableThenHost) {
  EXPECT_EQ(resolve_isa(Isa::avx2, "scalar", Isa::avx512), Isa::avx2);
  EXPECT_EQ(resolve_isa(std::nullopt, "avx2", Isa::avx512), Isa::avx2);
  EXPECT_EQ(resolve_isa(std::nullopt, "scalar", Isa::avx2), Isa::scalar);
  EXPECT_EQ(resolve_isa(std::nullopt, nullptr, Isa::avx2), Isa::avx2);
  EXPECT_EQ(resolve_isa(std::nullopt, "", Isa::avx512), Isa::avx512);  // empty counts as unset
}

TEST(CpuFeatures, ResolveRefusesWhatTheHostCannotRun) {
  EXPECT_EQ(error_of([] { resolve_isa(Isa::avx512, nullptr, Isa::avx2); }),
            "instruction set avx512 was requested but this CPU supports at most avx2 (code built for it would crash "
            "here)");
  EXPECT_EQ(error_of([] { resolve_isa(std::nullopt, "avx512", Isa::scalar); }),
            "environment variable KILN_ISA=avx512 asks for an instruction set this CPU lacks (it supports at most "
            "scalar)");
  EXPECT_EQ(error_of([] { resolve_isa(std::nullopt, "fast", Isa::avx2); }),
            "environment variable KILN_ISA='fast' is not an instruction set (choose one of: scalar, avx2, avx512)");
}

TEST(CpuFeatures, ResolveReadsKilnIsaFromTheEnvironment) {
  const char* saved = std::getenv("KILN_ISA");
  std::string saved_value = saved ? saved : "";
  ::setenv("KILN_ISA", "scalar", 1);
  EXPECT_EQ(resolve_isa(std::nullopt), Isa::scalar);
  EXPECT_EQ(resolve_isa(host_isa()), host_isa());  // a request wins over the variable
  ::setenv("KILN_ISA", "neon", 1);
  EXPECT_THAT(error_of([] { resolve_isa(std::nullopt); }), HasSubstr("KILN_ISA='neon'"));
  ::unsetenv("KILN_ISA");
  EXPECT_EQ(resolve_isa(std::nullopt), host_isa());
  if (saved) ::setenv("KILN_ISA", saved_value.c_str(), 1);
}

}  // namespace
}  // namespace kiln
