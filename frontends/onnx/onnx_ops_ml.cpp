// ONNX ops of the domains beside the default one, written with Kiln's core ops:
//  - ai.onnx.ml: Binarizer, ArrayFeatureExtractor, TreeEnsemble (each tree, known at import
//    time, becomes a chain of where() from its leaves up, per target; the trees' leaf weights
//    summed, averaged, or their min or max taken; no post transform);
//  - ai.onnx.preview.training: the optimizer steps Adagrad, Adam and Momentum (standard and
//    nesterov) over any number of tensors, as ONNX's reference computes them (the iteration
//    count T selects the bias corrections with where(), so T stays a run-time input).
#include <cmath>
#include <limits>
#include <map>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

using ir::Node;

// ---------------------------------------------------------------- ai.onnx.ml

void convert_binarizer(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  context.emit(0, "cast", {context.call("gt", {x, context.float_attribute("threshold", 0.0)}), x->value().dtype});
}

// data[..., indices]; a vector's result is a one-row matrix.
void convert_array_feature_extractor(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  ir::Node* indices = context.call("reshape", {context.tensor(1), ir::Argument::ints({-1})});
  if (indices->value().dtype != DType::i64) indices = context.call("cast", {indices, DType::i64});
  ir::Node* picked = context.call("index_select", {x, int64_t(-1), indices});
  if (x->value().rank() == 1) picked = context.call("unsqueeze", {picked, int64_t(0)});
  context.set_output(0, picked);
}

std::vector<double> numbers_attribute(const OnnxNodeContext& context, std::string_view name) {
  std::vector<double> values;
  if (const auto* attribute = context.attribute(name)) {
    if (attribute->has_t()) {
      Tensor tensor = context.tensor_attribute(name);
      for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.flat_double(i));
    } else {
      values.assign(attribute->floats().begin(), attribute->floats().end());
    }
  }
  return values;
}

struct TreeEnsemble {
  std::vector<double> splits, weights, members;
  std::vector<int64_t> features, modes, true_ids, false_ids, true_leafs, false_leafs, targets, missing_true;
  size_t next_member = 0;
};

// The value of `target` for every row, from node `index` (a leaf when `leaf`) down.
ir::Node* tree_value(OnnxNodeContext& context, TreeEnsemble& trees, ir::Node* x, int64_t index, bool leaf, int64_t target,
                     std::map<std::tuple<int64_t, bool, int64_t>, ir::Node*>& cache) {
  auto key = std::make_tuple(index, leaf, target);
  if (auto found = cache.find(key); found != cache.end()) return found->second;
  DType dtype = x->value().dtype;
  ir::SymShape rows = {x->value().shape[0]};
  ir::Node* result = nullptr;
  if (leaf) {
    double weight = trees.targets.at(size_t(index)) == target ? trees.weights.at(size_t(index)) : 0.0;
    result = context.call("full", {ir::Argument::sym_ints(rows), scalar_argument(weight, dtype)}, {{"dtype", dtype}});
  } else {
    size_t i = size_t(index);
    ir::Node* feature = context.call("select", {x, int64_t(1), trees.features.at(i)});
    double split = trees.splits.at(i);
    ir::Node* condition = nullptr;
    switch (trees.modes.at(i)) {
      case 0: condition = context.call("le", {feature, split}); break;
      case 1: condition = context.call("lt", {feature, split}); break;
      case 2: condition = context.call("ge", {feature, split}); break;
      case 3: condition = context.call("gt", {feature, split}); break;
      case 4: condition = context.call("eq", {feature, split}); break;
      case 5: condition = context.call("ne", {feature, split}); break;
      case 6: {
        // The node's set: the membership values up to the next NaN, in the order nodes are met.
        while (trees.next_member < trees.members.size() && !std::isnan(trees.members[trees.next_member])) {
          ir::Node* equal = context.call("eq", {feature, trees.members[trees.next_member++]});
          condition = condition ? context.call("logical_or", {condition, equal}) : equal;
        }
        ++trees.next_member;
        if (!condition) condition = context.call("full_like", {feature, false}, {{"dtype", DType::boolean}});
        break;
      }
      default: context.fail("node mode ", trees.modes.at(i), " is not one of 0..6");
    }
    if (!trees.missing_true.empty() && trees.missing_true.at(i) != 0)
      condition = context.call("logical_or", {condition, context.call("isnan", {feature})});
    ir::Node* if_true = tree_value(context, trees, x, trees.true_ids.at(i), trees.true_leafs.at(i) != 0, target, cache);
    ir::Node* if_false = tree_value(context, trees, x, trees.false_ids.at(i), trees.false_leafs.at(i) != 0, target, cache);
    result = context.call("where", {condition, if_true, if_false});
  }
  cache[key] = result;
  return result;
}

void convert_tree_ensemble(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  if (x->value().rank() != 2 || !is_floating(x->value().dtype)) context.fail("X must be a floating matrix [N, features]");
  if (context.int_attribute("post_transform", 0) != 0) context.fail("post_transform other than NONE is not supported");
  int64_t aggregate = context.int_attribute("aggregate_function", 1), targets = context.int_attribute("n_targets", 0);
  TreeEnsemble trees;
  trees.splits = numbers_attribute(context, "nodes_splits");
  trees.weights = numbers_attribute(context, "leaf_weights");
  trees.members = numbers_attribute(context, "membership_values");
  for (double mode : numbers_attribute(context, "nodes_modes")) trees.modes.push_back(int64_t(mode));
  trees.features = context.ints_attribute("nodes_featureids");
  trees.true_ids = context.ints_attribute("nodes_truenodeids");
  trees.false_ids = context.ints_attribute("nodes_falsenodeids");
  trees.true_leafs = context.ints_attribute("nodes_trueleafs");
  trees.false_leafs = context.ints_attribute("nodes_falseleafs");
  trees.targets = context.ints_attribute("leaf_targetids");
  trees.missing_true = context.ints_attribute("nodes_missing_value_tracks_true");
  std::vector<int64_t> roots = context.ints_attribute("tree_roots");
  if (targets < 1 || roots.empty()) context.fail("n_targets and tree_roots are required");
  std::vector<ir::Argument> columns;
  for (int64_t target = 0; target < targets; ++target) {
    trees.next_member = 0;
    std::map<std::tuple<int64_t, bool, int64_t>, ir::Node*> cache;
    ir::Node* total = nullptr;
    for (int64_t root : roots) {
      size_t r = size_t(root);
      bool leaf = trees.true_leafs.at(r) && trees.false_leafs.at(r) && trees.true_ids.at(r) == trees.false_ids.at(r);
      ir::Node* value = tree_value(context, trees, x, leaf ? trees.true_ids.at(r) : root, leaf, target, cache);
      if (!total) total = value;
      else if (aggregate == 0 || aggregate == 1) total = context.call("add", {total, value});
      else total = context.call(aggregate == 2 ? "minimum" : "maximum", {total, value});
    }
    if (aggregate == 0) total = context.call("div", {total, double(roots.size())});
    else if (aggregate < 0 || aggregate > 3) context.fail("aggregate_function ", aggregate, " is not one of 0..3");
    columns.emplace_back(context.call("unsqueeze", {total, int64_t(1)}));
  }
  context.emit(0, "cat", {ir::Argument(columns), int64_t(1)});
}

// ---------------------------------------------------------------- ai.onnx.preview.training

// R, T, then `groups` lists of n tensors each: n.
size_t per_group(const OnnxNodeContext& context, size_t groups) {
  size_t tensors = context.input_count() - 2;
  if (context.input_count() < 2 + groups || tensors % groups != 0)
    context.fail("expects R, T and ", groups, " lists of equally many tensors");
  return tensors / groups;
}

ir::Node* iteration(OnnxNodeContext& context, DType dtype) { return context.call("cast", {context.tensor(1), dtype}); }

void convert_adagrad(OnnxNodeContext& context) {
  size_t n = per_group(context, 3);
  double decay = context.float_attribute("decay_factor", 0.0), epsilon = context.float_attribute("epsilon", 0.0),
         norm = context.float_attribute("norm_coefficient", 0.0);
  for (size_t i = 0; i < n; ++i) {
    ir::Node* x = context.tensor(2 + i);
    ir::Node* g = context.tensor(2 + n + i);
    ir::Node* h = context.tensor(2 + 2 * n + i);
    DType dtype = x->value().dtype;
    ir::Node* rate = context.call("div", {context.tensor(0), context.call("add", {context.call("mul", {iteration(context, dtype), decay}), 1.0})});
    ir::Node* regularized = context.call("add", {context.call("mul", {x, norm}), g});
    ir::Node* h_new = context.call("add", {h, context.call("mul", {regularized, regularized})});
    ir::Node* step = context.call("div", {context.call("mul", {rate, regularized}), context.call("add", {context.call("sqrt", {h_new}), epsilon})});
    context.emit(i, "sub", {x, step});
    context.set_output(n + i, h_new);
  }
}

void convert_momentum(OnnxNodeContext& context) {
  size_t n = per_group(context, 3);
  double alpha = context.float_attribute("alpha", 0.0), beta = context.float_attribute("beta", 0.0),
         norm = context.float_attribute("norm_coefficient", 0.0);
  std::string mode = context.string_attribute("mode", "standard");
  if (mode != "standard" && mode != "nesterov") context.fail("mode '", mode, "' is not standard or nesterov");
  for (size_t i = 0; i < n; ++i) {
    ir::Node* x = context.tensor(2 + i);
    ir::Node* g = context.tensor(2 + n + i);
    ir::Node* v = context.tensor(2 + 2 * n + i);
    DType dtype = x->value().dtype;
    ir::Node* regularized = context.call("add", {context.call("mul", {x, norm}), g});
    ir::Node* beta_adjusted = context.call("where", {context.call("gt", {iteration(context, dtype), 0.0}), beta, 1.0});
    ir::Node* v_new = context.call("add", {context.call("mul", {v, alpha}), context.call("mul", {beta_adjusted, regularized})});
    ir::Node* direction = mode == "standard" ? v_new : context.call("add", {regularized, context.call("mul", {v_new, alpha})});
    context.emit(i, "sub", {x, context.call("mul", {context.tensor(0), direction})});
    context.set_output(n + i, v_new);
  }
}

void convert_adam(OnnxNodeContext& context) {
  size_t n = per_group(context, 4);
  double alpha = context.float_attribute("alpha", 0.9), beta = context.float_attribute("beta", 0.999),
         epsilon = context.float_attribute("epsilon", 0.0), norm = context.float_attribute("norm_coefficient", 0.0),
         norm_post = context.float_attribute("norm_coefficient_post", 0.0);
  for (size_t i = 0; i < n; ++i) {
    ir::Node* x = context.tensor(2 + i);
    ir::Node* g = context.tensor(2 + n + i);
    ir::Node* v = context.tensor(2 + 2 * n + i);
    ir::Node* h = context.tensor(2 + 3 * n + i);
    DType dtype = x->value().dtype;
    ir::Node* regularized = context.call("add", {context.call("mul", {x, norm}), g});
    ir::Node* v_new = context.call("add", {context.call("mul", {v, alpha}), context.call("mul", {regularized, 1 - alpha})});
    ir::Node* h_new = context.call("add", {context.call("mul", {h, beta}), context.call("mul", {context.call("mul", {regularized, regularized}), 1 - beta})});
    ir::Node* t = iteration(context, dtype);
    // R * sqrt(1 - beta^T) / (1 - alpha^T) once T > 0 (the unused branch may divide by 0).
    ir::Node* corrected = context.call("div", {context.call("mul", {context.tensor(0), context.call("sqrt", {context.call("sub", {1.0, context.call("pow", {beta, t})})})}),
                                              context.call("sub", {1.0, context.call("pow", {alpha, t})})});
    ir::Node* rate = context.call("where", {context.call("gt", {t, 0.0}), corrected, context.tensor(0)});
    ir::Node* step = context.call("mul", {rate, context.call("div", {v_new, context.call("add", {context.call("sqrt", {h_new}), epsilon})})});
    context.emit(i, "mul", {context.call("sub", {x, step}), 1 - norm_post});
    context.set_output(n + i, v_new);
    context.set_output(2 * n + i, h_new);
  }
}

}  // namespace

void register_onnx_ml_ops(OnnxOpTable& table) {
  table.add("ai.onnx.ml.Binarizer", convert_binarizer);
  table.add("ai.onnx.ml.ArrayFeatureExtractor", convert_array_feature_extractor);
  table.add("ai.onnx.ml.TreeEnsemble", convert_tree_ensemble);
  table.add("ai.onnx.preview.training.Adagrad", convert_adagrad);
  table.add("ai.onnx.preview.training.Momentum", convert_momentum);
  table.add("ai.onnx.preview.training.Adam", convert_adam);
}

}  // namespace kiln::frontends
