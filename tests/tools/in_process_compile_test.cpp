// Generated code compiled in the Kiln process (compiler/targets/in_process_compiler.h: the plugin
// libkiln-clang.so, Clang's and LLD's libraries): the stages a cold compile reports (the plugin
// loaded once per process, the precompiled prelude and the pool's object made once per cache), the cache key that
// records which compiler built an entry, a damaged precompiled prelude rebuilt, and the fallback
// to the system compiler, with one KILN_LOG=cache line, when $KILN_CXX names a compiler or the
// plugin cannot be loaded (a missing LLVM library, a missing file). Skipped where Kiln was built
// without Clang's libraries, except the fallbacks, which hold everywhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "sample_models.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using ::testing::HasSubstr;
using ::testing::Not;

class InProcessCompile : public cli_test::KilnCliTest {
 protected:
  static std::string mlp() { return cli_test::sample_model("mlp"); }
  static bool plugin_built() { return KILN_TEST_CLANG_PLUGIN; }

  // The key `kiln compile` printed ("compiled: key K, ...").
  static std::string key_of(const CliResult& result) {
    const std::string marker = "compiled: key ";
    size_t at = result.out.find(marker);
    if (at == std::string::npos) return "";
    at += marker.size();
    return result.out.substr(at, result.out.find(',', at) - at);
  }

  // The lines of `text` that contain `part`.
  static int lines_with(const std::string& text, const std::string& part) {
    int count = 0;
    for (size_t at = 0; (at = text.find(part, at)) != std::string::npos; ++at) ++count;
    return count;
  }
};

TEST_F(InProcessCompile, AColdCompileReportsTheLoadAndThePrecompiledPreludeOnce) {
  if (!plugin_built()) GTEST_SKIP() << "Kiln was built without Clang's libraries";
  CliResult first = kiln("compile --no-cache " + mlp(), "KILN_LOG=cache");
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("in-process compiler load (once per process)"));
  EXPECT_THAT(first.out, HasSubstr("precompiled prelude (once per cache)"));
  EXPECT_THAT(first.out, HasSubstr("c++ compile"));
  EXPECT_EQ(lines_with(first.err, "generated code is built by the in-process compiler (clang "), 1) << first.err;
  // A second process loads the plugin again, and finds the prelude in the cache.
  CliResult second = kiln("compile --no-cache " + mlp());
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("in-process compiler load (once per process)"));
  EXPECT_THAT(second.out, Not(HasSubstr("precompiled prelude")));
  // A cached model loads without the plugin.
  ASSERT_EQ(kiln("compile " + mlp()).status, 0);
  CliResult hit = kiln("compile " + mlp());
  EXPECT_THAT(hit.out, HasSubstr("cache hit"));
  EXPECT_THAT(hit.out, Not(HasSubstr("in-process compiler load")));
}

// Warnings of the generated code stay in the compile's log: Clang's "N warnings generated." line
// went to stderr (a gather inside a loop marked for vectorization draws one: loop not
// vectorized), under `kiln run`'s own output.
TEST_F(InProcessCompile, WarningsOfTheGeneratedCodeAreNotPrinted) {
  if (!plugin_built()) GTEST_SKIP() << "Kiln was built without Clang's libraries";
  const fs::path model = dir_ / "gather.kiln";
  std::ofstream(model) << "graph():\n"
                          "    %x : f32[64, 32] = placeholder[target=x]\n"
                          "    %idx : i64[64, 32] = placeholder[target=idx]\n"
                          "    %g : f32[64, 32] = call_function[target=gather](args = (%x, 1, %idx), kwargs = {})\n"
                          "    %out : f32[64, 32] = call_function[target=exp](args = (%g,), kwargs = {})\n"
                          "    return (out,)\n";
  CliResult result = kiln("run " + model.string() + " --target cpu --random-inputs 1");
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.err, Not(HasSubstr("warning"))) << result.err;
}

// The key records which compiler built the entry: the system compiler's entry is not the
// in-process compiler's.
TEST_F(InProcessCompile, TheCacheKeyNamesTheCompiler) {
  if (!plugin_built()) GTEST_SKIP() << "Kiln was built without Clang's libraries";
  CliResult in_process = kiln("compile --no-cache " + mlp());
  CliResult system = kiln("compile --no-cache " + mlp(), "KILN_CXX=c++");
  ASSERT_EQ(in_process.status, 0) << in_process.err;
  ASSERT_EQ(system.status, 0) << system.err;
  EXPECT_NE(key_of(in_process), "");
  EXPECT_NE(key_of(in_process), key_of(system));
  EXPECT_THAT(system.out, Not(HasSubstr("in-process compiler load")));
}

// The key names the plugin by its bytes, not by its path or time: a copy elsewhere (a clean clone's
// build, as CI's each run) finds the entries of the one built here; a plugin of other bytes does not.
TEST_F(InProcessCompile, TheCacheKeyNamesThePluginByItsBytes) {
  if (!plugin_built()) GTEST_SKIP() << "Kiln was built without Clang's libraries";
  const fs::path built = test_paths::program("kiln_clang");
  ASSERT_TRUE(fs::is_regular_file(built)) << built;
  const fs::path copy = dir_ / "copy" / "libkiln-clang.so", changed = dir_ / "changed" / "libkiln-clang.so";
  fs::create_directories(copy.parent_path());
  fs::create_directories(changed.parent_path());
  fs::copy_file(built, copy);
  fs::copy_file(built, changed);
  std::ofstream(changed, std::ios::app | std::ios::binary) << "kiln";  // past the ELF's end: it still loads
  CliResult original = kiln("compile --no-cache " + mlp(), "KILN_CLANG_PLUGIN=" + built.string());
  CliResult copied = kiln("compile --no-cache " + mlp(), "KILN_CLANG_PLUGIN=" + copy.string());
  CliResult other = kiln("compile --no-cache " + mlp(), "KILN_CLANG_PLUGIN=" + changed.string());
  for (const CliResult* result : {&original, &copied, &other}) ASSERT_EQ(result->status, 0) << result->err;
  EXPECT_NE(key_of(original), "");
  EXPECT_EQ(key_of(copied), key_of(original));
  EXPECT_NE(key_of(other), key_of(original));
  EXPECT_THAT(other.out, HasSubstr("in-process compiler load"));
}

// A damaged precompiled prelude in the cache is found by the cache's checksums and made again,
// never used.
TEST_F(InProcessCompile, ADamagedPrecompiledPreludeIsMadeAgain) {
  if (!plugin_built()) GTEST_SKIP() << "Kiln was built without Clang's libraries";
  ASSERT_EQ(kiln("compile --no-cache " + mlp()).status, 0);
  int damaged = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "cache" / "entries")) {
    if (entry.path().filename() != "prelude.pch") continue;
    std::fstream file(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    file.write("damage", 6);
    ++damaged;
  }
  ASSERT_EQ(damaged, 1);
  CliResult again = kiln("compile --no-cache " + mlp(), "KILN_LOG=cache");
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("precompiled prelude (once per cache)"));
  EXPECT_THAT(again.err, HasSubstr("the precompiled prelude entry"));
}

// The pool's code is compiled once per cache, into the precompiled prelude's entry (runner.o),
// and every module links it: defined once in module.so however many units it was compiled in. (The
// in-place sample's loops run on the pool; the MLP's, whose GEMMs run whole, on OpenMP's team.)
TEST_F(InProcessCompile, ThePoolsCodeIsCompiledOncePerCacheAndLinkedIntoEachModule) {
  if (!plugin_built()) GTEST_SKIP() << "Kiln was built without Clang's libraries";
  CliResult result = kiln("compile " + cli_test::sample_model("inplace"), "KILN_COMPILE_UNITS=3");
  ASSERT_EQ(result.status, 0) << result.err;
  int runner_objects = 0, modules = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "cache" / "entries")) {
    if (entry.path().filename() == "runner.o") {
      ++runner_objects;
      EXPECT_TRUE(fs::exists(entry.path().parent_path() / "prelude.pch"));
    }
    if (entry.path().filename() != "module.so") continue;
    ++modules;
    const fs::path listing = dir_ / "symbols.txt";
    ASSERT_EQ(std::system(("nm -C " + entry.path().string() + " > " + listing.string()).c_str()), 0);
    const std::string symbols = cli_test::read_file(listing);
    EXPECT_EQ(lines_with(symbols, " kiln_parallel_run("), 1) << symbols;
  }
  EXPECT_EQ(runner_objects, 1);
  EXPECT_EQ(modules, 1);
}

// A module compiled in several translation units at once (one per kernel at most; unit 0 has
// the entry points) runs as the interpreter computes, on the pool that all units share.
TEST_F(InProcessCompile, KernelsCompiledInSeveralUnitsLinkIntoOneModule) {
  if (!plugin_built()) GTEST_SKIP() << "Kiln was built without Clang's libraries";
  for (const char* units : {"1", "3"}) {
    CliResult result = kiln("verify " + cli_test::sample_model("attention") + " --target cpu",
                            std::string("KILN_LOG=cache KILN_COMPILE_UNITS=") + units + " KILN_CACHE_DIR=" +
                                (dir_ / ("cache" + std::string(units))).string());
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_THAT(result.out, HasSubstr("every stage agrees with the interpreter"));
    EXPECT_THAT(result.err, HasSubstr(std::string("in process, in ") + units + " translation unit"));
  }
  CliResult mlp_units = kiln("run " + mlp() + " --target cpu --check --threads 2 --dim s0=300 --random-inputs 1",
                             "KILN_COMPILE_UNITS=3");
  EXPECT_EQ(mlp_units.status, 0) << mlp_units.err;
}

// A fault raised by a kernel of another unit (random class targets out of range in the
// classifier's loss) reaches kiln_run in unit 0: the fault flags are the module's, not a unit's.
TEST_F(InProcessCompile, AFaultInAnotherUnitIsReported) {
  if (!plugin_built()) GTEST_SKIP() << "Kiln was built without Clang's libraries";
  CliResult result = kiln("run " + cli_test::sample_model("classifier") + " --target cpu --random-inputs 1 --dim s0=64",
                          "KILN_LOG=cache KILN_COMPILE_UNITS=64");
  EXPECT_EQ(result.status, 1) << result.err;
  EXPECT_THAT(result.err, Not(HasSubstr("in 1 translation unit")));
  EXPECT_THAT(result.err, HasSubstr("IndexError: an index is out of range in kernel"));
}

TEST_F(InProcessCompile, ABadUnitCountIsAnError) {
  if (!plugin_built()) GTEST_SKIP() << "Kiln was built without Clang's libraries";
  for (const char* bad : {"0", "x", "65", "2x"}) {
    CliResult result = kiln("compile --no-cache " + mlp(), std::string("KILN_COMPILE_UNITS=") + bad);
    EXPECT_EQ(result.status, 1) << bad;
    EXPECT_THAT(result.err, HasSubstr("$KILN_COMPILE_UNITS must be a count of translation units from 1 to 64, got '" +
                                      std::string(bad) + "'"));
  }
}

TEST_F(InProcessCompile, KilnCxxNamesTheCompilerThatBuilds) {
  CliResult result = kiln("compile --no-cache " + mlp(), "KILN_LOG=cache KILN_CXX=c++");
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(lines_with(result.err, "kiln[cache]: generated code is built by the system compiler (c++), not in process: "
                                   "$KILN_CXX names a compiler (c++)"),
            1)
      << result.err;
}

// A plugin whose LLVM library is missing (as on a machine where libLLVM was removed after Kiln
// was installed): the system compiler builds, and one log line says why.
TEST_F(InProcessCompile, APluginThatCannotBeLoadedFallsBackToTheSystemCompiler) {
  // An empty library naming a library that does not exist, as the plugin names libLLVM.
  const fs::path missing = dir_ / "libkiln-test-missing-llvm.so";
  const fs::path plugin = dir_ / "libkiln-clang.so";
  std::string make_missing = "c++ -shared -fPIC -x c /dev/null -Wl,-soname,libkiln-test-missing-llvm.so.14 -o " +
                             missing.string();
  std::string make_plugin = "c++ -shared -fPIC -x c /dev/null -x none -Wl,--no-as-needed " + missing.string() + " -o " +
                            plugin.string();
  ASSERT_EQ(std::system(make_missing.c_str()), 0);
  ASSERT_EQ(std::system(make_plugin.c_str()), 0);
  fs::remove(missing);
  CliResult result = kiln("compile --no-cache " + mlp(), "KILN_LOG=cache KILN_CLANG_PLUGIN=" + plugin.string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, Not(HasSubstr("in-process compiler load")));
  EXPECT_EQ(lines_with(result.err, "kiln[cache]: generated code is built by the system compiler"), 1) << result.err;
  EXPECT_THAT(result.err, HasSubstr(plugin.string() + " cannot be loaded ("));
  EXPECT_THAT(result.err, HasSubstr("libkiln-test-missing-llvm.so.14"));

  CliResult absent = kiln("compile --no-cache " + mlp(), "KILN_LOG=cache KILN_CLANG_PLUGIN=" + (dir_ / "none.so").string());
  ASSERT_EQ(absent.status, 0) << absent.err;
  EXPECT_THAT(absent.err, HasSubstr("not in process: no plugin was found (tried " + (dir_ / "none.so").string() + ")"));
}

// A plugin of another interface version is not used.
TEST_F(InProcessCompile, APluginOfAnotherInterfaceIsNotUsed) {
  const fs::path source = dir_ / "plugin.c", plugin = dir_ / "libkiln-clang.so";
  std::ofstream(source) << "int kiln_clang_abi(void) { return 999; }\n"
                           "const char* kiln_clang_unavailable(void) { return 0; }\n"
                           "const char* kiln_clang_identity(void) { return \"clang 0\"; }\n"
                           "int kiln_clang_build(const void* b) { (void)b; return 3; }\n"
                           "int kiln_clang_make_pch(void) { return 3; }\n";
  ASSERT_EQ(std::system(("cc -shared -fPIC " + source.string() + " -o " + plugin.string()).c_str()), 0);
  CliResult result = kiln("compile --no-cache " + mlp(), "KILN_LOG=cache KILN_CLANG_PLUGIN=" + plugin.string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr(plugin.string() + " is of another interface version"));
}

}  // namespace
}  // namespace kiln
