// Tests of the random graph generator (tests/support/random_graph.h) that the property
// tests of passes/ rely on: one seed gives one graph, every graph verifies and runs in the
// reference interpreter with bounded values, the options are honoured, no graph writes into
// an expanded view or a parameter, and over 200 seeds the mix covers what the passes must
// handle (views, in-place ops through views and on inputs, reductions with keepdim and
// negative dims, broadcasting, symbols, empty tensors, composites, ...).
#include "tests/support/random_graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "kiln/error.h"

namespace kiln::test_support {
namespace {

constexpr uint64_t kSeeds = 200;

const ir::OpInfo* op_of(const ir::Node& node) {
  if (node.op() != ir::OpKind::call_function) return nullptr;
  return ir::OpRegistry::global().find(node.target());
}

// The index of the op's Tensor(a!) parameter, or -1.
int mutated_param(const ir::OpInfo& op) {
  for (size_t i = 0; i < op.schema.params.size(); ++i)
    if (op.schema.params[i].mutated) return int(i);
  return -1;
}

// The node whose storage `node` aliases: follows view ops (and in-place results) to a base.
const ir::Node* storage_base(const ir::Node* node) {
  while (const ir::OpInfo* op = op_of(*node)) {
    if (!op->is_view && mutated_param(*op) < 0) break;
    node = node->args().at(0).node();
  }
  return node;
}

bool has_symbol(const ir::SymShape& shape) {
  for (const ir::SymInt& d : shape)
    if (!d.is_constant()) return true;
  return false;
}

// What one graph contains, as flags.
struct Features {
  std::set<std::string> seen;
  void note(const std::string& feature) { seen.insert(feature); }
};

Features features_of(const ir::Graph& graph) {
  Features f;
  for (ir::Node* node : graph.nodes()) {
    if (node->op() == ir::OpKind::placeholder) {
      if (has_symbol(node->value().shape)) f.note("symbolic input");
      continue;
    }
    if (node->op() == ir::OpKind::get_attr) f.note("parameter");
    for (const ir::TensorMeta& value : node->meta.values) {
      if (value.dtype == DType::i64) f.note("i64 value");
      if (value.dtype == DType::boolean) f.note("bool value");
      if (value.rank() == 0) f.note("0-d value");
      if (value.rank() == 4) f.note("4-d value");
      for (const ir::SymInt& d : value.shape)
        if (d == ir::SymInt(0)) f.note("empty value");
    }
    const ir::OpInfo* op = op_of(*node);
    if (!op) continue;
    ir::OpCall call = ir::OpCall::of(*node);
    if (op->is_view) f.note("view");
    if (op->name() == "expand") f.note("expand");
    if (op->name() == "select" || op->name() == "slice") f.note("select or slice");
    if (op->composite) f.note("composite");
    if (op->has_tag("reduction")) {
      f.note("reduction");
      if (const ir::Param* keepdim = op->schema.find_param("keepdim")) {
        size_t index = size_t(keepdim - op->schema.params.data());
        if (call.arg(index).boolean()) f.note("reduction keepdim");
      }
      if (const ir::Param* dim = op->schema.find_param("dim")) {
        const ir::Argument& value = call.arg(size_t(dim - op->schema.params.data()));
        if (value.is_int() && value.integer() < 0) f.note("reduction negative dim");
        if (value.is_list())
          for (int64_t d : value.int_list())
            if (d < 0) f.note("reduction negative dim");
      }
    }
    if (op->name() == "matmul" || op->name() == "bmm") f.note("matmul");
    if (op->name() == "cat") f.note("cat");
    if (op->has_tag("pointwise")) {
      std::vector<const ir::TensorMeta*> tensors;
      bool number = false;
      for (size_t i = 0; i < op->schema.params.size(); ++i) {
        if (call.is_tensor(i))
          tensors.push_back(&call.tensor(i));
        else if (op->schema.params[i].type == ir::ParamType::tensor_or_scalar && call.arg(i).is_number())
          number = true;
      }
      if (number) f.note("number operand");
      for (const ir::TensorMeta* t : tensors)
        if (!(t->shape == tensors.front()->shape)) f.note("broadcasting");
    }
    int mutated = mutated_param(*op);
    if (mutated >= 0) {
      f.note("in-place");
      const ir::Node* target = call.arg(size_t(mutated)).node();
      const ir::OpInfo* target_op = op_of(*target);
      if (target_op && target_op->is_view) f.note("in-place through a view");
      if (target_op && target_op->is_view) {
        const ir::OpInfo* inner = op_of(*target->args().at(0).node());
        if (inner && inner->is_view) f.note("in-place through a view of a view");
      }
      const ir::Node* base = storage_base(target);
      if (base->op() == ir::OpKind::placeholder) f.note("in-place on an input");
      if (op->composite) f.note("composite in-place");
    }
  }
  return f;
}

std::string text_of(uint64_t seed, const ir::Graph& graph) {
  return "seed " + std::to_string(seed) + ":\n" + ir::print_graph(graph);
}

TEST(RandomGraph, SameSeedSameGraphAndInputs) {
  for (uint64_t seed : {0ull, 1ull, 17ull, 123456789ull}) {
    ir::Graph first = random_graph(seed), second = random_graph(seed);
    EXPECT_EQ(ir::print_graph(first), ir::print_graph(second)) << "seed " << seed;
    ASSERT_EQ(first.parameters().size(), second.parameters().size());
    for (const auto& [name, tensor] : first.parameters()) {
      const Tensor* other = second.parameter(name);
      ASSERT_NE(other, nullptr) << name;
      ASSERT_EQ(tensor.sizes(), other->sizes());
      for (int64_t i = 0; i < tensor.numel(); ++i) EXPECT_EQ(tensor.flat_double(i), other->flat_double(i));
    }
    auto inputs = random_inputs(first, seed), again = random_inputs(first, seed);
    ASSERT_EQ(inputs.size(), again.size());
    for (const auto& [name, tensor] : inputs) {
      ASSERT_EQ(tensor.sizes(), again.at(name).sizes()) << name;
      for (int64_t i = 0; i < tensor.numel(); ++i) EXPECT_EQ(tensor.flat_double(i), again.at(name).flat_double(i));
    }
  }
}

TEST(RandomGraph, DifferentSeedsDifferentGraphs) {
  std::set<std::string> texts;
  for (uint64_t seed = 0; seed < 50; ++seed) texts.insert(ir::print_graph(random_graph(seed)));
  EXPECT_GE(texts.size(), 48u);
}

TEST(RandomGraph, InputsFollowPlaceholdersAndSymbolSizes) {
  RandomGraphOptions options;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    ir::Graph graph = random_graph(seed, options);
    for (const std::map<std::string, int64_t>& sizes :
         {default_symbol_sizes(), std::map<std::string, int64_t>{{"s0", 2}, {"s1", 4}}}) {
      auto inputs = random_inputs(graph, seed, sizes);
      ASSERT_EQ(inputs.size(), graph.placeholders().size());
      for (ir::Node* placeholder : graph.placeholders()) {
        const Tensor& tensor = inputs.at(placeholder->target());
        EXPECT_EQ(tensor.dtype(), placeholder->value().dtype);
        EXPECT_EQ(tensor.sizes(), placeholder->value().evaluate_shape(sizes)) << text_of(seed, graph);
        for (int64_t i = 0; i < tensor.numel(); ++i) {
          double value = tensor.flat_double(i);
          bool in_range = tensor.dtype() == DType::f32   ? value >= -2 && value <= 2
                          : tensor.dtype() == DType::i64 ? value >= -4 && value <= 4 && value == std::floor(value)
                                                         : value == 0 || value == 1;
          EXPECT_TRUE(in_range) << dtype_name(tensor.dtype()) << " input value " << value;
        }
      }
    }
  }
}

// Every graph verifies and runs, under two symbol bindings; outputs stay bounded (no
// overflow to infinity, and NaN only in a few graphs, from legitimately undefined values
// such as the mean of an empty tensor).
TEST(RandomGraph, EveryGraphVerifiesAndRuns) {
  int graphs_with_nan = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    ir::Graph graph = random_graph(seed);
    ASSERT_NO_THROW(ir::verify(graph)) << text_of(seed, graph);
    bool nan = false;
    for (const std::map<std::string, int64_t>& sizes :
         {default_symbol_sizes(), std::map<std::string, int64_t>{{"s0", 2}, {"s1", 4}}}) {
      std::vector<Tensor> outputs;
      try {
        outputs = ir::Interpreter().run(graph, random_inputs(graph, seed, sizes));
      } catch (const std::exception& error) {
        FAIL() << error.what() << "\n" << text_of(seed, graph);
      }
      EXPECT_EQ(outputs.size(), graph.outputs().size());
      for (const Tensor& output : outputs) {
        if (!is_floating(output.dtype())) continue;
        for (int64_t i = 0; i < output.numel(); ++i) {
          double value = output.flat_double(i);
          if (std::isnan(value)) {
            nan = true;
            continue;
          }
          ASSERT_LT(std::fabs(value), 1e6) << "output element " << i << " of\n" << text_of(seed, graph);
        }
      }
    }
    graphs_with_nan += nan;
  }
  EXPECT_LE(graphs_with_nan, int(kSeeds / 20)) << "graphs with a NaN output";
}

TEST(RandomGraph, NeverWritesIntoExpandedViewsOrParameters) {
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    ir::Graph graph = random_graph(seed);
    for (ir::Node* node : graph.nodes()) {
      const ir::OpInfo* op = op_of(*node);
      if (!op || mutated_param(*op) < 0) continue;
      const ir::Node* target = ir::OpCall::of(*node).arg(size_t(mutated_param(*op))).node();
      const ir::TensorMeta& meta = target->value();
      for (size_t d = 0; d < meta.shape.size(); ++d)
        EXPECT_FALSE(meta.strides[d] == ir::SymInt(0) && !(meta.shape[d] == ir::SymInt(1)))
            << describe(*node) << " writes a broadcast view\n"
            << text_of(seed, graph);
      EXPECT_NE(storage_base(target)->op(), ir::OpKind::get_attr) << describe(*node) << " writes a parameter\n"
                                                                  << text_of(seed, graph);
    }
  }
}

TEST(RandomGraph, OptionsAreHonoured) {
  RandomGraphOptions plain;
  plain.allow_inplace = false;
  plain.allow_symbolic = false;
  plain.allow_composite = false;
  plain.allow_random = false;
  plain.num_ops = 25;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    ir::Graph graph = random_graph(seed, plain);
    for (ir::Node* node : graph.nodes()) {
      if (node->op() == ir::OpKind::placeholder) {
        EXPECT_FALSE(has_symbol(node->value().shape)) << text_of(seed, graph);
      }
      const ir::OpInfo* op = op_of(*node);
      if (!op) continue;
      EXPECT_LT(mutated_param(*op), 0) << describe(*node) << "\n" << text_of(seed, graph);
      EXPECT_FALSE(op->composite) << describe(*node) << "\n" << text_of(seed, graph);
      EXPECT_FALSE(op->has_tag("random")) << describe(*node) << "\n" << text_of(seed, graph);
    }
  }
  // More ops asked, more nodes made.
  RandomGraphOptions small, large;
  small.num_ops = 4;
  large.num_ops = 40;
  size_t small_nodes = 0, large_nodes = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    small_nodes += random_graph(seed, small).size();
    large_nodes += random_graph(seed, large).size();
  }
  EXPECT_GT(large_nodes, 4 * small_nodes);
}

// Over 200 seeds, how many graphs have each feature; each must be common enough that the
// property tests (500+ graphs) exercise it many times.
TEST(RandomGraph, MixCoversWhatPassesMustHandle) {
  std::map<std::string, int> graphs_with;
  for (uint64_t seed = 0; seed < kSeeds; ++seed)
    for (const std::string& feature : features_of(random_graph(seed)).seen) ++graphs_with[feature];
  const std::map<std::string, int> minimum = {
      {"view", 150},
      {"expand", 20},
      {"select or slice", 80},
      {"in-place", 100},
      {"in-place through a view", 50},
      {"in-place through a view of a view", 15},
      {"in-place on an input", 15},
      {"composite in-place", 8},
      {"reduction", 100},
      {"reduction keepdim", 30},
      {"reduction negative dim", 30},
      {"broadcasting", 80},
      {"number operand", 80},
      {"matmul", 30},
      {"cat", 20},
      {"composite", 80},
      {"symbolic input", 30},
      {"parameter", 50},
      {"i64 value", 60},
      {"bool value", 60},
      {"0-d value", 30},
      {"4-d value", 15},
      {"empty value", 8},
  };
  for (const auto& [feature, count] : minimum)
    EXPECT_GE(graphs_with[feature], count) << "graphs with " << feature << " (of " << kSeeds << ")";
  std::string census;
  for (const auto& [feature, count] : graphs_with) census += "  " + feature + ": " + std::to_string(count) + "\n";
  std::cout << "graphs per feature (of " << kSeeds << "):\n" << census;
}

}  // namespace
}  // namespace kiln::test_support
