// kiln::explain (include/kiln/compile.h): graphs with their op counts and what ended each, the
// breaks with their lines, guards, specializations with the line that needed a static size, and
// the variants a declared dynamic range needs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/error.h"

namespace kiln {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor ones(const Sizes& sizes) { return Tensor::full(sizes, 1.0, DType::f32); }

TEST(Explain, AFunctionWithABreakHasTwoGraphsAndNamesTheLine) {
  TensorFunction fn = [](const std::vector<Var>& in) {
    Var total = in[0].sum();
    if (total.item() > 0) return std::vector<Var>{in[0].exp() * 2};
    return std::vector<Var>{in[0]};
  };
  Explanation explanation = explain(fn, {ones({4, 3})});
  ASSERT_EQ(explanation.graphs.size(), 2u);
  ASSERT_EQ(explanation.breaks.size(), 1u);
  EXPECT_THAT(explanation.breaks[0], HasSubstr("explain_test.cpp:"));
  EXPECT_THAT(explanation.graphs[0].ended_by, HasSubstr("graph break at "));
  EXPECT_EQ(explanation.graphs[0].op_count, 1u);  // the sum
  EXPECT_EQ(explanation.graphs[1].ended_by, "the function's return");
  EXPECT_THAT(explanation.graphs[1].text, HasSubstr("exp"));
  EXPECT_TRUE(explanation.guards.empty());  // a function with breaks keeps no variant
  EXPECT_THAT(explanation.to_string(), HasSubstr("2 graphs, 1 graph break"));
}

TEST(Explain, GuardsAndSpecializationsOfAStaticFirstCompile) {
  ScalarFunction fn = [](const std::vector<Var>& in, const std::vector<double>& s) {
    return std::vector<Var>{in[0] * s[0]};
  };
  Explanation explanation = explain(fn, {ones({8, 3})}, {0.5});
  EXPECT_THAT(explanation.guards, ElementsAre("x.dim() == 2", "x.dtype == f32", "x.device == cpu", "x.size(0) == 8",
                                              "x.size(1) == 3", "scalar 0 == 0.5"));
  EXPECT_THAT(explanation.specializations,
              ElementsAre("x.size(0) == 8: static until a call changes it (options.dynamic = automatic)",
                          "x.size(1) == 3: static until a call changes it (options.dynamic = automatic)",
                          "scalar 0 == 0.5: guarded by value (a new value recompiles)"));
}

TEST(Explain, ADeclaredRangeCountsItsVariants) {
  TensorFunction fn = [](const std::vector<Var>& in) { return std::vector<Var>{in[0].relu()}; };
  Explanation explanation =
      explain(fn, {ones({8, 3})}, {.dynamic_dims = {{.input = 0, .dim = 0, .min = 0, .max = 64}}});
  EXPECT_THAT(explanation.guards, testing::Contains("2 <= x.size(0) <= 64 (s0)"));
  ASSERT_EQ(explanation.range_variants.size(), 1u);
  EXPECT_EQ(explanation.range_variants[0], "x.size(0) in [0, 64]: 3 variants (sizes 0 and 1 are specialized)");
}

TEST(Explain, ASizeReadInFnIsASpecializationWithItsLine) {
  TensorFunction fn = [](const std::vector<Var>& in) {
    int64_t rows = in[0].size(0);  // needs the size: the trace is static
    return std::vector<Var>{in[0].reshape({rows * 3})};
  };
  Explanation explanation =
      explain(fn, {ones({8, 3})}, {.dynamic_dims = {{.input = 0, .dim = 0, .min = 2, .max = 9}}});
  ASSERT_FALSE(explanation.specializations.empty());
  EXPECT_THAT(explanation.specializations[0], HasSubstr("tracing with symbolic sizes failed"));
  EXPECT_THAT(explanation.specializations[0], HasSubstr("explain_test.cpp:"));
  EXPECT_THAT(explanation.specializations[0], HasSubstr("is symbolic (s0)"));
  EXPECT_EQ(explanation.range_variants[0], "x.size(0) in [2, 9]: 8 static variants (fn needs the size static)");
}

}  // namespace
}  // namespace kiln
