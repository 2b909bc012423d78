// The prelude (codegen/cpp/kiln_prelude.h) against the runtime's ABI header
// (runtime/compiled_abi.h): the declarations it repeats are the same text and have the same
// layout (the prelude is included inside a namespace here, so both coexist); and the string
// kiln::codegen::cpp_prelude() embedded by the build is the header's current text.
#include <gtest/gtest.h>

#include <stddef.h>
#include <stdint.h>

#include <fstream>
#include <sstream>
#include <string>

namespace generated {
#include "codegen/cpp/kiln_prelude.h"
}  // namespace generated

#include "codegen/cpp/prelude.h"
#include "runtime/compiled_abi.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

#define KILN_SAME_LAYOUT(type) \
  static_assert(sizeof(generated::type) == sizeof(::type) && alignof(generated::type) == alignof(::type), #type);
#define KILN_SAME_OFFSET(type, field) \
  static_assert(offsetof(generated::type, field) == offsetof(::type, field), #type "::" #field);

KILN_SAME_LAYOUT(KilnTensorDesc)
KILN_SAME_OFFSET(KilnTensorDesc, data)
KILN_SAME_OFFSET(KilnTensorDesc, sizes)
KILN_SAME_OFFSET(KilnTensorDesc, strides)
KILN_SAME_OFFSET(KilnTensorDesc, dtype)
KILN_SAME_OFFSET(KilnTensorDesc, rank)
KILN_SAME_LAYOUT(KilnRunArgs)
KILN_SAME_OFFSET(KilnRunArgs, inputs)
KILN_SAME_OFFSET(KilnRunArgs, outputs)
KILN_SAME_OFFSET(KilnRunArgs, parameters)
KILN_SAME_OFFSET(KilnRunArgs, workspace)
KILN_SAME_OFFSET(KilnRunArgs, symbols)
KILN_SAME_OFFSET(KilnRunArgs, fallback)
KILN_SAME_OFFSET(KilnRunArgs, fallback_state)
KILN_SAME_OFFSET(KilnRunArgs, error)
KILN_SAME_OFFSET(KilnRunArgs, error_capacity)
KILN_SAME_OFFSET(KilnRunArgs, num_threads)
static_assert(int(generated::kKilnAbiVersion) == int(::kKilnAbiVersion));
static_assert(sizeof(generated::KilnFallbackFn) == sizeof(::KilnFallbackFn));

std::string read_source(const std::string& relative) {
  std::ifstream file(std::string(KILN_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The declarations between `extern "C" {` and its closing `#ifdef __cplusplus`.
std::string abi_block(const std::string& text) {
  size_t begin = text.find("extern \"C\" {");
  size_t end = text.find("#ifdef __cplusplus", begin);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return text.substr(begin, end - begin);
}

TEST(PreludeAbi, DeclarationsAreVerbatimCopies) {
  std::string runtime = abi_block(read_source("runtime/compiled_abi.h"));
  std::string prelude = abi_block(read_source("codegen/cpp/kiln_prelude.h"));
  ASSERT_FALSE(runtime.empty());
  EXPECT_EQ(prelude, runtime);
}

TEST(PreludeEmbedding, CppPreludeIsTheHeaderText) {
  std::string header = read_source("codegen/cpp/kiln_prelude.h");
  ASSERT_FALSE(header.empty());
  EXPECT_EQ(std::string(codegen::cpp_prelude()), header);
}

}  // namespace
}  // namespace kiln
