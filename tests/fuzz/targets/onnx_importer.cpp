// Fuzz target: a .onnx file through the loader every command uses (frontends/model_loader.h):
// protobuf, ONNX's checker and shape inference (in-process), the importer. A model that
// imports must verify and round-trip through the IR's text and JSON forms.
#include "frontends/model_loader.h"
#include "runtime/atomic_file.h"
#include "tests/fuzz/targets/fuzz_targets.h"
#include "tests/fuzz/targets/scratch_directory.h"

namespace kiln::fuzz {

void check_round_trips(const ir::Graph& graph);  // text_parser.cpp

void fuzz_onnx_importer(std::string_view input) {
  std::filesystem::path path = fresh_scratch_directory("onnx") / "fuzz.onnx";
  write_file_atomically(path.string(), input);
  check_round_trips(frontends::load_model(path.string()));
}

}  // namespace kiln::fuzz
