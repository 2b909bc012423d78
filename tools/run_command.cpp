// `kiln run MODEL [--input NAME=FILE.npy]... [--random-inputs SEED] [--dim SYMBOL=N]...
//  [--out DIR] [--backend interp|eager]`: runs a model through the reference interpreter
// (interp, the default) or through eager mode, the interpreter's kernels as instructions of
// the VM (eager), and prints a summary of each output (name, dtype, shape, first values);
// --out writes each output to DIR/NAME.npy.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/eager_executor.h"
#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "runtime/error.h"
#include "runtime/npy.h"
#include "tools/commands.h"
#include "tools/model_inputs.h"

namespace kiln::tools {

namespace {
struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::optional<uint64_t> random_seed;
  std::vector<std::string> dims;
  std::string out_dir;
  int64_t show = 6;
  std::string backend = "interp";
};

std::vector<Tensor> run_model(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                              const std::string& backend) {
  if (backend == "eager") return compiler::EagerExecutor().run(graph, inputs);
  return ir::Interpreter().run(graph, inputs);
}

int run_run(const RunOptions& options) {
  ir::Graph graph = ir::load_model(options.model);
  std::map<std::string, int64_t> dims = parse_dim_flags(options.dims);
  std::map<std::string, Tensor> inputs = prepare_inputs(graph, parse_input_flags(options.inputs), dims, options.random_seed);

  std::vector<Tensor> outputs = run_model(graph, inputs, options.backend);
  std::vector<std::string> names = graph.output_names();

  if (!options.out_dir.empty()) std::filesystem::create_directories(options.out_dir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::cout << summarize_tensor(names[i], outputs[i], options.show) << "\n";
    if (!options.out_dir.empty()) {
      std::filesystem::path path = std::filesystem::path(options.out_dir) / (names[i] + ".npy");
      write_npy(path.string(), outputs[i]);
    }
  }
  if (!options.out_dir.empty())
    std::cout << "wrote " << outputs.size() << " output" << (outputs.size() == 1 ? "" : "s") << " to "
              << options.out_dir << "\n";
  return 0;
}
}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand("run", "Run a model on given or random inputs with the reference interpreter or in eager mode.");
  run->add_option("MODEL", options->model, "Model file: .kiln (IR text) or .json (IR JSON)")->required();
  run->add_option("--input,-i", options->inputs, "An input as NAME=FILE.npy (repeatable)");
  run->add_option("--random-inputs", options->random_seed,
                  "Fill every input not given with --input with random values from this seed");
  run->add_option("--dim", options->dims, "Size of a symbolic dimension for random inputs, SYMBOL=N (repeatable)");
  run->add_option("--out,-o", options->out_dir, "Write each output to DIR/NAME.npy");
  run->add_option("--show", options->show, "How many leading values of each output to print")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--backend", options->backend,
                  "interp: the reference interpreter; eager: its kernels as instructions of the VM")
      ->check(CLI::IsMember({"interp", "eager"}))
      ->capture_default_str();
  register_action(run, [options] { return run_run(*options); });
}

}  // namespace kiln::tools
