// Reference kernels, part 2: views (sharing storage), copies (cat, stack, split, pad,
// tril/triu, flatten, getitem), indexing (gather, scatter, index_select, embedding,
// index_put with advanced indexing) and in-place ops, including writes through views into
// the base tensor.
#include <gtest/gtest.h>

#include <limits>

#include "ir/reference_kernels.h"
#include "tests/ir/reference_test_support.h"

namespace kiln::ir {
namespace {

using testing::expect_error;
using testing::expect_ints;
using testing::expect_tensor;
using testing::OpRunner;
using testing::tensor;
using testing::values_of;

Tensor range(const Sizes& sizes, DType dtype = DType::f32) {
  std::vector<double> values(size_t(numel_of(sizes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = double(i);
  return tensor(sizes, values, dtype);
}

// ---------------------------------------------------------------- views

TEST(ReferenceViews, ReshapeIsAViewWhenPossibleAndACopyOtherwise) {
  Tensor x = range({2, 3});
  OpRunner r;
  Tensor view = r.run1("reshape", {r.input(x), Argument::ints({3, -1})});
  expect_tensor(view, DType::f32, {3, 2}, {0, 1, 2, 3, 4, 5});
  EXPECT_TRUE(view.shares_storage_with(x));
  OpRunner r2;  // a transposed tensor cannot be flattened without a copy
  Tensor copy = r2.run1("reshape", {r2.input(x.transpose(0, 1)), Argument::ints({6})});
  expect_tensor(copy, DType::f32, {6}, {0, 3, 1, 4, 2, 5});
  EXPECT_FALSE(copy.shares_storage_with(x));
  OpRunner r3;  // view refuses, naming the node
  expect_error([&] { r3.run1("view", {r3.input(x.transpose(0, 1)), Argument::ints({6})}); }, {"%view", "view"});
}

TEST(ReferenceViews, PermuteTransposeExpandUnsqueeze) {
  Tensor x = range({2, 3});
  OpRunner r;
  Tensor permuted = r.run1("permute", {r.input(x), Argument::ints({1, 0})});
  expect_tensor(permuted, DType::f32, {3, 2}, {0, 3, 1, 4, 2, 5});
  EXPECT_TRUE(permuted.shares_storage_with(x));
  OpRunner r2;
  expect_tensor(r2.run1("transpose", {r2.input(x), int64_t(-1), int64_t(0)}), DType::f32, {3, 2}, {0, 3, 1, 4, 2, 5});
  OpRunner r3;
  Tensor column = tensor({2, 1}, {7, 8});
  Tensor expanded = r3.run1("expand", {r3.input(column), Argument::ints({2, 2, 3})});
  expect_tensor(expanded, DType::f32, {2, 2, 3}, {7, 7, 7, 8, 8, 8, 7, 7, 7, 8, 8, 8});
  EXPECT_EQ(expanded.stride(2), 0);
  OpRunner r4;
  expect_tensor(r4.run1("unsqueeze", {r4.input(x), int64_t(-1)}), DType::f32, {2, 3, 1}, {0, 1, 2, 3, 4, 5});
}

TEST(ReferenceViews, Squeeze) {
  Tensor x = range({1, 2, 1});
  OpRunner r;
  expect_tensor(r.run1("squeeze", {r.input(x)}), DType::f32, {2}, {0, 1});
  OpRunner r2;  // only the listed dims, and only when they are 1
  expect_tensor(r2.run1("squeeze", {r2.input(x), Argument::ints({1, 2})}), DType::f32, {1, 2}, {0, 1});
}

TEST(ReferenceViews, SliceAndSelect) {
  Tensor x = range({2, 6});
  OpRunner r;
  Tensor sliced = r.run1("slice", {r.input(x), int64_t(1), int64_t(-5), Argument(), int64_t(2)});
  expect_tensor(sliced, DType::f32, {2, 3}, {1, 3, 5, 7, 9, 11});
  EXPECT_TRUE(sliced.shares_storage_with(x));
  OpRunner r2;  // Python clamping of out-of-range bounds
  expect_tensor(r2.run1("slice", {r2.input(x), int64_t(1), int64_t(4), int64_t(100)}), DType::f32, {2, 2},
                {4, 5, 10, 11});
  OpRunner r3;
  expect_tensor(r3.run1("select", {r3.input(x), int64_t(1), int64_t(-1)}), DType::f32, {2}, {5, 11});
  OpRunner r4;
  expect_error([&] { r4.run1("select", {r4.input(x), int64_t(0), int64_t(2)}); }, {"%select"});
}

TEST(ReferenceViews, AsStrided) {
  Tensor x = range({6});
  OpRunner r;
  Tensor out = r.run1("as_strided", {r.input(x), Argument::ints({2, 2}), Argument::ints({1, 2}), int64_t(1)});
  expect_tensor(out, DType::f32, {2, 2}, {1, 3, 2, 4});
  EXPECT_TRUE(out.shares_storage_with(x));
}

// ---------------------------------------------------------------- copies

TEST(ReferenceCopies, CatPromotesAndSkipsLegacyEmptyTensors) {
  Tensor a = tensor({2, 1}, {1, 2}, DType::i32), b = tensor({2, 2}, {0.5, 1.5, 2.5, 3.5});
  OpRunner r;
  Tensor out = r.run1("cat", {r.inputs({a, Tensor::zeros({0}, DType::f32), b}), int64_t(-1)});
  expect_tensor(out, DType::f32, {2, 3}, {1, 0.5, 1.5, 2, 2.5, 3.5});
  OpRunner r2;
  expect_error([&] { r2.run1("cat", {r2.inputs({tensor({2, 1}, {1, 2}), tensor({3, 1}, {1, 2, 3})}), int64_t(1)}); },
               {"%cat"});
}

TEST(ReferenceCopies, StackAndSplit) {
  Tensor a = tensor({2}, {1, 2}), b = tensor({2}, {3, 4});
  OpRunner r;
  expect_tensor(r.run1("stack", {r.inputs({a, b}), int64_t(1)}), DType::f32, {2, 2}, {1, 3, 2, 4});
  Tensor x = range({5, 2});
  OpRunner r2;
  std::vector<Tensor> pieces = r2.run("split", {r2.input(x), Argument::ints({2, 3})});
  ASSERT_EQ(pieces.size(), 2u);
  expect_tensor(pieces[0], DType::f32, {2, 2}, {0, 1, 2, 3});
  expect_tensor(pieces[1], DType::f32, {3, 2}, {4, 5, 6, 7, 8, 9});
  EXPECT_FALSE(pieces[0].shares_storage_with(x));
  OpRunner r3;  // one size: chunks, the last one shorter
  std::vector<Tensor> chunks = r3.run("split", {r3.input(x), int64_t(2), int64_t(0)});
  ASSERT_EQ(chunks.size(), 3u);
  expect_tensor(chunks[2], DType::f32, {1, 2}, {8, 9});
}

TEST(ReferenceCopies, PadModes) {
  Tensor x = tensor({1, 3}, {1, 2, 3});
  struct Case {
    const char* mode;
    std::vector<double> expected;
  } cases[] = {
      {"reflect", {3, 2, 1, 2, 3, 2}},
      {"replicate", {1, 1, 1, 2, 3, 3}},
      {"circular", {2, 3, 1, 2, 3, 1}},
  };
  for (const Case& c : cases) {
    OpRunner r;
    SCOPED_TRACE(c.mode);
    expect_tensor(r.run1("pad", {r.input(x), Argument::ints({2, 1}), c.mode}), DType::f32, {1, 6}, c.expected);
  }
  OpRunner r;
  expect_tensor(r.run1("pad", {r.input(x), Argument::ints({2, 1}), "constant", 9.0}), DType::f32, {1, 6},
                {9, 9, 1, 2, 3, 9});
  OpRunner r2;  // two dims: (left, right) of the last dim, then (top, bottom)
  expect_tensor(r2.run1("pad", {r2.input(tensor({2, 2}, {1, 2, 3, 4})), Argument::ints({1, 0, 0, 1})}), DType::f32,
                {3, 3}, {0, 1, 2, 0, 3, 4, 0, 0, 0});
  OpRunner r3;  // negative padding crops
  expect_ints(r3.run1("pad", {r3.input(tensor({4}, {1, 2, 3, 4}, DType::i64)), Argument::ints({-1, 1})}), DType::i64,
              {4}, {2, 3, 4, 0});
  OpRunner r4;
  expect_error([&] { r4.run1("pad", {r4.input(x), Argument::ints({3, 0}), "reflect"}); }, {"%pad", "(3, 0)"});
}

TEST(ReferenceCopies, TrilTriu) {
  Tensor x = range({3, 3}, DType::i64);
  OpRunner r;
  expect_ints(r.run1("tril", {r.input(x)}), DType::i64, {3, 3}, {0, 0, 0, 3, 4, 0, 6, 7, 8});
  OpRunner r2;
  expect_ints(r2.run1("triu", {r2.input(x), int64_t(1)}), DType::i64, {3, 3}, {0, 1, 2, 0, 0, 5, 0, 0, 0});
  OpRunner r3;
  expect_ints(r3.run1("tril", {r3.input(x), int64_t(-1)}), DType::i64, {3, 3}, {0, 0, 0, 3, 0, 0, 6, 7, 0});
}

TEST(ReferenceCopies, FlattenCopies) {
  Tensor x = range({2, 3, 4});
  OpRunner r;
  Tensor out = r.run1("flatten", {r.input(x), int64_t(1)});
  expect_tensor(out, DType::f32, {2, 12}, values_of(x));
  EXPECT_FALSE(out.shares_storage_with(x));
  OpRunner r2;
  expect_tensor(r2.run1("flatten", {r2.input(Tensor::scalar(5, DType::f32))}), DType::f32, {1}, {5});
}

TEST(ReferenceCopies, GetitemOfATuple) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {SymInt(4)}));
  Node* both = graph.create_call("var_mean", {x});
  Node* mean = graph.create_call("getitem", {both, int64_t(1)});
  Node* variance = graph.create_call("getitem", {both, int64_t(-2)});
  graph.create_output({mean, variance});
  std::vector<Tensor> out = interpret(graph, {{"x", tensor({4}, {1, 2, 3, 6})}});
  ASSERT_EQ(out.size(), 2u);
  expect_tensor(out[0], DType::f32, {}, {3});
  expect_tensor(out[1], DType::f32, {}, {(4 + 1 + 0 + 9) / 3.0});
}

// ---------------------------------------------------------------- indexing

TEST(ReferenceIndexing, GatherAlongDim1) {
  Tensor x = range({2, 3});
  Tensor index = tensor({2, 2}, {2, 0, 1, 1}, DType::i64);
  OpRunner r;
  // out[i][j] = x[i][index[i][j]]
  expect_tensor(r.run1("gather", {r.input(x), int64_t(1), r.input(index)}), DType::f32, {2, 2}, {2, 0, 4, 4});
  OpRunner r2;
  expect_error([&] { r2.run1("gather", {r2.input(x), int64_t(1), r2.input(tensor({1, 1}, {3}, DType::i64))}); },
               {"%gather", "out of bounds"});
}

TEST(ReferenceIndexing, ScatterWithAndWithoutReduce) {
  Tensor self = Tensor::zeros({2, 3}, DType::f32);
  Tensor index = tensor({2, 2}, {0, 0, 2, 1}, DType::i64);
  Tensor src = tensor({2, 2}, {1, 2, 3, 4});
  OpRunner r;  // out[i][index[i][j]] = src[i][j]; the later duplicate wins
  expect_tensor(r.run1("scatter", {r.input(self), int64_t(1), r.input(index), r.input(src)}), DType::f32, {2, 3},
                {2, 0, 0, 0, 4, 3});
  OpRunner r2;
  expect_tensor(r2.run1("scatter", {r2.input(self), int64_t(1), r2.input(index), r2.input(src)}, {{"reduce", "sum"}}),
                DType::f32, {2, 3}, {3, 0, 0, 0, 4, 3});
  OpRunner r3;
  Tensor base = tensor({2, 3}, {5, 5, 5, 5, 5, 5});
  expect_tensor(r3.run1("scatter", {r3.input(base), int64_t(1), r3.input(index), r3.input(src)}, {{"reduce", "amax"}}),
                DType::f32, {2, 3}, {5, 5, 5, 5, 5, 5});
  OpRunner r4;  // a number as src, along dim 0
  expect_ints(r4.run1("scatter", {r4.input(Tensor::zeros({2, 2}, DType::i64)), int64_t(0),
                                  r4.input(tensor({1, 2}, {1, 0}, DType::i64)), int64_t(7)}),
              DType::i64, {2, 2}, {0, 7, 7, 0});
}

TEST(ReferenceIndexing, IndexSelectOfATransposedInput) {
  Tensor x = range({3, 2}).transpose(0, 1);  // [[0, 2, 4], [1, 3, 5]]
  OpRunner r;
  expect_tensor(r.run1("index_select", {r.input(x), int64_t(1), r.input(tensor({3}, {2, 2, 0}, DType::i64))}),
                DType::f32, {2, 3}, {4, 4, 0, 5, 5, 1});
}

TEST(ReferenceIndexing, Embedding) {
  Tensor weight = range({4, 2});
  Tensor indices = tensor({2, 2}, {3, 0, 1, 3}, DType::i64);
  OpRunner r;
  expect_tensor(r.run1("embedding", {r.input(weight), r.input(indices)}), DType::f32, {2, 2, 2},
                {6, 7, 0, 1, 2, 3, 6, 7});
  OpRunner r2;
  expect_error([&] { r2.run1("embedding", {r2.input(weight), r2.input(tensor({1}, {4}, DType::i64))}); },
               {"%embedding", "out of bounds"});
}

TEST(ReferenceIndexing, IndexPutAccumulatesDuplicates) {
  Tensor self = Tensor::zeros({4}, DType::f32);
  Tensor index = tensor({3}, {1, -1, 1}, DType::i64);
  OpRunner r;
  expect_tensor(r.run1("index_put", {r.input(self), r.inputs({index}), r.input(tensor({3}, {1, 2, 3})), true}),
                DType::f32, {4}, {0, 4, 0, 2});
  OpRunner r2;  // without accumulate the last write wins
  expect_tensor(r2.run1("index_put", {r2.input(self), r2.inputs({index}), r2.input(tensor({3}, {1, 2, 3}))}),
                DType::f32, {4}, {0, 3, 0, 2});
}

TEST(ReferenceIndexing, IndexPutWithBroadcastIndexTensors) {
  Tensor self = Tensor::zeros({3, 3}, DType::i64);
  // rows [[0], [2]] and columns [0, 2] broadcast to the four corners.
  Tensor rows = tensor({2, 1}, {0, 2}, DType::i64), columns = tensor({2}, {0, 2}, DType::i64);
  OpRunner r;
  expect_ints(r.run1("index_put", {r.input(self), r.inputs({rows, columns}), r.input(tensor({}, {5}, DType::i64))}),
              DType::i64, {3, 3}, {5, 0, 5, 0, 0, 0, 5, 0, 5});
}

TEST(ReferenceIndexing, IndexPutWithABoolMask) {
  Tensor self = range({2, 2});
  Tensor mask = tensor({2, 2}, {1, 0, 0, 1}, DType::boolean);
  OpRunner r;
  expect_tensor(r.run1("index_put", {r.input(self), r.inputs({mask}), r.input(tensor({2}, {-1, -2}))}), DType::f32,
                {2, 2}, {-1, 1, 2, -2});
}

TEST(ReferenceIndexing, IndexPutWithALeadingNone) {
  Tensor self = Tensor::zeros({2, 3}, DType::f32);
  OpRunner r;  // self[:, [2, 0]] = [[1, 2], [3, 4]]
  Tensor out = r.run1("index_put", {r.input(self), Argument(std::vector<Argument>{Argument(), r.input(tensor({2}, {2, 0}, DType::i64))}),
                                    r.input(tensor({2, 2}, {1, 2, 3, 4}))});
  expect_tensor(out, DType::f32, {2, 3}, {2, 0, 1, 4, 0, 3});
  OpRunner r2;
  expect_error([&] { r2.run1("index_put", {r2.input(self), r2.inputs({tensor({1}, {2}, DType::i64)}),
                                           r2.input(tensor({1}, {1}))}); },
               {"%index_put", "out of bounds"});
}

// ---------------------------------------------------------------- in place

// Graph: x -> view ops -> an in-place op on the view; returns x.
TEST(ReferenceInPlace, AddThroughATransposeWritesTheBase) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {SymInt(2), SymInt(3)}));
  Node* t = graph.create_call("transpose", {x, int64_t(0), int64_t(1)});
  Node* column = graph.create_call("select", {t, int64_t(0), int64_t(2)});  // x[:, 2]
  graph.create_call("add_", {column, 10.0});
  graph.create_output({x});
  Tensor input = range({2, 3});
  std::vector<Tensor> out = interpret(graph, {{"x", input}});
  expect_tensor(out.at(0), DType::f32, {2, 3}, {0, 1, 12, 3, 4, 15});
  EXPECT_TRUE(out[0].shares_storage_with(input));  // the caller's tensor was mutated, as in PyTorch
  expect_tensor(input, DType::f32, {2, 3}, {0, 1, 12, 3, 4, 15});
}

TEST(ReferenceInPlace, FillCopyAndIndexPutThroughSlices) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {SymInt(3), SymInt(4)}));
  Node* first_columns = graph.create_call("slice", {x, int64_t(1), int64_t(0), int64_t(2)});
  graph.create_call("fill_", {first_columns, -1.0});
  Node* last_row = graph.create_call("select", {x, int64_t(0), int64_t(-1)});
  Node* source = graph.create_placeholder("source", TensorMeta::contiguous(DType::i64, {SymInt(1)}));
  graph.create_call("copy_", {last_row, source});  // broadcast and cast
  Node* middle = graph.create_call("select", {x, int64_t(0), int64_t(1)});
  Node* where = graph.create_placeholder("where", TensorMeta::contiguous(DType::i64, {SymInt(1)}));
  Node* value = graph.create_placeholder("value", TensorMeta::contiguous(DType::f32, {}));
  graph.create_call("index_put_", {middle, std::vector<Argument>{Argument(where)}, value, true});
  graph.create_output({x});
  Tensor input = range({3, 4});
  std::vector<Tensor> out = interpret(graph, {{"x", input},
                                              {"source", tensor({1}, {9}, DType::i64)},
                                              {"where", tensor({1}, {3}, DType::i64)},
                                              {"value", Tensor::scalar(100, DType::f32)}});
  expect_tensor(out.at(0), DType::f32, {3, 4}, {-1, -1, 2, 3, -1, -1, 6, 107, 9, 9, 9, 9});
}

TEST(ReferenceInPlace, ResultMustFitSelf) {
  OpRunner r;
  expect_error([&] { r.run1("mul_", {r.input(tensor({2}, {1, 2}, DType::i64)), 0.5}); }, {"%mul_", "can't be cast"});
  OpRunner r2;
  expect_error([&] { r2.run1("add_", {r2.input(tensor({3}, {1, 2, 3})), r2.input(Tensor::zeros({2, 3}, DType::f32))}); },
               {"%add_"});
  OpRunner r3;  // int self, float function: exp_ cannot write f32 into i64
  expect_error([&] { r3.run1("exp_", {r3.input(tensor({1}, {1}, DType::i64))}); }, {"%exp_"});
}

TEST(ReferenceInPlace, InPlaceOpsReturnSelf) {
  OpRunner r;
  Tensor x = tensor({3}, {-1, 0, 2});
  Tensor out = r.run1("relu_", {r.input(x)});
  EXPECT_TRUE(out.shares_storage_with(x));
  expect_tensor(x, DType::f32, {3}, {0, 0, 2});
  OpRunner r2;  // an i32 self takes an i64 result (same category)
  Tensor y = tensor({2}, {5, 6}, DType::i32);
  r2.run1("add_", {r2.input(y), r2.input(tensor({2}, {1, 1}, DType::i64))});
  expect_ints(y, DType::i32, {2}, {6, 7});
}

}  // namespace
}  // namespace kiln::ir
