// Shape/dtype inference of the copying ops (clone, cat, pad, gather, scatter, index_select,
// index_put, getitem) and the declared mutations (copy_, fill_, index_put_).
#include "tests/ir/shape_test_util.h"

namespace kiln::ir::shape_test {
namespace {

constexpr DType f32 = DType::f32, f16 = DType::f16, i64 = DType::i64, i32 = DType::i32, b = DType::boolean;

using Copies = ShapeTest;

TEST_F(Copies, CloneIsContiguous) {
  TensorMeta result = meta("clone", {strided_input(f32, {3, 2}, {1, 3})});
  EXPECT_EQ(result.strides, (SymShape{2, 1}));
}

TEST_F(Copies, CatAlongADim) {
  Node* a = input(f32, {2, 3}, "a");
  EXPECT_EQ(type("cat", {nodes({a, input(f32, {4, 3}, "b")})}), "f32[6, 3]");
  EXPECT_EQ(type("cat", {nodes({a, input(f32, {2, 5}, "c")}), -1}), "f32[2, 8]");
  EXPECT_EQ(type("cat", {nodes({input(i32, {2}, "d"), input(f16, {3}, "e")})}), "f16[5]");
  // PyTorch's legacy rule: a 1-d empty tensor joins anything.
  EXPECT_EQ(type("cat", {nodes({input(f32, {0}, "empty"), a}), 1}), "f32[2, 3]");
  EXPECT_EQ(meta("cat", {nodes({input(f32, {s0, 3}, "f"), input(f32, {s1, 3}, "g")})}).shape,
            (SymShape{s0 + s1, 3}));
}

TEST_F(Copies, CatErrors) {
  Node* a = input(f32, {2, 3}, "a");
  EXPECT_THAT(error("cat", {nodes({a, input(f32, {2, 4}, "b")})}),
              HasSubstr("Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor "
                        "number 1 in the list."));
  EXPECT_THAT(error("cat", {nodes({a, input(f32, {2, 3, 1}, "c")})}),
              HasSubstr("Tensors must have same number of dimensions: got 2 and 3"));
  EXPECT_THAT(error("cat", {nodes({a, input(f32, {}, "d")})}),
              HasSubstr("zero-dimensional tensor (at position 1) cannot be concatenated"));
  EXPECT_THAT(error("cat", {nodes({})}), HasSubstr("expected a non-empty list of Tensors"));
  EXPECT_THAT(error("cat", {nodes({a}), 2}), HasSubstr("Dimension out of range"));
}

TEST_F(Copies, PadLastDimFirst) {
  Node* x = input(f32, {1, 2, 3, 4});
  EXPECT_EQ(type("pad", {x, ints({1, 2})}), "f32[1, 2, 3, 7]");
  EXPECT_EQ(type("pad", {x, ints({1, 1, 2, 2})}), "f32[1, 2, 7, 6]");
  EXPECT_EQ(type("pad", {x, ints({-1, -1})}), "f32[1, 2, 3, 2]");
  EXPECT_EQ(type("pad", {input(f32, {1, 3, 4}, "r"), ints({2, 2}), "reflect"}), "f32[1, 3, 8]");
  EXPECT_EQ(type("pad", {x, ints({1, 0, 1, 0}), "replicate"}), "f32[1, 2, 4, 5]");
  EXPECT_EQ(meta("pad", {input(f32, {2, s0}, "y"), ints({1, 1})}).shape, (SymShape{2, s0 + 2}));
}

TEST_F(Copies, PadErrors) {
  Node* x = input(f32, {1, 3});
  EXPECT_THAT(error("pad", {x, ints({1})}), HasSubstr("Padding length must be divisible by 2"));
  EXPECT_THAT(error("pad", {x, ints({1, 1, 1, 1, 1, 1})}),
              HasSubstr("Padding length should be less than or equal to two times the input dimension but got padding "
                        "length 6 and input of dimension 2"));
  EXPECT_THAT(error("pad", {x, ints({-2, -2})}),
              HasSubstr("The input size 3, plus negative padding -2 and -2 resulted in a negative output size"));
  EXPECT_THAT(error("pad", {x, ints({3, 3}), "reflect"}),
              HasSubstr("Padding size should be less than the corresponding input dimension, but got: padding (3, 3) "
                        "at dimension 1 of input [1, 3]"));
  EXPECT_THAT(error("pad", {x, ints({1, 1}), "reflect", 0.0}), HasSubstr("Padding mode \"reflect\" doesn't take in value"));
  EXPECT_THAT(error("pad", {x, ints({1, 1}), "mirror"}), HasSubstr("Unrecognised padding mode mirror"));
  EXPECT_THAT(error("pad", {input(f32, {5}, "v"), ints({1, 1}), "circular"}),
              HasSubstr("Padding size 2 is not supported for 1D input tensor"));
  EXPECT_THAT(error("pad", {x, ints({1, 1, 1, 1}), "replicate"}), HasSubstr("Padding size 4 is not supported for 2D input tensor"));
}

TEST_F(Copies, Gather) {
  Node* x = input(f32, {3, 4});
  EXPECT_EQ(type("gather", {x, 0, input(i64, {2, 4}, "i")}), "f32[2, 4]");
  EXPECT_EQ(type("gather", {x, 1, input(i64, {3, 7}, "j")}), "f32[3, 7]");
  EXPECT_THAT(error("gather", {x, 0, input(i32, {2, 4}, "k")}), HasSubstr("gather(): Expected dtype int64 for index"));
  EXPECT_THAT(error("gather", {x, 0, input(i64, {2}, "l")}),
              HasSubstr("Index tensor must have the same number of dimensions as input tensor"));
  EXPECT_THAT(error("gather", {x, 0, input(i64, {2, 5}, "m")}),
              HasSubstr("Size does not match at dimension 1 expected index [2, 5] to be no larger than self [3, 4] apart "
                        "from dimension 0"));
}

TEST_F(Copies, Scatter) {
  Node* x = input(f32, {3, 5});
  Node* index = input(i64, {2, 3}, "i");
  EXPECT_EQ(type("scatter", {x, 0, index, input(f32, {2, 4}, "src")}), "f32[3, 5]");
  EXPECT_EQ(type("scatter", {x, 1, index, 1.5}, {{"reduce", "sum"}}), "f32[3, 5]");
  EXPECT_THAT(error("scatter", {x, 0, index, input(f16, {2, 4}, "h")}),
              HasSubstr("scatter(): Expected self.dtype to be equal to src.dtype"));
  EXPECT_THAT(error("scatter", {x, 0, index, input(f32, {2, 2}, "small")}),
              HasSubstr("Expected index [2, 3] to be smaller size than src [2, 2] at dimension 1"));
  EXPECT_THAT(error("scatter", {x, 0, index, 1.0}, {{"reduce", "mean"}}),
              HasSubstr("reduce argument must be either 'sum', 'prod', 'amax' or 'amin', got 'mean'"));
}

TEST_F(Copies, IndexSelect) {
  Node* x = input(f32, {5, 3});
  EXPECT_EQ(type("index_select", {x, 0, input(i64, {4}, "i")}), "f32[4, 3]");
  EXPECT_EQ(type("index_select", {x, -1, input(i32, {}, "j")}), "f32[5, 1]");
  EXPECT_THAT(error("index_select", {x, 0, input(i64, {2, 2}, "k")}),
              HasSubstr("index_select(): Index is supposed to be a vector"));
  EXPECT_THAT(error("index_select", {x, 0, input(f32, {2}, "l")}),
              HasSubstr("index_select(): Expected dtype int32 or int64 for index"));
}

TEST_F(Copies, IndexPut) {
  Node* x = input(f32, {5, 3});
  Node* rows = input(i64, {2}, "rows");
  EXPECT_EQ(type("index_put", {x, nodes({rows}), input(f32, {2, 3}, "v")}), "f32[5, 3]");
  EXPECT_EQ(type("index_put", {x, nodes({rows}), input(f32, {3}, "w")}, {{"accumulate", true}}), "f32[5, 3]");
  EXPECT_EQ(type("index_put", {x, nodes({input(b, {5}, "mask")}), input(f32, {3}, "u")}), "f32[5, 3]");
  EXPECT_THAT(error("index_put", {x, nodes({rows}), input(f32, {4}, "bad")}),
              HasSubstr("shape mismatch: value tensor of shape [4] cannot be broadcast to indexing result of shape [2, 3]"));
  EXPECT_THAT(error("index_put", {x, nodes({rows}), input(i64, {3}, "long")}),
              HasSubstr("Index put requires the source and destination dtypes match, got f32 for the destination and "
                        "i64 for the source."));
  EXPECT_THAT(error("index_put", {x, nodes({rows, rows, rows}), input(f32, {2}, "z")}),
              HasSubstr("too many indices for tensor of dimension 2 (got 3)"));
  EXPECT_THAT(error("index_put", {x, nodes({input(f32, {2}, "fi")}), input(f32, {3}, "y")}),
              HasSubstr("tensors used as indices must be long, int, byte or bool tensors"));
  EXPECT_THAT(error("index_put", {x, nodes({input(b, {4}, "short_mask")}), input(f32, {3}, "t")}),
              HasSubstr("The shape of the mask [4] at index 0 does not match the shape of the indexed tensor [5, 3]"));
}

TEST_F(Copies, IndexPutWithNonAdjacentIndicesMovesThemFirst) {
  // x[i, :, j] with i, j of shape [5] selects [5, 3] (the indexed dims go first).
  Node* x = input(f32, {2, 3, 4});
  Node* i = input(i64, {5}, "i");
  Node* j = input(i64, {5}, "j");
  std::vector<Argument> indices = {i, Argument(), j};
  EXPECT_EQ(type("index_put", {x, Argument(indices), input(f32, {5, 3}, "v")}), "f32[2, 3, 4]");
  EXPECT_THAT(error("index_put", {x, Argument(indices), input(f32, {3, 5}, "w")}),
              HasSubstr("indexing result of shape [5, 3]"));
  // x[:, i] with adjacent indices stays in place: [2, 5, 4].
  std::vector<Argument> middle = {Argument(), i};
  EXPECT_EQ(type("index_put", {x, Argument(middle), input(f32, {2, 5, 4}, "u")}), "f32[2, 3, 4]");
}

TEST_F(Copies, GetitemPicksATupleElement) {
  Node* x = input(f32, {6, 2});
  Node* parts = call("split", {x, ints({2, 4})});
  EXPECT_EQ(type("getitem", {parts, 1}), "f32[4, 2]");
  EXPECT_EQ(type("getitem", {parts, -2}), "f32[2, 2]");
  EXPECT_THAT(error("getitem", {parts, 2}), HasSubstr("tuple index 2 out of range for %split with 2 elements"));
  EXPECT_THAT(error("getitem", {x, 0}), HasSubstr("getitem expects a tuple-valued node, but %x produces f32[6, 2]"));
}

TEST_F(Copies, MutationsReturnSelf) {
  Node* self = strided_input(f32, {3, 2}, {1, 3});
  TensorMeta copied = meta("copy_", {self, input(i64, {2}, "src")});
  EXPECT_EQ(copied.strides, (SymShape{1, 3}));
  EXPECT_EQ(copied.dtype, f32);
  EXPECT_THAT(error("copy_", {self, input(f32, {2, 3, 2}, "big")}),
              HasSubstr("output with shape [3, 2] doesn't match the broadcast shape [2, 3, 2]"));
  EXPECT_EQ(meta("fill_", {self, 1.5}).strides, (SymShape{1, 3}));
  TensorMeta put = meta("index_put_", {self, nodes({input(i64, {2}, "i")}), input(f32, {2}, "v")});
  EXPECT_EQ(put.strides, (SymShape{1, 3}));
  EXPECT_THAT(error("index_put_", {self, nodes({input(i64, {2}, "j")}), input(f32, {3}, "w")}),
              HasSubstr("cannot be broadcast to indexing result of shape [2, 2]"));
}

}  // namespace
}  // namespace kiln::ir::shape_test
