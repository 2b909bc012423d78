// Symbol ranges in the graph signature (ir/graph_signature.h): the text form's "Range
// constraints:" line (torch.export's spelling) and the JSON form read back identically, bad
// written ranges are errors that name the line, and the interpreter refuses an input whose
// size puts a symbol outside its range.
#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "ir/json_format.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/ir/format_test_graphs.h"

namespace kiln::ir {
namespace {

using format_test::error_of;

const char* kGraph =
    "graph():\n"
    "    %x : f32[s0, 4] [num_users=1] = placeholder[target=x]\n"
    "    %y : f32[s1] [num_users=0] = placeholder[target=y]\n"
    "    %relu : f32[s0, 4] [num_users=1] = call_function[target=relu](args = (%x,), kwargs = {})\n"
    "    return (relu,)\n";

Graph ranged() {
  Graph graph = parse_graph(kGraph, "ranges.kiln");
  graph.signature().set_symbol_range("s0", SymbolRange{1, 1024});
  graph.signature().set_symbol_range("s1", SymbolRange{2, std::nullopt});
  return graph;
}

TEST(SymbolRanges, PrintedAsTorchExportPrintsThemAndReadBack) {
  Graph graph = ranged();
  std::string text = print_graph(graph);
  EXPECT_EQ(text, std::string(kGraph) + "\nRange constraints: {s0: VR[1, 1024], s1: VR[2, int_oo]}\n");
  Graph back = parse_graph(text, "ranges.kiln");
  EXPECT_EQ(back.signature(), graph.signature());
  EXPECT_EQ(print_graph(back), text);
  EXPECT_EQ(print_graph(parse_graph(kGraph, "plain.kiln")), kGraph);  // none: no line
}

TEST(SymbolRanges, JsonReadsBackIdentically) {
  Graph graph = ranged();
  nlohmann::json document = graph_to_json(graph);
  EXPECT_EQ(document["signature"]["symbol_ranges"],
            (nlohmann::json{{"s0", {{"min", 1}, {"max", 1024}}}, {"s1", {{"min", 2}, {"max", nullptr}}}}));
  Graph back = graph_from_json(nlohmann::json::parse(document.dump()), "ranges.json");
  EXPECT_EQ(back.signature(), graph.signature());
}

TEST(SymbolRanges, BadJsonRangesNameThePath) {
  auto error = [](const nlohmann::json& ranges) {
    nlohmann::json document = graph_to_json(ranged());
    document["signature"]["symbol_ranges"] = ranges;
    return error_of([&] { graph_from_json(document, "ranges.json"); });
  };
  EXPECT_EQ(error({{"s0", {{"min", 8}, {"max", 4}}}}), "ranges.json: signature.symbol_ranges.s0: the range is empty: [8, 4]");
  EXPECT_EQ(error({{"s0", {{"min", "1"}, {"max", 4}}}}),
            "ranges.json: signature.symbol_ranges.s0.min: expected an integer, found string \"1\"");
  EXPECT_EQ(error({{"s0", {{"min", 1}}}}), "ranges.json: signature.symbol_ranges.s0: missing field \"max\"");
  EXPECT_EQ(error(nlohmann::json::array()),
            "ranges.json: signature.symbol_ranges: expected an object {\"SYMBOL\": {\"min\": N, \"max\": N or null}}, found array []");
}

TEST(SymbolRanges, BadRangesNameTheLine) {
  auto error = [](const std::string& ranges) {
    return error_of([&] { parse_graph(std::string(kGraph) + ranges, "ranges.kiln"); });
  };
  EXPECT_EQ(error("Range constraints: {s0: VR[8, 4]}\n"), "ranges.kiln:6:21: the range of s0 is empty: VR[8, 4]");
  EXPECT_EQ(error("Range constraints: {s0: VR[1, 4], s0: VR[1, 5]}\n"), "ranges.kiln:6:35: the range of s0 is given twice");
  EXPECT_EQ(error("Range constraints: {s0: [1, 4]}\n"), "ranges.kiln:6:25: expected 'VR', found '['");
  EXPECT_EQ(error("Range constraints: {s0: VR[1, many]}\n"), "ranges.kiln:6:31: expected the highest value or int_oo, found 'many'");
}

TEST(SymbolRanges, TheInterpreterRefusesASizeOutsideItsRange) {
  Graph graph = ranged();
  std::map<std::string, Tensor> inputs = {{"x", Tensor::zeros({3, 4}, DType::f32)}, {"y", Tensor::zeros({2}, DType::f32)}};
  EXPECT_NO_THROW(interpret(graph, inputs));
  inputs["x"] = Tensor::zeros({2000, 4}, DType::f32);
  EXPECT_EQ(error_of([&] { interpret(graph, inputs); }),
            "input 'x': dim 0 is 2000, outside the range [1, 1024] of s0 that the graph is valid for");
  inputs["x"] = Tensor::zeros({3, 4}, DType::f32);
  inputs["y"] = Tensor::zeros({1}, DType::f32);
  EXPECT_EQ(error_of([&] { interpret(graph, inputs); }),
            "input 'y': dim 0 is 1, outside the range [2, int_oo] of s1 that the graph is valid for");
}

}  // namespace
}  // namespace kiln::ir
