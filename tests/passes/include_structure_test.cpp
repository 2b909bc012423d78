// The modules inside each folder of passes/ include each other without cycles
// (tests/support/include_cycles.h; the check's own test is in tests/ir/).
#include <gtest/gtest.h>

#include "tests/support/include_cycles.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

TEST(IncludeStructure, NoCyclesInsideTheFoldersOfPasses) {
  EXPECT_EQ(test_support::include_cycles(KILN_SOURCE_DIR, "passes"), std::vector<std::string>{});
}

}  // namespace
}  // namespace kiln
