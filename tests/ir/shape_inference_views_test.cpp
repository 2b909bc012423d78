// Shape and stride inference of the view ops. Expected strides are worked out by hand from
// the input's strides (a view shares its input's memory) and checked against PyTorch's
// documented behaviour (e.g. x.t().view(-1) fails, x.t().reshape(-1) copies).
#include <limits>

#include "tests/ir/shape_test_util.h"

namespace kiln::ir::shape_test {
namespace {

constexpr DType f32 = DType::f32, i64 = DType::i64;

using Views = ShapeTest;

TEST_F(Views, ReshapeInfersMinusOne) {
  Node* x = input(f32, {2, 3, 4});
  TensorMeta result = meta("reshape", {x, ints({6, -1})});
  EXPECT_EQ(result.shape, (SymShape{6, 4}));
  EXPECT_EQ(result.strides, (SymShape{4, 1}));
  EXPECT_EQ(meta("view", {x, ints({-1})}).shape, (SymShape{24}));
  EXPECT_EQ(meta("reshape", {input(f32, {}), ints({1, 1})}).shape, (SymShape{1, 1}));
  EXPECT_EQ(meta("reshape", {input(f32, {1, 1}), ints({})}).shape, (SymShape{}));
  EXPECT_EQ(meta("reshape", {input(f32, {0, 3}), ints({3, 0})}).shape, (SymShape{3, 0}));
  EXPECT_EQ(meta("reshape", {input(i64, {4}), ints({2, 2})}).dtype, i64);
}

TEST_F(Views, ReshapeErrors) {
  Node* x = input(f32, {2, 3, 4});
  EXPECT_THAT(error("reshape", {x, ints({-1, -1})}), HasSubstr("only one dimension can be inferred"));
  EXPECT_THAT(error("reshape", {x, ints({5, -1})}), HasSubstr("shape '[5, -1]' is invalid for input of size 24"));
  EXPECT_THAT(error("reshape", {x, ints({5, 5})}), HasSubstr("shape '[5, 5]' is invalid for input of size 24"));
  EXPECT_THAT(error("reshape", {x, ints({-2, 12})}), HasSubstr("invalid shape dimension -2"));
  EXPECT_THAT(error("reshape", {input(f32, {0, 2}), ints({-1, 0})}),
              HasSubstr("cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size "
                        "-1 can be any value and is ambiguous"));
}

TEST_F(Views, ReshapeWithSymbolicDims) {
  EXPECT_EQ(meta("reshape", {input(f32, {s0, 784}), ints({-1, 28, 28})}).shape, (SymShape{s0, 28, 28}));
  // Shared symbolic factors cancel, the rest divides: s0*s1*6 / (s1*2) = 3*s0.
  EXPECT_EQ(meta("reshape", {input(f32, {s0, s1, 6}), syms({s1, 2, -1})}).shape, (SymShape{s1, 2, 3 * s0}));
  EXPECT_EQ(meta("view", {input(f32, {s0, s1}), ints({-1})}).shape, (SymShape{s0 * s1}));
  EXPECT_EQ(meta("view", {input(f32, {s0, 4}), syms({s0 * 2, 2})}).shape, (SymShape{2 * s0, 2}));
  EXPECT_THAT(error("reshape", {input(f32, {s0, 4}), syms({s1, 4})}),
              HasSubstr("is invalid for input of size 4*s0 (the element counts are not provably equal)"));
  EXPECT_THAT(error("reshape", {input(f32, {s0, 3}), syms({2, -1})}),
              HasSubstr("(the size of dimension 1 cannot be derived symbolically)"));
}

TEST_F(Views, ViewOfATransposeNeedsCompatibleStrides) {
  // x: [2, 3] contiguous; x.t(): [3, 2] with strides [1, 3].
  Node* t = strided_input(f32, {3, 2}, {1, 3});
  EXPECT_THAT(error("view", {t, ints({6})}),
              HasSubstr("view size is not compatible with input tensor's size and stride (at least one dimension spans "
                        "across two contiguous subspaces). Use .reshape(...) instead."));
  // reshape copies instead: a contiguous result.
  TensorMeta copied = meta("reshape", {t, ints({6})});
  EXPECT_EQ(copied.strides, (SymShape{1}));
  // Adding a size-1 dim keeps it a view.
  TensorMeta viewed = meta("view", {t, ints({3, 2, 1})});
  EXPECT_EQ(viewed.strides, (SymShape{1, 3, 3}));
}

TEST_F(Views, ViewSplitsADimOfAPermutedTensor) {
  // x: [2, 3, 4] contiguous (strides [12, 4, 1]); x.permute(1, 0, 2): [3, 2, 4], strides [4, 12, 1].
  Node* p = strided_input(f32, {3, 2, 4}, {4, 12, 1});
  TensorMeta split = meta("view", {p, ints({3, 2, 2, 2})});
  EXPECT_EQ(split.strides, (SymShape{4, 12, 2, 1}));
  EXPECT_THAT(error("view", {p, ints({3, 8})}), HasSubstr("view size is not compatible"));
  // Merging the last two dims of the original layout is fine: [3, 2, 4] -> [3, 2, 4] trivially.
  EXPECT_EQ(meta("view", {p, ints({3, 2, 4})}).strides, (SymShape{4, 12, 1}));
}

TEST_F(Views, SymbolicNonContiguousView) {
  // x: [s0, s1] contiguous, strides [max(s1, 1), 1]; transposed: [s1, s0], strides [1, max(s1, 1)].
  SymInt row = max(s1, SymInt(1));
  Node* t = strided_input(f32, {s1, s0}, {1, row});
  // A trailing size-1 dim takes the stride of the chunk it closes (as x.t().view(s1, s0, 1) does).
  EXPECT_EQ(meta("view", {t, syms({s1, s0, 1})}).strides, (SymShape{1, row, row}));
  EXPECT_THAT(error("view", {t, ints({-1})}), HasSubstr("view size is not compatible"));
}

TEST_F(Views, PermuteAndTranspose) {
  Node* x = input(f32, {2, 3, 4});
  TensorMeta permuted = meta("permute", {x, ints({2, 0, 1})});
  EXPECT_EQ(permuted.shape, (SymShape{4, 2, 3}));
  EXPECT_EQ(permuted.strides, (SymShape{1, 12, 4}));
  TensorMeta transposed = meta("transpose", {x, -1, 0});
  EXPECT_EQ(transposed.shape, (SymShape{4, 3, 2}));
  EXPECT_EQ(transposed.strides, (SymShape{1, 4, 12}));
  EXPECT_EQ(meta("permute", {x, ints({-1, 1, 0})}).shape, (SymShape{4, 3, 2}));
  EXPECT_THAT(error("permute", {x, ints({0, 1})}), HasSubstr("input.dim() = 3 is not equal to len(dims) = 2"));
  EXPECT_THAT(error("permute", {x, ints({0, 1, -3})}), HasSubstr("permute(): duplicate dims are not allowed."));
  EXPECT_THAT(error("transpose", {x, 0, 3}), HasSubstr("expected to be in range of [-3, 2], but got 3"));
}

TEST_F(Views, ExpandGivesZeroStrides) {
  Node* x = input(f32, {3, 1});
  TensorMeta expanded = meta("expand", {x, ints({2, 3, 4})});
  EXPECT_EQ(expanded.shape, (SymShape{2, 3, 4}));
  EXPECT_EQ(expanded.strides, (SymShape{0, 1, 0}));
  TensorMeta kept = meta("expand", {x, ints({-1, 5})});
  EXPECT_EQ(kept.shape, (SymShape{3, 5}));
  EXPECT_EQ(kept.strides, (SymShape{1, 0}));
  TensorMeta symbolic = meta("expand", {input(f32, {1, s0}, "y"), syms({s1, s0})});
  EXPECT_EQ(symbolic.shape, (SymShape{s1, s0}));
  EXPECT_EQ(symbolic.strides, (SymShape{0, 1}));
}

TEST_F(Views, ExpandErrors) {
  Node* x = input(f32, {3, 1});
  EXPECT_THAT(error("expand", {x, ints({4, 5})}),
              HasSubstr("The expanded size of the tensor (4) must match the existing size (3) at non-singleton "
                        "dimension 0.  Target sizes: [4, 5].  Tensor sizes: [3, 1]"));
  EXPECT_THAT(error("expand", {x, ints({-1, 3, 1})}),
              HasSubstr("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"));
  EXPECT_THAT(error("expand", {x, ints({3})}), HasSubstr("the number of sizes provided (1) must be greater or equal"));
}

TEST_F(Views, SqueezeAndUnsqueeze) {
  Node* x = input(f32, {1, 3, 1});
  TensorMeta all = meta("squeeze", {x});
  EXPECT_EQ(all.shape, (SymShape{3}));
  EXPECT_EQ(all.strides, (SymShape{1}));
  EXPECT_EQ(meta("squeeze", {x, ints({0})}).shape, (SymShape{3, 1}));
  EXPECT_EQ(meta("squeeze", {x, 1}).shape, (SymShape{1, 3, 1}));  // size 3: not squeezed
  EXPECT_EQ(meta("squeeze", {input(f32, {s0, 1}, "y")}).shape, (SymShape{s0}));
  Node* y = input(f32, {2, 3}, "y");
  TensorMeta middle = meta("unsqueeze", {y, 1});
  EXPECT_EQ(middle.shape, (SymShape{2, 1, 3}));
  EXPECT_EQ(middle.strides, (SymShape{3, 3, 1}));
  TensorMeta last = meta("unsqueeze", {y, -1});
  EXPECT_EQ(last.shape, (SymShape{2, 3, 1}));
  EXPECT_EQ(last.strides, (SymShape{3, 1, 1}));
  EXPECT_EQ(meta("unsqueeze", {input(f32, {}, "z"), 0}).shape, (SymShape{1}));
  EXPECT_THAT(error("unsqueeze", {y, 3}), HasSubstr("expected to be in range of [-3, 2], but got 3"));
}

TEST_F(Views, SliceClampsLikePython) {
  Node* x = input(f32, {10, 4});
  TensorMeta stepped = meta("slice", {x, 0, 2, 8, 2});  // rows 2, 4, 6
  EXPECT_EQ(stepped.shape, (SymShape{3, 4}));
  EXPECT_EQ(stepped.strides, (SymShape{8, 1}));
  EXPECT_EQ(meta("slice", {x, 1, -3}).shape, (SymShape{10, 3}));  // columns 1..3
  EXPECT_EQ(meta("slice", {x, 0, 3, std::numeric_limits<int64_t>::max()}).shape, (SymShape{7, 4}));
  EXPECT_EQ(meta("slice", {x, 0, 5, 2}).shape, (SymShape{0, 4}));
  EXPECT_EQ(meta("slice", {x, 0, -100, 100}).shape, (SymShape{10, 4}));
  EXPECT_EQ(meta("slice", {x, 0, 9, 100, 3}).shape, (SymShape{1, 4}));
  EXPECT_EQ(meta("slice", {x, 0, -3, -1}).shape, (SymShape{2, 4}));  // rows 7, 8
  EXPECT_EQ(meta("slice", {x, 0, 1, -1}).shape, (SymShape{8, 4}));
  EXPECT_EQ(meta("slice", {x, 0, -1, 3}).shape, (SymShape{0, 4}));
  EXPECT_EQ(meta("slice", {x, 0, -8, 5}).shape, (SymShape{3, 4}));   // rows 2, 3, 4
  EXPECT_THAT(error("slice", {x, 0, 0, 4, 0}), HasSubstr("slice step cannot be zero"));
  EXPECT_THAT(error("slice", {x, 0, 0, 4, -1}), HasSubstr("slice step must be positive, but got -1"));
  EXPECT_THAT(error("slice", {input(f32, {}, "y")}), HasSubstr("slice() cannot be applied to a 0-dim tensor."));
}

TEST_F(Views, SliceOfASymbolicDim) {
  Node* x = input(f32, {s0, 4});
  EXPECT_EQ(meta("slice", {x, 0, 0, Argument(s0)}).shape, (SymShape{s0, 4}));
  // x[1:] has max(s0 - 1, 0) rows: check the expression at a few sizes.
  SymInt rows = meta("slice", {x, 0, 1}).shape[0];
  EXPECT_EQ(rows.evaluate({{"s0", 0}}), 0);
  EXPECT_EQ(rows.evaluate({{"s0", 1}}), 0);
  EXPECT_EQ(rows.evaluate({{"s0", 7}}), 6);
  // x[-2:]: the last two rows, or fewer.
  SymInt tail = meta("slice", {x, 0, -2}).shape[0];
  EXPECT_EQ(tail.evaluate({{"s0", 1}}), 1);
  EXPECT_EQ(tail.evaluate({{"s0", 9}}), 2);
  // ... and in readable forms.
  EXPECT_EQ(rows, max(s0 - 1, SymInt(0)));
  EXPECT_EQ(tail, min(s0, SymInt(2)));
  // x[1:-1] has max(s0 - 2, 0) rows; x[-3:-1] has min(max(s0 - 1, 0), 2).
  EXPECT_EQ(meta("slice", {x, 0, 1, -1}).shape[0], max(s0 - 2, SymInt(0)));
  SymInt inner = meta("slice", {x, 0, -3, -1}).shape[0];
  EXPECT_EQ(inner.evaluate({{"s0", 1}}), 0);
  EXPECT_EQ(inner.evaluate({{"s0", 2}}), 1);
  EXPECT_EQ(inner.evaluate({{"s0", 10}}), 2);
  // x[::2] of a dim of s0 rows has ceil(s0 / 2).
  SymInt halves = meta("slice", {x, 0, Argument(), Argument(), 2}).shape[0];
  EXPECT_EQ(halves.evaluate({{"s0", 5}}), 3);
  EXPECT_EQ(halves.evaluate({{"s0", 6}}), 3);
}

TEST_F(Views, SelectRemovesTheDim) {
  Node* x = input(f32, {3, 4});
  TensorMeta row = meta("select", {x, 0, -1});
  EXPECT_EQ(row.shape, (SymShape{4}));
  EXPECT_EQ(row.strides, (SymShape{1}));
  TensorMeta column = meta("select", {x, 1, 2});
  EXPECT_EQ(column.shape, (SymShape{3}));
  EXPECT_EQ(column.strides, (SymShape{4}));
  EXPECT_EQ(meta("select", {input(f32, {s0, 2}, "y"), 0, -1}).shape, (SymShape{2}));
  EXPECT_THAT(error("select", {x, 0, 3}), HasSubstr("select(): index 3 out of range for tensor of size [3, 4] at dimension 0"));
  EXPECT_THAT(error("select", {x, 1, -5}), HasSubstr("index -5 out of range"));
}

TEST_F(Views, AsStrided) {
  Node* x = input(f32, {4, 4});
  TensorMeta result = meta("as_strided", {x, ints({2, 2}), ints({1, 4})});
  EXPECT_EQ(result.shape, (SymShape{2, 2}));
  EXPECT_EQ(result.strides, (SymShape{1, 4}));
  EXPECT_THAT(error("as_strided", {x, ints({2, 2}), ints({1})}), HasSubstr("mismatch in length of strides and shape"));
  EXPECT_THAT(error("as_strided", {x, ints({2}), ints({-1})}), HasSubstr("Negative strides are not supported"));
}

// A view past the storage it is made over is an error when the graph is built (PyTorch raises it
// when the view runs): the storage is the one the view chain starts at, here x's 16 elements.
TEST_F(Views, AsStridedPastItsStorage) {
  Node* x = input(f32, {4, 4});
  EXPECT_EQ(meta("as_strided", {x, ints({2, 2}), ints({1, 4}), 10}).shape, (SymShape{2, 2}));  // reaches element 15
  EXPECT_THAT(error("as_strided", {x, ints({2}), ints({16})}),
              HasSubstr("as_strided: view of sizes [2] strides [16] offset 0 reaches outside the storage of %x, 16 elements"));
  EXPECT_THAT(error("as_strided", {x, ints({2, 2}), ints({1, 4}), 11}), HasSubstr("offset 11 reaches outside the storage"));
  EXPECT_THAT(error("as_strided", {x, ints({2}), ints({int64_t(1) << 62})}), HasSubstr("reaches outside the storage"));
  // Through views to x: a slice's as_strided may reach any of x's elements.
  Node* rows = call("slice", {x, 0, 2, 4});
  EXPECT_EQ(meta("as_strided", {rows, ints({4}), ints({1}), 0}).shape, (SymShape{4}));
  EXPECT_THAT(error("as_strided", {call("transpose", {rows, 0, 1}), ints({17}), ints({1})}),
              HasSubstr("reaches outside the storage of %x, 16 elements"));
  // Empty views reach nothing; symbolic sizes are checked when the view runs.
  EXPECT_EQ(meta("as_strided", {x, ints({0, 5}), ints({100, 100})}).shape, (SymShape{0, 5}));
  EXPECT_EQ(meta("as_strided", {input(f32, {s0, 4}, "y"), ints({2}), ints({100})}).shape, (SymShape{2}));
}

}  // namespace
}  // namespace kiln::ir::shape_test
