// Tests of codegen/index_analysis.h: affine forms of index expressions (constants, symbolic
// coefficients, variables outside the analysed set) and their rejection (floordiv, mod,
// max/min of a variable, products and powers of variables), and depends_on.
#include "codegen/index_analysis.h"

#include <gtest/gtest.h>

#include "ir/symbolic.h"

namespace kiln::codegen {
namespace {

SymInt sym(const char* text) { return ir::parse_sym_int(text); }
SymInt var(const char* name) { return SymInt::symbol(name); }

TEST(AffineForm, ConstantHasZeroCoefficients) {
  std::optional<AffineIndex> form = affine_form(SymInt(7), {var("x0"), var("x1")});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->offset, SymInt(7));
  ASSERT_EQ(form->coefficients.size(), 2u);
  EXPECT_EQ(form->coefficients[0], SymInt(0));
  EXPECT_EQ(form->coefficients[1], SymInt(0));
}

TEST(AffineForm, RowMajorIndex) {
  std::optional<AffineIndex> form = affine_form(sym("512*x0 + x1 + 3"), {var("x0"), var("x1")});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->offset, SymInt(3));
  EXPECT_EQ(form->coefficients[0], SymInt(512));
  EXPECT_EQ(form->coefficients[1], SymInt(1));
}

TEST(AffineForm, SymbolicCoefficientsAndOffset) {
  std::optional<AffineIndex> form =
      affine_form(sym("s0*s1*x0 + 2*s1*x2 + s0 - 1"), {var("x0"), var("x1"), var("x2")});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->offset, sym("s0 - 1"));
  EXPECT_EQ(form->coefficients[0], sym("s0*s1"));
  EXPECT_EQ(form->coefficients[1], SymInt(0));
  EXPECT_EQ(form->coefficients[2], sym("2*s1"));
}

TEST(AffineForm, NegativeCoefficient) {
  std::optional<AffineIndex> form = affine_form(sym("-x0 + s0 - 1"), {var("x0")});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->offset, sym("s0 - 1"));
  EXPECT_EQ(form->coefficients[0], SymInt(-1));
}

TEST(AffineForm, VariablesOutsideTheSetStayInTheOffset) {
  std::optional<AffineIndex> form = affine_form(sym("4*x0 + x1 % 3 + r0"), {var("x0"), var("r0")});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->offset, sym("x1 % 3"));
  EXPECT_EQ(form->coefficients[0], SymInt(4));
  EXPECT_EQ(form->coefficients[1], SymInt(1));
}

TEST(AffineForm, CoefficientMayUseAnOutsideVariable) {
  std::optional<AffineIndex> form = affine_form(sym("x0*x1 + x1"), {var("x0")});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->offset, var("x1"));
  EXPECT_EQ(form->coefficients[0], var("x1"));
}

TEST(AffineForm, FloorDivAndModOfAVarAreNotAffine) {
  EXPECT_FALSE(affine_form(sym("x0 // 4"), {var("x0")}));
  EXPECT_FALSE(affine_form(sym("x0 % 4"), {var("x0")}));
  EXPECT_FALSE(affine_form(sym("4*(x0 // 3) + x0 % 3"), {var("x0")}));
  EXPECT_FALSE(affine_form(sym("(x0 + s0) // s1"), {var("x0")}));
}

TEST(AffineForm, FloorDivThatSimplifiesAwayIsAffine) {
  // (4*x0 + 8)//4 is x0 + 2 in canonical form.
  std::optional<AffineIndex> form = affine_form(sym("(4*x0 + 8) // 4"), {var("x0")});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->offset, SymInt(2));
  EXPECT_EQ(form->coefficients[0], SymInt(1));
}

TEST(AffineForm, ModOfAnotherVariableIsFine) {
  std::optional<AffineIndex> form = affine_form(sym("3*(x1 % 2) + x0"), {var("x0")});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->offset, sym("3*(x1 % 2)"));
  EXPECT_EQ(form->coefficients[0], SymInt(1));
}

TEST(AffineForm, MaxMinProductsAndPowersAreNotAffine) {
  EXPECT_FALSE(affine_form(sym("max(x0 - 1, 0)"), {var("x0")}));
  EXPECT_FALSE(affine_form(sym("min(x0, s0 - 1)"), {var("x0")}));
  EXPECT_FALSE(affine_form(sym("x0*x1"), {var("x0"), var("x1")}));
  EXPECT_FALSE(affine_form(sym("x0**2 + x0"), {var("x0")}));
}

TEST(AffineForm, MaxThatRangesDecideIsAffine) {
  // Loop variables are >= 0, so max(x0, 0) is x0.
  std::optional<AffineIndex> form = affine_form(max(var("x0"), SymInt(0)) + SymInt(5), {var("x0")});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->coefficients[0], SymInt(1));
  EXPECT_EQ(form->offset, SymInt(5));
}

TEST(AffineForm, EmptyVariableListGivesTheIndexAsOffset) {
  std::optional<AffineIndex> form = affine_form(sym("x0 // 2"), {});
  ASSERT_TRUE(form);
  EXPECT_EQ(form->offset, sym("x0 // 2"));
  EXPECT_TRUE(form->coefficients.empty());
}

TEST(DependsOn, FindsVariablesInsideAtoms) {
  EXPECT_TRUE(depends_on(sym("3*x0 + 1"), var("x0")));
  EXPECT_TRUE(depends_on(sym("(x1 + s0) // 4"), var("x1")));
  EXPECT_TRUE(depends_on(sym("max(x2, 3)"), var("x2")));
  EXPECT_FALSE(depends_on(sym("3*x0 + 1"), var("x1")));
  EXPECT_FALSE(depends_on(sym("s0*x10"), var("x1")));
  EXPECT_FALSE(depends_on(SymInt(4), var("x0")));
  // x0 - x0 cancels.
  EXPECT_FALSE(depends_on(var("x0") - var("x0") + var("s0"), var("x0")));
}

}  // namespace
}  // namespace kiln::codegen
