// The random graph generator's composite ops (the ones decompose rewrites): activations,
// softmax and log_softmax, the norms, linear and addmm, the losses, embedding, attention,
// dropout, and the shape helpers tril/triu, flatten, stack and split.
#include <algorithm>
#include <cmath>

#include "kiln/error.h"
#include "tests/support/random_graph_builder.h"

namespace kiln::test_support::detail {

namespace {

using ir::Argument;
using ir::Kwargs;
using ir::SymInt;
using ir::SymShape;

enum class Composite {
  activation,
  softmax,
  layer_norm,
  rms_norm,
  linear,
  addmm,
  mse_loss,
  triangle,
  flatten,
  stack,
  split,
  cross_entropy,
  nll_loss,
  embedding,
  attention,
  batch_norm,
  group_norm,
  dropout,
};

}  // namespace

void GraphBuilder::add_composite() {
  static const std::vector<double> kWeights = {5, 3, 2, 1, 2.5, 1, 1, 1, 1,
                                               1, 1, 1, 1, 1,   1, 1, 1, options_.allow_random ? 0.7 : 0.0};
  auto kind = Composite(random_.weighted(kWeights));
  auto floats = [&](int64_t min_rank) {
    int v = pick([&](int i) { return is_float(i) && rank(i) >= min_rank; });
    if (v < 0) fail("no floating operand of rank >= ", min_rank);
    return tame(v, 30);
  };
  auto static_dim = [&](const SymInt& d) {
    if (!d.is_constant()) fail("needs a static size");
    return d.constant();
  };

  switch (kind) {
    case Composite::activation: {
      static const char* const kOps[] = {"gelu", "silu", "leaky_relu", "elu", "hardsigmoid", "hardswish", "softplus"};
      std::string op = kOps[random_.uniform(0, 6)];
      int x = floats(0);
      std::vector<Argument> args = {node(x)};
      Kwargs kwargs;
      if (op == "gelu" && random_.chance(0.5))
        kwargs.emplace_back("approximate", random_.chance(0.6) ? "tanh" : "none");
      if (op == "leaky_relu" && random_.chance(0.5)) args.emplace_back(0.2);
      if (op == "elu" && random_.chance(0.5)) args.emplace_back(0.5);
      if (op == "softplus" && random_.chance(0.5)) {
        args.emplace_back(2.0);
        args.emplace_back(random_.chance(0.5) ? 20.0 : 1.0);
      }
      fresh(call(op, args, kwargs), bound(x) + 1);
      break;
    }
    case Composite::softmax: {
      int x = floats(0);
      int64_t dim = random_dim_index(rank(x));
      bool log = random_.chance(0.4);
      std::vector<Argument> args = {node(x), dim};
      if (random_.chance(0.15)) args.emplace_back(DType::f32);
      double magnitude =
          log ? 2 * bound(x) + std::log(double(std::max<int64_t>(estimate_numel(meta(x).shape), 1))) + 1 : 1.0;
      fresh(call(log ? "log_softmax" : "softmax", args), magnitude);
      break;
    }
    case Composite::layer_norm:
    case Composite::rms_norm: {
      int x = floats(1);
      const SymShape& shape = meta(x).shape;
      int64_t count = random_.uniform(1, std::min<int64_t>(2, rank(x)));
      SymShape normalized(shape.end() - count, shape.end());
      double weight_bound = 1, bias_bound = 0;
      Argument weight, bias;
      if (random_.chance(0.6)) {
        int w = new_parameter(normalized, 0.5, 1.5);
        weight = node(w);
        weight_bound = bound(w);
      }
      double magnitude = std::sqrt(double(std::max<int64_t>(estimate_numel(normalized), 1))) * weight_bound;
      if (kind == Composite::layer_norm) {
        if (random_.chance(0.5)) {
          int b = new_parameter(normalized, -0.5, 0.5);
          bias = node(b);
          bias_bound = bound(b);
        }
        std::vector<Argument> args = {node(x), Argument::sym_ints(normalized), weight, bias};
        if (random_.chance(0.3)) args.emplace_back(1e-3);
        fresh(call("layer_norm", args), magnitude + bias_bound + 1);
      } else {
        std::vector<Argument> args = {node(x), Argument::sym_ints(normalized), weight};
        if (random_.chance(0.5)) args.emplace_back(1e-5);
        fresh(call("rms_norm", args), magnitude + 1);
      }
      break;
    }
    case Composite::linear: {
      int x = floats(1);
      x = tame(x, 3);
      SymInt k = meta(x).shape.back();
      SymInt n = random_dim(true);
      int weight = new_parameter({n, k}, -0.5, 0.5);
      Argument bias;
      double magnitude = bound(x) * bound(weight) * double(std::max<int64_t>(estimate(k), 1)) + 1;
      if (random_.chance(0.6)) {
        int b = new_parameter({n}, -0.5, 0.5);
        bias = node(b);
        magnitude += bound(b);
      }
      std::vector<Argument> args = {node(x), node(weight)};
      if (!bias.is_none() || random_.chance(0.3)) args.push_back(bias);
      fresh(call("linear", args), magnitude);
      break;
    }
    case Composite::addmm: {
      int mat1 = pick([&](int i) { return is_float(i) && rank(i) == 2; });
      if (mat1 < 0) mat1 = new_input(random_shape(2), DType::f32);
      mat1 = tame(mat1, 3);
      const SymShape& shape = meta(mat1).shape;
      SymInt m = random_dim(true);
      int mat2 = new_parameter({shape[1], m}, -0.5, 0.5);
      SymShape self_shape = random_.chance(0.5) ? SymShape{m} : SymShape{shape[0], m};
      for (SymInt& d : self_shape)
        if (!d.is_constant() && !d.is_symbol()) d = SymInt(1);
      int self = new_parameter(self_shape, -1, 1);
      Kwargs kwargs;
      double beta = 1, alpha = 1;
      if (random_.chance(0.3)) kwargs.emplace_back("beta", beta = 0.5);
      if (random_.chance(0.3)) kwargs.emplace_back("alpha", alpha = 2.0);
      double magnitude =
          beta * bound(self) + alpha * bound(mat1) * bound(mat2) * double(std::max<int64_t>(estimate(shape[1]), 1));
      fresh(call("addmm", {node(self), node(mat1), node(mat2)}, kwargs), magnitude + 1);
      break;
    }
    case Composite::mse_loss: {
      int a = floats(0);
      a = tame(a, 10);
      int b = pick([&](int i) { return is_float(i) && meta(i).shape == meta(a).shape && i != a; });
      if (b < 0) {
        SymShape shape = meta(a).shape;
        for (SymInt& d : shape)
          if (!d.is_constant() && !d.is_symbol()) fail("mse_loss partner of a derived symbolic shape");
        b = new_input(shape, DType::f32);
      }
      b = tame(b, 10);
      static const char* const kReductions[] = {"mean", "sum", "none"};
      std::string reduction = kReductions[random_.uniform(0, 2)];
      if (reduction == "mean" && smallest_count(meta(a).shape, {}) == 0 && random_.chance(0.9)) reduction = "sum";
      double magnitude =
          std::pow(bound(a) + bound(b), 2) * (reduction == "sum" ? double(estimate_numel(meta(a).shape)) : 1.0);
      std::vector<Argument> args = {node(a), node(b)};
      if (reduction != "mean" || random_.chance(0.3)) args.emplace_back(reduction);
      fresh(call("mse_loss", args), magnitude + 1);
      break;
    }
    case Composite::triangle: {
      int x = pick([&](int i) { return rank(i) >= 2; });
      if (x < 0) fail("no matrix");
      std::vector<Argument> args = {node(x)};
      if (random_.chance(0.6)) args.emplace_back(random_.uniform(-2, 2));
      fresh(call(random_.chance(0.5) ? "tril" : "triu", args), bound(x));
      break;
    }
    case Composite::flatten: {
      int x = pick();
      int64_t r = rank(x);
      std::vector<Argument> args = {node(x)};
      if (random_.chance(0.7)) {
        int64_t start = random_dim_index(r), end = random_dim_index(r);
        int64_t s = start < 0 ? start + std::max<int64_t>(r, 1) : start,
                e = end < 0 ? end + std::max<int64_t>(r, 1) : end;
        if (s > e) std::swap(start, end);
        args.emplace_back(start);
        args.emplace_back(end);
      }
      fresh(call("flatten", args), bound(x));
      break;
    }
    case Composite::stack: {
      int a = pick();
      std::vector<Argument> tensors = {node(a)};
      double magnitude = bound(a);
      int64_t count = random_.uniform(1, 3);
      for (int64_t i = 1; i < count; ++i) {
        int b = pick([&](int j) { return meta(j).shape == meta(a).shape && dtype(j) == dtype(a); });
        tensors.emplace_back(node(b));
        magnitude = std::max(magnitude, bound(b));
      }
      int64_t dim = random_.uniform(-(rank(a) + 1), rank(a));
      fresh(call("stack", {Argument(tensors), dim}), magnitude);
      break;
    }
    case Composite::split: {
      int x = pick([&](int i) { return rank(i) >= 1; });
      if (x < 0) fail("no operand");
      int64_t dim = random_dim_index(rank(x));
      int64_t size = static_dim(meta(x).shape[size_t(dim < 0 ? dim + rank(x) : dim)]);
      std::vector<int64_t> sizes;
      for (int64_t left = size; left > 0;) {
        int64_t piece = random_.uniform(1, left);
        sizes.push_back(piece);
        left -= piece;
      }
      if (sizes.empty() || random_.chance(0.1)) sizes.push_back(0);
      ir::Node* pieces = call("split", {node(x), Argument::ints(sizes), dim});
      for (size_t i = 0; i < sizes.size(); ++i)
        if (i == 0 || random_.chance(0.5)) fresh(call("getitem", {pieces, int64_t(i)}), bound(x));
      break;
    }
    case Composite::cross_entropy:
    case Composite::nll_loss: {
      // logits [N, C] or [N, C, d]; targets are argmax over the classes, so in range.
      int logits = pick([&](int i) { return is_float(i) && (rank(i) == 2 || rank(i) == 3); });
      if (logits < 0 || random_.chance(0.3)) {
        SymShape shape = {random_dim(true), SymInt(random_.uniform(2, 5))};
        if (random_.chance(0.3)) shape.push_back(random_dim(true));
        logits = new_input(shape, DType::f32);
      }
      logits = tame(logits, 10);
      int64_t classes = static_dim(meta(logits).shape[1]);
      if (classes < 1) fail("no classes");
      int scores = pick([&](int i) { return !is_bool(i) && steady(i) && meta(i).shape == meta(logits).shape; });
      if (scores < 0) fail("no steady scores for the targets");
      int target = fresh(call("argmax", {node(scores), int64_t(1)}), double(classes));
      int input = logits;
      if (kind == Composite::nll_loss)
        input = fresh(call("log_softmax", {node(logits), int64_t(1)}), 2 * bound(logits) + 3);
      Argument weight =
          random_.chance(0.3) ? Argument(node(new_parameter({SymInt(classes)}, 0.5, 1.5, false))) : Argument();
      static const char* const kReductions[] = {"mean", "sum", "none"};
      Kwargs kwargs;
      kwargs.emplace_back("reduction", kReductions[random_.uniform(0, 2)]);
      if (random_.chance(0.25)) kwargs.emplace_back("ignore_index", int64_t(0));
      if (kind == Composite::cross_entropy && random_.chance(0.3)) kwargs.emplace_back("label_smoothing", 0.1);
      double magnitude =
          (2 * bound(logits) + 3) * 1.5 * double(std::max<int64_t>(estimate_numel(meta(target).shape), 1));
      fresh(call(kind == Composite::cross_entropy ? "cross_entropy" : "nll_loss", {node(input), node(target), weight},
                 kwargs),
            magnitude);
      break;
    }
    case Composite::embedding: {
      int64_t rows = random_.uniform(2, 6);
      int weight = new_parameter({SymInt(rows), random_dim(false)}, -1, 1, false);
      int integers = pick([&](int i) { return dtype(i) == DType::i64; });
      int indices;
      if (integers >= 0 && random_.chance(0.7)) {
        indices = fresh(call("clamp", {node(integers), int64_t(0), rows - 1}), double(rows));
      } else {
        indices = index_vector(SymInt(rows), random_.uniform(1, 4));
      }
      std::vector<Argument> args = {node(weight), node(indices)};
      if (random_.chance(0.3)) args.emplace_back(random_.uniform(0, rows - 1));  // padding_idx
      fresh(call("embedding", args), bound(weight));
      break;
    }
    case Composite::attention: {
      int q = floats(2);
      q = tame(q, 3);
      const SymShape& shape = meta(q).shape;
      SymShape batch(shape.begin(), shape.end() - 2);
      for (const SymInt& d : batch)
        if (!d.is_constant() && !d.is_symbol()) fail("attention batch of a derived symbolic shape");
      SymInt length = shape[shape.size() - 2], embed = shape.back();
      if (!(length.is_constant() || length.is_symbol()) || !(embed.is_constant() || embed.is_symbol()))
        fail("attention sizes must be plain");
      SymInt source = random_dim(true);
      SymShape key_shape = batch, value_shape = batch;
      key_shape.push_back(source);
      key_shape.push_back(embed);
      value_shape.push_back(source);
      value_shape.push_back(random_dim(true));
      int k = new_input(key_shape, DType::f32);
      int v = new_input(value_shape, DType::f32);
      std::vector<Argument> args = {node(q), node(k), node(v)};
      Kwargs kwargs;
      double roll = random_.real(0, 1);
      if (roll < 0.3) {  // an additive float mask
        args.emplace_back(node(new_parameter({length, source}, -1, 1)));
      } else if (roll < 0.45) {  // a bool mask whose first column is always visible: no empty row
        if (!source.is_constant() || source.constant() < 1) fail("a bool mask needs keys");
        int visible = new_input({length, source}, DType::boolean);
        int columns = fresh(call("arange", {int64_t(0), source.constant()}), 8.0);
        int first = fresh(call("eq", {node(columns), int64_t(0)}), 1.0);
        args.emplace_back(node(fresh(call("logical_or", {node(visible), node(first)}), 1.0)));
      } else if (roll < 0.65) {
        args.emplace_back(Argument());
        args.emplace_back(0.0);
        args.emplace_back(true);  // is_causal
      }
      if (random_.chance(0.3)) kwargs.emplace_back("scale", 0.5);
      fresh(call("scaled_dot_product_attention", args, kwargs), bound(v) + 1);
      break;
    }
    case Composite::batch_norm:
    case Composite::group_norm: {
      int x = floats(2);
      const SymShape& shape = meta(x).shape;
      int64_t channels = static_dim(shape[1]);
      if (channels < 1) fail("no channels");
      SymShape per_channel = {SymInt(channels)};
      Argument weight = random_.chance(0.6) ? Argument(node(new_parameter(per_channel, 0.5, 1.5))) : Argument();
      Argument bias = random_.chance(0.6) ? Argument(node(new_parameter(per_channel, -0.5, 0.5))) : Argument();
      double spread = std::sqrt(double(std::max<int64_t>(estimate_numel(shape), 1)));
      if (kind == Composite::batch_norm) {
        bool training = random_.chance(0.5);
        Argument mean, variance;
        double magnitude = spread * 2 + 1;
        if (!training || random_.chance(0.5)) {
          mean = node(new_parameter(per_channel, -0.5, 0.5, false));
          variance = node(new_parameter(per_channel, 0.5, 1.5, false));
          if (!training) magnitude = (bound(x) + 0.5) / std::sqrt(0.5) * 1.5 + 1;
        }
        std::vector<Argument> args = {node(x), weight, bias, mean, variance, training};
        if (random_.chance(0.3)) {
          args.emplace_back(0.1);
          args.emplace_back(1e-3);
        }
        fresh(call("batch_norm", args), magnitude);
      } else {
        std::vector<int64_t> divisors;
        for (int64_t g = 1; g <= channels; ++g)
          if (channels % g == 0) divisors.push_back(g);
        int64_t groups = random_.pick(divisors);
        std::vector<Argument> args = {node(x), groups, weight, bias};
        if (random_.chance(0.3)) args.emplace_back(1e-3);
        fresh(call("group_norm", args), spread * 2 + 1);
      }
      break;
    }
    case Composite::dropout: {
      int x = floats(0);
      static const double kRates[] = {0.0, 0.25, 0.5};
      double p = kRates[random_.uniform(0, 2)];
      std::vector<Argument> args = {node(x), p};
      bool train = random_.chance(0.6);
      args.emplace_back(train);
      fresh(call("dropout", args, {{"seed", random_.uniform(0, 99)}}), bound(x) / (1 - p) + 1);
      break;
    }
  }
}

}  // namespace kiln::test_support::detail
