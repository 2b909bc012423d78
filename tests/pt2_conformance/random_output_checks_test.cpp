// The OpInfo runner's property checks (random_output_checks.h) on tensors written here: each
// accepts what the op may give and names what it may not.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/pt2_conformance/random_output_checks.h"

namespace kiln::pt2_conformance {
namespace {

constexpr double kAtol = 1e-5, kRtol = 1.3e-6;

Tensor f32(const Sizes& sizes, const std::vector<double>& values) { return Tensor::from_vector(sizes, values, DType::f32); }

std::string check(OutputCheck kind, const Tensor& expected, const Tensor& actual, const Tensor& input = Tensor()) {
  std::map<std::string, Tensor> inputs;
  if (input.defined()) inputs["input"] = input;
  return check_output(kind, expected, actual, inputs, kAtol, kRtol);
}

TEST(RandomOutputChecks, OpsMapToTheirChecks) {
  EXPECT_EQ(output_check("add"), OutputCheck::values);
  EXPECT_EQ(output_check("empty_like"), OutputCheck::shape_and_dtype);
  EXPECT_EQ(output_check("new_empty_strided"), OutputCheck::shape_and_dtype);
  EXPECT_EQ(output_check("rand_like"), OutputCheck::unit_interval);
  EXPECT_EQ(output_check("randn_like"), OutputCheck::finite);
  EXPECT_EQ(output_check("bernoulli"), OutputCheck::zero_or_one);
  EXPECT_EQ(output_check("nn.functional.dropout2d"), OutputCheck::feature_mask);
  EXPECT_EQ(output_check("nn.functional.feature_alpha_dropout.with_train"), OutputCheck::feature_mask);
  EXPECT_EQ(output_check("nn.functional.rrelu"), OutputCheck::random_slope);
}

TEST(RandomOutputChecks, ValuesAreComparedExactlyForOrdinaryOps) {
  EXPECT_EQ(check(OutputCheck::values, f32({2}, {1, 2}), f32({2}, {1, 2})), "");
  EXPECT_NE(check(OutputCheck::values, f32({2}, {1, 2}), f32({2}, {1, 3})), "");
}

TEST(RandomOutputChecks, UninitializedOutputsCompareShapeAndDtypeOnly) {
  EXPECT_EQ(check(OutputCheck::shape_and_dtype, f32({2}, {1e30, -4}), f32({2}, {0, 0})), "");
  EXPECT_EQ(check(OutputCheck::shape_and_dtype, f32({2}, {0, 0}), f32({3}, {0, 0, 0})), "shape [3], expected [2]");
  EXPECT_EQ(check(OutputCheck::shape_and_dtype, f32({2}, {0, 0}), Tensor::zeros({2}, DType::f64)), "dtype f64, expected f32");
}

TEST(RandomOutputChecks, RandomValuesHaveTheirRange) {
  EXPECT_EQ(check(OutputCheck::unit_interval, f32({3}, {0.9, 0.1, 0.5}), f32({3}, {0, 0.25, 0.999})), "");
  EXPECT_EQ(check(OutputCheck::unit_interval, f32({3}, {0.9, 0.1, 0.5}), f32({3}, {0, 1, 0.5})), "element 1 is 1, not in [0, 1)");
  EXPECT_EQ(check(OutputCheck::finite, f32({2}, {0.3, -1}), f32({2}, {2.5, -0.1})), "");
  EXPECT_EQ(check(OutputCheck::finite, f32({2}, {0.3, -1}), f32({2}, {2.5, std::nan("")})), "element 1 is nan, not finite");
  EXPECT_EQ(check(OutputCheck::zero_or_one, f32({3}, {1, 0, 0}), f32({3}, {0, 1, 1})), "");
  EXPECT_EQ(check(OutputCheck::zero_or_one, f32({3}, {1, 0, 0}), f32({3}, {0, 0.5, 1})), "element 1 is 0.5, not 0 or 1");
}

// x of [2, 2, 3]: four (N, C) slices of 3.
Tensor slices_input() { return f32({2, 2, 3}, {1, 2, 3, -1, 0.5, 4, 2, -2, 1, 0.25, 3, -3}); }

// Slices kept (x * 2) or dropped (0) by `keep`, as dropout2d(p = 0.5) gives them.
Tensor dropout2d(const std::vector<bool>& keep) {
  Tensor x = slices_input();
  std::vector<double> values;
  for (int64_t i = 0; i < x.numel(); ++i) values.push_back(keep[size_t(i / 3)] ? 2 * x.flat_double(i) : 0.0);
  return f32({2, 2, 3}, values);
}

TEST(RandomOutputChecks, FeatureDropoutKeepsOrDropsWholeSlicesAsPyTorchDoes) {
  Tensor torch = dropout2d({true, false, false, true});
  EXPECT_EQ(check(OutputCheck::feature_mask, torch, torch, slices_input()), "");
  EXPECT_EQ(check(OutputCheck::feature_mask, torch, dropout2d({false, true, true, false}), slices_input()), "");
  // One slice half kept.
  Tensor mixed = dropout2d({true, false, true, false});
  Tensor broken = f32({2, 2, 3}, {2, 4, 0, 0, 0, 0, 4, -4, 2, 0, 0, 0});
  EXPECT_EQ(check(OutputCheck::feature_mask, mixed, broken, slices_input()),
            "(N, C) slice 0 is neither kept nor dropped as PyTorch's slices are");
  // A wrong scale.
  Tensor scaled = f32({2, 2, 3}, {3, 6, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(check(OutputCheck::feature_mask, mixed, scaled, slices_input()),
            "(N, C) slice 0 is neither kept nor dropped as PyTorch's slices are");
  // Every slice the same while PyTorch's differ: not a random mask.
  EXPECT_EQ(check(OutputCheck::feature_mask, mixed, dropout2d({true, true, true, true}), slices_input()),
            "every (N, C) slice takes the same choice; PyTorch's keep some and drop others");
  // Alpha dropout: kept x * a + b, dropped a constant c.
  double a = 0.5, b = 0.75, c = -1.25;
  std::vector<double> alpha_theirs, alpha_ours;
  Tensor x = slices_input();
  for (int64_t i = 0; i < x.numel(); ++i) {
    alpha_theirs.push_back(i / 3 == 0 || i / 3 == 3 ? x.flat_double(i) * a + b : c);
    alpha_ours.push_back(i / 3 == 1 ? x.flat_double(i) * a + b : c);
  }
  EXPECT_EQ(check(OutputCheck::feature_mask, f32({2, 2, 3}, alpha_theirs), f32({2, 2, 3}, alpha_ours), x), "");
  EXPECT_EQ(check(OutputCheck::feature_mask, torch, torch.reshape({12}), slices_input()), "shape [12], expected [2, 2, 3]");
  EXPECT_EQ(check(OutputCheck::feature_mask, torch, dropout2d({false, true, true, false})),
            "the property check needs the sample's one input, but it has 0");
}

TEST(RandomOutputChecks, RreluKeepsPositivesAndScalesNegativesBySlopesInTheUnitInterval) {
  Tensor x = f32({6}, {1, -2, 3, -4, -1, -8});
  Tensor torch = f32({6}, {1, -0.5, 3, -1, -0.5, -2});
  EXPECT_EQ(check(OutputCheck::random_slope, torch, f32({6}, {1, -0.2, 3, -2, -0.9, -0.8}), x), "");
  EXPECT_EQ(check(OutputCheck::random_slope, torch, f32({6}, {2, -0.2, 3, -2, -0.9, -0.8}), x), "element 0 is 2, expected the input 1");
  EXPECT_EQ(check(OutputCheck::random_slope, torch, f32({6}, {1, -3, 3, -2, -0.9, -0.8}), x),
            "element 1 is -3: a slope of 1.5 on -2, not in [0, 1]");
  EXPECT_EQ(check(OutputCheck::random_slope, torch, f32({6}, {1, -0.4, 3, -0.8, -0.2, -1.6}), x),
            "all 4 negative elements have the same slope");
}

}  // namespace
}  // namespace kiln::pt2_conformance
