// Tests for runtime/shared_library: loading a system library and finding its symbols, and the
// messages for a missing file, a file that is not a library, and a missing symbol (each naming
// the file, the symbol and the loader's reason).
#include "runtime/shared_library.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kiln/error.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(SharedLibrary, LoadsALibraryAndCallsASymbol) {
  SharedLibrary library = SharedLibrary::open("libm.so.6");
  EXPECT_TRUE(library.is_open());
  auto cosine = library.function<double (*)(double)>("cos");
  EXPECT_DOUBLE_EQ(cosine(0.0), 1.0);
  EXPECT_NE(library.find_symbol("sin"), nullptr);
  EXPECT_EQ(library.find_symbol("kiln_no_such_symbol"), nullptr);

  SharedLibrary moved = std::move(library);
  EXPECT_FALSE(library.is_open());
  EXPECT_TRUE(moved.is_open());
  EXPECT_EQ(moved.path(), "libm.so.6");
}

TEST(SharedLibrary, MissingFileNamesTheFileAndTheReason) {
  std::string message = error_of([] { SharedLibrary::open("/nonexistent/kiln/module.so"); });
  EXPECT_THAT(message, HasSubstr("cannot load shared library /nonexistent/kiln/module.so"));
  EXPECT_THAT(message, HasSubstr("No such file or directory"));
}

TEST(SharedLibrary, FileThatIsNotALibrary) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kiln_shared_library_test_" + std::to_string(::getpid()) + ".so");
  std::ofstream(path) << std::string(200, 'x');  // longer than an ELF header, not one
  std::string message = error_of([&] { SharedLibrary::open(path); });
  std::filesystem::remove(path);
  EXPECT_THAT(message, HasSubstr("cannot load shared library " + path.string()));
  EXPECT_THAT(message, HasSubstr("invalid ELF header"));
}

TEST(SharedLibrary, MissingSymbolNamesLibraryAndSymbol) {
  SharedLibrary library = SharedLibrary::open("libm.so.6");
  std::string message = error_of([&] { library.symbol("kiln_run"); });
  EXPECT_THAT(message, HasSubstr("shared library libm.so.6 does not export symbol 'kiln_run'"));
  EXPECT_THAT(message, HasSubstr("undefined symbol: kiln_run"));
}

}  // namespace
}  // namespace kiln
