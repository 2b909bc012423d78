// `kiln verify MODEL [--input NAME=FILE.npy]... [--random-inputs SEED] [--dim SYMBOL=N]...
//  [--sample-inputs] [--target cpu|cuda|none] [--freeze] [--rtol R] [--atol A]
//  [--minify DIR [--force] [--max-tests N]]`: runs the model through every stage of the pipeline
// against the interpreter on the same inputs (compiler/verify.h), prints each stage's verdict,
// names the first stage that diverges and, for the code stages, the first node whose value
// diverges and its kernel; exits 1 when a stage diverges. --minify shrinks the graph to a small
// one that still diverges and writes it with its inputs and the command to DIR
// (compiler/minify.h). Inputs default to random values from seed 0.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/graph_stages.h"
#include "compiler/minify.h"
#include "compiler/model_files.h"
#include "compiler/subgraphs.h"
#include "compiler/target_registry.h"
#include "compiler/verify.h"
#include "kiln/error.h"
#include "tools/commands.h"
#include "tools/model_inputs.h"

namespace kiln::tools {

namespace {
struct VerifyCommandOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::optional<uint64_t> random_seed;
  std::vector<std::string> dims;
  bool sample_inputs = false;
  std::string target = "cpu";
  bool freeze = false;
  double rtol = 1e-4;
  double atol = 1e-5;
  std::string minify_dir;
  bool force = false;
  int max_tests = 150;
};

std::string format_ms(double milliseconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", milliseconds);
  return text;
}

void print_verdict(const compiler::StageVerdict& verdict) {
  char max_err[32];
  std::snprintf(max_err, sizeof max_err, "%.3g", verdict.max_abs_err);
  std::string stage = verdict.stage;
  stage.resize(std::max<size_t>(stage.size(), 11), ' ');
  std::cout << "  " << stage << " " << (verdict.ok() ? "ok        max abs err " + std::string(max_err) : "DIVERGES  " + verdict.problem)
            << "  (" << format_ms(verdict.milliseconds) << ")\n";
}

int run_verify(const VerifyCommandOptions& options) {
  if (options.target != "none") {
    check_target(options.target);
    compiler::find_code_target(options.target);  // interp and eager compile nothing: one line naming the code targets
  }
  if (options.minify_dir.empty() && (options.force || options.max_tests != 150))
    fail("--force and --max-tests apply to --minify DIR");
  if (!options.minify_dir.empty()) compiler::check_repro_directory(options.minify_dir, options.force);
  std::map<std::string, std::string> files = parse_input_flags(options.inputs);
  ir::Graph graph = load_model_for_run(options.model, files);
  std::map<std::string, int64_t> dims = parse_dim_flags(options.dims);
  if (options.sample_inputs && (!options.inputs.empty() || options.random_seed || !dims.empty()))
    fail("--sample-inputs gives every input; it cannot be combined with --input, --random-inputs or --dim");
  std::optional<uint64_t> seed = options.random_seed;
  if (!seed && files.empty() && !options.sample_inputs) seed = 0;
  std::map<std::string, Tensor> inputs =
      options.sample_inputs ? compiler::model_sample_inputs(options.model) : prepare_inputs(graph, files, dims, seed);

  compiler::VerifyOptions verify;
  verify.target = options.target == "none" ? "" : options.target;
  verify.freeze = options.freeze;
  verify.tolerance = {options.rtol, options.atol};
  std::cout << "verify " << options.model << ": each stage against the interpreter on the graph as loaded (rtol "
            << options.rtol << ", atol " << options.atol << ")\n";
  compiler::VerifyReport report = compiler::verify_model(graph, inputs, verify);
  for (const compiler::StageVerdict& verdict : report.stages) print_verdict(verdict);
  if (report.ok()) {
    std::cout << "every stage agrees with the interpreter\n";
    if (!options.minify_dir.empty()) fail("--minify: no stage diverges, so there is nothing to minify");
    return 0;
  }
  const compiler::StageVerdict& divergent = report.stages[*report.first_divergent];
  std::cout << "first divergent stage: " << divergent.stage << "\n";
  if (report.node) {
    const compiler::DivergentNode& node = *report.node;
    std::cout << "first divergent node: " << node.node << " (" << node.op << ")";
    if (!node.source.empty()) std::cout << " from " << node.source;
    if (!node.kernel.empty()) std::cout << ", computed by kernel " << node.kernel;
    std::cout << (node.problem.empty() ? "" : ": " + node.problem) << "\n";
  } else if (!compiler::is_graph_stage(divergent.stage)) {
    std::cout << "no single node diverges when its inputs are right (the divergence needs fusion across nodes)\n";
  }
  if (!options.minify_dir.empty()) {
    compiler::MinifyOptions minify;
    minify.verify = verify;
    minify.stage = divergent.stage;
    minify.max_tests = options.max_tests;
    if (report.node) minify.start = report.node->node.substr(1);
    compiler::MinifiedRepro repro = compiler::minify_divergence(graph, inputs, minify);
    compiler::write_repro(options.minify_dir, repro, minify, options.model, options.force);
    std::cout << "minified: " << compiler::computed_nodes(repro.graph).size() << " of " << repro.original_nodes
              << " nodes left after " << repro.tests << " tests; wrote " << options.minify_dir
              << " (run " << options.minify_dir << "/repro.sh)\n";
    std::cout << "repro inputs:";
    for (const auto& [name, tensor] : repro.inputs)
      std::cout << " " << name << " " << dtype_name(tensor.dtype()) << sizes_to_string(tensor.sizes());
    std::cout << "\n";
  }
  std::cerr << "kiln: error: verify: stage " << divergent.stage << " disagrees with the interpreter: " << divergent.problem << "\n";
  return 1;
}
}  // namespace

void add_verify_command(CLI::App& app) {
  auto options = std::make_shared<VerifyCommandOptions>();
  CLI::App* verify = app.add_subcommand(
      "verify", "Run a model through every stage against the interpreter; name the first stage and node that diverge.");
  add_model_argument(*verify, options->model);
  verify->add_option("--input,-i", options->inputs, "An input as NAME=FILE.npy (repeatable)");
  verify->add_option("--random-inputs", options->random_seed,
                     "Fill every input not given with --input with random values from this seed (default: 0 when no --input)");
  verify->add_option("--dim", options->dims, "Size of a symbolic dimension for random inputs, SYMBOL=N (repeatable)");
  verify->add_flag("--sample-inputs", options->sample_inputs, "Run on the sample inputs a .pt2 archive carries");
  verify->add_option("--target", options->target, "The code target of the last stage: cpu, cuda, or none (stop after scheduled)")
      ->capture_default_str();
  verify->add_flag("--freeze", options->freeze, "The parameters are constants (folded), as with kiln run --freeze");
  verify->add_option("--rtol", options->rtol, "Relative tolerance")->capture_default_str();
  verify->add_option("--atol", options->atol, "Absolute tolerance")->capture_default_str();
  verify->add_option("--minify", options->minify_dir,
                     "Shrink the graph to a small one that still diverges; write it, its inputs and the command to DIR");
  verify->add_flag("--force", options->force, "--minify may overwrite the files of a non-empty DIR");
  verify->add_option("--max-tests", options->max_tests, "--minify: the most candidate graphs to try")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  verify->footer(
      "Examples:\n"
      "  kiln verify samples/models/attention.kiln\n"
      "  kiln verify model.onnx --input x=x.npy --target cpu --minify repro/\n"
      "  kiln verify m.pt2 --sample-inputs --freeze");
  register_action(verify, [options] { return run_verify(*options); });
}

}  // namespace kiln::tools
