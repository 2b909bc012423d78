// Fuzz target: the IR text form. An input that parses must verify, print, parse back from its
// print and print identically (ir/parser.h's promise), and round-trip through JSON.
#include "ir/json_format.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "kiln/error.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/fuzz_weights.h"
#include "tests/fuzz/targets/fuzz_targets.h"

namespace kiln::fuzz {

namespace {

ir::ParseOptions options_with(Parameters parameters, const std::string& file_name) {
  ir::ParseOptions options;
  options.file_name = file_name;
  options.parameters = std::move(parameters);
  options.weights_file = "fuzz.safetensors";
  return options;
}

}  // namespace

// What every graph that a reader accepted must satisfy: it verifies, and its text and JSON
// forms read back into a graph that prints identically.
void check_round_trips(const ir::Graph& graph) {
  ir::verify(graph);
  std::string printed = ir::print_graph(graph);
  ir::ParseOptions options = options_with(graph.parameters(), "printed.kiln");
  try {
    ir::Graph again = ir::parse_graph(printed, options);
    if (ir::print_graph(again) != printed) throw FuzzPropertyFailure("print(parse(print(g))) differs from print(g)");
    ir::Graph from_json = ir::graph_from_json(ir::graph_to_json(graph), options);
    if (ir::print_graph(from_json) != printed) throw FuzzPropertyFailure("the JSON round trip prints differently");
  } catch (const Error& error) {
    throw FuzzPropertyFailure(std::string("a printed graph does not read back: ") + error.what());
  }
}

void fuzz_text_parser(std::string_view input) {
  ir::Graph graph = ir::parse_graph(input, options_with(parameters_for_text(input), "fuzz.kiln"));
  check_round_trips(graph);
}

}  // namespace kiln::fuzz
