// The link stubs of the cpu target (compiler/targets/link_stubs.h): the SONAME read from ELF
// files, a stub made once per cache and then found, and a damaged or foreign stub rebuilt with
// one KILN_LOG=cache line, never used.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "compiler/targets/cpu_toolchain.h"
#include "compiler/targets/link_stubs.h"
#include "runtime/compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;

fs::path fresh_folder(const std::string& name) {
  fs::path dir = fs::path(KILN_BINARY_DIR) / "test-caches" / ("link-stubs-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The stub path among link_inputs' arguments ("" when the library was linked itself).
std::string stub_of(const LinkInputs& inputs) {
  return inputs.arguments.size() == 3 ? inputs.arguments[1] : "";
}

// Runs `call` with KILN_LOG=cache; returns what it wrote to stderr.
template <class F>
std::string logged(F call) {
  setenv("KILN_LOG", "cache", 1);
  testing::internal::CaptureStderr();
  call();
  std::string err = testing::internal::GetCapturedStderr();
  unsetenv("KILN_LOG");
  return err;
}

TEST(LinkStubs, SonameIsReadFromSharedLibrariesOnly) {
  if (blas_library().empty()) GTEST_SKIP() << "Kiln was built without a BLAS library";
  std::string soname = elf_soname(blas_library());
  EXPECT_EQ(soname.rfind("lib", 0), 0u) << soname;
  EXPECT_NE(soname.find(".so"), std::string::npos) << soname;
  fs::path dir = fresh_folder("soname");
  std::ofstream(dir / "script.so") << "INPUT(-lfoo)\n";  // a linker script, as libc.so is
  EXPECT_EQ(elf_soname(dir / "script.so"), "");
  EXPECT_EQ(elf_soname(dir / "missing.so"), "");
  {  // the ELF header alone: its section table is past the end
    std::ifstream in(blas_library(), std::ios::binary);
    std::string head(64, '\0');
    in.read(head.data(), 64);
    std::ofstream(dir / "truncated.so", std::ios::binary) << head;
  }
  EXPECT_EQ(elf_soname(dir / "truncated.so"), "");
  fs::remove_all(dir);
}

TEST(LinkStubs, AStubIsMadeOnceThenFound) {
  if (blas_library().empty()) GTEST_SKIP() << "Kiln was built without a BLAS library";
  fs::path cache = fresh_folder("once");
  LinkInputs first = link_inputs({blas_library()}, cache);
  EXPECT_TRUE(first.made_stub);
  ASSERT_NE(stub_of(first), "") << "the library was linked itself";
  EXPECT_EQ(elf_soname(stub_of(first)), elf_soname(blas_library()));
  EXPECT_LT(fs::file_size(stub_of(first)), 64u * 1024);
  LinkInputs second = link_inputs({blas_library()}, cache);
  EXPECT_FALSE(second.made_stub);
  EXPECT_EQ(second.arguments, first.arguments);
  fs::remove_all(cache);
}

TEST(LinkStubs, ADamagedStubIsRebuiltNotUsed) {
  if (blas_library().empty()) GTEST_SKIP() << "Kiln was built without a BLAS library";
  fs::path cache = fresh_folder("damaged");
  std::string stub = stub_of(link_inputs({blas_library()}, cache));
  ASSERT_NE(stub, "");
  std::ofstream(stub, std::ios::binary | std::ios::app) << "x";
  LinkInputs again;
  std::string err = logged([&] { again = link_inputs({blas_library()}, cache); });
  EXPECT_TRUE(again.made_stub);
  EXPECT_EQ(elf_soname(stub_of(again)), elf_soname(blas_library()));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("rebuilt, not used"), std::string::npos) << err;
  fs::remove_all(cache);
}

// A file under the stub's key that verifies but is no stub of that SONAME (copied in by hand,
// or made by another tool) is rebuilt too.
TEST(LinkStubs, AForeignStubIsRebuiltNotUsed) {
  if (blas_library().empty()) GTEST_SKIP() << "Kiln was built without a BLAS library";
  fs::path dir = fresh_folder("foreign");
  const std::string soname = elf_soname(blas_library());
  CompileCache cache(dir);
  fs::path staging = cache.make_staging_directory();
  std::ofstream(staging / soname) << "INPUT(-lsomething_else)\n";
  cache.publish(link_stub_key(soname), staging);
  LinkInputs inputs;
  std::string err = logged([&] { inputs = link_inputs({blas_library()}, dir); });
  EXPECT_TRUE(inputs.made_stub);
  EXPECT_EQ(elf_soname(stub_of(inputs)), soname);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("is not a stub of " + soname), std::string::npos) << err;
  fs::remove_all(dir);
}

// Without a SONAME the library itself is linked, and KILN_LOG=cache says so.
TEST(LinkStubs, ALibraryWithoutSonameIsLinkedItself) {
  fs::path dir = fresh_folder("nosoname");
  std::ofstream(dir / "libscript.so") << "INPUT(-lfoo)\n";
  LinkInputs inputs;
  std::string err = logged([&] { inputs = link_inputs({(dir / "libscript.so").string()}, dir / "cache"); });
  EXPECT_FALSE(inputs.made_stub);
  EXPECT_EQ(inputs.arguments, std::vector<std::string>{(dir / "libscript.so").string()});
  EXPECT_NE(err.find("no link stub for"), std::string::npos) << err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::compiler
