// Tests of the decompose pass (passes/decompose.h):
//  (a) coverage: every composite op of the registry has a decomposition, and a variant below;
//  (b) for every composite op, several argument variants on random inputs: afterwards no
//      composite op remains, the verifier accepts the graph, and the reference interpreter
//      (whose composite kernels are written from the math, independently of the
//      decompositions) gives the same outputs before and after, within 1e-5 relative (f32);
//  (c) every sample model (functionalized first): no composite remains, outputs unchanged,
//      output names kept;
// plus the driver's promises: SourceInfo and names, in-place forms, aliasing on graphs that
// mutate, unused tuple elements, the exact dropout mask, and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/decompose.h"
#include "passes/decompositions/decomposition.h"
#include "passes/functionalize.h"
#include "kiln/error.h"
#include "kiln/npy.h"
#include "runtime/philox.h"
#include "tests/support/test_paths.h"

namespace kiln::passes {
namespace {

namespace fs = std::filesystem;
using ir::Argument;
using ir::Graph;
using ir::Node;
using ir::SymInt;
using ir::SymShape;

const SymInt s0 = SymInt::symbol("s0");
// The sizes random inputs give the symbols.
const std::map<std::string, int64_t> kBindings = {{"s0", 3}};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------- building cases

// A graph under construction and random values for its placeholders.
class CaseBuilder {
 public:
  explicit CaseBuilder(uint64_t seed, std::map<std::string, int64_t> bindings = kBindings)
      : generator_(seed), bindings_(std::move(bindings)) {}

  // Normally distributed values times `scale`.
  Node* floats(const std::string& name, const SymShape& shape, DType dtype = DType::f32, double scale = 1.0) {
    std::normal_distribution<double> normal(0.0, scale);
    return input(name, shape, dtype, [&] { return normal(generator_); });
  }
  Node* uniform(const std::string& name, const SymShape& shape, double low, double high) {
    std::uniform_real_distribution<double> distribution(low, high);
    return input(name, shape, DType::f32, [&] { return distribution(generator_); });
  }
  // Class indices in [0, classes); about `ignored` of them replaced by `ignore_index`.
  Node* indices(const std::string& name, const SymShape& shape, int64_t classes, int64_t ignore_index = -100,
                double ignored = 0.0) {
    std::uniform_int_distribution<int64_t> index(0, classes - 1);
    std::bernoulli_distribution skip(ignored);
    return input(name, shape, DType::i64,
                 [&] { return double(skip(generator_) ? ignore_index : index(generator_)); });
  }
  Node* mask(const std::string& name, const SymShape& shape, double true_fraction = 0.7) {
    std::bernoulli_distribution bit(true_fraction);
    return input(name, shape, DType::boolean, [&] { return bit(generator_) ? 1.0 : 0.0; });
  }
  // Row-major values given in full.
  Node* given(const std::string& name, const SymShape& shape, DType dtype, std::vector<double> values) {
    size_t next = 0;
    return input(name, shape, dtype, [&] { return values.at(next++); });
  }

  Node* call(const std::string& target, std::vector<Argument> args, ir::Kwargs kwargs = {}) {
    return graph_.create_call(target, std::move(args), std::move(kwargs));
  }
  void output(std::vector<Argument> values) { graph_.create_output(std::move(values)); }

  Graph& graph() { return graph_; }
  const std::map<std::string, Tensor>& inputs() const { return inputs_; }

 private:
  Node* input(const std::string& name, const SymShape& shape, DType dtype, const std::function<double()>& value) {
    ir::TensorMeta meta = ir::TensorMeta::contiguous(dtype, shape);
    Sizes sizes = meta.evaluate_shape(bindings_);
    std::vector<double> values(size_t(numel_of(sizes)));
    for (double& element : values) element = value();
    inputs_[name] = Tensor::from_doubles(sizes, values, dtype);
    return graph_.create_placeholder(name, meta);
  }

  std::mt19937_64 generator_;
  std::map<std::string, int64_t> bindings_;
  Graph graph_;
  std::map<std::string, Tensor> inputs_;
};

// One call of a composite op with particular arguments.
struct Variant {
  std::string op;  // the composite op it exercises
  std::string name;
  std::function<void(CaseBuilder&)> build;
  double tolerance = 1e-5;  // relative; absolute below magnitude 1
};

// gtest prints a failing parameter with this.
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

// A variant whose graph is one call of `op` returned as the output.
Variant single(const std::string& op, const std::string& name,
               std::function<std::vector<Argument>(CaseBuilder&)> args, ir::Kwargs kwargs = {},
               double tolerance = 1e-5) {
  return {op, name,
          [op, args, kwargs](CaseBuilder& b) {
            std::vector<Argument> values = args(b);
            b.output({b.call(op, values, kwargs)});
          },
          tolerance};
}

// An in-place form applied to a clone of x; returns the op's result and the mutated clone.
Variant inplace(const std::string& op, ir::Kwargs kwargs = {}, std::vector<Argument> extra = {}) {
  return {op, op,
          [op, kwargs, extra](CaseBuilder& b) {
            Node* x = b.floats("x", {3, 5}, DType::f32, 3.0);
            Node* copy = b.call("clone", {x});
            std::vector<Argument> args{copy};
            args.insert(args.end(), extra.begin(), extra.end());
            Node* result = b.call(op, args, kwargs);
            Node* after = b.call("mul", {copy, 2.0});
            b.output({result, after});
          }};
}

void add_linear_variants(std::vector<Variant>& out) {
  out.push_back(single("linear", "linear_bias", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {4, 6}), b.floats("w", {5, 6}), b.floats("b", {5})};
  }));
  out.push_back(single("linear", "linear_3d_no_bias", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {2, 3, 6}), b.floats("w", {5, 6})};
  }));
  out.push_back(single("linear", "linear_1d_weight", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {4, 6}), b.floats("w", {6}), b.floats("b", {})};
  }));
  out.push_back(single("linear", "linear_symbolic_batch", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {s0, 6}), b.floats("w", {5, 6}), b.floats("b", {5})};
  }));
  out.push_back(single("addmm", "addmm_default", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("s", {3, 4}), b.floats("a", {3, 5}), b.floats("m", {5, 4})};
  }));
  out.push_back(single(
      "addmm", "addmm_beta_alpha_broadcast",
      [](CaseBuilder& b) {
        return std::vector<Argument>{b.floats("s", {4}), b.floats("a", {3, 5}), b.floats("m", {5, 4})};
      },
      {{"beta", 0.5}, {"alpha", 2}}));
  // beta == 0 ignores self, NaN included.
  out.push_back(single(
      "addmm", "addmm_beta_zero_ignores_nan",
      [](CaseBuilder& b) {
        return std::vector<Argument>{b.given("s", {1, 4}, DType::f32, {kNaN, kNaN, kNaN, kNaN}),
                                     b.floats("a", {3, 5}), b.floats("m", {5, 4})};
      },
      {{"beta", 0}, {"alpha", 1.5}}));
  out.push_back(single(
      "addmm", "addmm_integers",
      [](CaseBuilder& b) {
        return std::vector<Argument>{b.indices("s", {2, 2}, 5), b.indices("a", {2, 3}, 5), b.indices("m", {3, 2}, 5)};
      },
      {{"beta", 2}, {"alpha", 3}}));
  out.push_back(single("embedding", "embedding_1d", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("w", {7, 4}), b.indices("i", {5}, 7)};
  }));
  out.push_back(single("embedding", "embedding_2d_padding_idx", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("w", {7, 4}), b.indices("i", {2, 3}, 7), 0};
  }));
  out.push_back(single("embedding", "embedding_symbolic_indices", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("w", {7, 4}), b.indices("i", {s0, 2}, 7)};
  }));
  out.push_back(single("embedding", "embedding_i32_indices", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("w", {4, 3}), b.given("i", {2, 2}, DType::i32, {3, 0, 0, 2})};
  }));
  out.push_back(single("embedding", "embedding_0d_index", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("w", {7, 4}), b.indices("i", {}, 7)};
  }));
}

void add_softmax_variants(std::vector<Variant>& out) {
  for (const char* op : {"softmax", "log_softmax"}) {
    for (int64_t dim : {0, 1, 2, -1})
      out.push_back(single(op, std::string(op) + "_dim" + std::to_string(dim), [dim](CaseBuilder& b) {
        return std::vector<Argument>{b.floats("x", {2, 3, 4}, DType::f32, 4.0), dim};
      }));
    out.push_back(single(op, std::string(op) + "_large_values", [](CaseBuilder& b) {
      return std::vector<Argument>{b.floats("x", {3, 5}, DType::f32, 1000.0), 1};
    }));
    out.push_back(single(op, std::string(op) + "_dtype_f64", [](CaseBuilder& b) {
      return std::vector<Argument>{b.floats("x", {3, 5}), 1, DType::f64};
    }));
    out.push_back(single(op, std::string(op) + "_empty_dim", [](CaseBuilder& b) {
      return std::vector<Argument>{b.floats("x", {3, 0}), 1};
    }));
    out.push_back(single(op, std::string(op) + "_0d", [](CaseBuilder& b) {
      return std::vector<Argument>{b.floats("x", {}), 0};
    }));
    out.push_back(single(op, std::string(op) + "_symbolic", [](CaseBuilder& b) {
      return std::vector<Argument>{b.floats("x", {s0, 5}), 0};
    }));
    // f16 rounds to 2^-11; the decomposition computes in f32 and rounds once.
    out.push_back(single(
        op, std::string(op) + "_f16",
        [](CaseBuilder& b) { return std::vector<Argument>{b.floats("x", {3, 5}, DType::f16), -1}; }, {}, 2e-3));
  }
}

void add_normalization_variants(std::vector<Variant>& out) {
  out.push_back(single("layer_norm", "layer_norm_weight_bias", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {2, 3, 8}, DType::f32, 3.0), Argument::ints({8}), b.floats("w", {8}),
                                 b.floats("b", {8})};
  }));
  out.push_back(single("layer_norm", "layer_norm_plain", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {4, 8}), Argument::ints({8})};
  }));
  out.push_back(single("layer_norm", "layer_norm_two_dims_weight_only_eps", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {2, 3, 4}), Argument::ints({3, 4}), b.floats("w", {3, 4}), Argument(),
                                 0.1};
  }));
  out.push_back(single("layer_norm", "layer_norm_bias_only_offset_input", [](CaseBuilder& b) {
    Node* x = b.floats("x", {3, 6});
    Node* shifted = b.call("add", {x, 100.0});
    return std::vector<Argument>{shifted, Argument::ints({6}), Argument(), b.floats("b", {6})};
  }));
  out.push_back(single("layer_norm", "layer_norm_symbolic", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {s0, 8}), Argument::ints({8}), b.floats("w", {8}), b.floats("b", {8})};
  }));
  out.push_back(single(
      "layer_norm", "layer_norm_bf16",
      [](CaseBuilder& b) { return std::vector<Argument>{b.floats("x", {3, 8}, DType::bf16), Argument::ints({8})}; },
      {}, 1.6e-2));
  out.push_back(single("layer_norm", "layer_norm_f64", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {3, 5}, DType::f64), Argument::ints({5}), b.floats("w", {5}, DType::f64)};
  }));
  out.push_back(single(
      "group_norm", "group_norm_f16",
      [](CaseBuilder& b) { return std::vector<Argument>{b.floats("x", {2, 4, 3}, DType::f16), 2}; }, {}, 4e-3));
  out.push_back(single("rms_norm", "rms_norm_default_eps", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {3, 8}), Argument::ints({8})};
  }));
  out.push_back(single("rms_norm", "rms_norm_weight_eps", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {2, 3, 4}), Argument::ints({3, 4}), b.floats("w", {3, 4}), 0.5};
  }));
  out.push_back(single(
      "rms_norm", "rms_norm_f16_default_eps",
      [](CaseBuilder& b) {
        return std::vector<Argument>{b.floats("x", {2, 4}, DType::f16, 0.05), Argument::ints({4})};
      },
      {}, 2e-3));
  // batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
  auto batch_norm = [](std::string name, SymShape shape, bool training, bool affine, bool running) {
    int64_t channels = shape[1].constant();
    return single("batch_norm", name, [=](CaseBuilder& b) {
      Node* x = b.floats("x", shape, DType::f32, 2.0);
      Argument weight = affine ? Argument(b.floats("w", {channels})) : Argument();
      Argument bias = affine ? Argument(b.floats("b", {channels})) : Argument();
      Argument mean = running ? Argument(b.floats("running_mean", {channels})) : Argument();
      Argument var = running ? Argument(b.uniform("running_var", {channels}, 0.5, 2.0)) : Argument();
      return std::vector<Argument>{x, weight, bias, mean, var, training, 0.1, 1e-5};
    });
  };
  out.push_back(batch_norm("batch_norm_eval_4d", {2, 3, 4, 4}, false, true, true));
  out.push_back(batch_norm("batch_norm_eval_no_affine_2d", {5, 3}, false, false, true));
  out.push_back(batch_norm("batch_norm_train_with_running_stats", {2, 3, 4, 4}, true, true, true));
  out.push_back(batch_norm("batch_norm_train_without_running_stats_3d", {4, 3, 5}, true, true, false));
  out.push_back(batch_norm("batch_norm_train_2d_no_affine", {6, 4}, true, false, false));
  out.push_back(single("batch_norm", "batch_norm_symbolic_batch_eps", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {s0, 3, 4}), b.floats("w", {3}), b.floats("b", {3}), Argument(),
                                 Argument(), true, 0.1, 0.01};
  }));
  // group_norm(input, num_groups, weight, bias, eps)
  out.push_back(single("group_norm", "group_norm_2_groups_4d", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {2, 4, 3, 3}, DType::f32, 2.0), 2, b.floats("w", {4}),
                                 b.floats("b", {4})};
  }));
  out.push_back(single("group_norm", "group_norm_1_group_no_affine", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {2, 6, 5}), 1};
  }));
  out.push_back(single("group_norm", "group_norm_group_per_channel_2d", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {3, 4, 2}), 4, b.floats("w", {4}), Argument(), 0.001};
  }));
  out.push_back(single("group_norm", "group_norm_symbolic_batch", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {s0, 6, 4}), 3, b.floats("w", {6}), b.floats("b", {6})};
  }));
}

void add_activation_variants(std::vector<Variant>& out) {
  auto activation = [](std::string op, std::string name, std::vector<Argument> extra, ir::Kwargs kwargs = {}) {
    return single(
        op, name,
        [extra](CaseBuilder& b) {
          std::vector<Argument> args{b.floats("x", {4, 6}, DType::f32, 4.0)};
          args.insert(args.end(), extra.begin(), extra.end());
          return args;
        },
        kwargs);
  };
  out.push_back(activation("gelu", "gelu_exact", {}));
  out.push_back(activation("gelu", "gelu_tanh", {}, {{"approximate", "tanh"}}));
  out.push_back(single(
      "gelu", "gelu_f16", [](CaseBuilder& b) { return std::vector<Argument>{b.floats("x", {8}, DType::f16, 3.0)}; },
      {}, 2e-3));
  out.push_back(activation("silu", "silu", {}));
  out.push_back(activation("leaky_relu", "leaky_relu_default", {}));
  out.push_back(activation("leaky_relu", "leaky_relu_slope", {0.2}));
  out.push_back(activation("elu", "elu_default", {}));
  out.push_back(activation("elu", "elu_alpha", {0.5}));
  out.push_back(activation("hardsigmoid", "hardsigmoid", {}));
  out.push_back(activation("hardswish", "hardswish", {}));
  out.push_back(activation("softplus", "softplus_default", {}));
  out.push_back(activation("softplus", "softplus_beta_threshold", {2.0, 3.0}));
  out.push_back(activation("softplus", "softplus_int_beta", {2, 1}));
  out.push_back(single("softplus", "softplus_large_values", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {4, 6}, DType::f32, 200.0)};
  }));
  out.push_back(inplace("gelu_"));
  out.push_back(inplace("silu_"));
  out.push_back(inplace("leaky_relu_", {}, {0.3}));
  out.push_back(inplace("elu_", {}, {1.5}));
  out.push_back(inplace("hardsigmoid_"));
  out.push_back(inplace("hardswish_"));
  // The in-place form on a view: the write must land in the base.
  out.push_back({"gelu_", "gelu__on_transpose", [](CaseBuilder& b) {
                   Node* x = b.floats("x", {3, 4});
                   Node* copy = b.call("clone", {x});
                   Node* view = b.call("transpose", {copy, 0, 1});
                   b.call("gelu_", {view}, {{"approximate", "tanh"}});
                   b.output({b.call("add", {copy, 1.0})});
                 }});
}

void add_dropout_variants(std::vector<Variant>& out) {
  auto dropout = [](std::string name, SymShape shape, double p, bool train, int64_t seed) {
    return single(
        "dropout", name, [shape, p, train](CaseBuilder& b) {
          return std::vector<Argument>{b.floats("x", shape), p, train};
        },
        {{"seed", seed}});
  };
  out.push_back(dropout("dropout_half", {8, 16}, 0.5, true, 3));
  out.push_back(dropout("dropout_p_0_1", {16, 16}, 0.1, true, 0));
  out.push_back(dropout("dropout_p_0_7", {16, 16}, 0.7, true, 12345));
  out.push_back(dropout("dropout_eval", {4, 4}, 0.5, false, 0));
  out.push_back(dropout("dropout_p_zero", {4, 4}, 0.0, true, 1));
  out.push_back(dropout("dropout_p_one", {4, 4}, 1.0, true, 1));
  out.push_back(dropout("dropout_symbolic", {s0, 8}, 0.25, true, 9));
}

void add_attention_variants(std::vector<Variant>& out) {
  const std::string op = "scaled_dot_product_attention";
  auto qkv = [](CaseBuilder& b, SymShape q, SymShape k, SymShape v) {
    return std::vector<Argument>{b.floats("q", q), b.floats("k", k), b.floats("v", v)};
  };
  out.push_back(single(op, "sdpa_plain", [=](CaseBuilder& b) { return qkv(b, {2, 3, 4, 8}, {2, 3, 5, 8}, {2, 3, 5, 6}); }));
  out.push_back(single(op, "sdpa_3d_broadcast_batch", [=](CaseBuilder& b) {
    return qkv(b, {2, 4, 8}, {1, 5, 8}, {2, 5, 8});
  }));
  out.push_back(single(op, "sdpa_bool_mask", [=](CaseBuilder& b) {
    std::vector<Argument> args = qkv(b, {2, 4, 8}, {2, 5, 8}, {2, 5, 3});
    args.push_back(b.mask("mask", {4, 5}));
    return args;
  }));
  out.push_back(single(op, "sdpa_float_mask", [=](CaseBuilder& b) {
    std::vector<Argument> args = qkv(b, {2, 4, 8}, {2, 5, 8}, {2, 5, 3});
    args.push_back(b.floats("mask", {2, 1, 5}));
    return args;
  }));
  // Row 1 of the mask attends to nothing: zeros, as PyTorch's math path gives.
  out.push_back(single(op, "sdpa_fully_masked_row", [=](CaseBuilder& b) {
    std::vector<Argument> args = qkv(b, {3, 4}, {3, 4}, {3, 2});
    args.push_back(b.given("mask", {3, 3}, DType::boolean, {1, 0, 1, 0, 0, 0, 1, 1, 1}));
    return args;
  }));
  out.push_back(single(op, "sdpa_float_mask_with_inf", [=](CaseBuilder& b) {
    std::vector<Argument> args = qkv(b, {3, 4}, {3, 4}, {3, 2});
    double inf = std::numeric_limits<double>::infinity();
    args.push_back(b.given("mask", {3, 3}, DType::f32, {0, -inf, 0.5, -inf, -inf, -inf, 0, 0, -1}));
    return args;
  }));
  out.push_back(single(
      op, "sdpa_causal",
      [=](CaseBuilder& b) {
        std::vector<Argument> args = qkv(b, {2, 5, 8}, {2, 5, 8}, {2, 5, 8});
        args.insert(args.end(), {Argument(), 0.0, true});
        return args;
      }));
  out.push_back(single(
      op, "sdpa_causal_rectangular_scale",
      [=](CaseBuilder& b) {
        std::vector<Argument> args = qkv(b, {2, 3, 8}, {2, 6, 8}, {2, 6, 4});
        args.insert(args.end(), {Argument(), 0.0, true});
        return args;
      },
      {{"scale", 0.3}}));
  out.push_back(single(
      op, "sdpa_bool_mask_scale",
      [=](CaseBuilder& b) {
        std::vector<Argument> args = qkv(b, {4, 8}, {5, 8}, {5, 8});
        args.push_back(b.mask("mask", {4, 5}));
        return args;
      },
      {{"scale", 1.0}}));
  out.push_back(single(
      op, "sdpa_f16_float_mask",
      [=](CaseBuilder& b) {
        return std::vector<Argument>{b.floats("q", {2, 3, 4}, DType::f16), b.floats("k", {2, 5, 4}, DType::f16),
                                     b.floats("v", {2, 5, 4}, DType::f16), b.floats("mask", {3, 5}, DType::f16)};
      },
      {}, 2e-3));
  // 1 / sqrt(E) for a symbolic E is computed in the graph.
  out.push_back(single(op, "sdpa_symbolic_embedding", [=](CaseBuilder& b) { return qkv(b, {3, s0}, {4, s0}, {4, 2}); }));
  out.push_back(single(op, "sdpa_no_keys_bool_mask", [=](CaseBuilder& b) {
    std::vector<Argument> args = qkv(b, {3, 4}, {0, 4}, {0, 2});
    args.push_back(b.mask("mask", {3, 0}));
    return args;
  }));
  out.push_back(single(op, "sdpa_symbolic_keys_bool_mask", [=](CaseBuilder& b) {
    std::vector<Argument> args = qkv(b, {2, 4}, {s0, 4}, {s0, 3});
    args.push_back(b.mask("mask", {2, s0}));
    return args;
  }));
  out.push_back(single(op, "sdpa_symbolic_length", [=](CaseBuilder& b) { return qkv(b, {2, s0, 4}, {2, 5, 4}, {2, 5, 4}); }));
}

void add_loss_variants(std::vector<Variant>& out) {
  // cross_entropy(self, target, weight, reduction, ignore_index, label_smoothing)
  auto cross_entropy = [](std::string name, SymShape input, SymShape target, bool weighted, std::string reduction,
                          int64_t ignore_index, double ignored, double smoothing) {
    int64_t classes = input.size() == 1 ? input[0].constant() : input[1].constant();
    return single("cross_entropy", name, [=](CaseBuilder& b) {
      Node* x = b.floats("x", input, DType::f32, 2.0);
      Node* t = b.indices("t", target, classes, ignore_index, ignored);
      Argument weight = weighted ? Argument(b.uniform("w", {classes}, 0.2, 2.0)) : Argument();
      return std::vector<Argument>{x, t, weight, reduction, ignore_index, smoothing};
    });
  };
  for (const char* reduction : {"mean", "sum", "none"}) {
    std::string suffix = std::string("_") + reduction;
    out.push_back(cross_entropy("cross_entropy_plain" + suffix, {6, 5}, {6}, false, reduction, -100, 0.0, 0.0));
    out.push_back(cross_entropy("cross_entropy_weight_ignore_smoothing" + suffix, {8, 5}, {8}, true, reduction, -100,
                                0.3, 0.1));
    out.push_back(cross_entropy("cross_entropy_smoothing" + suffix, {6, 4}, {6}, false, reduction, -100, 0.0, 0.25));
    out.push_back(cross_entropy("cross_entropy_spatial_ignore" + suffix, {2, 4, 3}, {2, 3}, true, reduction, 2, 0.0,
                                0.0));
    out.push_back(cross_entropy("cross_entropy_spatial_smoothing_ignore" + suffix, {2, 4, 3, 2}, {2, 3, 2}, false,
                                reduction, -1, 0.3, 0.2));
  }
  out.push_back(cross_entropy("cross_entropy_unbatched", {5}, {}, true, "mean", -100, 0.0, 0.1));
  out.push_back(cross_entropy("cross_entropy_weight", {6, 5}, {6}, true, "mean", -100, 0.0, 0.0));
  // Every target ignored: 'mean' is 0/0 = NaN on both sides.
  out.push_back(cross_entropy("cross_entropy_all_ignored", {3, 4}, {3}, false, "mean", -100, 1.0, 0.0));
  for (const char* reduction : {"mean", "sum", "none"})
    out.push_back(single("cross_entropy", std::string("cross_entropy_probabilities_") + reduction, [=](CaseBuilder& b) {
      Node* x = b.floats("x", {4, 5, 2});
      Node* p = b.call("softmax", {b.floats("logits", {4, 5, 2}), 1});
      return std::vector<Argument>{x, p, b.uniform("w", {5}, 0.5, 1.5), reduction, -100, 0.15};
    }));
  out.push_back(single("cross_entropy", "cross_entropy_probabilities_plain", [](CaseBuilder& b) {
    Node* p = b.call("softmax", {b.floats("logits", {3, 4}), 1});
    return std::vector<Argument>{b.floats("x", {3, 4}), p};
  }));

  // nll_loss(self, target, weight, reduction, ignore_index)
  auto nll = [](std::string name, SymShape input, SymShape target, bool weighted, std::string reduction,
                int64_t ignore_index, double ignored) {
    int64_t classes = input.size() == 1 ? input[0].constant() : input[1].constant();
    return single("nll_loss", name, [=](CaseBuilder& b) {
      Node* x = b.call("log_softmax", {b.floats("x", input), input.size() == 1 ? 0 : 1});
      Node* t = b.indices("t", target, classes, ignore_index, ignored);
      Argument weight = weighted ? Argument(b.uniform("w", {classes}, 0.2, 2.0)) : Argument();
      return std::vector<Argument>{x, t, weight, reduction, ignore_index};
    });
  };
  for (const char* reduction : {"mean", "sum", "none"}) {
    std::string suffix = std::string("_") + reduction;
    out.push_back(nll("nll_loss_plain" + suffix, {5, 4}, {5}, false, reduction, -100, 0.0));
    out.push_back(nll("nll_loss_weight_ignore" + suffix, {8, 4}, {8}, true, reduction, -100, 0.3));
    out.push_back(nll("nll_loss_spatial" + suffix, {2, 3, 4}, {2, 4}, true, reduction, 1, 0.0));
    out.push_back(nll("nll_loss_spatial_2d" + suffix, {2, 3, 2, 2}, {2, 2, 2}, false, reduction, -100, 0.2));
  }
  out.push_back(nll("nll_loss_unbatched", {6}, {}, true, "mean", -100, 0.0));
  out.push_back(single("nll_loss", "nll_loss_symbolic_batch", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {s0, 4}), b.indices("t", {s0}, 4, 3, 0.0), b.floats("w", {4}), "mean",
                                 3};
  }));

  for (const char* reduction : {"mean", "sum", "none"})
    out.push_back(single("mse_loss", std::string("mse_loss_") + reduction, [=](CaseBuilder& b) {
      return std::vector<Argument>{b.floats("x", {3, 4}), b.floats("y", {3, 4}), reduction};
    }));
  out.push_back(single("mse_loss", "mse_loss_broadcast_default", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {3, 4}), b.floats("y", {4})};
  }));
  out.push_back(single("mse_loss", "mse_loss_mixed_dtypes", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {3, 4}, DType::f64), b.floats("y", {3, 4}), "sum"};
  }));
}

void add_shape_variants(std::vector<Variant>& out) {
  for (const char* op : {"tril", "triu"}) {
    for (int64_t diagonal : {0, 1, -1, 3})
      out.push_back(single(op, std::string(op) + "_diagonal_" + std::to_string(diagonal), [=](CaseBuilder& b) {
        return std::vector<Argument>{b.floats("x", {2, 3, 4}), diagonal};
      }));
    out.push_back(single(op, std::string(op) + "_integers", [](CaseBuilder& b) {
      return std::vector<Argument>{b.indices("x", {4, 3}, 9)};
    }));
    out.push_back(single(op, std::string(op) + "_bool", [](CaseBuilder& b) {
      return std::vector<Argument>{b.mask("x", {3, 3}), -1};
    }));
    out.push_back(single(op, std::string(op) + "_symbolic_rows", [](CaseBuilder& b) {
      return std::vector<Argument>{b.floats("x", {s0, 4})};
    }));
  }
  out.push_back(single("flatten", "flatten_all", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {2, 3, 4})};
  }));
  out.push_back(single("flatten", "flatten_from_1", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {2, 3, 4, 5}), 1};
  }));
  out.push_back(single("flatten", "flatten_middle", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {2, 3, 4, 5}), 1, -2};
  }));
  out.push_back(single("flatten", "flatten_0d", [](CaseBuilder& b) { return std::vector<Argument>{b.floats("x", {})}; }));
  out.push_back(single("flatten", "flatten_of_transpose", [](CaseBuilder& b) {
    return std::vector<Argument>{b.call("transpose", {b.floats("x", {3, 4}), 0, 1})};
  }));
  out.push_back(single("flatten", "flatten_symbolic", [](CaseBuilder& b) {
    return std::vector<Argument>{b.floats("x", {s0, 3, 2}), 1};
  }));
  for (int64_t dim : {0, 1, 2, -1})
    out.push_back(single("stack", "stack_dim" + std::to_string(dim), [=](CaseBuilder& b) {
      return std::vector<Argument>{
          Argument(std::vector<Argument>{b.floats("a", {2, 3}), b.floats("b", {2, 3}), b.floats("c", {2, 3})}), dim};
    }));
  out.push_back(single("stack", "stack_mixed_dtypes", [](CaseBuilder& b) {
    return std::vector<Argument>{Argument(std::vector<Argument>{b.floats("a", {3}), b.indices("b", {3}, 4)})};
  }));
  out.push_back({"split", "split_every_piece", [](CaseBuilder& b) {
                   Node* x = b.floats("x", {4, 6});
                   Node* parts = b.call("split", {x, Argument::ints({1, 2, 3}), 1});
                   Node* first = b.call("getitem", {parts, 0});
                   Node* second = b.call("getitem", {parts, 1});
                   Node* third = b.call("getitem", {parts, 2});
                   b.output({first, second, b.call("mul", {third, 2.0})});
                 }});
  out.push_back({"split", "split_some_pieces_negative_dim", [](CaseBuilder& b) {
                   Node* x = b.floats("x", {5, 2});
                   Node* parts = b.call("split", {x, Argument::ints({2, 0, 3}), -2});
                   b.output({b.call("getitem", {parts, -1}), b.call("getitem", {parts, 1})});
                 }});
  out.push_back({"split", "split_chunk_size", [](CaseBuilder& b) {
                   Node* x = b.floats("x", {7, 2});
                   Node* parts = b.call("split", {x, 3});
                   b.output({b.call("getitem", {parts, 0}), b.call("getitem", {parts, 2})});
                 }});
}

std::vector<Variant> all_variants() {
  std::vector<Variant> variants;
  add_linear_variants(variants);
  add_softmax_variants(variants);
  add_normalization_variants(variants);
  add_activation_variants(variants);
  add_dropout_variants(variants);
  add_attention_variants(variants);
  add_loss_variants(variants);
  add_shape_variants(variants);
  return variants;
}

// ---------------------------------------------------------------- checks

bool is_composite_call(const Node& node) {
  if (node.op() != ir::OpKind::call_function) return false;
  return ir::OpRegistry::global().get(node.target()).composite;
}

void expect_no_composite(const Graph& graph, const std::string& what) {
  for (Node* node : graph.nodes()) EXPECT_FALSE(is_composite_call(*node)) << what << ": " << ir::describe(*node) << " remains";
}

// |a - b| <= tolerance * max(|a|, 1): relative above magnitude 1, absolute below. NaN
// matches NaN only; infinities must match exactly.
void expect_close(const std::vector<Tensor>& before, const std::vector<Tensor>& after, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(before.size(), after.size()) << what;
  for (size_t i = 0; i < before.size(); ++i) {
    ASSERT_EQ(before[i].sizes(), after[i].sizes()) << what << " output " << i;
    ASSERT_EQ(before[i].dtype(), after[i].dtype()) << what << " output " << i;
    for (int64_t j = 0; j < before[i].numel(); ++j) {
      double a = before[i].flat_double(j), b = after[i].flat_double(j);
      if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
        EXPECT_TRUE((std::isnan(a) && std::isnan(b)) || a == b) << what << " output " << i << " element " << j
                                                                << ": " << a << " vs " << b;
        continue;
      }
      ASSERT_LE(std::fabs(a - b), tolerance * std::max(std::fabs(a), 1.0))
          << what << " output " << i << " element " << j << ": " << a << " vs " << b;
    }
  }
}

std::map<std::string, Tensor> copies(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> result;
  for (const auto& [name, tensor] : inputs) result[name] = tensor.clone();
  return result;
}

// ---------------------------------------------------------------- (a) coverage

TEST(DecomposeCoverage, EveryCompositeOpHasADecomposition) {
  std::vector<std::string> missing;
  for (const ir::OpInfo* op : ir::OpRegistry::global().all()) {
    if (!op->composite) continue;
    // An in-place form is rewritten as its functional op + copy_: the functional op needs one.
    std::string functional = op->is_inplace() ? op->inplace_of : op->name();
    if (op->is_inplace()) {
      EXPECT_TRUE(ir::OpRegistry::global().get(functional).composite) << op->name();
    }
    if (decompositions::find_decomposition(functional) == nullptr) missing.push_back(op->name());
  }
  EXPECT_EQ(missing, std::vector<std::string>{});
}

TEST(DecomposeCoverage, EveryCompositeOpHasVariants) {
  std::set<std::string> covered;
  for (const Variant& variant : all_variants()) covered.insert(variant.op);
  std::vector<std::string> untested;
  for (const ir::OpInfo* op : ir::OpRegistry::global().all())
    if (op->composite && !covered.count(op->name())) untested.push_back(op->name());
  EXPECT_EQ(untested, std::vector<std::string>{});
}

TEST(DecomposeCoverage, TableHasNoEntryForACoreOp) {
  for (const ir::OpInfo* op : ir::OpRegistry::global().all()) {
    if (!op->composite) {
      EXPECT_EQ(decompositions::find_decomposition(op->name()), nullptr) << op->name();
    }
  }
}

// ---------------------------------------------------------------- (b) variants

class DecomposeVariant : public ::testing::TestWithParam<Variant> {};

TEST_P(DecomposeVariant, MatchesTheReferenceKernels) {
  const Variant& variant = GetParam();
  CaseBuilder builder(std::hash<std::string>()(variant.name));
  variant.build(builder);
  Graph& graph = builder.graph();
  bool uses_op = false;
  for (Node* node : graph.nodes()) uses_op |= node->target() == variant.op;
  ASSERT_TRUE(uses_op) << variant.name << " does not call " << variant.op;
  Graph original = graph.clone();
  std::vector<std::string> names = graph.output_names();

  EXPECT_TRUE(decompose(graph));
  ASSERT_NO_THROW(ir::verify(graph)) << variant.name;
  expect_no_composite(graph, variant.name);
  EXPECT_EQ(graph.output_names(), names);
  EXPECT_FALSE(decompose(graph)) << "a second run found composites";

  std::vector<Tensor> before = ir::Interpreter().run(original, copies(builder.inputs()));
  std::vector<Tensor> after = ir::Interpreter().run(graph, copies(builder.inputs()));
  expect_close(before, after, variant.tolerance, variant.name);
}

INSTANTIATE_TEST_SUITE_P(All, DecomposeVariant, ::testing::ValuesIn(all_variants()),
                         [](const ::testing::TestParamInfo<Variant>& variant) {
                           std::string name = variant.param.name;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// ---------------------------------------------------------------- (c) samples

class DecomposeSample : public ::testing::TestWithParam<std::string> {};

TEST_P(DecomposeSample, NoCompositeRemainsAndOutputsAreUnchanged) {
  const fs::path models = fs::path(KILN_SOURCE_DIR) / "samples" / "models";
  Graph graph = ir::load_model((models / (GetParam() + ".kiln")).string());
  std::map<std::string, Tensor> inputs;
  for (Node* placeholder : graph.placeholders())
    inputs[placeholder->target()] =
        read_npy((models / (GetParam() + "_data") / "inputs" / (placeholder->target() + ".npy")).string());
  functionalize(graph);
  Graph functional = graph.clone();
  std::vector<std::string> names = graph.output_names();

  decompose(graph);
  ASSERT_NO_THROW(ir::verify(graph));
  expect_no_composite(graph, GetParam());
  EXPECT_EQ(graph.output_names(), names);
  std::vector<Tensor> before = ir::Interpreter().run(functional, copies(inputs));
  std::vector<Tensor> after = ir::Interpreter().run(graph, copies(inputs));
  expect_close(before, after, 1e-5, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Models, DecomposeSample, ::testing::Values("mlp", "cnn", "attention", "inplace"));

// ---------------------------------------------------------------- the driver's promises

TEST(Decompose, CreatedNodesKeepTheSourceAndAreNamedAfterTheOriginal) {
  CaseBuilder b(1);
  Node* x = b.floats("x", {2, 8});
  Node* ln = b.graph().create_call("layer_norm", {x, Argument::ints({8})}, {}, "ln");
  ln->source = {"model.py", 12, "encoder.norm", "", ""};
  Node* relu = b.call("relu", {ln});
  b.output({relu});
  Graph& graph = b.graph();
  ASSERT_TRUE(decompose(graph));

  Node* result = graph.find("ln");
  ASSERT_NE(result, nullptr);
  EXPECT_NE(result->target(), "layer_norm");
  EXPECT_EQ(relu->args().at(0).node(), result);
  int created = 0;
  for (Node* node : graph.nodes()) {
    if (node == x || node == relu || node->op() == ir::OpKind::output) continue;
    ++created;
    EXPECT_EQ(node->source.file, "model.py") << node->name();
    EXPECT_EQ(node->source.line, 12) << node->name();
    EXPECT_EQ(node->source.module_path, "encoder.norm") << node->name();
    EXPECT_TRUE(node->name() == "ln" || node->name().rfind("ln_", 0) == 0) << node->name();
  }
  EXPECT_GE(created, 5);  // var_mean, its two elements, rstd, centered, normalized
  EXPECT_TRUE(relu->source.empty());
}

// A group norm's statistics with several channels per group are each channel's, combined per
// group; also where the group norm reads a reshape that splits each group into whole channels
// (ONNX's export of nn.GroupNorm: Reshape to [N, G, -1], InstanceNormalization): there the
// channels are the reshape's input's. A reshape that does not split whole channels, or one
// channel per group, keeps one Welford pass over the group. Values as the reference kernel's.
TEST(Decompose, GroupStatisticsAreCombinedFromTheirChannels) {
  struct Case {
    SymShape source;                  // y
    std::vector<int64_t> grouped;     // the reshape of y the group norm reads, or empty: y itself
    int64_t groups;
    bool per_channel;                 // statistics from channel_rows of y
  };
  const Case cases[] = {
      {{2, 8, 3, 5}, {}, 4, true},
      {{s0, 6, 4}, {}, 3, true},
      {{2, 8, 3, 5}, {2, 4, 30}, 4, true},   // 2 channels of y per group
      {{2, 4, 6, 5}, {2, 4, 30}, 4, false},  // one channel per group
      {{2, 6, 5, 4}, {2, 4, 30}, 4, false},  // 6 channels do not split into 4 groups
      {{2, 8, 3, 5}, {2, 8, 15}, 8, false},  // an instance norm of y as it is
  };
  for (const Case& c : cases) {
    CaseBuilder b(31);
    Node* y = b.floats("y", c.source, DType::f32, 2.0);
    Node* x = c.grouped.empty() ? y : b.call("reshape", {y, Argument::ints(c.grouped)});
    b.output({b.call("group_norm", {x, c.groups, Argument(), Argument(), 1e-5})});
    Graph& graph = b.graph();
    Graph original = graph.clone();
    ASSERT_TRUE(decompose(graph));
    ASSERT_NO_THROW(ir::verify(graph));
    bool per_channel = false;
    for (Node* node : graph.nodes()) {
      if (node->target() != "var_mean") continue;
      // [N, C, L] is its own channel rows; others are reshaped to it.
      Node* rows = node->args().at(0).node();
      per_channel = rows == y || (rows->name().find("channel_rows") != std::string::npos && rows->args().at(0).node() == y);
    }
    const std::string what = "case " + std::to_string(&c - cases);
    EXPECT_EQ(per_channel, c.per_channel) << what << "\n" << ir::print_graph(graph);
    std::vector<Tensor> before = ir::Interpreter().run(original, copies(b.inputs()));
    std::vector<Tensor> after = ir::Interpreter().run(graph, copies(b.inputs()));
    expect_close(before, after, 1e-5, what);
  }
}

TEST(Decompose, NestedCompositesAreDecomposedToo) {
  CaseBuilder b(2);
  Node* q = b.floats("q", {3, 4});
  b.output({b.call("scaled_dot_product_attention", {q, q, q, b.mask("m", {3, 3})})});
  Graph& graph = b.graph();
  decompose(graph);
  expect_no_composite(graph, "sdpa");
  bool has_exp = false;
  for (Node* node : graph.nodes()) has_exp |= node->target() == "exp";
  EXPECT_TRUE(has_exp) << "the softmax sdpa emits was not decomposed";
}

// A symbolic softmax dim may be 0 at run time: the decomposition must still run (amax
// rejects an empty reduction) and give the empty result the kernel gives.
TEST(Decompose, SoftmaxOverASymbolicDimThatIsEmptyAtRunTime) {
  CaseBuilder b(14, {{"s0", 0}});
  Node* x = b.floats("x", {3, s0});
  Node* q = b.floats("q", {2, 4});
  Node* k = b.floats("k", {s0, 4});
  b.output({b.call("softmax", {x, 1}), b.call("log_softmax", {x, -1}),
            b.call("scaled_dot_product_attention", {q, k, b.floats("v", {s0, 3}), b.mask("m", {2, s0})})});
  Graph original = b.graph().clone();
  decompose(b.graph());
  std::vector<Tensor> before = ir::Interpreter().run(original, copies(b.inputs()));
  std::vector<Tensor> after = ir::Interpreter().run(b.graph(), copies(b.inputs()));
  expect_close(before, after, 1e-5, "empty softmax dims");
  EXPECT_EQ(after[0].sizes(), (Sizes{3, 0}));
  EXPECT_EQ(after[2].sizes(), (Sizes{2, 3}));
  for (int64_t i = 0; i < after[2].numel(); ++i) EXPECT_EQ(after[2].flat_double(i), 0.0);
}

TEST(Decompose, SoftmaxByHand) {
  // softmax([0, log 3]) = [1/4, 3/4]; log_softmax = [log 1/4, log 3/4].
  CaseBuilder b(3);
  Node* x = b.given("x", {2}, DType::f32, {0.0, std::log(3.0)});
  b.output({b.call("softmax", {x, 0}), b.call("log_softmax", {x, 0})});
  decompose(b.graph());
  std::vector<Tensor> out = ir::Interpreter().run(b.graph(), b.inputs());
  EXPECT_NEAR(out[0].flat_double(0), 0.25, 1e-7);
  EXPECT_NEAR(out[0].flat_double(1), 0.75, 1e-7);
  EXPECT_NEAR(out[1].flat_double(0), std::log(0.25), 1e-6);
  EXPECT_NEAR(out[1].flat_double(1), std::log(0.75), 1e-6);
}

TEST(Decompose, InplaceFormBecomesFunctionalOpAndCopy) {
  CaseBuilder b(4);
  Node* x = b.floats("x", {3});
  Node* copy = b.call("clone", {x});
  b.call("silu_", {copy});
  b.output({copy});
  Graph& graph = b.graph();
  decompose(graph);
  std::vector<std::string> targets;
  for (Node* node : graph.nodes())
    if (node->op() == ir::OpKind::call_function) targets.push_back(node->target());
  EXPECT_EQ(targets, (std::vector<std::string>{"clone", "sigmoid", "mul", "copy_"}));
}

// On a graph that mutates, a decomposition must not make its result alias an input: flatten
// returned fresh memory, reshape would see the later add_.
TEST(Decompose, ViewResultsAreClonedWhenTheGraphMutates) {
  CaseBuilder b(5);
  Node* x = b.floats("x", {2, 3});
  Node* copy = b.call("clone", {x});
  Node* flat = b.call("flatten", {copy});
  Node* parts = b.call("split", {copy, Argument::ints({1, 1})});
  Node* first = b.call("getitem", {parts, 0});
  b.call("add_", {copy, 10.0});
  b.output({flat, first, copy});
  Graph& graph = b.graph();
  Graph original = graph.clone();
  decompose(graph);
  ir::verify(graph);
  expect_close(ir::Interpreter().run(original, copies(b.inputs())), ir::Interpreter().run(graph, copies(b.inputs())),
               0, "mutating graph");
}

TEST(Decompose, FunctionalGraphsGetNoClonesForViews) {
  CaseBuilder b(6);
  b.output({b.call("flatten", {b.floats("x", {2, 3})})});
  decompose(b.graph());
  std::vector<std::string> targets;
  for (Node* node : b.graph().nodes())
    if (node->op() == ir::OpKind::call_function) targets.push_back(node->target());
  EXPECT_EQ(targets, std::vector<std::string>{"reshape"});
}

TEST(Decompose, UnusedSplitPiecesAreNotEmitted) {
  CaseBuilder b(7);
  Node* parts = b.call("split", {b.floats("x", {6}), Argument::ints({2, 2, 2})});
  std::string middle = b.call("getitem", {parts, 1})->name();
  b.output({b.graph().find(middle)});
  decompose(b.graph());
  int slices = 0;
  for (Node* node : b.graph().nodes()) slices += node->target() == "slice";
  EXPECT_EQ(slices, 1);
  // The slice took over the getitem's name.
  Node* result = b.graph().find(middle);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->target(), "slice");
  EXPECT_EQ(result->args().at(2).integer(), 2);
  EXPECT_EQ(result->args().at(3).integer(), 4);
}

// The kept elements are exactly those whose Philox draw is >= p, computed here from
// runtime/philox.h alone; a kept element is x / (1 - p).
TEST(Decompose, DropoutKeepsExactlyTheElementsWhoseDrawIsAtLeastP) {
  for (double p : {0.1, 0.3, 0.5, 0.7, 0.9}) {
    CaseBuilder b(8);
    Node* x = b.uniform("x", {32, 32}, 1.0, 2.0);
    b.output({b.call("dropout", {x, p, true}, {{"seed", 77}})});
    decompose(b.graph());
    expect_no_composite(b.graph(), "dropout");
    std::vector<Tensor> out = ir::Interpreter().run(b.graph(), b.inputs());
    const Tensor& input = b.inputs().at("x");
    for (int64_t i = 0; i < input.numel(); ++i) {
      bool keep = double(philox_uniform(77, 0, uint64_t(i))) >= p;
      double expected = keep ? input.flat_double(i) / (1 - p) : 0.0;
      ASSERT_NEAR(out[0].flat_double(i), expected, 1e-6 * std::fabs(expected)) << "p " << p << " element " << i;
    }
  }
}

// 0.7 rounds down in f32 (0.69999999); a draw of exactly that value must still be dropped,
// as in the kernel's double comparison.
TEST(Decompose, DropoutThresholdIsExactInFloat) {
  float rounded = 0.7f;
  ASSERT_LT(double(rounded), 0.7);
  // The threshold the decomposition writes is a multiple of 2^-24 no smaller than p.
  CaseBuilder b(9);
  b.output({b.call("dropout", {b.floats("x", {4}), 0.7, true})});
  decompose(b.graph());
  double threshold = -1;
  for (Node* node : b.graph().nodes())
    if (node->target() == "ge") threshold = node->args().at(1).floating();
  EXPECT_GE(threshold, 0.7);
  EXPECT_LT(threshold - 0.7, std::ldexp(1.0, -24));
  EXPECT_EQ(std::ldexp(threshold, 24), std::floor(std::ldexp(threshold, 24)));
  EXPECT_EQ(double(float(threshold)), threshold);
}

TEST(Decompose, AttentionWithDropoutIsRefusedNamingTheNode) {
  CaseBuilder b(10);
  Node* q = b.floats("q", {2, 4});
  b.graph().create_call("scaled_dot_product_attention", {q, q, q, Argument(), 0.1}, {}, "attn");
  b.output({b.graph().find("attn")});
  try {
    decompose(b.graph());
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("%attn"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("dropout_p"));
  }
  // Nothing half-done is left behind.
  ir::verify(b.graph());
  EXPECT_NE(b.graph().find("attn"), nullptr);
}

// A decomposition that needs a number the graph only knows symbolically says so.
TEST(Decompose, SymbolicSizesThatMustBeNumbersAreReported) {
  {
    CaseBuilder b(12);
    Node* x = b.floats("x", {2, s0});
    b.graph().create_call("cross_entropy", {x, b.indices("t", {2}, 2), Argument(), "mean", -100, 0.1}, {}, "ce");
    b.output({b.graph().find("ce")});
    try {
      decompose(b.graph());
      FAIL() << "expected an error";
    } catch (const Error& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("%ce (cross_entropy)"));
      EXPECT_THAT(error.what(), ::testing::HasSubstr("label_smoothing needs a static number of classes, got s0"));
    }
  }
}

TEST(Decompose, GraphWithoutCompositesIsUnchanged) {
  CaseBuilder b(11);
  b.output({b.call("relu", {b.floats("x", {3})})});
  EXPECT_FALSE(decompose(b.graph()));
}

}  // namespace
}  // namespace kiln::passes
