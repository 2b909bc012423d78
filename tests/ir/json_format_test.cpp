// Tests for ir/json_format: exact round trips (print_graph and the JSON itself, source info
// included), the encoding of each argument kind written out by hand, and one test per kind
// of bad document with its JSON path.
#include "ir/json_format.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/ir/format_test_graphs.h"

namespace kiln::ir {
namespace {

using nlohmann::json;
using format_test::all_arguments_graph;
using format_test::error_of;
using format_test::mlp_graph;

ParseOptions options_with(const Graph& graph) {
  ParseOptions options;
  options.file_name = "g.json";
  options.parameters = graph.parameters();
  return options;
}

void add_sources(Graph& graph) {
  int line = 1;
  for (Node* node : graph.nodes()) {
    node->source.file = "model.onnx";
    node->source.line = line++;
    node->source.module_path = "encoder.layers.0";
    node->source.onnx_node = "node_" + node->name();
    node->source.onnx_op = "Op";
  }
}

TEST(JsonFormat, RoundTripIsExact) {
  std::vector<Graph> graphs;
  graphs.push_back(mlp_graph());
  graphs.push_back(all_arguments_graph());
  for (Graph& graph : graphs) {
    add_sources(graph);
    json document = graph_to_json(graph);
    Graph back = graph_from_json(json::parse(document.dump()), options_with(graph));
    EXPECT_EQ(print_graph(back, {.show_source = true, .show_strides = true}),
              print_graph(graph, {.show_source = true, .show_strides = true}));
    EXPECT_EQ(graph_to_json(back), document);
    verify(back);
  }
}

TEST(JsonFormat, Int16RoundTrips) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::i16, {2, 3}));
  graph.create_output({graph.create_call("cast", {graph.create_call("neg", {x}), DType::i16})});
  json document = graph_to_json(graph);
  EXPECT_NE(document.dump().find("\"i16\""), std::string::npos) << document.dump();
  Graph back = graph_from_json(json::parse(document.dump()), options_with(graph));
  EXPECT_EQ(back.find("x")->value().dtype, DType::i16);
  EXPECT_EQ(print_graph(back), print_graph(graph));
  verify(back);
}

TEST(JsonFormat, UnsignedTypesRoundTrip) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::u64, {2, 3}));
  graph.create_output({graph.create_call("cast", {graph.create_call("bitwise_not", {x}), DType::u16})});
  json document = graph_to_json(graph);
  EXPECT_NE(document.dump().find("\"u64\""), std::string::npos) << document.dump();
  EXPECT_NE(document.dump().find("\"u16\""), std::string::npos) << document.dump();
  Graph back = graph_from_json(json::parse(document.dump()), options_with(graph));
  EXPECT_EQ(back.find("x")->value().dtype, DType::u64);
  EXPECT_EQ(print_graph(back), print_graph(graph));
  verify(back);
}

TEST(JsonFormat, TopLevelAndPlaceholderLayout) {
  json document = graph_to_json(all_arguments_graph());
  EXPECT_EQ(document["format"], "kiln-graph");
  EXPECT_EQ(document["version"], 2);
  json expected_p = {
      {"name", "p"},
      {"op", "placeholder"},
      {"target", "p"},
      {"args", json::array()},
      {"kwargs", json::array()},
      {"meta",
       {{"tuple", false},
        {"values", {{{"dtype", "f32"}, {"shape", {2, 3}}, {"strides", {1, 2}}, {"device", "cpu"}}}}}},
      {"source", {{"file", ""}, {"line", 0}, {"module_path", ""}, {"onnx_node", ""}, {"onnx_op", ""}}},
  };
  EXPECT_EQ(document["nodes"][2], expected_p);
  EXPECT_EQ(document["nodes"][3]["meta"]["values"][0]["device"], "cuda:0");
  EXPECT_EQ(document["nodes"][0]["meta"]["values"][0]["shape"], json::parse(R"(["s0", 4])"));
}

json node_named(const json& document, const std::string& name) {
  for (const json& node : document["nodes"])
    if (node["name"] == name) return node;
  ADD_FAILURE() << "no node " << name;
  return {};
}

TEST(JsonFormat, ArgumentEncodings) {
  json document = graph_to_json(all_arguments_graph());
  EXPECT_EQ(node_named(document, "add")["args"], json::parse(R"([{"node": "a"}, 2.5])"));
  EXPECT_EQ(node_named(document, "add")["kwargs"], json::parse(R"([["alpha", 2]])"));
  EXPECT_EQ(node_named(document, "div")["kwargs"], json::parse(R"([["rounding_mode", "floor"]])"));
  EXPECT_EQ(node_named(document, "cast")["args"][1], json::parse(R"({"dtype": "f16"})"));
  EXPECT_EQ(node_named(document, "slice")["args"], json::parse(R"([{"node": "a"}, 1, null, 3])"));
  EXPECT_EQ(node_named(document, "reshape")["args"][1], json::parse(R"([{"symint": "2*s0"}, 2])"));
  EXPECT_EQ(node_named(document, "full")["args"][1], json::parse(R"({"float": "-inf"})"));
  EXPECT_EQ(node_named(document, "sum")["args"][2], true);
  EXPECT_EQ(node_named(document, "cat")["args"][0], json::parse(R"([{"node": "a"}, {"node": "a"}])"));
  EXPECT_EQ(node_named(document, "var_mean")["meta"]["tuple"], true);
  EXPECT_EQ(node_named(document, "var_mean")["meta"]["values"].size(), 2u);
  EXPECT_EQ(node_named(document, "output")["args"][14], json::parse(R"({"node": "g"})"));
}

TEST(JsonFormat, ParametersCanBeHandedOverFromAGraph) {
  Graph graph = mlp_graph();
  Graph back = graph_from_json(graph_to_json(graph), "g.json", graph.parameters());
  EXPECT_EQ(print_graph(back), print_graph(graph));
  EXPECT_EQ(back.parameter("fc1.weight")->flat_double(1), 0.5 - 3);
}

TEST(JsonFormat, FloatsKeepTheirKind) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  Node* y = graph.create_call("add", {x, 1.0});  // 1.0 is a float, not the int 1
  Node* z = graph.create_call("leaky_relu", {y, -0.0});
  graph.create_output({z});
  Graph back = graph_from_json(json::parse(graph_to_json(graph).dump()));
  EXPECT_TRUE(back.find("add")->args()[1].is_float());
  EXPECT_TRUE(std::signbit(back.find("leaky_relu")->args()[1].floating()));
}

// ---- bad documents ----

std::string load_error(const json& document, const ParseOptions& options) {
  return error_of([&] { graph_from_json(document, options); });
}
std::string load_error(const json& document) {
  ParseOptions options;
  options.file_name = "g.json";
  return load_error(document, options);
}

json relu_document() {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2, 3}));
  Node* r = graph.create_call("relu", {x});
  graph.create_output({r});
  return graph_to_json(graph);
}

TEST(JsonErrors, FormatAndVersion) {
  json document = relu_document();
  document["version"] = 3;
  EXPECT_EQ(load_error(document), "g.json: version: unsupported version 3 (Kiln reads versions 1 to 2)");
  document["version"] = 0;
  EXPECT_EQ(load_error(document), "g.json: version: unsupported version 0 (Kiln reads versions 1 to 2)");
  document["format"] = "onnx";
  EXPECT_EQ(load_error(document), "g.json: format: expected \"kiln-graph\", found \"onnx\"");
  EXPECT_EQ(load_error(json::array()), "g.json: expected a JSON object, found array []");
}

TEST(JsonErrors, MissingFieldNamesThePath) {
  json document = relu_document();
  document["nodes"][1].erase("kwargs");
  EXPECT_EQ(load_error(document), "g.json: nodes[1]: missing field \"kwargs\"");
  document = relu_document();
  document["nodes"][0]["meta"]["values"][0].erase("strides");
  EXPECT_EQ(load_error(document), "g.json: nodes[0].meta.values[0]: missing field \"strides\"");
  document = relu_document();
  document.erase("nodes");
  EXPECT_EQ(load_error(document), "g.json: missing field \"nodes\"");
}

TEST(JsonErrors, BadArgumentNamesThePath) {
  json document = relu_document();
  document["nodes"][1]["args"].push_back(json::parse(R"({"tensor": 3})"));
  std::string message = load_error(document);
  EXPECT_EQ(message.rfind("g.json: nodes[1].args[1]: expected an argument", 0), 0u) << message;
  document = relu_document();
  document["nodes"][1]["args"][0] = json::parse(R"({"node": "nope"})");
  EXPECT_EQ(load_error(document), "g.json: nodes[1].args[0].node: %nope used before it is defined");
  document = relu_document();
  document["nodes"][0]["meta"]["values"][0]["shape"][1] = "s0 +";
  message = load_error(document);
  EXPECT_EQ(message.rfind("g.json: nodes[0].meta.values[0].shape[1]: ", 0), 0u) << message;
}

TEST(JsonErrors, UnknownOpAndBindErrors) {
  json document = relu_document();
  document["nodes"][1]["target"] = "rellu";
  EXPECT_EQ(load_error(document), "g.json: nodes[1].target: unknown op 'rellu'; did you mean 'relu'?");
  document = relu_document();
  document["nodes"][1]["args"].push_back(1);
  EXPECT_EQ(load_error(document),
            "g.json: nodes[1]: node %relu (relu): expected at most 1 positional argument (self), but got 2");
}

TEST(JsonErrors, WrittenTypeDisagreesWithInference) {
  json document = relu_document();
  document["nodes"][1]["meta"]["values"][0]["dtype"] = "f16";
  EXPECT_EQ(load_error(document), "g.json: nodes[1].meta: type of %relu is written f16[2, 3] but infers f32[2, 3]");
}

TEST(JsonErrors, StructureOfTheNodeList) {
  json document = relu_document();
  document["nodes"].push_back(document["nodes"][1]);
  EXPECT_EQ(load_error(document), "g.json: nodes[3]: a node after the output node");
  document = relu_document();
  document["nodes"].erase(2);
  EXPECT_EQ(load_error(document), "g.json: nodes: no output node");
  document = relu_document();
  document["nodes"][1]["name"] = "x";
  EXPECT_EQ(load_error(document), "g.json: nodes[1].name: duplicate name %x");
  document = relu_document();
  document["nodes"][1]["op"] = "call_method";
  EXPECT_EQ(load_error(document),
            "g.json: nodes[1].op: expected placeholder, get_attr, call_function or output, found \"call_method\"");
}

// Every graph the JSON reader accepts prints to text that reads back, so names are the text
// form's names (a fuzzed "cop|_" printed as %cop|_, which the text parser rejects).
TEST(JsonErrors, NamesTheTextFormCannotWrite) {
  json document = relu_document();
  document["nodes"][1]["name"] = "re|u";
  EXPECT_EQ(load_error(document),
            "g.json: nodes[1].name: node name \"re|u\" is not a name: names are 1 to 256 letters, digits and '_'");
  document = relu_document();
  document["nodes"][1]["name"] = "";
  EXPECT_EQ(load_error(document),
            "g.json: nodes[1].name: node name \"\" is not a name: names are 1 to 256 letters, digits and '_'");
  document = relu_document();
  document["nodes"][1]["name"] = std::string(257, 'a');
  EXPECT_NE(load_error(document).find("is not a name"), std::string::npos);
  document = relu_document();
  document["nodes"][1]["kwargs"].push_back(json::array({"in place", true}));
  EXPECT_EQ(load_error(document),
            "g.json: nodes[1].kwargs[0][0]: keyword \"in place\" is not a name: names are 1 to 256 letters, digits and '_'");
}

TEST(JsonErrors, MissingParameter) {
  json document = graph_to_json(mlp_graph());
  ParseOptions options;
  options.file_name = "g.json";
  options.weights_file = "g.safetensors";
  options.weights_file_missing = true;
  EXPECT_EQ(load_error(document, options),
            "g.json: nodes[1].target: get_attr target 'fc1.weight' needs the weights file 'g.safetensors', which "
            "does not exist");
}

TEST(JsonErrors, DeepNestingIsRefused) {
  json document = relu_document();
  json deep = json::array();
  for (int i = 0; i < 100; ++i) deep = json::array({deep});
  document["nodes"][1]["args"].push_back(deep);
  std::string message = load_error(document);
  EXPECT_EQ(message.rfind("g.json: nodes[1].args[1][0][0]", 0), 0u) << message;
  EXPECT_NE(message.find(": lists nested deeper than 64 levels"), std::string::npos) << message;
}

}  // namespace
}  // namespace kiln::ir
