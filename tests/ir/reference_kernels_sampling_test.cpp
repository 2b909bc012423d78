// Reference kernels, part 4: the sampling ops (grid_sample, roi_align), the selection topk and
// det. Expected values are worked out by hand in the comments or follow from an identity:
// sampling a linear ramp bilinearly gives the sample position back exactly.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/ir/reference_test_support.h"

namespace kiln::ir {
namespace {

using testing::expect_error;
using testing::expect_ints;
using testing::expect_tensor;
using testing::OpRunner;
using testing::tensor;

// ---------------------------------------------------------------- grid_sample

// input 1x1x2x3 = [[0, 1, 2], [3, 4, 5]]; a grid [1, 1, P, 2] of (x, y) points.
Tensor sample(const std::vector<double>& points, const std::string& mode, const std::string& padding, bool align_corners) {
  OpRunner r;
  Tensor input = tensor({1, 1, 2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor grid = tensor({1, 1, int64_t(points.size() / 2), 2}, points);
  return r.run1("grid_sample", {r.input(input), r.input(grid)},
                {{"mode", mode}, {"padding_mode", padding}, {"align_corners", align_corners}});
}

TEST(ReferenceSampling, GridSampleAtPixelCentersGivesThePixels) {
  // align_corners: -1 and 1 are the centers of the first and last pixels; x = 0 is column 1.
  std::vector<double> corners = {-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1};
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    expect_tensor(sample(corners, mode, "zeros", true), DType::f32, {1, 1, 1, 6}, {0, 1, 2, 3, 4, 5}, 1e-6);
  // Without align_corners, -1 and 1 are the outer edges: x = -2/3 is the center of column 0
  // ((x + 1) * 3 - 1) / 2 = 0, y = -1/2 the center of row 0.
  expect_tensor(sample({-2.0 / 3, -0.5, 2.0 / 3, 0.5}, "bilinear", "zeros", false), DType::f32, {1, 1, 1, 2}, {0, 5}, 1e-6);
}

TEST(ReferenceSampling, GridSampleInterpolatesAndPads) {
  // Halfway between columns 0 and 1 of row 0: 0.5; between the rows at column 2: 3.5.
  expect_tensor(sample({-0.5, -1, 1, 0}, "bilinear", "zeros", true), DType::f32, {1, 1, 1, 2}, {0.5, 3.5}, 1e-6);
  // x = 2 is one column past the last center (column 3, outside): zeros reads 0 there and
  // border clamps the position to column 2 (row 0: 2). Nearest rounds 0.5 to the even 0.
  expect_tensor(sample({2, -1}, "bilinear", "zeros", true), DType::f32, {1, 1, 1, 1}, {0}, 1e-6);
  expect_tensor(sample({2, -1}, "bilinear", "border", true), DType::f32, {1, 1, 1, 1}, {2}, 1e-6);
  expect_tensor(sample({-0.5, -1}, "nearest", "zeros", true), DType::f32, {1, 1, 1, 1}, {0}, 1e-6);
  // Reflection: x = 2 (column 3) reflects about the last center (column 2) to column 1.
  expect_tensor(sample({2, -1}, "bilinear", "reflection", true), DType::f32, {1, 1, 1, 1}, {1}, 1e-6);
}

TEST(ReferenceSampling, GridSampleChecksItsArguments) {
  OpRunner r;
  Argument input = r.input(tensor({1, 1, 2, 3}, {0, 1, 2, 3, 4, 5}));
  Argument grid = r.input(tensor({1, 1, 1, 3}, {0, 0, 0}));
  expect_error([&] { r.run1("grid_sample", {input, grid}); }, {"the grid's last dim must be 2"});
  OpRunner r2;
  Argument input2 = r2.input(tensor({1, 1, 2, 3}, {0, 1, 2, 3, 4, 5}));
  Argument grid2 = r2.input(tensor({1, 1, 1, 2}, {0, 0}));
  expect_error([&] { r2.run1("grid_sample", {input2, grid2}, {{"mode", "area"}}); }, {"mode 'area' is not one of"});
}

// ---------------------------------------------------------------- roi_align

TEST(ReferenceSampling, RoiAlignAveragesBilinearSamples) {
  // input[y][x] = x on a 4x4 plane: bilinear samples give their x back. Box (0, 0)-(3, 3),
  // unaligned, one bin, 2x2 samples at x = 0.75 and 2.25: the mean is 1.5. Two bins across:
  // bin width 1.5, samples at 0.375, 1.125 (mean 0.75) and 1.875, 2.625 (mean 2.25).
  std::vector<double> ramp;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) ramp.push_back(x);
  OpRunner r;
  Tensor out = r.run1("roi_align", {r.input(tensor({1, 1, 4, 4}, ramp)), r.input(tensor({2, 4}, {0, 0, 3, 3, 0, 0, 3, 3})),
                                    r.input(Tensor::from_vector<int64_t>({2}, {0, 0}, DType::i64)), int64_t(1), int64_t(2),
                                    int64_t(2), 1.0, "avg", false});
  expect_tensor(out, DType::f32, {2, 1, 1, 2}, {0.75, 2.25, 0.75, 2.25}, 1e-6);
  OpRunner r2;
  expect_error(
      [&] {
        r2.run1("roi_align", {r2.input(tensor({1, 1, 4, 4}, ramp)), r2.input(tensor({1, 4}, {0, 0, 3, 3})),
                              r2.input(Tensor::from_vector<int64_t>({1}, {1}, DType::i64))});
      },
      {"batch index 1 of box 0 is out of range"});
}

// ---------------------------------------------------------------- deform_conv2d

TEST(ReferenceSampling, DeformConvWithoutOffsetsIsAConvolution) {
  // Zero offsets and a mask of ones sample every tap at its own pixel: the convolution's result
  // (Kiln's convolution kernel, computed independently). An offset of exactly one row reads the
  // next row: the convolution of the input shifted up by one (the last row reads zeros).
  std::vector<double> pixels, weights;
  for (int i = 0; i < 40; ++i) pixels.push_back(std::sin(0.3 * i));
  for (int i = 0; i < 2 * 2 * 2 * 3; ++i) weights.push_back(std::cos(0.7 * i));
  Tensor image = tensor({1, 2, 4, 5}, pixels);
  Tensor kernel = tensor({2, 2, 2, 3}, weights);
  Tensor zero_offsets = Tensor::zeros({1, 2 * 2 * 3, 3, 3}, DType::f32);
  OpRunner deformed, plain;
  Tensor a = deformed.run1("deform_conv2d", {deformed.input(image), deformed.input(kernel), deformed.input(zero_offsets)});
  Tensor b = plain.run1("convolution", {plain.input(image), plain.input(kernel), Argument(), Argument::ints({1, 1}),
                                        Argument::ints({0, 0}), Argument::ints({1, 1}), false, Argument::ints({0, 0}), 1});
  expect_tensor(a, DType::f32, {1, 2, 3, 3}, testing::values_of(b), 1e-5);
  std::vector<double> down(12 * 9, 0.0);
  for (int t = 0; t < 6; ++t)
    for (int p = 0; p < 9; ++p) down[size_t((t * 2) * 9 + p)] = 1.0;  // dy = 1 for every tap
  std::vector<double> shifted(pixels.size(), 0.0);
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y + 1 < 4; ++y)
      for (int x = 0; x < 5; ++x) shifted[size_t((c * 4 + y) * 5 + x)] = pixels[size_t((c * 4 + y + 1) * 5 + x)];
  OpRunner moved, reference;
  Tensor c = moved.run1("deform_conv2d", {moved.input(image), moved.input(kernel), moved.input(tensor({1, 12, 3, 3}, down))});
  Tensor d = reference.run1("convolution", {reference.input(tensor({1, 2, 4, 5}, shifted)), reference.input(kernel), Argument(),
                                            Argument::ints({1, 1}), Argument::ints({0, 0}), Argument::ints({1, 1}), false,
                                            Argument::ints({0, 0}), 1});
  expect_tensor(c, DType::f32, {1, 2, 3, 3}, testing::values_of(d), 1e-5);
}

// ---------------------------------------------------------------- topk, det

TEST(ReferenceSelection, TopkKeepsTheLowerIndexFirstAmongEquals) {
  OpRunner r;
  std::vector<Tensor> largest = r.run("topk", {r.input(tensor({4}, {3, 1, 2, 1})), int64_t(2)});
  expect_tensor(largest[0], DType::f32, {2}, {3, 2});
  expect_ints(largest[1], DType::i64, {2}, {0, 2});
  OpRunner r2;
  std::vector<Tensor> smallest = r2.run("topk", {r2.input(tensor({4}, {3, 1, 2, 1})), int64_t(2)}, {{"largest", false}});
  expect_tensor(smallest[0], DType::f32, {2}, {1, 1});
  expect_ints(smallest[1], DType::i64, {2}, {1, 3});
  // Along dim 0 of [[1, 5], [4, 2], [3, 3]]: column 0 -> 4, 3 (rows 1, 2); column 1 -> 5, 3 (rows 0, 2).
  OpRunner r3;
  std::vector<Tensor> columns = r3.run("topk", {r3.input(tensor({3, 2}, {1, 5, 4, 2, 3, 3})), int64_t(2), int64_t(0)});
  expect_tensor(columns[0], DType::f32, {2, 2}, {4, 5, 3, 3});
  expect_ints(columns[1], DType::i64, {2, 2}, {1, 0, 2, 2});
  OpRunner r4;
  expect_error([&] { r4.run("topk", {r4.input(tensor({2}, {1, 2})), int64_t(3)}); }, {"selected index k out of range"});
}

TEST(ReferenceLinalg, DetOfEachMatrix) {
  // det [[1, 2], [3, 4]] = -2; det [[0, 1], [1, 0]] = -1 (a pivot swap); det 2I(3) = 8 in a batch.
  OpRunner r;
  expect_tensor(r.run1("det", {r.input(tensor({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0}))}), DType::f32, {2}, {-2, -1}, 1e-6);
  OpRunner r2;
  expect_tensor(r2.run1("det", {r2.input(tensor({3, 3}, {2, 0, 0, 0, 2, 0, 0, 0, 2}))}), DType::f32, {}, {8}, 1e-6);
  OpRunner r3;
  expect_error([&] { r3.run1("det", {r3.input(tensor({2, 3}, {1, 2, 3, 4, 5, 6}))}); }, {"square matrices"});
}

}  // namespace
}  // namespace kiln::ir
