// Tests of the graph signature (ir/graph_signature.h, ir/signature_specs.h): the data, its
// "Graph signature:" block in the text form (exact text, left out when default, read back
// identically), its JSON form (version 2, and version 1 files read as they were meant), the
// verifier's checks, and one test per kind of bad written signature with its message.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "ir/graph_signature.h"
#include "ir/json_format.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/signature_specs.h"
#include "ir/verifier.h"
#include "tests/ir/format_test_graphs.h"

namespace kiln::ir {
namespace {

using format_test::error_of;
using nlohmann::json;
using Mutations = std::vector<std::pair<size_t, OutputSpec>>;

std::map<std::string, Tensor, std::less<>> weights() {
  return {{"fc.weight", Tensor::from_doubles({3}, std::vector<double>{1, 2, 3}, DType::f32)},
          {"bn.running_mean", Tensor::zeros({3}, DType::f32)},
          {"_folded_mask", Tensor::full({3}, 5, DType::f32)}};
}

Graph parse(const std::string& text) { return parse_graph(text, "sig.kiln", weights()); }

// x -> x * w + mask + mean; x is updated in place (its copy-back %x_new), the running mean
// too (%mean_new); the loss is the sum.
const char* kBody =
    "graph():\n"
    "    %x : f32[3] [num_users=1] = placeholder[target=x]\n"
    "    %w : f32[3] [num_users=1] = get_attr[target=fc.weight]\n"
    "    %mean : f32[3] [num_users=2] = get_attr[target=bn.running_mean]\n"
    "    %mask : f32[3] [num_users=1] = get_attr[target=_folded_mask]\n"
    "    %mul : f32[3] [num_users=2] = call_function[target=mul](args = (%x, %w), kwargs = {})\n"
    "    %add : f32[3] [num_users=1] = call_function[target=add](args = (%mul, %mask), kwargs = {})\n"
    "    %add_1 : f32[3] [num_users=1] = call_function[target=add](args = (%add, %mean), kwargs = {})\n"
    "    %loss : f32[] [num_users=1] = call_function[target=sum](args = (%add_1,), kwargs = {})\n"
    "    %x_new : f32[3] [num_users=1] = call_function[target=neg](args = (%mul,), kwargs = {})\n"
    "    %mean_new : f32[3] [num_users=1] = call_function[target=mul](args = (%mean, 0.5), kwargs = {})\n"
    "    return (loss, x_new, mean_new)\n";

const char* kSignature =
    "\n"
    "Graph signature:\n"
    "    # inputs\n"
    "    x: USER_INPUT\n"
    "    w: PARAMETER target=fc.weight\n"
    "    mean: BUFFER target=bn.running_mean\n"
    "    mask: CONSTANT_TENSOR target=_folded_mask\n"
    "\n"
    "    # outputs\n"
    "    loss: LOSS_OUTPUT\n"
    "    x_new: USER_INPUT_MUTATION target=x\n"
    "    mean_new: BUFFER_MUTATION target=bn.running_mean\n";

Graph signed_graph() {
  Graph graph = parse(kBody);
  graph.signature().set_attribute_kind("bn.running_mean", InputKind::buffer);
  graph.signature().set_attribute_kind("_folded_mask", InputKind::constant_tensor);
  graph.signature().set_output(0, {OutputKind::loss_output, ""});
  graph.signature().set_output(1, {OutputKind::user_input_mutation, "x"});
  graph.signature().set_output(2, {OutputKind::buffer_mutation, "bn.running_mean"});
  return graph;
}

std::string parse_error(const std::string& text) {
  return error_of([&] { parse(text); });
}

// ---- the data ----

TEST(GraphSignature, DefaultsAndKindNames) {
  GraphSignature signature;
  EXPECT_TRUE(signature.is_default());
  EXPECT_EQ(signature.attribute_kind("w"), InputKind::parameter);
  EXPECT_EQ(signature.output(7), OutputSpec{});
  signature.set_output(2, {OutputKind::user_input_mutation, "x"});
  EXPECT_EQ(signature.outputs().size(), 3u);
  EXPECT_EQ(signature.output(0), OutputSpec{});
  EXPECT_EQ(signature.mutations(), (Mutations{{2, {OutputKind::user_input_mutation, "x"}}}));
  EXPECT_FALSE(signature.is_default());
  for (InputKind kind : {InputKind::user_input, InputKind::parameter, InputKind::buffer, InputKind::constant_tensor})
    EXPECT_EQ(parse_input_kind(input_kind_name(kind)), kind);
  for (OutputKind kind : {OutputKind::user_output, OutputKind::loss_output, OutputKind::user_input_mutation,
                          OutputKind::parameter_mutation, OutputKind::buffer_mutation})
    EXPECT_EQ(parse_output_kind(output_kind_name(kind)), kind);
  EXPECT_EQ(parse_input_kind("USER_OUTPUT"), std::nullopt);
  // Setting an attribute back to PARAMETER is the default again; trailing user outputs do
  // not make two signatures differ.
  GraphSignature other;
  other.set_attribute_kind("w", InputKind::buffer);
  other.set_attribute_kind("w", InputKind::parameter);
  other.set_output(4, {});
  EXPECT_TRUE(other.is_default());
  EXPECT_EQ(other, GraphSignature{});
}

TEST(GraphSignature, CloneCopiesItAndRemovingAParameterForgetsItsKind) {
  Graph graph = signed_graph();
  Graph copy = graph.clone();
  EXPECT_EQ(copy.signature(), graph.signature());
  Graph moved = std::move(copy);
  EXPECT_EQ(moved.signature(), graph.signature());
  graph.signature().set_attribute_kind("spare", InputKind::buffer);
  graph.remove_parameter("spare");
  EXPECT_EQ(graph.signature().attribute_kinds().count("spare"), 0u);
}

// ---- the text form ----

TEST(SignatureText, PrintedAfterTheReturnLineAsTorchExportDoes) {
  Graph graph = signed_graph();
  EXPECT_EQ(print_graph(graph), std::string(kBody) + kSignature);
  verify(graph);
}

TEST(SignatureText, LeftOutWhenDefault) {
  Graph graph = parse(kBody);
  EXPECT_EQ(print_graph(graph), kBody);
  // A kind for a parameter no get_attr reads is listed by its target, so it is not lost.
  graph.signature().set_attribute_kind("bn.running_mean", InputKind::parameter);
  EXPECT_EQ(print_graph(graph), kBody);
}

TEST(SignatureText, ReadsBackIdentically) {
  Graph graph = signed_graph();
  std::string text = print_graph(graph);
  Graph back = parse(text);
  EXPECT_EQ(back.signature(), graph.signature());
  EXPECT_EQ(print_graph(back), text);
  verify(back);
}

TEST(SignatureText, RenamingTheCopyBackChangesNothing) {
  // The copy-back is found by position, whatever its node is called; a node named like the
  // old convention ("<input>_mutated") is an ordinary output unless the signature says so.
  std::string text = std::string(kBody) + kSignature;
  for (auto [from, to] : {std::pair{"x_new", "y"}, std::pair{"mean_new", "x_mutated"}}) {
    size_t at;
    while ((at = text.find(std::string("%") + from)) != std::string::npos) text.replace(at + 1, strlen(from), to);
    while ((at = text.find(std::string(" ") + from + ":")) != std::string::npos) text.replace(at + 1, strlen(from), to);
    at = text.find(std::string(", ") + from);
    text.replace(at + 2, strlen(from), to);
  }
  Graph graph = parse(text);
  EXPECT_EQ(graph.output_names(), (std::vector<std::string>{"loss", "y", "x_mutated"}));
  EXPECT_EQ(graph.signature().mutations(), (Mutations{{1, {OutputKind::user_input_mutation, "x"}},
                                                      {2, {OutputKind::buffer_mutation, "bn.running_mean"}}}));
  EXPECT_EQ(print_graph(parse(print_graph(graph))), print_graph(graph));

  Graph plain = parse(
      "graph():\n"
      "    %x : f32[3] = placeholder[target=x]\n"
      "    %x_mutated = call_function[target=neg](args = (%x,), kwargs = {})\n"
      "    return (x_mutated,)\n");
  EXPECT_TRUE(plain.signature().is_default());
}

TEST(SignatureText, InputSpecsMayBeLeftOutAndNamedWithPercent) {
  // Unlisted inputs keep their defaults; an output list is all or nothing.
  Graph graph = parse(std::string(kBody) +
                      "Graph signature:\n"
                      "    %mean: BUFFER target=bn.running_mean\n"
                      "    loss: USER_OUTPUT\n"
                      "    x_new: USER_OUTPUT\n"
                      "    mean_new: BUFFER_MUTATION target=bn.running_mean\n");
  EXPECT_EQ(graph.signature().attribute_kind("bn.running_mean"), InputKind::buffer);
  EXPECT_EQ(graph.signature().attribute_kind("_folded_mask"), InputKind::parameter);
  EXPECT_EQ(graph.signature().mutations(), (Mutations{{2, {OutputKind::buffer_mutation, "bn.running_mean"}}}));
}

TEST(SignatureTextErrors, EachNamesTheLineAndTheProblem) {
  std::string base = std::string(kBody) + "Graph signature:\n";
  EXPECT_EQ(parse_error(base + "    x: INPUT\n"),
            "sig.kiln:14:8: unknown signature kind 'INPUT' (USER_INPUT, PARAMETER, BUFFER, CONSTANT_TENSOR; "
            "USER_OUTPUT, LOSS_OUTPUT, USER_INPUT_MUTATION, PARAMETER_MUTATION, BUFFER_MUTATION)");
  EXPECT_EQ(parse_error(base + "    x: BUFFER\n"),
            "sig.kiln:14:5: graph signature: %x is a placeholder: its kind is USER_INPUT, not BUFFER");
  EXPECT_EQ(parse_error(base + "    x: USER_INPUT target=x\n"),
            "sig.kiln:14:5: graph signature: USER_INPUT %x takes no target");
  EXPECT_EQ(parse_error(base + "    w: USER_INPUT\n"),
            "sig.kiln:14:5: graph signature: %w is a get_attr node: its kind is PARAMETER, BUFFER or CONSTANT_TENSOR");
  EXPECT_EQ(parse_error(base + "    w: BUFFER\n"), "sig.kiln:14:5: graph signature: BUFFER %w needs target=fc.weight");
  EXPECT_EQ(parse_error(base + "    w: BUFFER target=bn.running_mean\n"),
            "sig.kiln:14:5: graph signature: %w reads 'fc.weight', not 'bn.running_mean'");
  EXPECT_EQ(parse_error(base + "    mul: BUFFER target=fc.weight\n"),
            "sig.kiln:14:5: graph signature: input spec 'mul' names no placeholder or get_attr node (nor a parameter "
            "'fc.weight' that no get_attr reads)");
  EXPECT_EQ(parse_error(base + "    x: USER_INPUT\n    x: USER_INPUT\n"),
            "sig.kiln:15:5: graph signature: %x is listed twice");
  EXPECT_EQ(parse_error(base + "    loss: USER_OUTPUT\n    x: USER_INPUT\n"),
            "sig.kiln:15:5: graph signature: input spec 'x' after the output specs: list the inputs first");
  EXPECT_EQ(parse_error(base + "    x_new: USER_OUTPUT\n"), "sig.kiln:14:5: graph signature: output 0 is loss, not x_new");
  EXPECT_EQ(parse_error(base + "    loss: USER_OUTPUT target=x\n"),
            "sig.kiln:14:5: graph signature: output 0 (loss): USER_OUTPUT takes no target");
  EXPECT_EQ(parse_error(base + "    loss: USER_OUTPUT\n    x_new: USER_INPUT_MUTATION\n"),
            "sig.kiln:15:5: graph signature: output 1 (x_new): USER_INPUT_MUTATION needs a target");
  EXPECT_EQ(parse_error(base + "    loss: USER_OUTPUT\n    x_new: USER_INPUT_MUTATION target=y\n"),
            "sig.kiln:15:5: graph signature: output 1 (x_new): USER_INPUT_MUTATION target 'y' names no placeholder");
  EXPECT_EQ(parse_error(base + "    loss: USER_INPUT_MUTATION target=x\n"),
            "sig.kiln:14:5: graph signature: output 0 (loss): f32[] cannot be copied back into 'x' of type f32[3]");
  EXPECT_EQ(parse_error(base + "    loss: USER_OUTPUT\n    x_new: BUFFER_MUTATION target=bn.running_mean\n"),
            "sig.kiln:15:5: graph signature: output 1 (x_new): BUFFER_MUTATION target 'bn.running_mean' is a PARAMETER");
  EXPECT_EQ(parse_error(base + "    mask: CONSTANT_TENSOR target=_folded_mask\n    loss: USER_OUTPUT\n"
                               "    x_new: PARAMETER_MUTATION target=_folded_mask\n"),
            "sig.kiln:16:5: graph signature: output 1 (x_new): PARAMETER_MUTATION target '_folded_mask' is a "
            "CONSTANT_TENSOR, which is never written");
  EXPECT_EQ(parse_error(base + "    loss: USER_OUTPUT\n    x_new: USER_INPUT_MUTATION target=x\n"
                               "    mean_new: USER_INPUT_MUTATION target=x\n"),
            "sig.kiln:16:5: graph signature: 'x' is written back by two outputs (1 and 2)");
  EXPECT_EQ(parse_error(base + "    loss: USER_OUTPUT\n"),
            "sig.kiln:13:1: graph signature: the signature lists 1 output but the graph returns 3 values");
  EXPECT_EQ(parse_error(base + "    loss: USER_OUTPUT\n    x_new: USER_OUTPUT\n    mean_new: USER_OUTPUT\n"
                               "    loss: USER_OUTPUT\n"),
            "sig.kiln:17:5: graph signature: the signature lists more outputs than the graph returns (3 values)");
  EXPECT_EQ(parse_error(base + "    loss USER_OUTPUT\n"), "sig.kiln:14:10: expected ':', found 'USER_OUTPUT'");
  EXPECT_EQ(parse_error(std::string(kBody) + "Graph signature\n"), "sig.kiln:14:1: expected ':', found end of file");
}

// ---- JSON ----

TEST(SignatureJson, VersionTwoWritesEverySpecAndReadsItBack) {
  Graph graph = signed_graph();
  json document = graph_to_json(graph);
  EXPECT_EQ(document["version"], 2);
  json expected = {
      {"inputs", json::array({{{"name", "x"}, {"kind", "USER_INPUT"}},
                              {{"name", "w"}, {"kind", "PARAMETER"}, {"target", "fc.weight"}},
                              {{"name", "mean"}, {"kind", "BUFFER"}, {"target", "bn.running_mean"}},
                              {{"name", "mask"}, {"kind", "CONSTANT_TENSOR"}, {"target", "_folded_mask"}}})},
      {"outputs", json::array({{{"name", "loss"}, {"kind", "LOSS_OUTPUT"}},
                               {{"name", "x_new"}, {"kind", "USER_INPUT_MUTATION"}, {"target", "x"}},
                               {{"name", "mean_new"}, {"kind", "BUFFER_MUTATION"}, {"target", "bn.running_mean"}}})}};
  EXPECT_EQ(document["signature"], expected);
  Graph back = graph_from_json(json::parse(document.dump()), "g.json", weights());
  EXPECT_EQ(back.signature(), graph.signature());
  EXPECT_EQ(print_graph(back), print_graph(graph));
  // A default signature is written too.
  json plain = graph_to_json(parse(kBody));
  EXPECT_EQ(plain["signature"]["outputs"][1], (json{{"name", "x_new"}, {"kind", "USER_OUTPUT"}}));
}

std::string json_error(const json& document) {
  return error_of([&] { graph_from_json(document, "g.json", weights()); });
}

TEST(SignatureJson, ErrorsNameThePath) {
  json document = graph_to_json(signed_graph());
  json missing = document;
  missing.erase("signature");
  EXPECT_EQ(json_error(missing), "g.json: missing field \"signature\"");
  json unknown = document;
  unknown["signature"]["inputs"][2]["kind"] = "STATE";
  EXPECT_EQ(json_error(unknown),
            "g.json: signature.inputs[2].kind: unknown input kind \"STATE\" (USER_INPUT, PARAMETER, BUFFER, "
            "CONSTANT_TENSOR)");
  json wrong_target = document;
  wrong_target["signature"]["outputs"][1]["target"] = "z";
  EXPECT_EQ(json_error(wrong_target),
            "g.json: signature.outputs[1]: output 1 (x_new): USER_INPUT_MUTATION target 'z' names no placeholder");
  json short_list = document;
  short_list["signature"]["outputs"].erase(2);
  EXPECT_EQ(json_error(short_list),
            "g.json: signature.outputs: the signature lists 2 outputs but the graph returns 3 values");
  json not_object = document;
  not_object["signature"] = json::array();
  EXPECT_EQ(json_error(not_object),
            "g.json: signature: expected an object {\"inputs\": [...], \"outputs\": [...]}, found array []");
  document["version"] = 3;
  EXPECT_EQ(json_error(document), "g.json: version: unsupported version 3 (Kiln reads versions 1 to 2)");
}

json read_json_file(const std::string& name) {
  std::ifstream file(format_test::golden_path(name));
  return json::parse(file);
}

TEST(SignatureJson, VersionOneFilesAreRead) {
  // Written by Kiln before the signature existed (kiln dump relu.kiln --format json).
  Graph graph = graph_from_json(read_json_file("relu_version1.json"), "relu_version1.json");
  EXPECT_TRUE(graph.signature().is_default());
  EXPECT_EQ(print_graph(graph),
            "graph():\n"
            "    %x : f32[s0, 3] [num_users=1] = placeholder[target=x]\n"
            "    %relu : f32[s0, 3] [num_users=1] = call_function[target=relu](args = (%x,), kwargs = {})\n"
            "    %add : f32[s0, 3] [num_users=1] = call_function[target=add](args = (%relu, 1.0), kwargs = {})\n"
            "    return (add,)\n");
  EXPECT_EQ(graph_to_json(graph)["version"], 2);
  // Version 1 marked copy-backs by name (kiln dump add_on_input.kiln --stage functional
  // --format json): the trailing "x_mutated" becomes the USER_INPUT_MUTATION it meant.
  Graph functional =
      graph_from_json(read_json_file("add_on_input_functional_version1.json"), "add_on_input_functional_version1.json");
  EXPECT_EQ(functional.signature().mutations(), (Mutations{{1, {OutputKind::user_input_mutation, "x"}}}));
  verify(functional);
}

// ---- the verifier ----

std::string verify_error(const Graph& graph) {
  try {
    verify(graph);
  } catch (const VerifyError& error) {
    return error.what();
  }
  return "";
}

TEST(SignatureVerifier, ChecksEverySpecAgainstTheGraph) {
  EXPECT_EQ(verify_error(signed_graph()), "");
  Graph graph = signed_graph();
  graph.signature().set_attribute_kind("gone", InputKind::buffer);
  EXPECT_EQ(verify_error(graph), "verify: graph signature: 'gone' is a BUFFER but the graph has no parameter of that name");
  graph = signed_graph();
  graph.signature().set_output(5, {OutputKind::loss_output, ""});
  EXPECT_EQ(verify_error(graph), "verify: graph signature: output 5 is LOSS_OUTPUT, but the graph returns 3 values");
  graph = signed_graph();
  graph.signature().set_output(0, {OutputKind::parameter_mutation, "fc.weight"});
  EXPECT_EQ(verify_error(graph),
            "verify: graph signature: output 0 (loss): f32[] cannot be copied back into 'fc.weight' of type f32[3]");
  graph = signed_graph();
  graph.signature().set_output(2, {OutputKind::user_input_mutation, "x"});
  EXPECT_EQ(verify_error(graph), "verify: graph signature: output 2 (mean_new): 'x' is written back by two outputs");
  // A default spec past the last output says nothing.
  graph = signed_graph();
  graph.signature().set_output(6, {});
  EXPECT_EQ(verify_error(graph), "");
}

}  // namespace
}  // namespace kiln::ir
