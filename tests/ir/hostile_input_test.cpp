// The IR's readers on hostile input, as a fuzzing campaign and the fuzz targets of tests/fuzz/
// found it: every input ends in one kiln::Error naming the file and the place, on one printable
// line of bounded length, never a crash (unbounded recursion), an internal error or raw bytes
// echoed into the message.
#include <gtest/gtest.h>

#include <string>

#include "ir/interpreter.h"
#include "ir/json_format.h"
#include "ir/parser.h"
#include "ir/symbolic.h"
#include "runtime/message_text.h"
#include "tests/ir/format_test_graphs.h"

namespace kiln::ir {
namespace {

using format_test::error_of;

const std::string kHeader = "graph():\n    %x : f32[2, 3] [num_users=1] = placeholder[target=x]\n";

std::string parse_error(const std::string& text) {
  return error_of([&] { parse_graph(text, "t.kiln"); });
}

std::string repeated(const std::string& piece, size_t times) {
  std::string text;
  for (size_t i = 0; i < times; ++i) text += piece;
  return text;
}

// What the contract asks of every message (kiln/error.h).
void expect_one_short_line(const std::string& message) {
  EXPECT_TRUE(is_printable(message)) << message;
  EXPECT_LT(message.size(), 600u) << message;
}

TEST(HostileText, FiftyThousandNestedParenthesesInADimension) {
  std::string text = "graph():\n    %x : f32[" + repeated("(", 50000) + "4" + repeated(")", 50000) +
                     "] = placeholder[target=x]\n    return (x,)\n";
  std::string message = parse_error(text);
  EXPECT_EQ(message.rfind("t.kiln:2:14: bad dimension '", 0), 0u) << message;
  EXPECT_NE(message.find("longer than 1024 characters (100001)"), std::string::npos) << message;
  expect_one_short_line(message);
}

TEST(HostileText, NestingWithinTheLengthLimitIsBoundedToo) {
  std::string dim = repeated("(", 300) + "4" + repeated(")", 300);
  std::string message = parse_error("graph():\n    %x : f32[" + dim + "] = placeholder[target=x]\n    return (x,)\n");
  EXPECT_NE(message.find("expression nested deeper than 200 levels"), std::string::npos) << message;
  expect_one_short_line(message);
  for (const std::string& chain :
       {repeated("-", 400) + "1", repeated("+", 400) + "1", repeated("(", 300) + "1" + repeated(")", 300)})
    EXPECT_NE(error_of([&] { parse_sym_int(chain); }).find("nested deeper than 200 levels"), std::string::npos) << chain;
  // max( chains reach the length limit before the depth limit.
  EXPECT_NE(error_of([] { parse_sym_int(repeated("max(1, ", 300) + "1"); }).find("longer than 1024 characters"),
            std::string::npos);
}

TEST(HostileText, ThirtyThousandParenthesesInArguments) {
  std::string message =
      parse_error(kHeader + "    %r = call_function[target=add](args = (%x, " + repeated("(", 30000) + "), kwargs = {})\n");
  EXPECT_EQ(message.rfind("t.kiln:3:", 0), 0u) << message;
  expect_one_short_line(message);
}

TEST(HostileText, AHugeNameIsCut) {
  std::string message = parse_error("graph():\n    %" + repeated("a", 100000) + " : f32[2] = placeholder[target=x]\n");
  EXPECT_EQ(message, "t.kiln:2:6: a name longer than 256 characters: '" + repeated("a", 40) + "... (100000 bytes)'");
}

TEST(HostileText, RawBytesAreEscapedNotEchoed) {
  std::string message = parse_error(kHeader + "    %r = call_function[target=\x01\xff\n\x1b[2J](args = (), kwargs = {})\n");
  expect_one_short_line(message);
  std::string symbol_message = error_of([] { parse_sym_int("s0 + \x07\xfe"); });
  EXPECT_NE(symbol_message.find("s0 + \\x07\\xfe"), std::string::npos) << symbol_message;
}

// The text form's return names nodes only; Graph::create_output refuses a literal from any
// reader (the JSON one below) or the API.
TEST(HostileText, AReturnedLiteralIsRefusedWhereItIsWritten) {
  EXPECT_EQ(parse_error(kHeader + "    return (x, 1.5)\n"), "t.kiln:3:16: return value '1' is not a defined node");
  Graph built;
  EXPECT_EQ(error_of([&] { built.create_output({Argument(1.5)}); }),
            "return value 1.5 is not a node: a graph returns nodes, None, or lists of them");
  Graph graph = parse_graph(kHeader + "    return (x, None, [x, None])\n", "t.kiln");
  EXPECT_EQ(graph.output_node()->args().size(), 3u);
}

// The JSON reader took a literal output, which the interpreter then met as an internal error
// ("output value 1.5 is not a node").
// Found by a 60 s fuzz run (scripts/fuzz text_parser): sizes whose product no int64 holds gave
// "symbolic integer overflow" without the file and line.
TEST(HostileText, SizesWhoseProductOverflowsAreRefusedWhereWritten) {
  EXPECT_EQ(parse_error("graph():\n    %x : f32[2, 2049638230412172390, 3] = placeholder[target=x]\n    return (x,)\n"),
            "t.kiln:2:10: type f32[2, 2049638230412172390, 3] has no contiguous strides: symbolic integer overflow: a "
            "value does not fit in int64");
}

TEST(HostileJson, AReturnedLiteralIsRefusedAtItsPath) {
  std::string text = R"({"format": "kiln-graph", "version": 2, "nodes": [
      {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": [],
       "meta": {"tuple": false, "values": [{"dtype": "f32", "shape": [2], "strides": [1], "device": "cpu"}]}},
      {"name": "output", "op": "output", "target": "output", "args": [{"node": "x"}, 1.5], "kwargs": [],
       "meta": {"tuple": false, "values": []}}],
    "signature": {"inputs": [], "outputs": []}})";
  ParseOptions options;
  options.file_name = "t.json";
  EXPECT_EQ(error_of([&] { parse_graph_json(text, options); }),
            "t.json: nodes[1].args: return value 1.5 is not a node: a graph returns nodes, None, or lists of them");
}

TEST(HostileJson, BadJsonIsQuotedInShort) {
  ParseOptions options;
  options.file_name = "t.json";
  std::string message = error_of([&] { parse_graph_json("{\"nodes\": \"" + repeated("\x01", 5000), options); });
  EXPECT_EQ(message.rfind("t.json: bad JSON: ", 0), 0u) << message;
  expect_one_short_line(message);
  std::string deep = error_of([&] { parse_graph_json(repeated("[", 100000) + repeated("]", 100000), options); });
  EXPECT_EQ(deep, "t.json: expected a JSON object, found array [[[[...]]]]");
}

// A fuzzed graph's too-large intermediate reached the interpreter as std::bad_alloc (exit 2);
// it is the user's error, "out of memory" naming the node, as in eager mode and compiled code.
// (Not under AddressSanitizer, whose operator new aborts on an impossible size.)
// GCC says AddressSanitizer with __SANITIZE_ADDRESS__, clang 16 with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define KILN_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_TEST_UNDER_ASAN 1
#endif
#endif

TEST(HostileGraph, ATooLargeIntermediateIsOutOfMemoryInTheInterpreter) {
#if defined(KILN_TEST_UNDER_ASAN)
  GTEST_SKIP() << "AddressSanitizer aborts on allocations past the machine's memory";
#else
  Graph graph = parse_graph(
      "graph():\n"
      "    %x : f32[1, 1] [num_users=1] = placeholder[target=x]\n"
      "    %big : f32[10000000, 10000000] [num_users=1] = call_function[target=expand](args = (%x, [10000000, "
      "10000000]), kwargs = {})\n"
      "    %total : f32[] [num_users=1] = call_function[target=sum](args = (%big,), kwargs = {})\n"
      "    return (total,)\n",
      "big.kiln");
  std::string message = error_of([&] { Interpreter().run(graph, {{"x", Tensor::zeros({1, 1}, DType::f32)}}); });
  EXPECT_NE(message.find("out of memory"), std::string::npos) << message;
  EXPECT_NE(message.find("total"), std::string::npos) << message;
  expect_one_short_line(message);
#endif
}

}  // namespace
}  // namespace kiln::ir
