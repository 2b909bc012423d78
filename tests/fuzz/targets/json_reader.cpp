// Fuzz target: the IR JSON form, read as `kiln` reads a .json model (ir/json_format.h); an
// input that reads must pass the text form's round trips too.
#include "ir/json_format.h"
#include "kiln/error.h"
#include "tests/fuzz/fuzz_weights.h"
#include "tests/fuzz/targets/fuzz_targets.h"

namespace kiln::fuzz {

void check_round_trips(const ir::Graph& graph);  // text_parser.cpp

void fuzz_json_reader(std::string_view input) {
  ir::ParseOptions options;
  options.file_name = "fuzz.json";
  options.weights_file = "fuzz.safetensors";
  nlohmann::json document = nlohmann::json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (!document.is_discarded()) options.parameters = parameters_for_json(document);
  check_round_trips(ir::parse_graph_json(input, options));
}

}  // namespace kiln::fuzz
