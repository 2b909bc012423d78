// Shape inference of matmul/bmm, convolution and pooling. Output sizes are computed by hand
// from the formulas in PyTorch's documentation (Conv2d, ConvTranspose2d, MaxPool2d).
#include "tests/ir/shape_test_util.h"

namespace kiln::ir::shape_test {
namespace {

constexpr DType f32 = DType::f32, f16 = DType::f16, i64 = DType::i64, b = DType::boolean;

// ---------------------------------------------------------------- matmul, bmm

using MatMul = ShapeTest;

TEST_F(MatMul, OneAndTwoDimensionalCases) {
  EXPECT_EQ(type("matmul", {input(f32, {3}, "a"), input(f32, {3}, "b")}), "f32[]");
  EXPECT_EQ(type("matmul", {input(f32, {2, 3}, "c"), input(f32, {3}, "d")}), "f32[2]");
  EXPECT_EQ(type("matmul", {input(f32, {3}, "e"), input(f32, {3, 5}, "f")}), "f32[5]");
  EXPECT_EQ(type("matmul", {input(f32, {2, 3}, "g"), input(f32, {3, 5}, "h")}), "f32[2, 5]");
  EXPECT_EQ(type("matmul", {input(i64, {2, 3}, "i"), input(i64, {3, 5}, "j")}), "i64[2, 5]");
}

TEST_F(MatMul, BatchedBroadcasting) {
  EXPECT_EQ(type("matmul", {input(f32, {10, 1, 2, 3}, "a"), input(f32, {4, 3, 5}, "b")}), "f32[10, 4, 2, 5]");
  EXPECT_EQ(type("matmul", {input(f32, {2, 3, 4}, "c"), input(f32, {4}, "d")}), "f32[2, 3]");
  EXPECT_EQ(type("matmul", {input(f32, {4}, "e"), input(f32, {2, 4, 5}, "f")}), "f32[2, 5]");
  EXPECT_EQ(type("matmul", {input(f32, {2, 3, 4}, "g"), input(f32, {4, 6}, "h")}), "f32[2, 3, 6]");
  EXPECT_EQ(meta("matmul", {input(f32, {s0, 2, 3}, "i"), input(f32, {3, 4}, "j")}).shape, (SymShape{s0, 2, 4}));
  EXPECT_EQ(meta("matmul", {input(f32, {s0, s1}, "k"), input(f32, {s1, 7}, "l")}).shape, (SymShape{s0, 7}));
}

TEST_F(MatMul, Errors) {
  EXPECT_THAT(error("matmul", {input(f32, {3}, "a"), input(f32, {4}, "b")}),
              HasSubstr("inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, "
                        "but got 3 and 4 elements respectively"));
  EXPECT_THAT(error("matmul", {input(f32, {2, 3}, "c"), input(f32, {4}, "d")}),
              HasSubstr("size mismatch, got input (2), mat (2x3), vec (4)"));
  EXPECT_THAT(error("matmul", {input(f32, {2, 3}, "e"), input(f32, {4, 5}, "f")}),
              HasSubstr("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"));
  EXPECT_THAT(error("matmul", {input(f32, {2, 3}, "g"), input(f16, {3, 5}, "h")}),
              HasSubstr("expected m1 and m2 to have the same dtype, but got: f32 != f16"));
  EXPECT_THAT(error("matmul", {input(f32, {}, "i"), input(f32, {3}, "j")}),
              HasSubstr("both arguments to matmul need to be at least 1D, but they are 0D and 1D"));
  EXPECT_THAT(error("matmul", {input(f32, {2, 2, 3}, "k"), input(f32, {3, 3, 5}, "l")}),
              HasSubstr("The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"));
  EXPECT_THAT(error("matmul", {input(b, {2, 2}, "m"), input(b, {2, 2}, "n")}), HasSubstr("not implemented for bool"));
}

TEST_F(MatMul, Bmm) {
  EXPECT_EQ(type("bmm", {input(f32, {2, 3, 4}, "a"), input(f32, {2, 4, 5}, "b")}), "f32[2, 3, 5]");
  EXPECT_THAT(error("bmm", {input(f32, {3, 4}, "c"), input(f32, {2, 4, 5}, "d")}), HasSubstr("batch1 must be a 3D tensor"));
  EXPECT_THAT(error("bmm", {input(f32, {2, 3, 4}, "e"), input(f32, {2, 5, 5}, "f")}),
              HasSubstr("Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."));
}

// ---------------------------------------------------------------- convolution

class Convolution : public ShapeTest {
 protected:
  // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
  Argument conv(Node* x, Node* w, Argument bias, std::vector<int64_t> stride, std::vector<int64_t> padding,
                std::vector<int64_t> dilation, bool transposed = false, std::vector<int64_t> output_padding = {0},
                int64_t groups = 1) {
    return Argument(std::vector<Argument>{x, w, bias, ints(stride), ints(padding), ints(dilation), transposed,
                                          ints(output_padding), groups});
  }
  std::string conv_type(std::vector<Argument> args) { return type("convolution", std::move(args)); }
  std::string conv_error(std::vector<Argument> args) { return error("convolution", std::move(args)); }
  std::vector<Argument> args(Node* x, Node* w, Argument bias, std::vector<int64_t> stride,
                             std::vector<int64_t> padding, std::vector<int64_t> dilation, bool transposed = false,
                             std::vector<int64_t> output_padding = {0}, int64_t groups = 1) {
    return conv(x, w, bias, stride, padding, dilation, transposed, output_padding, groups).list();
  }
};

TEST_F(Convolution, OutputSizeFormula) {
  Node* x = input(f32, {1, 3, 32, 32});
  Node* w = input(f32, {8, 3, 3, 3}, "w");
  Node* bias = input(f32, {8}, "bias");
  EXPECT_EQ(conv_type(args(x, w, bias, {1}, {1}, {1})), "f32[1, 8, 32, 32]");
  EXPECT_EQ(conv_type(args(x, w, Argument(), {2, 2}, {0, 0}, {1, 1})), "f32[1, 8, 15, 15]");  // (32-3)/2+1
  EXPECT_EQ(conv_type(args(x, w, Argument(), {1}, {0}, {2})), "f32[1, 8, 28, 28]");           // 32-4-1+1
  EXPECT_EQ(conv_type(args(x, w, Argument(), {3, 1}, {1, 0}, {1})), "f32[1, 8, 11, 30]");     // (34-3)/3+1, 30
}

TEST_F(Convolution, OneAndThreeSpatialDims) {
  EXPECT_EQ(conv_type(args(input(f32, {2, 4, 10}), input(f32, {6, 4, 3}, "w"), Argument(), {1}, {0}, {1})),
            "f32[2, 6, 8]");
  EXPECT_EQ(conv_type(args(input(f32, {1, 2, 5, 6, 7}, "v"), input(f32, {4, 2, 3, 3, 3}, "u"), Argument(), {1}, {1},
                           {1})),
            "f32[1, 4, 5, 6, 7]");
}

TEST_F(Convolution, Groups) {
  EXPECT_EQ(conv_type(args(input(f32, {2, 4, 10}), input(f32, {6, 2, 3}, "w"), Argument(), {1}, {0}, {1}, false, {0}, 2)),
            "f32[2, 6, 8]");
  EXPECT_THAT(conv_error(args(input(f32, {2, 4, 10}, "a"), input(f32, {3, 2, 3}, "b"), Argument(), {1}, {0}, {1},
                              false, {0}, 2)),
              HasSubstr("Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size "
                        "[3, 2, 3] instead"));
  EXPECT_THAT(conv_error(args(input(f32, {1, 3, 5, 5}, "c"), input(f32, {8, 4, 3, 3}, "d"), Argument(), {1}, {0}, {1})),
              HasSubstr("Given groups=1, weight of size [8, 4, 3, 3], expected input[1, 3, 5, 5] to have 4 channels, "
                        "but got 3 channels instead"));
}

TEST_F(Convolution, Transposed) {
  // (5-1)*2 - 2*1 + 1*(3-1) + 1 + 1 = 10; out channels = weight[1] * groups = 2.
  EXPECT_EQ(conv_type(args(input(f32, {1, 4, 5, 5}), input(f32, {4, 2, 3, 3}, "w"), Argument(), {2}, {1}, {1}, true,
                           {1})),
            "f32[1, 2, 10, 10]");
  EXPECT_EQ(conv_type(args(input(f32, {1, 4, 5}, "a"), input(f32, {4, 3, 3}, "b"), Argument(), {1}, {0}, {1}, true,
                           {0}, 2)),
            "f32[1, 6, 7]");
  EXPECT_THAT(conv_error(args(input(f32, {1, 4, 5}, "c"), input(f32, {4, 3, 3}, "d"), Argument(), {1}, {0}, {1}, true,
                              {1})),
              HasSubstr("output padding must be smaller than either stride or dilation"));
  // An empty output_padding means zeros, for every spatial dim.
  EXPECT_EQ(conv_type(args(input(f32, {1, 4, 5, 5}, "e"), input(f32, {4, 2, 3, 3}, "f"), Argument(), {1}, {0}, {1},
                           true, {})),
            "f32[1, 2, 7, 7]");
}

TEST_F(Convolution, SymbolicSpatialSizes) {
  Node* x = input(f32, {s0, 3, s1, s1});
  Node* w = input(f32, {8, 3, 3, 3}, "w");
  TensorMeta result = meta("convolution", args(x, w, Argument(), {2}, {1}, {1}));
  SymInt expected = floordiv(s1 + 2 - 3, SymInt(2)) + 1;
  EXPECT_EQ(result.shape, (SymShape{s0, 8, expected, expected}));
  EXPECT_EQ(expected.evaluate({{"s1", 32}}), 16);
}

TEST_F(Convolution, Errors) {
  Node* x = input(f32, {1, 3, 5, 5});
  Node* w = input(f32, {8, 3, 3, 3}, "w");
  EXPECT_THAT(conv_error(args(x, w, input(f32, {4}, "bias"), {1}, {0}, {1})),
              HasSubstr("Given weight of size [8, 3, 3, 3], expected bias to be 1-dimensional with 8 elements, but got "
                        "bias of size [4] instead"));
  EXPECT_THAT(conv_error(args(input(f32, {1, 3, 2, 2}, "small"), w, Argument(), {1}, {0}, {1})),
              HasSubstr("Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be "
                        "greater than actual input size"));
  EXPECT_THAT(conv_error(args(input(f32, {3, 5, 5}, "flat"), w, Argument(), {1}, {0}, {1})),
              HasSubstr("Expected 4-dimensional input for 4-dimensional weight [8, 3, 3, 3], but got 3-dimensional "
                        "input of size [3, 5, 5] instead"));
  EXPECT_THAT(conv_error(args(x, w, Argument(), {0}, {0}, {1})), HasSubstr("non-positive stride is not supported"));
  EXPECT_THAT(conv_error(args(x, w, Argument(), {1}, {-1}, {1})), HasSubstr("negative padding is not supported"));
  EXPECT_THAT(conv_error(args(x, w, Argument(), {1, 1, 1}, {0}, {1})),
              HasSubstr("expected stride to have 1 or 2 values, one per spatial dimension, but got [1, 1, 1]"));
  EXPECT_THAT(conv_error(args(x, input(f16, {8, 3, 3, 3}, "half"), Argument(), {1}, {0}, {1})),
              HasSubstr("Input type (f32) and weight type (f16) should be the same"));
  EXPECT_THAT(conv_error(args(x, w, Argument(), {1}, {0}, {1}, false, {0}, 0)),
              HasSubstr("non-positive groups is not supported"));
}

// ---------------------------------------------------------------- pooling

using Pooling = ShapeTest;

TEST_F(Pooling, MaxPoolFloorAndCeil) {
  Node* x = input(f32, {1, 1, 5, 5});
  EXPECT_EQ(type("max_pool", {x, 2}), "f32[1, 1, 2, 2]");                         // floor(3/2)+1
  EXPECT_EQ(type("max_pool", {x, ints({2, 2})}, {{"ceil_mode", true}}), "f32[1, 1, 3, 3]");  // ceil(3/2)+1
  EXPECT_EQ(type("max_pool", {x, ints({3, 3}), ints({1, 1}), ints({1, 1}), ints({2, 2})}), "f32[1, 1, 3, 3]");
  EXPECT_EQ(type("max_pool", {input(i64, {2, 3, 8}, "y"), ints({2})}), "i64[2, 3, 4]");
}

TEST_F(Pooling, CeilModeLastWindowMustStartInsideTheInput) {
  // in 5, kernel 2, stride 3, pad 1: ceil((5+2-1-1)/3)+1 = 3 windows, but the third would
  // start at 6 >= 5 + 1 (past the input and left padding), so PyTorch drops it: 2.
  Node* x = input(f32, {1, 1, 5});
  Argument kernel = ints({2}), stride = ints({3}), padding = ints({1});
  EXPECT_EQ(type("max_pool", {x, kernel, stride, padding}, {{"ceil_mode", true}}), "f32[1, 1, 2]");
  EXPECT_EQ(type("avg_pool", {x, kernel, stride, padding, true}), "f32[1, 1, 2]");
  // The same rule with a symbolic size.
  TensorMeta symbolic = meta("max_pool", {input(f32, {1, 1, s0}, "y"), kernel, stride, padding}, {{"ceil_mode", true}});
  EXPECT_EQ(symbolic.shape[2].evaluate({{"s0", 5}}), 2);
  EXPECT_EQ(symbolic.shape[2].evaluate({{"s0", 6}}), 3);  // ceil(6/3)+1 = 3; last start 6 < 7
  EXPECT_EQ(symbolic.shape[2].evaluate({{"s0", 7}}), 3);  // ceil(7/3)+1 = 4; last start 9 >= 8: 3
  TensorMeta floor_mode = meta("max_pool", {input(f32, {1, 1, s0}, "z"), kernel, stride, padding});
  EXPECT_EQ(floor_mode.shape[2], floordiv(s0 + 2 - 2, SymInt(3)) + 1);
}

TEST_F(Pooling, AvgPool) {
  EXPECT_EQ(type("avg_pool", {input(f32, {2, 3, 8, 8}), 3, 2, 1}), "f32[2, 3, 4, 4]");  // floor((8+2-3)/2)+1
  EXPECT_EQ(type("avg_pool", {input(f32, {3, 8}, "unbatched"), ints({2})}), "f32[3, 4]");
  EXPECT_THAT(error("avg_pool", {input(f32, {1, 1, 4, 4}, "a"), 2}, {{"divisor_override", 0}}),
              HasSubstr("divisor must be not zero"));
}

TEST_F(Pooling, Errors) {
  Node* x = input(f32, {1, 1, 4, 4});
  EXPECT_THAT(error("max_pool", {x, 3, 1, 2}),
              HasSubstr("pad should be at most half of kernel size, but got pad=2 and kernel_size=3"));
  // As in PyTorch, the bound is half the kernel size even when dilation widens the window.
  EXPECT_THAT(error("max_pool", {input(f32, {1, 1, 8}, "dilated"), 3, 1, 2, 2}),
              HasSubstr("pad should be at most half of kernel size"));
  EXPECT_EQ(type("max_pool", {input(f32, {1, 1, 8}, "dilated_ok"), 3, 1, 1, 2}), "f32[1, 1, 6]");  // 8+2-4-1+1
  EXPECT_THAT(error("max_pool", {input(f32, {1, 1, 2, 2}, "small"), 3}),
              HasSubstr("Given input size: (2 x 2). Calculated output size: (0 x 0). Output size is too small"));
  EXPECT_THAT(error("max_pool", {input(f32, {2, 3}, "flat"), ints({2, 2})}),
              HasSubstr("expected a 3-d (unbatched) or 4-d (batched) input for 2-d pooling, but got input of shape [2, 3]"));
  EXPECT_THAT(error("max_pool", {x, 0}), HasSubstr("kernel_size must be greater than zero"));
  EXPECT_THAT(error("max_pool", {input(b, {1, 1, 4, 4}, "mask"), 2}), HasSubstr("not implemented for bool"));
}

TEST_F(Pooling, Adaptive) {
  Node* x = input(f32, {2, 3, 7, 9});
  EXPECT_EQ(type("adaptive_avg_pool", {x, ints({4, 5})}), "f32[2, 3, 4, 5]");
  EXPECT_EQ(type("adaptive_max_pool", {x, 1}), "f32[2, 3, 1, 1]");
  EXPECT_EQ(type("adaptive_avg_pool", {input(f32, {0, 3, 7}, "empty_batch"), ints({2})}), "f32[0, 3, 2]");
  EXPECT_EQ(type("adaptive_avg_pool", {input(f32, {1, 0, 4, 4}, "no_channels"), ints({2, 2})}), "f32[1, 0, 2, 2]");
  EXPECT_THAT(error("adaptive_avg_pool", {input(f32, {1, 3, 0, 4}, "empty"), ints({2, 2})}),
              HasSubstr("Expected input to have non-zero size for non-batch dimensions, but input has sizes "
                        "[1, 3, 0, 4] with dimension 2 being empty"));
  EXPECT_THAT(error("adaptive_avg_pool", {x, ints({-1, 2})}),
              HasSubstr("elements of output_size must be greater than or equal to 0"));
}

}  // namespace
}  // namespace kiln::ir::shape_test
