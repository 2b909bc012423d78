// Tests of Graph and Node mechanics: use lists, replace_all_uses_with, insertion points,
// FX-style unique names, renaming, erasing, cloning, parameters, output names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "kiln/error.h"

namespace kiln::ir {
namespace {

using ::testing::ElementsAre;

NodeMeta f32_meta(SymShape shape) {
  NodeMeta meta;
  meta.values.push_back(TensorMeta::contiguous(DType::f32, std::move(shape)));
  return meta;
}

// A raw call node (no registry, no inference): enough for graph mechanics.
Node* raw_call(Graph& g, const std::string& target, std::vector<Argument> args) {
  return g.create_node(OpKind::call_function, target, std::move(args), {}, "", f32_meta({2}));
}

TEST(Graph, UseListsFollowArgs) {
  Graph g;
  Node* x = g.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  Node* y = g.create_placeholder("y", TensorMeta::contiguous(DType::f32, {2}));
  Node* add = raw_call(g, "add", {x, y});
  Node* mul = raw_call(g, "mul", {add, Argument(std::vector<Argument>{add, x})});
  g.create_output({mul});
  EXPECT_THAT(x->users(), ElementsAre(add, mul));
  EXPECT_THAT(add->users(), ElementsAre(mul));  // used twice, listed once
  EXPECT_THAT(mul->input_nodes(), ElementsAre(add, x));

  mul->set_args({y, y});
  EXPECT_TRUE(add->users().empty());
  EXPECT_THAT(x->users(), ElementsAre(add));
  EXPECT_THAT(y->users(), ElementsAre(add, mul));
}

TEST(Graph, ReplaceAllUsesWith) {
  Graph g;
  Node* x = g.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  Node* a = raw_call(g, "relu", {x});
  Node* b = raw_call(g, "neg", {x});
  Node* c = raw_call(g, "add", {a, Argument(std::vector<Argument>{a, 1})});
  Node* out = g.create_output({a, c});
  std::vector<Node*> changed = a->replace_all_uses_with(b);
  EXPECT_THAT(changed, ElementsAre(c, out));
  EXPECT_TRUE(a->users().empty());
  EXPECT_EQ(c->args()[0].node(), b);
  EXPECT_EQ(c->args()[1].list()[0].node(), b);
  EXPECT_THAT(b->users(), ElementsAre(c, out));
  g.erase(a);
  EXPECT_EQ(g.find("relu"), nullptr);
  EXPECT_THROW(g.erase(b), InternalError);  // still used
}

TEST(Graph, UniqueNamesFollowFx) {
  Graph g;
  EXPECT_EQ(g.create_placeholder("x", TensorMeta::contiguous(DType::f32, {1}))->name(), "x");
  Node* x = g.find("x");
  EXPECT_EQ(raw_call(g, "add", {x})->name(), "add");
  EXPECT_EQ(raw_call(g, "add", {x})->name(), "add_1");
  EXPECT_EQ(raw_call(g, "add", {x})->name(), "add_2");
  EXPECT_EQ(g.unique_name("fc1.weight"), "fc1_weight");
  EXPECT_EQ(g.unique_name("3d"), "_3d");
  EXPECT_THROW(g.create_node(OpKind::call_function, "neg", {x}, {}, "add_1", f32_meta({1})), Error);
}

TEST(Graph, InsertionPoints) {
  Graph g;
  Node* x = g.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  Node* a = raw_call(g, "relu", {x});
  g.create_output({a});
  Node* b = raw_call(g, "neg", {x});  // default: before the output node
  EXPECT_EQ(b->next(), g.output_node());
  {
    auto guard = g.inserting_before(a);
    Node* c = raw_call(g, "exp", {x});
    Node* d = raw_call(g, "log", {c});
    EXPECT_EQ(c->next(), d);
    EXPECT_EQ(d->next(), a);
  }
  {
    auto guard = g.inserting_after(x);
    Node* e = raw_call(g, "sin", {x});
    EXPECT_EQ(x->next(), e);
  }
  std::vector<std::string> order;
  for (Node* node : g.nodes()) order.push_back(node->name());
  EXPECT_THAT(order, ElementsAre("x", "sin", "exp", "log", "relu", "neg", "output"));
  EXPECT_EQ(g.output_node()->prev(), b);
  EXPECT_EQ(x->prev(), nullptr);
  EXPECT_EQ(g.output_node()->next(), nullptr);
}

// The output node is tracked as nodes come and go (new nodes go before it): none while a graph is
// built, the node once made, none again once erased, and a clone's or a moved-to graph's own.
TEST(Graph, TheOutputNodeIsTrackedThroughInsertsErasesClonesAndMoves) {
  Graph g;
  Node* x = g.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  EXPECT_EQ(g.output_node(), nullptr);
  Node* a = raw_call(g, "relu", {x});
  EXPECT_EQ(g.output_node(), nullptr);
  Node* output = g.create_output({a});
  EXPECT_EQ(g.output_node(), output);
  EXPECT_THROW(g.create_output({a}), Error);
  g.erase(output);
  EXPECT_EQ(g.output_node(), nullptr);
  Node* again = g.create_output({a});
  EXPECT_EQ(g.output_node(), again);
  Graph copy = g.clone();
  ASSERT_NE(copy.output_node(), nullptr);
  EXPECT_NE(copy.output_node(), again);
  EXPECT_EQ(&copy.output_node()->graph(), &copy);
  EXPECT_EQ(copy.output_node(), copy.find(again->name()));
  Graph moved = std::move(copy);
  EXPECT_EQ(&moved.output_node()->graph(), &moved);
  EXPECT_EQ(copy.output_node(), nullptr);  // NOLINT(bugprone-use-after-move): a moved-from graph is empty
}

TEST(Graph, CloneIsDeepAndParametersShared) {
  Graph g;
  g.set_parameter("w", Tensor::full({2}, 3.0, DType::f32));
  Node* x = g.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  Node* w = g.create_get_attr("w");
  EXPECT_EQ(w->name(), "w");
  EXPECT_EQ(w->value().type_string(), "f32[2]");
  Node* add = raw_call(g, "add", {x, w});
  add->source.module_path = "block.fc";
  g.create_output({add});

  Graph copy = g.clone();
  ASSERT_EQ(copy.size(), g.size());
  Node* copied_add = copy.find("add");
  ASSERT_NE(copied_add, nullptr);
  EXPECT_NE(copied_add, add);
  EXPECT_EQ(copied_add->args()[0].node(), copy.find("x"));
  EXPECT_EQ(copied_add->source.module_path, "block.fc");
  EXPECT_TRUE(copy.parameter("w")->shares_storage_with(*g.parameter("w")));
  // Changing the copy leaves the original alone.
  copied_add->set_args({copy.find("x"), copy.find("x")});
  EXPECT_EQ(add->args()[1].node(), w);
  // New names in the copy continue the original's numbering.
  EXPECT_EQ(copy.unique_name("add"), "add_1");

  EXPECT_THROW(g.create_get_attr("missing"), Error);
}

TEST(Graph, MoveKeepsNodesPointingAtTheNewGraph) {
  Graph g;
  Node* x = g.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  g.create_output({x});
  Graph moved = std::move(g);
  EXPECT_EQ(&moved.find("x")->graph(), &moved);
  EXPECT_EQ(moved.outputs().at(0), moved.find("x"));
}

TEST(Graph, OutputNamesAreUnique) {
  Graph g;
  Node* x = g.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  Node* y = raw_call(g, "relu", {x});
  g.create_output({y, x, y});
  EXPECT_THAT(g.output_names(), ElementsAre("relu", "x", "relu_1"));
  EXPECT_THROW(g.create_output({x}), Error);
}

TEST(Graph, RenameKeepsUsesAndRefusesATakenName) {
  Graph g;
  Node* x = g.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  Node* y = raw_call(g, "relu", {x});
  Node* z = raw_call(g, "neg", {y});
  g.create_output({y, z});
  g.rename(y, "hidden");
  EXPECT_EQ(g.find("hidden"), y);
  EXPECT_EQ(g.find("relu"), nullptr);
  EXPECT_THAT(g.output_names(), ElementsAre("hidden", "neg"));
  EXPECT_EQ(z->args()[0].node(), y);
  EXPECT_THROW(g.rename(z, "x"), Error);
  EXPECT_THROW(g.rename(z, ""), Error);
  g.rename(z, "neg");  // its own name: nothing to do
  EXPECT_EQ(z->name(), "neg");
}

TEST(Argument, KindsAndText) {
  EXPECT_EQ(Argument().to_string(), "None");
  EXPECT_EQ(Argument(3).to_string(), "3");
  EXPECT_EQ(Argument(true).to_string(), "True");
  EXPECT_EQ(Argument(0.1).to_string(), "0.1");
  EXPECT_EQ(Argument("mean").to_string(), "\"mean\"");
  EXPECT_EQ(Argument(DType::bf16).to_string(), "bf16");
  EXPECT_EQ(Argument::ints({1, -2}).to_string(), "[1, -2]");
  EXPECT_TRUE(Argument(SymInt(4)).is_int());  // a constant SymInt is an int
  EXPECT_TRUE(Argument(SymInt::symbol("s0")).is_symint());
  EXPECT_EQ(Argument(3).floating(), 3.0);
  EXPECT_EQ(Argument(7).symint(), SymInt(7));
  EXPECT_THROW(Argument("x").integer(), InternalError);
}

TEST(FloatRepr, MatchesPython) {
  // Expected strings are what Python's repr() prints for the same doubles.
  EXPECT_EQ(float_repr(1.0), "1.0");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(1e-05), "1e-05");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(123456789.0), "123456789.0");
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(float_repr(2.5e-07), "2.5e-07");
  EXPECT_EQ(float_repr(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(float_repr(INFINITY), "inf");
  EXPECT_EQ(float_repr(-INFINITY), "-inf");
  EXPECT_EQ(float_repr(NAN), "nan");
}

TEST(TensorMeta, TypeStringsAndContiguity) {
  SymInt s0 = SymInt::symbol("s0");
  TensorMeta meta = TensorMeta::contiguous(DType::f32, {s0, 784});
  EXPECT_EQ(meta.type_string(), "f32[s0, 784]");
  EXPECT_EQ(meta.strides[0], SymInt(784));
  EXPECT_FALSE(meta.is_static());
  EXPECT_EQ(meta.evaluate_shape({{"s0", 3}}), (Sizes{3, 784}));
  EXPECT_EQ(meta.numel(), s0 * 784);
  EXPECT_EQ(TensorMeta::contiguous(DType::boolean, {}).type_string(), "bool[]");
  NodeMeta tuple;
  tuple.is_tuple = true;
  tuple.values = {TensorMeta::contiguous(DType::f32, {2}), TensorMeta::contiguous(DType::i64, {2})};
  EXPECT_EQ(tuple.type_string(), "(f32[2], i64[2])");
}

}  // namespace
}  // namespace kiln::ir
