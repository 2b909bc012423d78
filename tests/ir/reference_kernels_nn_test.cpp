// Reference kernels, part 3: matrix products, convolution, pooling, normalizations,
// activations, dropout, losses and attention. Expected values are worked out by hand in the
// comments or computed in the test by a direct loop or a mathematical identity.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/philox.h"
#include "tests/ir/reference_test_support.h"

namespace kiln::ir {
namespace {

using testing::expect_error;
using testing::expect_ints;
using testing::expect_tensor;
using testing::OpRunner;
using testing::tensor;
using testing::values_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Deterministic values in [-1, 1) without a random generator.
Tensor wave(const Sizes& sizes, double phase = 0) {
  std::vector<double> values(size_t(numel_of(sizes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.7 * double(i) + phase);
  return tensor(sizes, values);
}

// ---------------------------------------------------------------- matmul

TEST(ReferenceLinalg, MatmulOneDimensionalCases) {
  Tensor v = tensor({3}, {1, 2, 3}), w = tensor({3}, {4, 5, 6});
  OpRunner r;
  expect_tensor(r.run1("matmul", {r.input(v), r.input(w)}), DType::f32, {}, {32});
  OpRunner r2;  // [2] @ [2, 3]
  expect_tensor(r2.run1("matmul", {r2.input(tensor({2}, {1, 2})), r2.input(tensor({2, 3}, {1, 2, 3, 4, 5, 6}))}),
                DType::f32, {3}, {9, 12, 15});
  OpRunner r3;  // [2, 3] @ [3]
  expect_tensor(r3.run1("matmul", {r3.input(tensor({2, 3}, {1, 2, 3, 4, 5, 6})), r3.input(v)}), DType::f32, {2},
                {14, 32});
  OpRunner r4;
  expect_error([&] { r4.run1("matmul", {r4.input(v), r4.input(tensor({2}, {1, 2}))}); }, {"%matmul"});
}

TEST(ReferenceLinalg, MatmulBroadcastsBatchDims) {
  Tensor a = wave({2, 1, 2, 3}), b = wave({3, 3, 2}, 1.0);
  OpRunner r;
  Tensor out = r.run1("matmul", {r.input(a), r.input(b)});
  std::vector<double> x = values_of(a), y = values_of(b), expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int n = 0; n < 2; ++n)
        for (int m = 0; m < 2; ++m) {
          double sum = 0;
          for (int k = 0; k < 3; ++k) sum += x[size_t(i * 6 + n * 3 + k)] * y[size_t(j * 6 + k * 2 + m)];
          expected.push_back(sum);
        }
  expect_tensor(out, DType::f32, {2, 3, 2, 2}, expected, 1e-6);
}

TEST(ReferenceLinalg, IntegerMatmulIsExact) {
  // (2^40 + 1)(2^20 + 1) = 2^60 + 2^40 + 2^20 + 1 needs 61 bits: exact only in integers.
  Tensor a = Tensor::empty({1, 1}, DType::i64), b = Tensor::empty({1, 1}, DType::i64);
  a.set_int(std::vector<int64_t>{0, 0}, (int64_t(1) << 40) + 1);
  b.set_int(std::vector<int64_t>{0, 0}, (int64_t(1) << 20) + 1);
  OpRunner r;
  expect_ints(r.run1("matmul", {r.input(a), r.input(b)}), DType::i64, {1, 1},
              {(int64_t(1) << 60) + (int64_t(1) << 40) + (int64_t(1) << 20) + 1});
}

TEST(ReferenceLinalg, BmmLinearAddmm) {
  Tensor a = tensor({2, 1, 2}, {1, 2, 3, 4}), b = tensor({2, 2, 1}, {5, 6, 7, 8});
  OpRunner r;
  expect_tensor(r.run1("bmm", {r.input(a), r.input(b)}), DType::f32, {2, 1, 1}, {17, 53});
  // linear: x [2, 1, 2] @ W[3, 2]^T + b[3]
  Tensor weight = tensor({3, 2}, {1, 0, 0, 1, 1, 1}), bias = tensor({3}, {0.5, -0.5, 0});
  OpRunner r2;
  expect_tensor(r2.run1("linear", {r2.input(a), r2.input(weight), r2.input(bias)}), DType::f32, {2, 1, 3},
                {1.5, 1.5, 3, 3.5, 3.5, 7});
  OpRunner r3;  // beta = 0 ignores self, even its NaN
  Tensor self = tensor({1, 1}, {kNaN});
  expect_tensor(r3.run1("addmm", {r3.input(self), r3.input(tensor({1, 2}, {1, 2})), r3.input(tensor({2, 1}, {3, 4}))},
                        {{"beta", 0.0}, {"alpha", 2.0}}),
                DType::f32, {1, 1}, {22});
  OpRunner r4;
  expect_tensor(r4.run1("addmm", {r4.input(tensor({2}, {1, 2})), r4.input(tensor({1, 1}, {3})),
                                  r4.input(tensor({1, 2}, {1, 1}))},
                        {{"beta", 0.5}}),
                DType::f32, {1, 2}, {3.5, 4});
}

// ---------------------------------------------------------------- convolution

Tensor conv(const Tensor& x, const Tensor& w, const Tensor* bias, std::vector<int64_t> stride,
            std::vector<int64_t> padding, std::vector<int64_t> dilation, bool transposed,
            std::vector<int64_t> output_padding, int64_t groups) {
  OpRunner r;
  return r.run1("convolution", {r.input(x), r.input(w), bias ? r.input(*bias) : Argument(), Argument::ints(stride),
                                Argument::ints(padding), Argument::ints(dilation), transposed,
                                Argument::ints(output_padding), groups});
}

TEST(ReferenceConvolution, OneDimensionalByHand) {
  Tensor x = tensor({1, 1, 5}, {1, 2, 3, 4, 5}), w = tensor({1, 1, 3}, {1, 0, -1}), bias = tensor({1}, {0.5});
  // Zero-padded x = [0, 1, 2, 3, 4, 5, 0]; windows start at 0, 2, 4: -2, -2, 4.
  expect_tensor(conv(x, w, &bias, {2}, {1}, {1}, false, {0}, 1), DType::f32, {1, 1, 3}, {-1.5, -1.5, 4.5});
  // Dilation 2: taps at 0, 2, 4: 1 - 5.
  expect_tensor(conv(x, w, nullptr, {1}, {0}, {2}, false, {0}, 1), DType::f32, {1, 1, 1}, {-4});
  // Stride 1, no padding: x[i] - x[i + 2] = -2 everywhere.
  expect_tensor(conv(x, w, nullptr, {1}, {0}, {1}, false, {0}, 1), DType::f32, {1, 1, 3}, {-2, -2, -2});
}

TEST(ReferenceConvolution, TransposedByHand) {
  Tensor x = tensor({1, 1, 2}, {1, 2}), w = tensor({1, 1, 3}, {1, 1, 1});
  // Input i lands at i * 2 + k: [1, 1, 1+2, 2, 2] plus output_padding 1: length 6.
  expect_tensor(conv(x, w, nullptr, {2}, {0}, {1}, true, {1}, 1), DType::f32, {1, 1, 6}, {1, 1, 3, 2, 2, 0});
  // Padding 1 crops one element at each end of the uncropped result.
  expect_tensor(conv(x, w, nullptr, {2}, {1}, {1}, true, {1}, 1), DType::f32, {1, 1, 4}, {1, 3, 2, 2});
}

// A direct 2-d convolution over an explicitly zero-padded input, written independently.
std::vector<double> naive_conv2d(const Tensor& input, const Tensor& weight, int64_t stride, int64_t pad,
                                 int64_t groups, Sizes& out_shape) {
  int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  int64_t co = weight.size(0), cg = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  int64_t hp = h + 2 * pad, wp = w + 2 * pad;
  std::vector<double> padded(size_t(n * c * hp * wp), 0.0);
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          padded[size_t(((a * c + b) * hp + y + pad) * wp + x + pad)] =
              input.item_double(std::vector<int64_t>{a, b, y, x});
  int64_t ho = (hp - kh) / stride + 1, wo = (wp - kw) / stride + 1;
  out_shape = {n, co, ho, wo};
  std::vector<double> out;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t o = 0; o < co; ++o)
      for (int64_t y = 0; y < ho; ++y)
        for (int64_t x = 0; x < wo; ++x) {
          int64_t group = o / (co / groups);
          double sum = 0;
          for (int64_t i = 0; i < cg; ++i)
            for (int64_t p = 0; p < kh; ++p)
              for (int64_t q = 0; q < kw; ++q)
                sum += padded[size_t(((a * c + group * cg + i) * hp + y * stride + p) * wp + x * stride + q)] *
                       weight.item_double(std::vector<int64_t>{o, i, p, q});
          out.push_back(sum);
        }
  return out;
}

TEST(ReferenceConvolution, TwoDimensionalGroupsAgainstANaiveLoop) {
  Tensor x = wave({2, 4, 5, 6}), w = wave({6, 2, 3, 2}, 0.3);
  Sizes shape;
  std::vector<double> expected = naive_conv2d(x, w, 2, 1, 2, shape);
  expect_tensor(conv(x, w, nullptr, {2}, {1}, {1}, false, {0}, 2), DType::f32, shape, expected, 1e-5);
}

TEST(ReferenceConvolution, TransposedEqualsConvolutionWithTheFlippedKernel) {
  // With stride 1: conv_transpose(x, W, padding 0) == conv(x, W', padding k - 1), where
  // W'[o][i][a][b] = W[i][o][k-1-a][k-1-b].
  Tensor x = wave({1, 2, 4, 3}), w = wave({2, 3, 3, 3}, 0.5);
  std::vector<double> flipped;
  for (int64_t o = 0; o < 3; ++o)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t a = 0; a < 3; ++a)
        for (int64_t b = 0; b < 3; ++b) flipped.push_back(w.item_double(std::vector<int64_t>{i, o, 2 - a, 2 - b}));
  Sizes shape;
  std::vector<double> expected = naive_conv2d(x, tensor({3, 2, 3, 3}, flipped), 1, 2, 1, shape);
  expect_tensor(conv(x, w, nullptr, {1}, {0}, {1}, true, {0}, 1), DType::f32, shape, expected, 1e-5);
}

// ---------------------------------------------------------------- pooling

TEST(ReferencePooling, MaxPool) {
  Tensor x = tensor({1, 1, 5}, {1, 5, 2, 4, 3});
  OpRunner r;  // padding counts as -inf: windows [-1, 0], [1, 2], [3, 4]
  expect_tensor(r.run1("max_pool", {r.input(x), Argument::ints({2}), Argument::ints({2}), Argument::ints({1})}),
                DType::f32, {1, 1, 3}, {1, 5, 4});
  OpRunner r2;  // ceil_mode keeps the partial last window [4]
  expect_tensor(r2.run1("max_pool", {r2.input(x), Argument::ints({2})}, {{"ceil_mode", true}}), DType::f32, {1, 1, 3},
                {5, 4, 3});
  OpRunner r3;
  expect_tensor(r3.run1("max_pool", {r3.input(tensor({1, 4}, {1, kNaN, 2, 0})), Argument::ints({2})}), DType::f32,
                {1, 2}, {kNaN, 2});
  OpRunner r4;  // 2-d with dilation 2: taps (0,0) (0,2) (2,0) (2,2)
  Tensor grid = tensor({1, 3, 3}, {1, 9, 2, 8, 7, 6, 3, 5, 4});
  expect_tensor(r4.run1("max_pool", {r4.input(grid), Argument::ints({2, 2}), Argument::ints({1}), Argument::ints({0}),
                                     Argument::ints({2})}),
                DType::f32, {1, 1, 1}, {4});
}

TEST(ReferencePooling, AvgPool) {
  Tensor x = tensor({1, 5}, {1, 2, 3, 4, 5});
  auto run = [&](bool count_include_pad, Argument divisor) {
    OpRunner r;
    return r.run1("avg_pool", {r.input(x), Argument::ints({3}), Argument::ints({2}), Argument::ints({1})},
                  {{"count_include_pad", count_include_pad}, {"divisor_override", divisor}});
  };
  // Windows [-1, 1], [1, 3], [3, 5] (positions -1 and 5 are padding).
  expect_tensor(run(true, Argument()), DType::f32, {1, 3}, {1, 3, 3});
  expect_tensor(run(false, Argument()), DType::f32, {1, 3}, {1.5, 3, 4.5});
  expect_tensor(run(true, int64_t(2)), DType::f32, {1, 3}, {1.5, 4.5, 4.5});
}

TEST(ReferencePooling, AdaptivePools) {
  Tensor x = tensor({1, 5}, {1, 2, 3, 4, 5});
  // Windows floor(i*5/3) .. ceil((i+1)*5/3): [0, 2), [1, 4), [3, 5).
  OpRunner r;
  expect_tensor(r.run1("adaptive_avg_pool", {r.input(x), Argument::ints({3})}), DType::f32, {1, 3}, {1.5, 3, 4.5});
  OpRunner r2;
  expect_tensor(r2.run1("adaptive_max_pool", {r2.input(x), Argument::ints({3})}), DType::f32, {1, 3}, {2, 4, 5});
  OpRunner r3;  // global average
  Tensor grid = wave({2, 3, 4, 4});
  Tensor out = r3.run1("adaptive_avg_pool", {r3.input(grid), Argument::ints({1, 1})});
  std::vector<double> values = values_of(grid), expected;
  for (int plane = 0; plane < 6; ++plane) {
    double sum = 0;
    for (int i = 0; i < 16; ++i) sum += values[size_t(plane * 16 + i)];
    expected.push_back(sum / 16);
  }
  expect_tensor(out, DType::f32, {2, 3, 1, 1}, expected);
}

// ---------------------------------------------------------------- normalization

TEST(ReferenceNormalization, SoftmaxAndLogSoftmax) {
  OpRunner r;
  double denominator = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_tensor(r.run1("softmax", {r.input(tensor({3}, {1, 2, 3})), int64_t(0)}), DType::f32, {3},
                {std::exp(1.0) / denominator, std::exp(2.0) / denominator, std::exp(3.0) / denominator});
  OpRunner r2;  // large values stay finite thanks to the max subtraction
  expect_tensor(r2.run1("softmax", {r2.input(tensor({2}, {1000, 1001})), int64_t(-1)}), DType::f32, {2},
                {1 / (1 + M_E), M_E / (1 + M_E)});
  OpRunner r3;  // along dim 0 of a [2, 2]
  double s = 1 / (1 + std::exp(2.0));
  expect_tensor(r3.run1("softmax", {r3.input(tensor({2, 2}, {0, 1, 2, 1})), int64_t(0)}), DType::f32, {2, 2},
                {s, 0.5, 1 - s, 0.5});
  OpRunner r4;
  expect_tensor(r4.run1("log_softmax", {r4.input(tensor({2}, {1000, 1001})), int64_t(0)}), DType::f32, {2},
                {-std::log(1 + M_E), 1 - std::log(1 + M_E)}, 1e-6);
  OpRunner r5;  // dtype argument converts first
  expect_tensor(r5.run1("softmax", {r5.input(tensor({2}, {0, 0}, DType::i64)), int64_t(0), DType::f64}), DType::f64,
                {2}, {0.5, 0.5});
}

TEST(ReferenceNormalization, LayerNorm) {
  Tensor x = tensor({2, 3}, {1, 2, 3, 2, 2, 8});
  Tensor weight = tensor({3}, {1, 2, 3}), bias = tensor({3}, {0, 1, 0});
  OpRunner r;
  Tensor out = r.run1("layer_norm", {r.input(x), Argument::ints({3}), r.input(weight), r.input(bias)});
  std::vector<double> expected;
  for (std::vector<double> row : {std::vector<double>{1, 2, 3}, std::vector<double>{2, 2, 8}}) {
    double mean = (row[0] + row[1] + row[2]) / 3;
    double var = ((row[0] - mean) * (row[0] - mean) + (row[1] - mean) * (row[1] - mean) +
                  (row[2] - mean) * (row[2] - mean)) / 3;
    for (int i = 0; i < 3; ++i)
      expected.push_back((row[size_t(i)] - mean) / std::sqrt(var + 1e-5) * (i + 1) + (i == 1 ? 1 : 0));
  }
  expect_tensor(out, DType::f32, {2, 3}, expected, 1e-5);
}

TEST(ReferenceNormalization, RmsNorm) {
  OpRunner r;
  double eps = std::numeric_limits<float>::epsilon();
  expect_tensor(r.run1("rms_norm", {r.input(tensor({1, 2}, {3, 4})), Argument::ints({2})}), DType::f32, {1, 2},
                {3 / std::sqrt(12.5 + eps), 4 / std::sqrt(12.5 + eps)});
  OpRunner r2;
  expect_tensor(r2.run1("rms_norm", {r2.input(tensor({2}, {1, 1})), Argument::ints({2}), r2.input(tensor({2}, {2, 3})),
                                     0.5}),
                DType::f32, {2}, {2 / std::sqrt(1.5), 3 / std::sqrt(1.5)});
}

TEST(ReferenceNormalization, BatchNormTrainingAndEval) {
  // [N=2, C=2, L=1]: channel 0 sees {1, 3}, channel 1 sees {2, 6}.
  Tensor x = tensor({2, 2, 1}, {1, 2, 3, 6});
  OpRunner r;
  Tensor train = r.run1("batch_norm", {r.input(x), Argument(), Argument(), Argument(), Argument(), true, 0.1, 0.0});
  // Biased variances 1 and 4: every value is exactly one standard deviation from its mean.
  expect_tensor(train, DType::f32, {2, 2, 1}, {-1, -1, 1, 1});
  OpRunner r2;
  Tensor eval = r2.run1("batch_norm", {r2.input(x), r2.input(tensor({2}, {2, 1})), r2.input(tensor({2}, {0, 10})),
                                       r2.input(tensor({2}, {1, 2})), r2.input(tensor({2}, {4, 16})), false, 0.1, 0.0});
  // (x - mean) / sqrt(var) * weight + bias with the running statistics.
  expect_tensor(eval, DType::f32, {2, 2, 1}, {0, 10, 2, 11});
}

TEST(ReferenceNormalization, GroupNorm) {
  // [N=1, C=4, L=1], 2 groups: {1, 3} and {10, 14}.
  Tensor x = tensor({1, 4, 1}, {1, 3, 10, 14});
  OpRunner r;
  Tensor out = r.run1("group_norm", {r.input(x), int64_t(2), r.input(tensor({4}, {1, 1, 2, 2}))}, {{"eps", 0.0}});
  expect_tensor(out, DType::f32, {1, 4, 1}, {-1, 1, -2, 2});
}

// ---------------------------------------------------------------- activations

TEST(ReferenceActivations, KnownValues) {
  Tensor x = tensor({2}, {1, -1});
  struct Case {
    const char* op;
    Kwargs kwargs;
    std::vector<double> expected;
  } cases[] = {
      {"gelu", {}, {0.8413447460685429, -0.15865525393145707}},
      {"gelu", {{"approximate", "tanh"}}, {0.8411919906082768, -0.15880800939172324}},
      {"silu", {}, {0.7310585786300049, -0.2689414213699951}},
      {"leaky_relu", {{"negative_slope", 0.2}}, {1, -0.2}},
      {"elu", {{"alpha", 2.0}}, {1, 2 * (std::exp(-1.0) - 1)}},
      {"hardsigmoid", {}, {4.0 / 6, 2.0 / 6}},
      {"hardswish", {}, {4.0 / 6, -2.0 / 6}},
      {"softplus", {}, {std::log(1 + M_E), std::log(1 + std::exp(-1.0))}},
  };
  for (const Case& c : cases) {
    OpRunner r;
    SCOPED_TRACE(c.op);
    expect_tensor(r.run1(c.op, {r.input(x)}, c.kwargs), DType::f32, {2}, c.expected, 1e-6);
  }
  OpRunner r;  // softplus is linear above the threshold: beta * x = 30 > 20
  expect_tensor(r.run1("softplus", {r.input(tensor({1}, {15})), 2.0}), DType::f32, {1}, {15});
  OpRunner r2;
  expect_error([&] { r2.run1("silu", {r2.input(tensor({1}, {1}, DType::i64))}); }, {"%silu"});
}

TEST(ReferenceActivations, DropoutKeepsByPhilox) {
  Tensor ones = Tensor::full({1000}, 1.0, DType::f32);
  OpRunner r;
  Tensor out = r.run1("dropout", {r.input(ones), 0.25, true}, {{"seed", int64_t(3)}});
  int kept = 0;
  for (uint32_t i = 0; i < 1000; ++i) {
    PhiloxCounter words = philox4x32({i, 0, 0, 0}, {3, 0});
    bool keep = double(words[0] >> 8) / 16777216.0 >= 0.25;
    kept += keep;
    EXPECT_FLOAT_EQ(float(out.flat_double(i)), keep ? float(1 / 0.75) : 0.0f) << "element " << i;
  }
  EXPECT_NEAR(kept / 1000.0, 0.75, 0.05);
  OpRunner r2;
  expect_tensor(r2.run1("dropout", {r2.input(tensor({2}, {1, 2})), 1.0}), DType::f32, {2}, {0, 0});
  OpRunner r3;
  Tensor x = tensor({2}, {1, 2});
  Tensor same = r3.run1("dropout", {r3.input(x), 0.5, false});
  expect_tensor(same, DType::f32, {2}, {1, 2});
  EXPECT_FALSE(same.shares_storage_with(x));
}

// ---------------------------------------------------------------- losses

TEST(ReferenceLosses, NllLossWithWeightsAndIgnoreIndex) {
  Tensor log_probs = tensor({3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
  Tensor target = tensor({3}, {0, 2, 1}, DType::i64), weight = tensor({3}, {1, 2, 3});
  OpRunner r;  // row 2's target is ignored: (1*1 + 3*6) / (1 + 3)
  expect_tensor(r.run1("nll_loss", {r.input(log_probs), r.input(target), r.input(weight)}, {{"ignore_index", int64_t(1)}}),
                DType::f32, {}, {19.0 / 4});
  OpRunner r2;
  expect_tensor(r2.run1("nll_loss", {r2.input(log_probs), r2.input(target), r2.input(weight), "none", int64_t(1)}),
                DType::f32, {3}, {1, 18, 0});
  OpRunner r3;
  expect_error([&] { r3.run1("nll_loss", {r3.input(log_probs), r3.input(tensor({3}, {0, 3, 1}, DType::i64))}); },
               {"%nll_loss", "out of bounds"});
}

TEST(ReferenceLosses, CrossEntropySimpleValues) {
  OpRunner r;  // two equal logits: log 2
  expect_tensor(r.run1("cross_entropy", {r.input(tensor({1, 2}, {0, 0})), r.input(tensor({1}, {0}, DType::i64))}),
                DType::f32, {}, {std::log(2.0)});
  OpRunner r2;  // class probabilities
  expect_tensor(r2.run1("cross_entropy", {r2.input(tensor({1, 2}, {0, 0})), r2.input(tensor({1, 2}, {1, 0}))}),
                DType::f32, {}, {std::log(2.0)});
}

TEST(ReferenceLosses, CrossEntropyWithWeightsAndLabelSmoothingAsPyTorch) {
  Tensor logits = tensor({3, 3}, {1, 2, 0.5, -1, 0, 3, 0.2, 0.1, 0.4});
  Tensor target = tensor({3}, {2, 0, 1}, DType::i64);
  std::vector<double> w = {0.2, 0.3, 0.5};
  double smoothing = 0.1;
  // PyTorch: (1 - s) * nll_mean + s / C * sum_i(-sum_c w_c lp_ic) / sum_i w[t_i], with row 2
  // ignored (ignore_index 1) in both terms.
  std::vector<double> x = values_of(logits);
  double nll = 0, smooth = 0, weights = 0;
  int64_t targets[] = {2, 0, 1};
  for (int i = 0; i < 2; ++i) {
    double log_sum = std::log(std::exp(x[size_t(3 * i)]) + std::exp(x[size_t(3 * i + 1)]) + std::exp(x[size_t(3 * i + 2)]));
    int64_t t = targets[i];
    nll += -w[size_t(t)] * (x[size_t(3 * i + t)] - log_sum);
    for (int c = 0; c < 3; ++c) smooth += -w[size_t(c)] * (x[size_t(3 * i + c)] - log_sum);
    weights += w[size_t(t)];
  }
  double expected = (1 - smoothing) * nll / weights + smoothing / 3 * smooth / weights;
  OpRunner r;
  Tensor out = r.run1("cross_entropy", {r.input(logits), r.input(target), r.input(tensor({3}, w))},
                      {{"ignore_index", int64_t(1)}, {"label_smoothing", smoothing}});
  expect_tensor(out, DType::f32, {}, {expected}, 1e-6);
}

TEST(ReferenceLosses, CrossEntropyOverSpatialDims) {
  // [N=1, C=2, L=2] with targets [1, 0]: -log softmax at each position, averaged.
  Tensor logits = tensor({1, 2, 2}, {0, 1, 1, 1});
  OpRunner r;
  Tensor out = r.run1("cross_entropy", {r.input(logits), r.input(tensor({1, 2}, {1, 0}, DType::i64)), Argument(), "none"});
  // position 0: logits (0, 1), target 1: log(1 + e^-1); position 1: (1, 1), target 0: log 2.
  expect_tensor(out, DType::f32, {1, 2}, {std::log(1 + std::exp(-1.0)), std::log(2.0)});
}

TEST(ReferenceLosses, MseLoss) {
  Tensor a = tensor({3}, {1, 2, 3}), b = tensor({3}, {1, 1, 1});
  OpRunner r;
  expect_tensor(r.run1("mse_loss", {r.input(a), r.input(b)}), DType::f32, {}, {5.0 / 3});
  OpRunner r2;
  expect_tensor(r2.run1("mse_loss", {r2.input(a), r2.input(b), "sum"}), DType::f32, {}, {5});
  OpRunner r3;
  expect_tensor(r3.run1("mse_loss", {r3.input(a), r3.input(b), "none"}), DType::f32, {3}, {0, 1, 4});
}

// ---------------------------------------------------------------- attention

TEST(ReferenceAttention, ScaledDotProductByHand) {
  Tensor q = tensor({2, 2}, {1, 0, 0, 1}), k = tensor({2, 2}, {1, 0, 0, 1}), v = tensor({2, 2}, {1, 2, 3, 4});
  // Row i scores: (q_i . k_j) / sqrt(2): the matching key gets a = 1/sqrt(2), the other 0.
  double a = 1 / std::sqrt(2.0), p = std::exp(a) / (std::exp(a) + 1);
  OpRunner r;
  expect_tensor(r.run1("scaled_dot_product_attention", {r.input(q), r.input(k), r.input(v)}), DType::f32, {2, 2},
                {p * 1 + (1 - p) * 3, p * 2 + (1 - p) * 4, (1 - p) * 1 + p * 3, (1 - p) * 2 + p * 4});
  OpRunner r2;  // causal: query 0 sees key 0 only
  Tensor causal = r2.run1("scaled_dot_product_attention", {r2.input(q), r2.input(k), r2.input(v)}, {{"is_causal", true}});
  expect_tensor(causal, DType::f32, {2, 2}, {1, 2, (1 - p) * 1 + p * 3, (1 - p) * 2 + p * 4});
  OpRunner r3;  // explicit scale 0: uniform weights; a float mask adds log 3 to key 1
  Tensor mask = tensor({2}, {0, std::log(3.0)});
  expect_tensor(r3.run1("scaled_dot_product_attention", {r3.input(q), r3.input(k), r3.input(v), r3.input(mask)},
                        {{"scale", 0.0}}),
                DType::f32, {2, 2}, {2.5, 3.5, 2.5, 3.5});
}

TEST(ReferenceAttention, BoolMaskAndFullyMaskedRows) {
  Tensor q = wave({1, 2, 3, 4}), k = wave({1, 2, 5, 4}, 1), v = wave({1, 2, 5, 2}, 2);
  Tensor mask = tensor({3, 5}, {1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, DType::boolean);
  OpRunner r;
  Tensor out = r.run1("scaled_dot_product_attention", {r.input(q), r.input(k), r.input(v), r.input(mask)});
  std::vector<double> qv = values_of(q), kv = values_of(k), vv = values_of(v), m = values_of(mask), expected;
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i) {
      std::vector<double> weights;
      double total = 0;
      for (int j = 0; j < 5; ++j) {
        double dot = 0;
        for (int e = 0; e < 4; ++e) dot += qv[size_t((h * 3 + i) * 4 + e)] * kv[size_t((h * 5 + j) * 4 + e)];
        double weight = m[size_t(i * 5 + j)] != 0 ? std::exp(dot / 2) : 0.0;  // scale 1/sqrt(4)
        weights.push_back(weight);
        total += weight;
      }
      for (int e = 0; e < 2; ++e) {
        double sum = 0;
        for (int j = 0; j < 5; ++j) sum += total == 0 ? 0 : weights[size_t(j)] / total * vv[size_t((h * 5 + j) * 2 + e)];
        expected.push_back(sum);  // a fully masked row (i = 1) gives zeros
      }
    }
  expect_tensor(out, DType::f32, {1, 2, 3, 2}, expected, 1e-6);
  OpRunner r2;
  expect_error([&] { r2.run1("scaled_dot_product_attention", {r2.input(q), r2.input(k), r2.input(v), Argument(), 0.5}); },
               {"%scaled_dot_product_attention", "dropout_p"});
}

}  // namespace
}  // namespace kiln::ir
