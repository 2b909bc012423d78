// Shape/dtype inference of the composite ops: linear, addmm, softmax, the norms, activations,
// dropout, embedding, attention, the losses, tril/triu, flatten, stack and split.
#include "tests/ir/shape_test_util.h"

namespace kiln::ir::shape_test {
namespace {

constexpr DType f32 = DType::f32, f16 = DType::f16, i64 = DType::i64, i32 = DType::i32, b = DType::boolean;

using Composite = ShapeTest;

TEST_F(Composite, Linear) {
  Node* w = input(f32, {5, 3}, "w");
  Node* bias = input(f32, {5}, "bias");
  EXPECT_EQ(type("linear", {input(f32, {4, 3}), w, bias}), "f32[4, 5]");
  EXPECT_EQ(type("linear", {input(f32, {2, 4, 3}, "y"), w}), "f32[2, 4, 5]");
  EXPECT_EQ(type("linear", {input(f32, {3}, "v"), w}), "f32[5]");
  EXPECT_EQ(type("linear", {input(f32, {4, 3}, "z"), input(f32, {3}, "w1")}), "f32[4]");
  EXPECT_EQ(meta("linear", {input(f32, {s0, 3}, "s"), w, bias}).shape, (SymShape{s0, 5}));
  EXPECT_THAT(error("linear", {input(f32, {4, 3}, "a"), input(f32, {5, 8}, "w2")}),
              HasSubstr("mat1 and mat2 shapes cannot be multiplied (4x3 and 8x5)"));
  EXPECT_THAT(error("linear", {input(f32, {4, 3}, "c"), w, input(f32, {4}, "b4")}),
              HasSubstr("bias of shape [4] cannot be broadcast to the output shape [4, 5]"));
}

TEST_F(Composite, Addmm) {
  Node* m1 = input(f32, {2, 3}, "m1");
  Node* m2 = input(f32, {3, 5}, "m2");
  EXPECT_EQ(type("addmm", {input(f32, {5}), m1, m2}), "f32[2, 5]");
  EXPECT_EQ(type("addmm", {input(f32, {2, 5}, "full"), m1, m2}, {{"beta", 0.5}}), "f32[2, 5]");
  EXPECT_THAT(error("addmm", {input(f32, {3}, "bad"), m1, m2}),
              HasSubstr("self of shape [3] cannot be broadcast to the product's shape [2, 5]"));
  EXPECT_THAT(error("addmm", {input(f32, {5}, "v"), input(f32, {3}, "vec"), m2}), HasSubstr("mat1 must be a matrix, got 1-D tensor"));
}

TEST_F(Composite, Softmax) {
  Node* x = input(f32, {2, 3});
  EXPECT_EQ(type("softmax", {x, -1}), "f32[2, 3]");
  EXPECT_EQ(type("log_softmax", {x, 0, f16}), "f16[2, 3]");
  EXPECT_EQ(type("softmax", {input(i64, {4}, "ints"), 0, f32}), "f32[4]");
  EXPECT_THAT(error("softmax", {input(i64, {4}, "ints2"), 0}), HasSubstr("softmax expects a floating-point input or dtype, but got i64"));
  EXPECT_THAT(error("softmax", {x, 2}), HasSubstr("Dimension out of range (expected to be in range of [-2, 1], but got 2)"));
}

TEST_F(Composite, LayerNormAndRmsNorm) {
  Node* x = input(f32, {2, 3, 4});
  Node* w = input(f32, {4}, "w");
  EXPECT_EQ(type("layer_norm", {x, ints({4}), w, input(f32, {4}, "bias")}), "f32[2, 3, 4]");
  EXPECT_EQ(type("layer_norm", {x, ints({3, 4})}), "f32[2, 3, 4]");
  EXPECT_EQ(type("rms_norm", {x, ints({4}), w}), "f32[2, 3, 4]");
  EXPECT_THAT(error("layer_norm", {x, ints({3})}),
              HasSubstr("Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[2, 3, 4]"));
  EXPECT_THAT(error("layer_norm", {x, ints({4}), input(f32, {3}, "w3")}),
              HasSubstr("Expected weight to be of same shape as normalized_shape, but got weight of shape [3] and "
                        "normalized_shape = [4]"));
  EXPECT_THAT(error("rms_norm", {x, ints({})}), HasSubstr("Expected normalized_shape to be at least 1-dimensional"));
  EXPECT_THAT(error("layer_norm", {input(i32, {4}, "ints"), ints({4})}),
              HasSubstr("layer_norm expects a floating-point input, but got i32"));
}

TEST_F(Composite, BatchNorm) {
  Node* x = input(f32, {4, 3, 5});
  Node* c3 = input(f32, {3}, "c3");
  EXPECT_EQ(type("batch_norm", {x, c3, c3, c3, c3}), "f32[4, 3, 5]");
  EXPECT_EQ(type("batch_norm", {x, Argument(), Argument(), Argument(), Argument(), true}), "f32[4, 3, 5]");
  EXPECT_THAT(error("batch_norm", {x, c3, c3, input(f32, {4}, "c4"), c3}),
              HasSubstr("running_mean should contain 3 elements not 4"));
  EXPECT_THAT(error("batch_norm", {x, c3, c3, Argument(), c3}),
              HasSubstr("running_mean must be defined in evaluation mode"));
  EXPECT_THAT(error("batch_norm", {input(f32, {1, 3}, "one"), c3, c3, c3, c3, true}),
              HasSubstr("Expected more than 1 value per channel when training, got input size [1, 3]"));
}

TEST_F(Composite, GroupNorm) {
  Node* x = input(f32, {2, 6, 4});
  EXPECT_EQ(type("group_norm", {x, 3, input(f32, {6}, "w"), input(f32, {6}, "bias")}), "f32[2, 6, 4]");
  EXPECT_THAT(error("group_norm", {x, 4}),
              HasSubstr("Expected number of channels in input to be divisible by num_groups, but got input of shape "
                        "[2, 6, 4] and num_groups=4"));
  EXPECT_THAT(error("group_norm", {x, 2, input(f32, {4}, "w4")}),
              HasSubstr("Expected weight to be a vector of size equal to the number of channels in input, but got "
                        "weight of shape [4] and input of shape [2, 6, 4]"));
}

TEST_F(Composite, Activations) {
  Node* x = input(f16, {2, 3});
  for (const char* name : {"gelu", "silu", "leaky_relu", "elu", "hardsigmoid", "hardswish", "softplus"})
    EXPECT_EQ(type(name, {x}), "f16[2, 3]") << name;
  EXPECT_EQ(type("gelu", {x}, {{"approximate", "tanh"}}), "f16[2, 3]");
  EXPECT_EQ(type("silu_", {x}), "f16[2, 3]");
  EXPECT_THAT(error("gelu", {x}, {{"approximate", "fast"}}), HasSubstr("approximate argument must be either none or tanh"));
  EXPECT_THAT(error("silu", {input(i64, {2}, "ints")}), HasSubstr("silu expects a floating-point input, but got i64"));
  EXPECT_EQ(type("dropout", {x, 0.1}), "f16[2, 3]");
  EXPECT_THAT(error("dropout", {x, 1.5}), HasSubstr("dropout probability has to be between 0 and 1, but got 1.5"));
}

TEST_F(Composite, Embedding) {
  Node* w = input(f32, {10, 4}, "w");
  EXPECT_EQ(type("embedding", {w, input(i64, {2, 3}, "idx")}), "f32[2, 3, 4]");
  EXPECT_EQ(type("embedding", {w, input(i32, {}, "one")}), "f32[4]");
  EXPECT_THAT(error("embedding", {w, input(f32, {2}, "bad")}),
              HasSubstr("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int"));
  EXPECT_THAT(error("embedding", {input(f32, {10}, "flat"), input(i64, {2}, "i")}), HasSubstr("'weight' must be 2-D"));
}

TEST_F(Composite, ScaledDotProductAttention) {
  Node* q = input(f32, {2, 8, 5, 16}, "q");
  Node* k = input(f32, {2, 8, 7, 16}, "k");
  Node* v = input(f32, {2, 8, 7, 32}, "v");
  EXPECT_EQ(type("scaled_dot_product_attention", {q, k, v}), "f32[2, 8, 5, 32]");
  EXPECT_EQ(type("scaled_dot_product_attention", {q, k, v, input(b, {5, 7}, "mask")}), "f32[2, 8, 5, 32]");
  EXPECT_EQ(type("scaled_dot_product_attention", {q, input(f32, {1, 7, 16}, "k1"), input(f32, {1, 7, 32}, "v1")}),
            "f32[2, 8, 5, 32]");
  EXPECT_THAT(error("scaled_dot_product_attention", {q, input(f32, {2, 8, 7, 8}, "k8"), v}),
              HasSubstr("Expected query and key to have the same embedding size"));
  EXPECT_THAT(error("scaled_dot_product_attention", {q, k, input(f32, {2, 8, 6, 32}, "v6")}),
              HasSubstr("Expected key and value to have the same sequence length"));
  EXPECT_THAT(error("scaled_dot_product_attention", {q, k, v, input(b, {5, 6}, "m56")}),
              HasSubstr("attn_mask of shape [5, 6] cannot be broadcast to the attention weights' shape [2, 8, 5, 7]"));
  EXPECT_THAT(error("scaled_dot_product_attention", {q, k, v, input(b, {5, 7}, "m")}, {{"is_causal", true}}),
              HasSubstr("Explicit attn_mask should not be set when is_causal=True"));
  EXPECT_THAT(error("scaled_dot_product_attention", {q, input(f16, {2, 8, 7, 16}, "kh"), v}),
              HasSubstr("Expected query, key, and value to have the same dtype, but got query.dtype: f32 key.dtype: f16 "
                        "and value.dtype: f32 instead."));
}

TEST_F(Composite, CrossEntropyShapes) {
  Node* logits = input(f32, {3, 5});
  Node* target = input(i64, {3}, "t");
  EXPECT_EQ(type("cross_entropy", {logits, target}), "f32[]");
  EXPECT_EQ(type("cross_entropy", {logits, target}, {{"reduction", "none"}}), "f32[3]");
  EXPECT_EQ(type("cross_entropy", {logits, target, input(f32, {5}, "w")}, {{"reduction", "sum"}}), "f32[]");
  EXPECT_EQ(type("cross_entropy", {input(f32, {2, 5, 4, 4}, "img"), input(i64, {2, 4, 4}, "t2")}, {{"reduction", "none"}}),
            "f32[2, 4, 4]");
  EXPECT_EQ(type("cross_entropy", {input(f32, {5}, "one"), input(i64, {}, "t0")}, {{"reduction", "none"}}), "f32[]");
  EXPECT_EQ(type("cross_entropy", {logits, input(f32, {3, 5}, "probs")}, {{"reduction", "none"}}), "f32[3]");
  EXPECT_EQ(type("nll_loss", {logits, target}), "f32[]");
}

TEST_F(Composite, CrossEntropyErrors) {
  Node* logits = input(f32, {3, 5});
  EXPECT_THAT(error("cross_entropy", {logits, input(i64, {4}, "t4")}),
              HasSubstr("Expected input batch_size (3) to match target batch_size (4)."));
  EXPECT_THAT(error("cross_entropy", {input(f32, {2, 5, 4}, "seq"), input(i64, {2, 3}, "t23")}),
              HasSubstr("Expected target size [2, 4], got [2, 3]"));
  EXPECT_THAT(error("cross_entropy", {logits, input(i32, {3}, "t32")}),
              HasSubstr("Expected target to hold class indices of dtype i64"));
  EXPECT_THAT(error("nll_loss", {logits, input(f32, {3, 5}, "probs")}),
              HasSubstr("Expected target to hold class indices of dtype i64, but got f32"));
  EXPECT_THAT(error("cross_entropy", {logits, input(i64, {3}, "t")}, {{"reduction", "avg"}}),
              HasSubstr("'avg' is not a valid value for reduction"));
  EXPECT_THAT(error("cross_entropy", {logits, input(i64, {3}, "t1"), input(f32, {4}, "w4")}),
              HasSubstr("weight tensor should be defined either for all 5 classes or no classes"));
  EXPECT_THAT(error("cross_entropy", {logits, input(i64, {3}, "t2")}, {{"label_smoothing", 1.5}}),
              HasSubstr("label_smoothing must be between 0.0 and 1.0. Got: 1.5"));
}

TEST_F(Composite, MseLoss) {
  EXPECT_EQ(type("mse_loss", {input(f32, {2, 3}), input(f32, {2, 3}, "y")}), "f32[]");
  EXPECT_EQ(type("mse_loss", {input(f32, {2, 3}, "a"), input(f32, {3}, "b")}, {{"reduction", "none"}}), "f32[2, 3]");
  EXPECT_THAT(error("mse_loss", {input(i64, {2}, "c"), input(i64, {2}, "d")}), HasSubstr("mse_loss expects floating-point"));
}

TEST_F(Composite, TriangleFlattenStack) {
  Node* x = input(f32, {2, 3, 4});
  EXPECT_EQ(type("tril", {x}), "f32[2, 3, 4]");
  EXPECT_THAT(error("triu", {input(f32, {3}, "v")}), HasSubstr("triu: input tensor must have at least 2 dimensions"));
  EXPECT_EQ(type("flatten", {x}), "f32[24]");
  EXPECT_EQ(type("flatten", {x, 1}), "f32[2, 12]");
  EXPECT_EQ(type("flatten", {x, 0, -2}), "f32[6, 4]");
  EXPECT_EQ(type("flatten", {input(f32, {}, "scalar")}), "f32[1]");
  EXPECT_EQ(meta("flatten", {input(f32, {s0, 3, 4}, "s")}, {{"start_dim", 1}}).shape, (SymShape{s0, 12}));
  EXPECT_THAT(error("flatten", {x, 2, 1}), HasSubstr("start_dim cannot come after end_dim"));
  Node* y = input(f32, {2, 3}, "y");
  EXPECT_EQ(type("stack", {nodes({y, y})}), "f32[2, 2, 3]");
  EXPECT_EQ(type("stack", {nodes({y, y, y}), -1}), "f32[2, 3, 3]");
  EXPECT_EQ(type("stack", {nodes({y, input(i64, {2, 3}, "z")}), 1}), "f32[2, 2, 3]");
  EXPECT_THAT(error("stack", {nodes({y, input(f32, {2, 4}, "w")})}),
              HasSubstr("stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1"));
  EXPECT_THAT(error("stack", {nodes({})}), HasSubstr("stack expects a non-empty TensorList"));
}

TEST_F(Composite, Split) {
  Node* x = input(f32, {5, 2});
  EXPECT_EQ(call("split", {x, 2})->meta.type_string(), "(f32[2, 2], f32[2, 2], f32[1, 2])");
  EXPECT_EQ(call("split", {x, ints({1, 4})})->meta.type_string(), "(f32[1, 2], f32[4, 2])");
  EXPECT_EQ(call("split", {x, 5})->meta.type_string(), "(f32[5, 2],)");
  EXPECT_EQ(call("split", {x, 1, -1})->meta.type_string(), "(f32[5, 1], f32[5, 1])");
  Node* dynamic = input(f32, {s0, 2}, "d");
  NodeMeta pieces = call("split", {dynamic, syms({2, s0 - 2})})->meta;
  ASSERT_EQ(pieces.values.size(), 2u);
  EXPECT_EQ(pieces.values[1].shape, (SymShape{s0 - 2, 2}));
  EXPECT_THAT(error("split", {x, ints({1, 2})}),
              HasSubstr("split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), "
                        "but got split_sizes=[1, 2]"));
  EXPECT_THAT(error("split", {dynamic, 2}), HasSubstr("the number of outputs would depend on a symbolic size"));
  EXPECT_THAT(error("split", {x, 0}), HasSubstr("split_size can only be 0 if dimension size is 0"));
}

}  // namespace
}  // namespace kiln::ir::shape_test
