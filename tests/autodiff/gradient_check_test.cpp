// Gradient checks: for every op with a derivative, a tiny f64 graph with random inputs, its
// autodiff gradients against central finite differences (gradient_check.h). Ties are placed on
// purpose where the op has a tie rule: a tie between two values has the finite difference 1/2,
// which is the even split maximum/minimum/amax/amin give.
#include <gtest/gtest.h>

#include <functional>

#include "gradient_check.h"
#include "passes/decompose.h"

namespace kiln {
namespace {

using ir::Argument;
using ir::Graph;
using ir::Node;

struct OpCase {
  std::string name;
  std::vector<std::pair<std::string, Tensor>> inputs;  // placeholders, typed from the values
  std::function<std::vector<Node*>(Graph&, const std::vector<Node*>&)> body;
  bool decompose = false;  // a composite op, checked through its decomposition
};

Tensor uniform(const Sizes& sizes, uint64_t seed, double low = -1.0, double high = 1.0) {
  return testing::random_tensor(sizes, DType::f64, seed, low, high);
}
Tensor positive(const Sizes& sizes, uint64_t seed) { return uniform(sizes, seed, 0.5, 2.0); }
Tensor values(const Sizes& sizes, std::vector<double> data, DType dtype = DType::f64) {
  return Tensor::from_doubles(sizes, data, dtype);
}

// One call of `op` on the inputs then `extra` arguments.
std::function<std::vector<Node*>(Graph&, const std::vector<Node*>&)> call(std::string op, std::vector<Argument> extra = {},
                                                                          ir::Kwargs kwargs = {}) {
  return [op, extra, kwargs](Graph& graph, const std::vector<Node*>& in) {
    std::vector<Argument> args(in.begin(), in.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return std::vector<Node*>{graph.create_call(op, args, kwargs)};
  };
}

// `op`(first input, dim, other inputs...), the shape of gather, index_select and scatter.
std::function<std::vector<Node*>(Graph&, const std::vector<Node*>&)> call_along(std::string op, int64_t dim,
                                                                                ir::Kwargs kwargs = {}) {
  return [op, dim, kwargs](Graph& graph, const std::vector<Node*>& in) {
    std::vector<Argument> args{in[0], dim};
    args.insert(args.end(), in.begin() + 1, in.end());
    return std::vector<Node*>{graph.create_call(op, args, kwargs)};
  };
}

std::vector<OpCase> cases() {
  auto x = [](const Sizes& sizes, uint64_t seed = 1) { return std::pair<std::string, Tensor>{"x", uniform(sizes, seed)}; };
  auto px = [](const Sizes& sizes) { return std::pair<std::string, Tensor>{"x", positive(sizes, 1)}; };
  auto y = [](const Sizes& sizes) { return std::pair<std::string, Tensor>{"y", uniform(sizes, 2)}; };
  auto named = [](std::string name, Tensor value) { return std::pair<std::string, Tensor>{name, value}; };
  Tensor tie_a = values({2, 3}, {0.5, -0.25, 1.0, 0.75, 0.3, -1.0});
  Tensor tie_b = values({2, 3}, {0.5, 0.1, -0.2, 0.75, 0.9, -1.5});
  Tensor two_maxima = values({2, 3}, {0.7, 0.7, -0.2, -0.6, 0.1, -0.6});
  Tensor index = values({2, 3}, {1, 0, 2, 2, 1, 0}, DType::i64);
  std::vector<OpCase> list = {
      // ---- pointwise unary ----
      {"neg", {x({2, 3})}, call("neg")},
      {"abs", {x({2, 3})}, call("abs")},
      {"exp", {x({2, 3})}, call("exp")},
      {"log", {px({2, 3})}, call("log")},
      {"log1p", {px({2, 3})}, call("log1p")},
      {"expm1", {x({2, 3})}, call("expm1")},
      {"sqrt", {px({2, 3})}, call("sqrt")},
      {"rsqrt", {px({2, 3})}, call("rsqrt")},
      {"reciprocal", {px({2, 3})}, call("reciprocal")},
      {"sin", {x({2, 3})}, call("sin")},
      {"cos", {x({2, 3})}, call("cos")},
      {"tanh", {x({2, 3})}, call("tanh")},
      {"sigmoid", {x({2, 3})}, call("sigmoid")},
      {"erf", {x({2, 3})}, call("erf")},
      {"erfinv", {named("x", uniform({2, 3}, 1, -0.9, 0.9))}, call("erfinv")},
      {"relu", {x({2, 3})}, call("relu")},
      {"clone", {x({2, 3})}, call("clone")},
      {"cast", {x({2, 3})}, call("cast", {DType::f64})},
      {"clamp", {x({3, 4})}, call("clamp", {-0.3, 0.4})},
      {"clamp_min_only", {x({3, 4})}, call("clamp", {-0.3})},
      // ---- pointwise binary, broadcasting ----
      {"add_broadcast", {x({2, 3}), y({3})}, call("add")},
      {"add_alpha", {x({2, 3}), y({2, 1})}, call("add", {}, {{"alpha", 2.5}})},
      {"add_scalar", {x({2, 3})}, call("add", {1.5})},
      {"sub_alpha", {x({2, 1}), y({1, 3})}, call("sub", {}, {{"alpha", -0.5}})},
      {"mul_broadcast", {x({2, 1}), y({1, 3})}, call("mul")},
      {"mul_same_input", {x({2, 3})}, [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("mul", {in[0], in[0]})};
       }},
      {"div", {x({2, 3}), named("y", positive({3}, 2))}, call("div")},
      {"div_scalar_numerator", {px({2, 3})}, [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("div", {2.0, in[0]})};
       }},
      {"pow_tensors", {px({2, 3}), y({2, 3})}, call("pow")},
      {"pow_scalar_exponent", {x({2, 3})}, call("pow", {3.0})},
      {"pow_scalar_base", {x({2, 3})}, [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("pow", {2.0, in[0]})};
       }},
      {"maximum_ties", {named("x", tie_a), named("y", tie_b)}, call("maximum")},
      {"minimum_ties", {named("x", tie_a), named("y", tie_b)}, call("minimum")},
      {"fmod", {named("x", values({4}, {2.3, -1.7, 0.4, -3.1})), named("y", values({4}, {0.7, 0.6, 1.1, -0.9}))},
       call("fmod")},
      {"remainder", {named("x", values({4}, {2.3, -1.7, 0.4, -3.1})), named("y", values({4}, {0.7, 0.6, 1.1, -0.9}))},
       call("remainder")},
      {"where", {named("c", values({2, 3}, {1, 0, 1, 0, 0, 1}, DType::boolean)), x({2, 3}), y({3})}, call("where")},
      // ---- reductions ----
      {"sum_dim", {x({2, 3, 4})}, call("sum", {Argument::ints({1})})},
      {"sum_all", {x({2, 3})}, call("sum")},
      {"sum_keepdim", {x({2, 3, 4})}, call("sum", {Argument::ints({0, 2}), true})},
      {"mean_dim", {x({2, 3, 4})}, call("mean", {Argument::ints({-1})})},
      {"mean_all", {x({2, 3})}, call("mean")},
      {"prod", {x({2, 3})}, call("prod", {Argument::ints({1})})},
      {"prod_with_zero", {named("x", values({2, 3}, {0.0, 0.5, -1.5, 0.3, 0.0, 0.0}))}, call("prod", {Argument::ints({1})})},
      {"amax_ties", {named("x", two_maxima)}, call("amax", {Argument::ints({1})})},
      {"amin_ties", {named("x", two_maxima)}, call("amin", {Argument::ints({1}), true})},
      {"amax_all", {x({2, 3})}, call("amax")},
      {"var_dim", {x({3, 4})}, call("var", {Argument::ints({1})})},
      {"var_all_keepdim", {x({3, 4})}, call("var", {}, {{"correction", 0.0}, {"keepdim", true}})},
      {"var_mean", {x({3, 4})}, [](Graph& g, const std::vector<Node*>& in) {
         Node* both = g.create_call("var_mean", {in[0], Argument::ints({0})});
         return std::vector<Node*>{g.create_call("getitem", {both, 0}), g.create_call("getitem", {both, 1})};
       }},
      {"var_mean_only_mean", {x({3, 4})}, [](Graph& g, const std::vector<Node*>& in) {
         Node* both = g.create_call("var_mean", {in[0], Argument::ints({1})});
         return std::vector<Node*>{g.create_call("getitem", {both, 1})};
       }},
      {"cumsum", {x({3, 4})}, call("cumsum", {1})},
      {"cummax", {x({3, 5})}, [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("getitem", {g.create_call("cummax", {in[0], 1}), 0})};
       }},
      {"cummin", {x({4, 3})}, [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("getitem", {g.create_call("cummin", {in[0], 0}), 0})};
       }},
      // ---- views ----
      {"reshape", {x({2, 6})}, call("reshape", {Argument::ints({3, -1})})},
      {"view", {x({2, 6})}, call("view", {Argument::ints({4, 3})})},
      {"permute", {x({2, 3, 4})}, call("permute", {Argument::ints({2, 0, 1})})},
      {"transpose", {x({2, 3, 4})}, call("transpose", {0, -1})},
      {"expand", {x({3, 1})}, call("expand", {Argument::ints({2, 3, 4})})},
      {"squeeze", {x({2, 1, 3})}, call("squeeze", {Argument::ints({1})})},
      {"unsqueeze", {x({2, 3})}, call("unsqueeze", {1})},
      {"slice", {x({5, 3})}, call("slice", {0, 1, 4})},
      {"slice_step", {x({3, 7})}, call("slice", {1, -6, 100, 2})},
      {"select", {x({3, 4})}, call("select", {1, -2})},
      {"as_strided", {x({3, 4})}, call("as_strided", {Argument::ints({3, 3}), Argument::ints({3, 1}), 1})},
      // ---- copies ----
      {"cat", {x({2, 3}), y({1, 3})}, [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("cat", {std::vector<Argument>{in[0], in[1], in[0]}, 0})};
       }},
      {"pad", {x({2, 3})}, call("pad", {Argument::ints({1, 2, 0, 1}), "constant", 0.5})},
      {"pad_negative", {x({2, 5})}, call("pad", {Argument::ints({-1, 2})})},
      {"gather", {x({3, 3}), named("i", index)}, call_along("gather", 1)},
      {"index_select", {x({3, 2}), named("i", values({4}, {2, 0, 2, 1}, DType::i64))}, call_along("index_select", 0)},
      {"scatter", {x({3, 3}), named("i", values({1, 3}, {1, 0, 2}, DType::i64)), y({2, 3})}, call_along("scatter", 0)},
      {"scatter_sum", {x({3, 3}), named("i", values({2, 3}, {1, 0, 2, 1, 1, 0}, DType::i64)), y({2, 3})},
       call_along("scatter", 1, {{"reduce", "sum"}})},
      {"index_put", {x({4, 3}), named("i", values({2}, {3, -4}, DType::i64)), y({2, 3})},
       [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("index_put", {in[0], std::vector<Argument>{in[1]}, in[2]})};
       }},
      {"index_put_accumulate", {x({4, 3}), named("i", values({3}, {1, 1, 2}, DType::i64)), y({3})},
       [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("index_put", {in[0], std::vector<Argument>{in[1]}, in[2], true})};
       }},
      // ---- linear algebra ----
      {"matmul", {x({3, 4}), y({4, 2})}, call("matmul")},
      {"matmul_broadcast_batch", {x({2, 1, 3, 4}), y({5, 4, 2})}, call("matmul")},
      {"matmul_vector_matrix", {x({4}), y({2, 4, 3})}, call("matmul")},
      {"matmul_matrix_vector", {x({2, 3, 4}), y({4})}, call("matmul")},
      {"matmul_dot", {x({4}), y({4})}, call("matmul")},
      {"bmm", {x({2, 3, 4}), y({2, 4, 2})}, call("bmm")},
      // ---- convolution ----
      {"conv1d", {x({2, 2, 7}), named("w", uniform({3, 2, 3}, 3)), named("b", uniform({3}, 4))},
       call("convolution", {Argument::ints({1}), Argument::ints({0}), Argument::ints({1}), false, Argument::ints({0}), 1})},
      {"conv2d_stride_padding", {x({2, 2, 5, 6}), named("w", uniform({3, 2, 3, 2}, 3)), named("b", uniform({3}, 4))},
       call("convolution", {Argument::ints({2, 2}), Argument::ints({1, 1}), Argument::ints({1, 1}), false,
                            Argument::ints({0, 0}), 1})},
      {"conv2d_groups_dilation", {x({1, 4, 7, 6}), named("w", uniform({6, 2, 2, 3}, 3))},
       [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("convolution", {in[0], in[1], Argument(), Argument::ints({1, 2}),
                                                                 Argument::ints({1, 0}), Argument::ints({2, 1}), false,
                                                                 Argument::ints({0, 0}), 2})};
       }},
      {"conv3d", {x({1, 1, 3, 4, 3}), named("w", uniform({2, 1, 2, 2, 2}, 3)), named("b", uniform({2}, 4))},
       call("convolution", {Argument::ints({1, 2, 1}), Argument::ints({0, 1, 0}), Argument::ints({1, 1, 1}), false,
                            Argument::ints({0, 0, 0}), 1})},
      {"conv_transpose1d", {x({2, 2, 5}), named("w", uniform({2, 3, 3}, 3)), named("b", uniform({3}, 4))},
       call("convolution", {Argument::ints({2}), Argument::ints({1}), Argument::ints({1}), true, Argument::ints({1}), 1})},
      {"conv_transpose2d_upsampling", {x({2, 3, 3, 4}), named("w", uniform({3, 2, 4, 4}, 3)), named("b", uniform({2}, 4))},
       call("convolution", {Argument::ints({2, 2}), Argument::ints({1, 1}), Argument::ints({1, 1}), true,
                            Argument::ints({0, 0}), 1})},
      {"conv_transpose2d_groups_dilation", {x({1, 4, 4, 3}), named("w", uniform({4, 3, 2, 3}, 3))},
       [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("convolution", {in[0], in[1], Argument(), Argument::ints({3, 2}),
                                                                 Argument::ints({1, 0}), Argument::ints({2, 1}), true,
                                                                 Argument::ints({2, 1}), 2})};
       }},
      {"conv_transpose3d", {x({1, 2, 2, 3, 2}), named("w", uniform({2, 1, 2, 2, 2}, 3)), named("b", uniform({1}, 4))},
       call("convolution", {Argument::ints({2, 1, 2}), Argument::ints({0, 1, 0}), Argument::ints({1, 1, 1}), true,
                            Argument::ints({1, 0, 0}), 1})},
      // ---- pooling ----
      {"max_pool2d", {x({1, 2, 4, 4})}, call("max_pool", {Argument::ints({2, 2})})},
      {"max_pool2d_overlapping_padded", {x({1, 1, 5, 5})},
       call("max_pool", {Argument::ints({3, 3}), Argument::ints({2, 2}), Argument::ints({1, 1})})},
      {"max_pool1d_dilation_ceil", {x({2, 1, 8})},
       call("max_pool", {Argument::ints({2}), Argument::ints({3}), Argument::ints({0}), Argument::ints({2}), true})},
      {"avg_pool2d", {x({1, 2, 4, 6})}, call("avg_pool", {Argument::ints({2, 3})})},
      {"avg_pool2d_padding_exclude_ceil", {x({1, 1, 5, 5})},
       call("avg_pool", {Argument::ints({3, 3}), Argument::ints({2, 2}), Argument::ints({1, 1}), true, false})},
      {"avg_pool2d_padding_include", {x({1, 1, 5, 4})},
       call("avg_pool", {Argument::ints({2, 2}), Argument::ints({2, 2}), Argument::ints({1, 1}), true, true})},
      {"avg_pool1d_divisor", {x({1, 2, 6})},
       call("avg_pool", {Argument::ints({2}), Argument::ints({1}), Argument::ints({0}), false, true, 5})},
      {"adaptive_avg_pool", {x({1, 2, 4, 6})}, call("adaptive_avg_pool", {Argument::ints({2, 3})})},
      {"adaptive_max_pool", {x({1, 2, 4, 6})}, call("adaptive_max_pool", {Argument::ints({2, 2})})},
      // ---- composites, through their decompositions ----
      {"softmax", {x({3, 5})}, call("softmax", {-1}), true},
      {"log_softmax", {x({3, 5})}, call("log_softmax", {1}), true},
      {"layer_norm", {x({2, 3, 4}), named("w", uniform({4}, 3)), named("b", uniform({4}, 4))},
       [](Graph& g, const std::vector<Node*>& in) {
         return std::vector<Node*>{g.create_call("layer_norm", {in[0], Argument::ints({4}), in[1], in[2]})};
       },
       true},
      {"gelu", {x({2, 3})}, call("gelu"), true},
      {"cross_entropy", {x({4, 5}), named("t", values({4}, {1, 0, 4, 2}, DType::i64))}, call("cross_entropy"), true},
  };
  return list;
}

void PrintTo(const OpCase& op, std::ostream* out) { *out << op.name; }

class GradientCheck : public ::testing::TestWithParam<OpCase> {};

TEST_P(GradientCheck, MatchesCentralFiniteDifferences) {
  const OpCase& op = GetParam();
  Graph graph;
  std::vector<Node*> inputs;
  std::map<std::string, Tensor> values;
  for (const auto& [name, value] : op.inputs) {
    Sizes sizes = value.sizes();
    inputs.push_back(graph.create_placeholder(name, ir::TensorMeta::contiguous(value.dtype(),
                                                                               ir::SymShape(sizes.begin(), sizes.end()))));
    values[name] = value;
  }
  std::vector<Node*> results = op.body(graph, inputs);
  graph.create_output(std::vector<Argument>(results.begin(), results.end()));
  if (op.decompose) passes::decompose(graph);
  std::vector<std::string> mismatches = testing::check_gradients(graph, values);
  for (const std::string& mismatch : mismatches) ADD_FAILURE() << mismatch;
}

INSTANTIATE_TEST_SUITE_P(Ops, GradientCheck, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<OpCase>& param) { return param.param.name; });

}  // namespace
}  // namespace kiln
