// Shape/dtype inference of the elementwise, in-place, creation and reduction ops. Expected
// shapes and dtypes are worked out by hand from NumPy broadcasting and PyTorch's rules.
#include "tests/ir/shape_test_util.h"

namespace kiln::ir::shape_test {
namespace {

constexpr DType f32 = DType::f32, f16 = DType::f16, f64 = DType::f64, i64 = DType::i64, i32 = DType::i32,
                i8 = DType::i8, u8 = DType::u8, b = DType::boolean;

// ---------------------------------------------------------------- elementwise

using Elementwise = ShapeTest;

TEST_F(Elementwise, BroadcastsRightAligned) {
  EXPECT_EQ(type("add", {input(f32, {2, 3}), input(f32, {3})}), "f32[2, 3]");
  EXPECT_EQ(type("mul", {input(f32, {4, 1, 3}), input(f32, {2, 1})}), "f32[4, 2, 3]");
  EXPECT_EQ(type("sub", {input(f32, {1}), input(f32, {5})}), "f32[5]");
  EXPECT_EQ(type("add", {input(f32, {}), input(f32, {2, 2})}), "f32[2, 2]");
}

TEST_F(Elementwise, SizeZeroAndOneDims) {
  EXPECT_EQ(type("add", {input(f32, {0, 3}), input(f32, {1, 3})}), "f32[0, 3]");
  EXPECT_EQ(type("add", {input(f32, {0}), input(f32, {1})}), "f32[0]");
  EXPECT_THAT(error("add", {input(f32, {0}), input(f32, {2})}),
              HasSubstr("The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 0"));
}

TEST_F(Elementwise, BroadcastMismatchMessage) {
  EXPECT_THAT(error("add", {input(f32, {2, 3}), input(f32, {2, 4})}),
              HasSubstr("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"));
}

TEST_F(Elementwise, SymbolicBroadcasting) {
  TensorMeta result = meta("add", {input(f32, {s0, 3}), input(f32, {s0, 1})});
  EXPECT_EQ(result.shape, (SymShape{s0, 3}));
  EXPECT_EQ(result.strides, (SymShape{3, 1}));
  EXPECT_EQ(meta("add", {input(f32, {s0, 3}), input(f32, {1, 3})}).shape, (SymShape{s0, 3}));
  EXPECT_EQ(meta("add", {input(f32, {1}), input(f32, {s0 + 1})}).shape, (SymShape{s0 + 1}));
  EXPECT_THAT(error("add", {input(f32, {s0}), input(f32, {s1})}),
              HasSubstr("The size of tensor a (s0) must match the size of tensor b (s1) at non-singleton dimension 0 "
                        "(symbolic sizes broadcast only when"));
  EXPECT_THAT(error("add", {input(f32, {s0}), input(f32, {3})}), HasSubstr("tensor a (s0)"));
}

// A size s against min(s, 8) (a buffer of 8 sliced at s) is refused as a SymbolBound naming s and
// 8, which an importer may act on; min(s0, s1), min(s0 + 1, 8) or max(s0, 8) against s0 are not.
TEST_F(Elementwise, ASymbolAgainstItsMinWithAConstantIsASymbolBound) {
  try {
    graph.create_call("add", {input(f32, {s0}), input(f32, {min(s0, SymInt(8))})});
    ADD_FAILURE() << "expected a SymbolBound";
  } catch (const SymbolBound& bound) {
    EXPECT_EQ(bound.symbol(), "s0");
    EXPECT_EQ(bound.bound(), 8);
    EXPECT_THAT(bound.what(), HasSubstr("The size of tensor a (s0) must match the size of tensor b (min(s0, 8))"));
  }
  EXPECT_EQ(clamped_symbol(min(s0, SymInt(8)), s0), (std::optional<std::pair<std::string, int64_t>>{{"s0", 8}}));
  EXPECT_FALSE(clamped_symbol(min(s0, s1), s0).has_value());
  EXPECT_FALSE(clamped_symbol(min(s0 + 1, SymInt(8)), s0).has_value());
  EXPECT_FALSE(clamped_symbol(max(s0, SymInt(8)), s0).has_value());
  EXPECT_FALSE(clamped_symbol(s1, s0).has_value());
}

TEST_F(Elementwise, OutputIsContiguousEvenForTransposedInputs) {
  Node* transposed = strided_input(f32, {3, 2}, {1, 3});
  TensorMeta result = meta("relu", {transposed});
  EXPECT_EQ(result.shape, (SymShape{3, 2}));
  EXPECT_EQ(result.strides, (SymShape{2, 1}));
}

TEST_F(Elementwise, PromotesTensorsAndScalars) {
  EXPECT_EQ(type("add", {input(i64, {2}), 2.5}), "f32[2]");
  EXPECT_EQ(type("add", {input(i32, {2}), 2}), "i32[2]");
  EXPECT_EQ(type("mul", {input(f16, {2}), 2.0}), "f16[2]");
  EXPECT_EQ(type("add", {input(b, {2}), 2}), "i64[2]");
  EXPECT_EQ(type("logical_and", {input(b, {2}), true}), "bool[2]");
  EXPECT_EQ(type("add", {input(u8, {2}), input(i8, {2})}), "i16[2]");
  EXPECT_EQ(type("add", {input(i32, {2}), input(f64, {})}), "f64[2]");
  EXPECT_EQ(type("add", {input(f16, {2}), input(f32, {})}), "f16[2]");
  EXPECT_EQ(type("add", {input(i32, {2}), input(i64, {})}), "i32[2]");
  EXPECT_EQ(type("mul", {3, input(u8, {2})}), "u8[2]");
  EXPECT_EQ(type("add", {2, 3.5}), "f32[]");
  EXPECT_EQ(type("maximum", {input(i32, {3}), input(f32, {3})}), "f32[3]");
}

TEST_F(Elementwise, FloatOpsOnIntegersGiveF32) {
  EXPECT_EQ(type("exp", {input(i64, {2})}), "f32[2]");
  EXPECT_EQ(type("sqrt", {input(b, {2})}), "f32[2]");
  EXPECT_EQ(type("sigmoid", {input(f16, {2})}), "f16[2]");
  EXPECT_EQ(type("abs", {input(i32, {2})}), "i32[2]");
  EXPECT_EQ(type("floor", {input(i64, {2})}), "i64[2]");
  EXPECT_EQ(type("div", {input(i64, {2}), input(i64, {2})}), "f32[2]");
  EXPECT_EQ(type("div", {input(i64, {2}), 2}, {{"rounding_mode", "floor"}}), "i64[2]");
  EXPECT_EQ(type("div", {input(f64, {2}), 2}), "f64[2]");
}

TEST_F(Elementwise, ComparisonsAndLogicalOpsGiveBool) {
  EXPECT_EQ(type("lt", {input(f32, {2, 1}), input(i64, {3})}), "bool[2, 3]");
  EXPECT_EQ(type("eq", {input(i32, {2}), 1.5}), "bool[2]");
  EXPECT_EQ(type("logical_xor", {input(f32, {2}), input(i8, {2})}), "bool[2]");
  EXPECT_EQ(type("logical_not", {input(f32, {2})}), "bool[2]");
  EXPECT_EQ(type("isnan", {input(f16, {4})}), "bool[4]");
}

TEST_F(Elementwise, WhereBroadcastsAllThreeAndPromotesTheValues) {
  Node* condition = input(b, {3, 1}, "c");
  EXPECT_EQ(type("where", {condition, input(f32, {1, 4}), 0}), "f32[3, 4]");
  EXPECT_EQ(type("where", {condition, input(i32, {4}), 0.5}), "f32[3, 4]");
  EXPECT_EQ(type("where", {condition, 1, 2}), "i64[3, 1]");
  EXPECT_THAT(error("where", {input(f32, {3}), 1, 2}),
              HasSubstr("where expected condition to be a boolean tensor, but got a tensor with dtype f32"));
}

TEST_F(Elementwise, CastAndClamp) {
  EXPECT_EQ(type("cast", {input(f32, {2, 3}), DType::bf16}), "bf16[2, 3]");
  EXPECT_EQ(type("clamp", {input(i64, {2}), 0.5}), "f32[2]");
  EXPECT_EQ(type("clamp", {input(i64, {2}), 0, 10}), "i64[2]");
  EXPECT_EQ(type("clamp", {input(f16, {2})}, {{"max", 1}}), "f16[2]");
  EXPECT_THAT(error("clamp", {input(f32, {2})}), HasSubstr("At least one of 'min' or 'max' must not be None"));
}

TEST_F(Elementwise, ErrorsOnBoolArithmeticAndBadArguments) {
  EXPECT_THAT(error("neg", {input(b, {2})}), HasSubstr("Negation, the `-` operator, on a bool tensor is not supported"));
  EXPECT_THAT(error("sub", {input(b, {2}), input(b, {2})}),
              HasSubstr("Subtraction, the `-` operator, with two bool tensors is not supported"));
  EXPECT_THAT(error("sub", {input(b, {2}), 1}), HasSubstr("with a bool tensor is not supported"));
  EXPECT_THAT(error("add", {input(i32, {2}), 1}, {{"alpha", 0.5}}),
              HasSubstr("For integral input tensors, argument alpha must not be a floating point number."));
  EXPECT_THAT(error("add", {input(f32, {2}), 1}, {{"alpha", true}}),
              HasSubstr("Boolean alpha only supported for Boolean results."));
  EXPECT_THAT(error("div", {input(f32, {2}), 2}, {{"rounding_mode", "round"}}),
              HasSubstr("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"));
}

// ---------------------------------------------------------------- in-place variants

using Inplace = ShapeTest;

TEST_F(Inplace, ReturnsSelfUnchangedIncludingStrides) {
  Node* self = strided_input(f32, {3, 2}, {1, 3});
  TensorMeta result = meta("add_", {self, input(f32, {2}, "y")});
  EXPECT_EQ(result.shape, (SymShape{3, 2}));
  EXPECT_EQ(result.strides, (SymShape{1, 3}));
  EXPECT_EQ(result.dtype, f32);
  EXPECT_EQ(type("mul_", {input(f32, {4}), input(i64, {4}, "y")}), "f32[4]");
  EXPECT_EQ(type("relu_", {input(i32, {4})}), "i32[4]");
  EXPECT_EQ(type("add_", {input(i64, {2}), 3}), "i64[2]");
}

TEST_F(Inplace, ResultMustBroadcastToSelf) {
  EXPECT_THAT(error("add_", {input(f32, {3}), input(f32, {2, 3}, "y")}),
              HasSubstr("output with shape [3] doesn't match the broadcast shape [2, 3]"));
}

TEST_F(Inplace, ResultMustBeCastableToSelf) {
  EXPECT_THAT(error("add_", {input(i64, {2}), input(f32, {2}, "y")}),
              HasSubstr("result type f32 can't be cast to the desired output type i64"));
  EXPECT_THAT(error("exp_", {input(i32, {2})}), HasSubstr("result type f32 can't be cast to the desired output type i32"));
  EXPECT_THAT(error("div_", {input(i64, {2}), 2}), HasSubstr("result type f32 can't be cast"));
  EXPECT_THAT(error("add_", {input(b, {2}), 1}), HasSubstr("result type i64 can't be cast to the desired output type bool"));
}

TEST_F(Inplace, SelfMustBeATensor) {
  EXPECT_THAT(error("add_", {2, input(f32, {2})}), HasSubstr("argument 'self' (position 1) must be Tensor(a!), not int"));
}

// ---------------------------------------------------------------- creation

using Creation = ShapeTest;

TEST_F(Creation, FullTakesItsDtypeFromTheValue) {
  EXPECT_EQ(type("full", {ints({2, 3}), 1.5}), "f32[2, 3]");
  EXPECT_EQ(type("full", {ints({2}), true}), "bool[2]");
  EXPECT_EQ(type("full", {ints({2}), 7}), "i64[2]");
  EXPECT_EQ(type("full", {ints({2}), 7}, {{"dtype", f16}}), "f16[2]");
  EXPECT_EQ(type("full", {ints({}), 0.0}), "f32[]");
  EXPECT_EQ(meta("full", {syms({s0, 2}), 0}).shape, (SymShape{s0, 2}));
  EXPECT_THAT(error("full", {ints({-1, 3}), 0}), HasSubstr("Trying to create tensor with negative dimension -1: [-1, 3]"));
}

TEST_F(Creation, FullLike) {
  Node* x = input(i32, {2, 3});
  EXPECT_EQ(type("full_like", {x, 1.5}), "i32[2, 3]");
  EXPECT_EQ(type("full_like", {x, 1.5}, {{"dtype", f32}}), "f32[2, 3]");
}

TEST_F(Creation, ArangeSizeAndDtype) {
  EXPECT_EQ(type("arange", {0, 10, 3}), "i64[4]");      // 0 3 6 9
  EXPECT_EQ(type("arange", {0, 9, 3}), "i64[3]");       // 0 3 6
  EXPECT_EQ(type("arange", {5, 0, -2}), "i64[3]");      // 5 3 1
  EXPECT_EQ(type("arange", {0, 1, 0.3}), "f32[4]");     // 0 .3 .6 .9
  EXPECT_EQ(type("arange", {1.0, 1.0}), "f32[0]");
  EXPECT_EQ(type("arange", {0, 10}, {{"dtype", f64}}), "f64[10]");
  EXPECT_EQ(meta("arange", {0, Argument(s0)}).shape, (SymShape{s0}));
  EXPECT_EQ(meta("arange", {0, Argument(s0), 2}).shape, (SymShape{floordiv(s0 + 1, 2)}));
  EXPECT_THAT(error("arange", {0, 10, 0}), HasSubstr("step must be nonzero"));
  EXPECT_THAT(error("arange", {10, 0, 1}), HasSubstr("upper bound and lower bound inconsistent with step sign"));
}

TEST_F(Creation, IotaAndRandom) {
  EXPECT_EQ(type("iota", {5}), "i64[5]");
  EXPECT_EQ(meta("iota", {Argument(s0)}, {{"dtype", i32}}).shape, (SymShape{s0}));
  EXPECT_EQ(type("rand", {ints({2, 3})}), "f32[2, 3]");
  EXPECT_EQ(type("randn", {ints({4})}, {{"dtype", f16}}), "f16[4]");
  EXPECT_THAT(error("randn", {ints({4})}, {{"dtype", i64}}), HasSubstr("randn expects a floating-point dtype, but got i64"));
}

// ---------------------------------------------------------------- reductions

using Reduction = ShapeTest;

TEST_F(Reduction, DimsAndKeepdim) {
  Node* x = input(f32, {2, 3, 4});
  EXPECT_EQ(type("sum", {x, ints({1})}), "f32[2, 4]");
  EXPECT_EQ(type("sum", {x, ints({1}), true}), "f32[2, 1, 4]");
  EXPECT_EQ(type("sum", {x}), "f32[]");
  EXPECT_EQ(type("sum", {x, ints({})}), "f32[]");
  EXPECT_EQ(type("sum", {x, -1}), "f32[2, 3]");
  EXPECT_EQ(type("mean", {x, ints({0, -1})}, {{"keepdim", true}}), "f32[1, 3, 1]");
  EXPECT_EQ(type("amax", {x}), "f32[]");
  EXPECT_EQ(type("amin", {x, ints({2, 0})}), "f32[3]");
  EXPECT_EQ(type("sum", {input(f32, {})}, {{"dim", 0}}), "f32[]");
}

TEST_F(Reduction, DimErrors) {
  Node* x = input(f32, {2, 3, 4});
  EXPECT_THAT(error("sum", {x, 3}), HasSubstr("Dimension out of range (expected to be in range of [-3, 2], but got 3)"));
  EXPECT_THAT(error("sum", {x, ints({1, -2})}), HasSubstr("dim 1 appears multiple times in the list of dims"));
  EXPECT_THAT(error("cumsum", {x, -4}), HasSubstr("but got -4"));
}

TEST_F(Reduction, Dtypes) {
  EXPECT_EQ(type("sum", {input(i32, {3})}), "i64[]");
  EXPECT_EQ(type("prod", {input(b, {3})}), "i64[]");
  EXPECT_EQ(type("sum", {input(i32, {3})}, {{"dtype", f16}}), "f16[]");
  EXPECT_EQ(type("sum", {input(f16, {3})}), "f16[]");
  EXPECT_EQ(type("amax", {input(u8, {3})}), "u8[]");
  EXPECT_EQ(type("mean", {input(i32, {3})}, {{"dtype", f64}}), "f64[]");
  EXPECT_EQ(type("cumsum", {input(i32, {3}), 0}), "i64[3]");
  EXPECT_EQ(type("cumsum", {input(f16, {3}), 0}), "f16[3]");
  EXPECT_THAT(error("mean", {input(i64, {3})}),
              HasSubstr("mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                        "dtype. Got: i64"));
  EXPECT_THAT(error("mean", {input(f32, {3})}, {{"dtype", i32}}), HasSubstr("Optional dtype must be"));
  EXPECT_THAT(error("var", {input(i64, {3})}), HasSubstr("std and var only support floating point"));
}

TEST_F(Reduction, EmptyDims) {
  Node* x = input(f32, {0, 3});
  EXPECT_EQ(type("sum", {x, 0}), "f32[3]");
  EXPECT_EQ(type("amax", {x, 1}), "f32[0]");
  EXPECT_THAT(error("amax", {x, 0}), HasSubstr("amax(): Expected reduction dim 0 to have non-zero size."));
  EXPECT_THAT(error("argmin", {x}), HasSubstr("argmin(): Expected reduction dim to be specified for input.numel() == 0."));
}

TEST_F(Reduction, ArgmaxIsI64) {
  Node* x = input(f32, {2, 3});
  EXPECT_EQ(type("argmax", {x}), "i64[]");
  EXPECT_EQ(type("argmax", {x}, {{"keepdim", true}}), "i64[1, 1]");
  EXPECT_EQ(type("argmax", {x, 1}), "i64[2]");
  EXPECT_EQ(type("argmin", {x, 0, true}), "i64[1, 3]");
}

TEST_F(Reduction, VarMeanIsATupleOfTwo) {
  Node* x = input(f32, {4, 5});
  Node* pair = call("var_mean", {x, 1}, {{"correction", 0}});
  EXPECT_TRUE(pair->meta.is_tuple);
  EXPECT_EQ(pair->meta.type_string(), "(f32[4], f32[4])");
  EXPECT_EQ(type("getitem", {pair, 1}), "f32[4]");
  EXPECT_EQ(type("var", {x}, {{"keepdim", true}}), "f32[1, 1]");
}

TEST_F(Reduction, SymbolicDims) {
  Node* x = input(f32, {s0, 4});
  EXPECT_EQ(meta("sum", {x, 0}).shape, (SymShape{4}));
  EXPECT_EQ(meta("amax", {x, 1}, {{"keepdim", true}}).shape, (SymShape{s0, 1}));
}

}  // namespace
}  // namespace kiln::ir::shape_test
