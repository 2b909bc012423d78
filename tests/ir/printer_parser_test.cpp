// Tests for ir/printer and ir/parser: the exact FX-style text of graphs built with the Graph
// API (golden files written by hand), print(parse(print(g))) == print(g), re-inference of
// metas on parse, and one test per kind of bad input with its file:line:col message.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/ir/format_test_graphs.h"

namespace kiln::ir {
namespace {

using format_test::all_arguments_graph;
using format_test::error_of;
using format_test::expect_golden;
using format_test::mlp_graph;

ParseOptions options_with(const Graph& graph) {
  ParseOptions options;
  options.file_name = "t.kiln";
  options.parameters = graph.parameters();
  return options;
}

Graph reparse(const Graph& graph, const PrintOptions& print_options = {}) {
  return parse_graph(print_graph(graph, print_options), options_with(graph));
}

// ---- the printer ----

TEST(Printer, MlpMatchesFxText) { expect_golden("mlp.kiln", print_graph(mlp_graph())); }

TEST(Printer, EveryArgumentKind) { expect_golden("all_arguments.kiln", print_graph(all_arguments_graph())); }

TEST(Printer, ShowStridesWritesNonContiguousLayouts) {
  std::string text = print_graph(mlp_graph(), {.show_strides = true});
  // transpose of a [8, 16] row-major weight: the [16, 8] view steps 1 along dim 0, 16 along dim 1.
  EXPECT_NE(text.find("    %t : f32[16, 8]{1, 16} [num_users=1] = call_function[target=transpose]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("    %matmul : f32[s0, 8] [num_users=2]"), std::string::npos) << text;
}

TEST(Printer, ShowSourceAppendsAComment) {
  Graph graph = mlp_graph();
  Node* mm = graph.find("matmul");
  mm->source.file = "mlp.onnx";
  mm->source.line = 12;
  mm->source.onnx_node = "fc1";
  mm->source.onnx_op = "Gemm";
  std::string text = print_graph(graph, {.show_source = true});
  EXPECT_NE(text.find("kwargs = {})  # mlp.onnx:12 fc1 (Gemm)\n"), std::string::npos) << text;
  EXPECT_EQ(print_graph(graph).find('#'), std::string::npos);
}

TEST(Printer, NodesWithoutMetaUseFxBareForm) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  graph.create_node(OpKind::call_function, "relu", {x}, {}, "r", {});
  EXPECT_NE(print_graph(graph).find("    %r : [num_users=0] = call_function[target=relu](args = (%x,), kwargs = {})"),
            std::string::npos);
}

TEST(Printer, ArgumentsReadAsPython) {
  EXPECT_EQ(format_argument(Argument(Device::cuda(1))), "cuda:1");
  EXPECT_EQ(format_argument(Argument(std::string("a\"b\\c\n\t\x01"))), "\"a\\\"b\\\\c\\n\\t\\x01\"");
  EXPECT_EQ(format_argument(Argument(std::vector<Argument>{Argument::ints({1, 2}), Argument::ints({})})),
            "[[1, 2], []]");
  EXPECT_EQ(format_argument(Argument(0.1)), "0.1");
  EXPECT_EQ(format_argument(Argument(-0.0)), "-0.0");
  EXPECT_EQ(format_argument(Argument(1e16)), "1e+16");
  EXPECT_EQ(format_argument(Argument(std::nan(""))), "nan");
  EXPECT_EQ(format_argument(Argument(false)), "False");
  EXPECT_EQ(format_argument(Argument()), "None");
  EXPECT_EQ(format_argument(Argument(DType::bf16)), "bf16");
  EXPECT_EQ(format_argument(Argument(format_test::s0() + 1)), "s0 + 1");
}

// ---- round trips ----

TEST(RoundTrip, TextReprintsIdentically) {
  for (const Graph& graph : {mlp_graph(), all_arguments_graph()}) {
    std::string text = print_graph(graph);
    Graph parsed = parse_graph(text, options_with(graph));
    EXPECT_EQ(print_graph(parsed), text);
    verify(parsed);
  }
}

TEST(RoundTrip, WithStridesShown) {
  Graph graph = all_arguments_graph();
  std::string text = print_graph(graph, {.show_strides = true});
  EXPECT_EQ(print_graph(reparse(graph, {.show_strides = true}), {.show_strides = true}), text);
}

TEST(RoundTrip, GoldenFilesParseAndReprint) {
  std::string mlp = format_test::read_text(format_test::golden_path("mlp.kiln"));
  EXPECT_EQ(print_graph(parse_graph(mlp, options_with(mlp_graph()))), mlp);
  std::string all = format_test::read_text(format_test::golden_path("all_arguments.kiln"));
  EXPECT_EQ(print_graph(parse_graph(all, options_with(all_arguments_graph()))), all);
}

TEST(RoundTrip, HandWrittenTextPrintsCanonically) {
  std::string text = format_test::read_text(format_test::golden_path("hand_written.kiln"));
  Graph parsed = parse_graph(text, "hand_written.kiln");
  expect_golden("hand_written.expected.kiln", print_graph(parsed));
}

TEST(RoundTrip, Int16TypesAndArguments) {
  const std::string text =
      "graph():\n"
      "    %x : i16[2, 3] [num_users=1] = placeholder[target=x]\n"
      "    %add : i16[2, 3] [num_users=1] = call_function[target=add](args = (%x, 5), kwargs = {})\n"
      "    %cast : i16[2, 3] [num_users=1] = call_function[target=cast](args = (%add, i16), kwargs = {})\n"
      "    %sum : i64[] [num_users=1] = call_function[target=sum](args = (%cast,), kwargs = {})\n"
      "    return (sum,)\n";
  Graph parsed = parse_graph(text, "t.kiln");
  EXPECT_EQ(parsed.find("x")->value().dtype, DType::i16);
  EXPECT_EQ(parsed.find("add")->value().dtype, DType::i16);  // i16 tensor + int: i16
  EXPECT_EQ(print_graph(parsed), text);
  verify(parsed);
}

TEST(RoundTrip, UnsignedTypesAndArguments) {
  const std::string text =
      "graph():\n"
      "    %x : u32[2, 3] [num_users=1] = placeholder[target=x]\n"
      "    %y : u64[3] [num_users=1] = placeholder[target=y]\n"
      "    %add : u32[2, 3] [num_users=1] = call_function[target=add](args = (%x, 5), kwargs = {})\n"
      "    %cast : u16[2, 3] [num_users=1] = call_function[target=cast](args = (%add, u16), kwargs = {})\n"
      "    %max : u64[3] [num_users=1] = call_function[target=maximum](args = (%y, %y), kwargs = {})\n"
      "    return (cast, max)\n";
  Graph parsed = parse_graph(text, "t.kiln");
  EXPECT_EQ(parsed.find("x")->value().dtype, DType::u32);
  EXPECT_EQ(parsed.find("add")->value().dtype, DType::u32);  // u32 tensor + int: u32
  EXPECT_EQ(parsed.find("cast")->value().dtype, DType::u16);
  EXPECT_EQ(print_graph(parsed), text);
  verify(parsed);
  // u32 with i64 is refused as PyTorch refuses it: the op's shape rule names the node.
  std::string mixed = "graph():\n"
                      "    %x : u32[2] = placeholder[target=x]\n"
                      "    %z : i64[2] = placeholder[target=z]\n"
                      "    %add : u32[2] = call_function[target=add](args = (%x, %z), kwargs = {})\n"
                      "    return (add,)\n";
  EXPECT_THROW(parse_graph(mixed, "t.kiln"), Error);
}

TEST(Parser, MetasAreReinferredNotCopied) {
  Graph parsed = reparse(mlp_graph());
  // The text does not show strides; the transpose's view strides come from its shape rule.
  const TensorMeta& t = parsed.find("t")->value();
  EXPECT_EQ(t.strides, (SymShape{1, 16}));
  EXPECT_EQ(parsed.find("matmul")->users().size(), 2u);
  EXPECT_EQ(parsed.find("fc1_weight")->target(), "fc1.weight");
  const Tensor* weight = parsed.parameter("fc1.weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->flat_double(3), 3 * 0.5 - 3);
}

TEST(Parser, WrittenStridesAreKept) {
  Graph parsed = reparse(all_arguments_graph());
  EXPECT_EQ(parsed.find("p")->value().strides, (SymShape{1, 2}));
  EXPECT_EQ(parsed.find("g")->value().device, Device::cuda(0));
  EXPECT_EQ(parsed.find("w")->target(), format_test::kWeirdTarget);
}

TEST(Parser, ArgumentKindsSurvive) {
  Graph parsed = reparse(all_arguments_graph());
  EXPECT_TRUE(parsed.find("add")->kwarg("alpha")->is_int());
  EXPECT_TRUE(parsed.find("add")->args()[1].is_float());
  EXPECT_TRUE(parsed.find("slice")->args()[2].is_none());
  EXPECT_TRUE(parsed.find("select")->args()[2].is_symint());
  EXPECT_EQ(parsed.find("select")->args()[2].symint(), format_test::s0() - 1);
  EXPECT_EQ(parsed.find("cast")->args()[1].dtype(), DType::f16);
  EXPECT_EQ(parsed.find("div")->kwarg("rounding_mode")->string(), "floor");
  EXPECT_EQ(parsed.find("full")->args()[1].floating(), -HUGE_VAL);
  EXPECT_EQ(parsed.find("layer_norm")->args()[4].floating(), 1e-05);
  EXPECT_EQ(parsed.find("sum")->args()[2].boolean(), true);
  EXPECT_EQ(parsed.find("transpose")->args()[2].integer(), -2);
}

TEST(Parser, NodesRecordWhereTheyWereRead) {
  Graph graph = mlp_graph();
  Graph parsed = parse_graph(print_graph(graph), "t.kiln", graph.parameters());
  EXPECT_EQ(parsed.find("matmul")->source.file, "t.kiln");
  EXPECT_EQ(parsed.find("matmul")->source.line, 5);
}

TEST(Parser, EscapedTargetsRoundTrip) {
  Graph graph;
  std::string target = "tab\there \\ \x01";
  graph.set_parameter(target, Tensor::scalar(1, DType::f32));
  Node* w = graph.create_get_attr(target, "w");
  graph.create_output({w});
  std::string text = print_graph(graph);
  EXPECT_NE(text.find("get_attr[target=\"tab\\there \\\\ \\x01\"]"), std::string::npos) << text;
  EXPECT_EQ(reparse(graph).find("w")->target(), target);
}

// ---- bad input: one test per message ----

const std::string kHeader =
    "graph():\n"
    "    %x : f32[2, 3] [num_users=1] = placeholder[target=x]\n";

std::string parse_error(const std::string& text, const ParseOptions& options) {
  return error_of([&] { parse_graph(text, options); });
}
std::string parse_error(const std::string& text) {
  ParseOptions options;
  options.file_name = "t.kiln";
  return parse_error(text, options);
}

TEST(ParseErrors, TruncatedText) {
  EXPECT_EQ(parse_error(kHeader + "    %r : f32[2, 3] = call_function[target=relu](args = (%x"),
            "t.kiln:3:59: expected ',' or ')', found end of file");
}

TEST(ParseErrors, UnknownOp) {
  EXPECT_EQ(parse_error(kHeader + "    %y : f32[2, 3] = call_function[target=frobnicate](args = (%x,), kwargs = {})\n"),
            "t.kiln:3:43: unknown op 'frobnicate'");
  EXPECT_EQ(parse_error(kHeader + "    %y = call_function[target=rellu](args = (%x,), kwargs = {})\n"),
            "t.kiln:3:31: unknown op 'rellu'; did you mean 'relu'?");
}

TEST(ParseErrors, WrongArity) {
  EXPECT_EQ(parse_error(kHeader + "    %y : f32[2, 3] = call_function[target=relu](args = (%x, %x), kwargs = {})\n"),
            "t.kiln:3:5: node %y (relu): expected at most 1 positional argument (self), but got 2");
}

TEST(ParseErrors, BadKeywordArgument) {
  EXPECT_EQ(parse_error(kHeader + "    %y = call_function[target=relu](args = (%x,), kwargs = {nope: 1})\n"),
            "t.kiln:3:5: node %y (relu): unknown keyword argument 'nope'");
  EXPECT_EQ(parse_error(kHeader +
                        "    %y = call_function[target=sum](args = (%x,), kwargs = {keepdim: True, keepdim: False})\n"),
            "t.kiln:3:75: keyword argument 'keepdim' is given twice");
}

TEST(ParseErrors, ShapeMismatchFromTheShapeRule) {
  std::string message = parse_error(kHeader + "    %m = call_function[target=matmul](args = (%x, %x), kwargs = {})\n");
  EXPECT_EQ(message.rfind("t.kiln:3:5: node %m (matmul): ", 0), 0u) << message;
  EXPECT_NE(message.find("2x3"), std::string::npos) << message;  // the rule names both shapes
}

TEST(ParseErrors, WrittenTypeDisagreesWithInference) {
  EXPECT_EQ(parse_error(kHeader + "    %r : f32[3, 2] = call_function[target=relu](args = (%x,), kwargs = {})\n"),
            "t.kiln:3:10: type of %r is written f32[3, 2] but infers f32[2, 3]");
}

TEST(ParseErrors, UseBeforeDefinition) {
  EXPECT_EQ(parse_error(kHeader + "    %r = call_function[target=relu](args = (%q,), kwargs = {})\n"),
            "t.kiln:3:45: %q used before it is defined");
}

TEST(ParseErrors, DuplicateName) {
  EXPECT_EQ(parse_error(kHeader + "    %x : f32[2] = placeholder[target=x2]\n"),
            "t.kiln:3:5: duplicate name %x (first defined at line 2)");
}

TEST(ParseErrors, MissingReturn) {
  EXPECT_EQ(parse_error(kHeader), "t.kiln:3:1: expected a node ('%name : ...') or 'return', found end of file");
}

TEST(ParseErrors, Garbage) {
  EXPECT_EQ(parse_error("hello"), "t.kiln:1:1: expected 'graph', found 'hello'");
  EXPECT_EQ(parse_error(kHeader + "    garbage here\n"),
            "t.kiln:3:5: expected a node ('%name : ...') or 'return', found 'garbage'");
  EXPECT_EQ(parse_error(kHeader + "    return (x,)\n    %z\n"),
            "t.kiln:4:5: expected end of file after the return line, found '%'");
  EXPECT_EQ(parse_error(kHeader + "    %y : f32[2] = call_module[target=m]\n"),
            "t.kiln:3:19: expected placeholder, get_attr or call_function, found 'call_module'");
}

TEST(ParseErrors, BadTypes) {
  EXPECT_EQ(parse_error(kHeader + "    %y : f33[2] = placeholder[target=y]\n"),
            "t.kiln:3:10: expected a dtype (f32, f16, bf16, f64, i64, i32, i16, i8, u8, u16, u32, u64, bool), found 'f33'");
  std::string message = parse_error(kHeader + "    %y : f32[s0 +] = placeholder[target=y]\n");
  EXPECT_EQ(message.rfind("t.kiln:3:", 0), 0u) << message;
  EXPECT_NE(message.find("bad dimension 's0 +'"), std::string::npos) << message;
  EXPECT_EQ(parse_error(kHeader + "    %y : f32[2]@tpu = placeholder[target=y]\n"),
            "t.kiln:3:17: unknown device 'tpu' (expected cpu, cuda or cuda:N)");
  EXPECT_EQ(parse_error(kHeader + "    %y = placeholder[target=y]\n"),
            "t.kiln:3:5: placeholder %y needs a type, e.g. f32[2, 3]");
}

TEST(ParseErrors, NumUsersMustMatch) {
  EXPECT_EQ(parse_error(kHeader +
                        "    %y = call_function[target=relu](args = (%x,), kwargs = {})\n"
                        "    %z = call_function[target=relu](args = (%x,), kwargs = {})\n"
                        "    return (y, z)\n"),
            "t.kiln:2:20: %x is written with num_users=1 but has 2 users");
}

// A symbol gets a value only from an input dim that is exactly that symbol; any other symbol in
// an argument could never be evaluated (a fuzzed `mul(%y, f%y)` failed inside the kernels).
TEST(ParseErrors, ASymbolNoInputDimBinds) {
  EXPECT_EQ(parse_error(kHeader + "    %m = call_function[target=mul](args = (%x, f % x), kwargs = {})\n    return (m,)\n"),
            "t.kiln:3:48: symbol 'f' in f % x is not the size of any input dim, so it has no value when the graph runs");
  EXPECT_EQ(parse_error("graph():\n"
                        "    %x : f32[2 * s0] = placeholder[target=x]\n"
                        "    %v = call_function[target=reshape](args = (%x, [s0, 2]), kwargs = {})\n"
                        "    return (v,)\n"),
            "t.kiln:3:53: symbol 's0' in s0 is not the size of any input dim, so it has no value when the graph runs");
}

TEST(ParseErrors, NodeNameWithoutPercent) {
  EXPECT_EQ(parse_error(kHeader + "    %r = call_function[target=relu](args = (x,), kwargs = {})\n"),
            "t.kiln:3:45: 'x' reads as a symbol; write %x to use node %x");
  EXPECT_EQ(parse_error(kHeader + "    return (x, nope)\n"), "t.kiln:3:16: return value 'nope' is not a defined node");
}

TEST(ParseErrors, UnterminatedString) {
  EXPECT_EQ(parse_error(kHeader +
                        "    %y = call_function[target=div](args = (%x, 2), kwargs = {rounding_mode: \"floor})\n"),
            "t.kiln:3:77: unterminated string");
}

TEST(ParseErrors, MissingParameterNamesTheWeightsFile) {
  std::string text = kHeader + "    %w = get_attr[target=fc.w]\n    return (w,)\n";
  EXPECT_EQ(parse_error(text), "t.kiln:3:26: no value for get_attr target 'fc.w': no weights were given");
  ParseOptions options;
  options.file_name = "t.kiln";
  options.weights_file = "m.safetensors";
  EXPECT_EQ(parse_error(text, options),
            "t.kiln:3:26: get_attr target 'fc.w' is not in the weights file 'm.safetensors'");
  options.weights_file_missing = true;
  EXPECT_EQ(parse_error(text, options),
            "t.kiln:3:26: get_attr target 'fc.w' needs the weights file 'm.safetensors', which does not exist");
}

TEST(ParseErrors, ParameterTypeMustMatch) {
  ParseOptions options;
  options.file_name = "t.kiln";
  options.parameters.emplace("fc.w", Tensor::zeros({4}, DType::f32));
  EXPECT_EQ(parse_error(kHeader + "    %w : f32[5] = get_attr[target=fc.w]\n    return (w,)\n", options),
            "t.kiln:3:10: type of %w is written f32[5] but the parameter 'fc.w' is f32[4]");
}

TEST(ParseErrors, EveryTruncationIsAnErrorNeverACrash) {
  Graph graph = all_arguments_graph();
  std::string text = print_graph(graph);
  ParseOptions options = options_with(graph);
  for (size_t length = 0; length + 1 < text.size(); ++length) {
    // Only kiln::Error may escape: an InternalError or a crash would be a parser bug.
    std::string message = parse_error(text.substr(0, length), options);
    EXPECT_EQ(message.rfind("t.kiln:", 0), 0u) << "prefix of " << length << " bytes: " << message;
  }
}

TEST(ParseErrors, DeepNestingIsRefused) {
  std::string text = kHeader + "    %y = call_function[target=sum](args = (%x, " + std::string(100, '[') + "\n";
  EXPECT_EQ(parse_error(text), "t.kiln:3:112: lists nested deeper than 64 levels");
}

TEST(Parser, NodesNamedLikeKeywordsReadBack) {
  Graph graph;
  Node* none = graph.create_placeholder("None", TensorMeta::contiguous(DType::f32, {1}));
  graph.create_output({none, Argument()});
  std::string text = print_graph(graph);
  EXPECT_NE(text.find("return (%None, None)"), std::string::npos) << text;
  Graph parsed = parse_graph(text);
  EXPECT_TRUE(parsed.output_node()->args()[0].is_node());
  EXPECT_TRUE(parsed.output_node()->args()[1].is_none());
}

}  // namespace
}  // namespace kiln::ir
