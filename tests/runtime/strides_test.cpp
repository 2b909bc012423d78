// runtime/strides.h on concrete sizes: the layouts PyTorch gives (`torch.empty(2, 0, 3).stride()`
// is (3, 3, 1); `torch.empty(2, 3).t().view(6)` fails and `.view(3, 1, 2)` has strides (1, 6, 3); a
// 0-element view of the same shape keeps its strides). Checked with torch 2.15.
#include "runtime/strides.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

using Sizes = std::vector<int64_t>;

TEST(Strides, ContiguousStridesCountAZeroSizeDimAsOne) {
  EXPECT_EQ(contiguous_strides(Sizes{2, 3, 4}), (Sizes{12, 4, 1}));
  EXPECT_EQ(contiguous_strides(Sizes{2, 0, 3}), (Sizes{3, 3, 1}));
  EXPECT_EQ(contiguous_strides(Sizes{}), Sizes{});
}

TEST(Strides, ViewOfAContiguousLayoutMergesAndSplitsDims) {
  EXPECT_EQ(view_strides(Sizes{2, 3, 4}, Sizes{12, 4, 1}, Sizes{6, 4}), (Sizes{4, 1}));
  EXPECT_EQ(view_strides(Sizes{6, 4}, Sizes{4, 1}, Sizes{2, 3, 2, 2}), (Sizes{12, 4, 2, 1}));
}

TEST(Strides, ViewOfATransposeKeepsItsChunksOrFails) {
  // x = torch.empty(2, 3).t(): sizes (3, 2), strides (1, 3).
  EXPECT_EQ(view_strides(Sizes{3, 2}, Sizes{1, 3}, Sizes{6}), std::nullopt);
  EXPECT_EQ(view_strides(Sizes{3, 2}, Sizes{1, 3}, Sizes{3, 1, 2}), (Sizes{1, 6, 3}));
}

TEST(Strides, ZeroElementViews) {
  EXPECT_EQ(view_strides(Sizes{0, 3}, Sizes{1, 5}, Sizes{0, 3}), (Sizes{1, 5}));
  EXPECT_EQ(view_strides(Sizes{0, 3}, Sizes{1, 5}, Sizes{3, 0}), (Sizes{1, 1}));
}

TEST(Strides, AScalarViewsAsOnes) { EXPECT_EQ(view_strides(Sizes{}, Sizes{}, Sizes{1, 1}), (Sizes{1, 1})); }

TEST(Strides, WrappedDim) {
  EXPECT_EQ(wrapped_dim(-1, 3), 2);
  EXPECT_EQ(wrapped_dim(2, 3), 2);
  EXPECT_EQ(wrapped_dim(3, 3), std::nullopt);
  EXPECT_EQ(wrapped_dim(-4, 3), std::nullopt);
  EXPECT_EQ(wrapped_dim(-1, 0), 0);  // a 0-d tensor accepts 0 and -1
  EXPECT_EQ(wrapped_dim(1, 0), std::nullopt);
}

}  // namespace
}  // namespace kiln
