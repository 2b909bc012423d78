// `kiln run MODEL [--input NAME=FILE.npy]... [--random-inputs SEED] [--dim SYMBOL=N]... [--sample-inputs]
//  [--out DIR] [--target interp|eager|cpu|cuda] [--check] [--freeze]`: runs a model on any target of the
// registry (compiler/target_registry.h): the reference interpreter (interp, the default), eager
// mode (the interpreter's kernels as instructions of the VM), compiled C++ (cpu) or compiled
// CUDA on the GPU (cuda); prints a summary of each output (name, dtype, shape, first values);
// --out writes each output to DIR/NAME.npy. --sample-inputs runs a .pt2 archive on the sample
// inputs it carries. --check also runs the interpreter and compares: it prints the max abs and
// rel error of each output and exits 1 when any element is off by more than atol + rtol *
// |expected| (ints and bools: exactly). --backend is the deprecated old name of --target. An
// ONNX model's shape-deciding inputs given with --input (Reshape's shape, ...) are taken as the
// values to specialize the model on (tools/model_inputs.h: load_model_for_run). MODEL may be a
// package folder (`kiln compile -o DIR`): it runs through the package's own library
// (compiler/package_runner.h), on its inputs' names and types.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/model_files.h"
#include "compiler/package_runner.h"
#include "compiler/target_registry.h"
#include "compiler/tensor_comparison.h"
#include "kiln/error.h"
#include "kiln/npy.h"
#include "runtime/cpu_features.h"
#include "tools/commands.h"
#include "tools/model_inputs.h"

namespace kiln::tools {

namespace {
struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::optional<uint64_t> random_seed;
  std::vector<std::string> dims;
  bool sample_inputs = false;
  std::string out_dir;
  int64_t show = 6;
  std::string target = "interp";
  const CLI::Option* backend = nullptr;  // the deprecated spelling of --target, when given
  bool check = false;
  double rtol = 1e-4;
  double atol = 1e-5;
  std::string isa;
  int threads = 0;
  bool freeze = false;
  int batch_chunks = 0;
};

// Compares one output with the interpreter's and prints the errors on stdout; returns what is
// wrong ("" within tolerance).
std::string check_output(const std::string& name, const Tensor& got, const Tensor& expected, const RunOptions& options) {
  compiler::Tolerance tolerance{options.rtol, options.atol};
  compiler::TensorComparison comparison = compiler::compare_tensors(got, expected, tolerance);
  std::string problem = comparison.problem(name, got, expected, tolerance);
  if (!comparison.same_type) {
    std::cout << "check " << name << ": FAIL: " << problem << "\n";
    return problem;
  }
  // An element passes where |got - expected| <= atol + rtol * |expected| (numpy's allclose): near
  // zero the relative error may be large and the element within atol, so "ok" says which rule.
  std::cout << "check " << name << ": max abs err " << comparison.max_abs << ", max rel err " << comparison.max_rel;
  if (problem.empty())
    std::cout << ": ok (every element within atol " << options.atol << " + rtol " << options.rtol << " * |expected|)\n";
  else
    std::cout << ": FAIL, " << problem << "\n";
  return problem;
}

std::vector<Tensor> run_model(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                              const RunOptions& options) {
  CompileOptions compile_options;
  compile_options.target = options.target;
  compile_options.freeze = options.freeze;
  compile_options.batch_chunks = options.batch_chunks;
  if (!options.isa.empty()) compile_options.isa = parse_isa(options.isa);
  return compiler::prepare(graph, compile_options)->run(inputs, options.threads);
}

// Prints each output's summary and writes DIR/NAME.npy files for --out.
void report_outputs(const std::vector<Tensor>& outputs, const std::vector<std::string>& names, const RunOptions& options) {
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
}

// MODEL is a package folder: its own library runs it.
int run_package(const RunOptions& options) {
  if (options.target != "interp" || options.backend->count() > 0 || options.freeze || !options.isa.empty())
    fail("a package runs as it was compiled: --target, --freeze and --isa do not apply (set $KILN_ISA to force an instruction set)");
  if (options.check)
    fail("--check needs the model's graph, which a package does not carry: run `kiln run MODEL --check`, or compare "
         "this run's --out files with the interpreter's");
  if (options.sample_inputs) fail("--sample-inputs applies to .pt2 archives, not to packages");
  compiler::PackageModel package = compiler::load_package(options.model);
  std::vector<ModelInput> placeholders;
  for (const auto& [name, meta] : package.inputs) placeholders.push_back({name, meta});
  std::map<std::string, Tensor> inputs =
      prepare_inputs(placeholders, parse_input_flags(options.inputs), parse_dim_flags(options.dims), options.random_seed);
  report_outputs(package.executable->run(inputs, options.threads), package.output_names, options);
  return 0;
}

int run_run(const RunOptions& options) {
  if (compiler::is_package(options.model)) return run_package(options);
  check_target(options.target);
  warn_if_used(options.backend);
  if (!options.isa.empty() && options.target != "cpu") fail("--isa applies only to --target cpu (not --target ", options.target, ")");
  std::map<std::string, std::string> files = parse_input_flags(options.inputs);
  ir::Graph graph = load_model_for_run(options.model, files);  // specialized on shape-deciding ONNX inputs
  std::map<std::string, int64_t> dims = parse_dim_flags(options.dims);
  if (options.sample_inputs && (!options.inputs.empty() || options.random_seed || !dims.empty()))
    fail("--sample-inputs gives every input; it cannot be combined with --input, --random-inputs or --dim");
  std::map<std::string, Tensor> inputs = options.sample_inputs ? compiler::model_sample_inputs(options.model)
                                                               : prepare_inputs(graph, files, dims, options.random_seed);

  std::vector<Tensor> outputs = run_model(graph, inputs, options);
  std::vector<std::string> names = graph.output_names();
  report_outputs(outputs, names, options);
  if (options.check) {
    CompileOptions interpreter;
    interpreter.target = "interp";
    std::vector<Tensor> expected = compiler::prepare(graph, interpreter)->run(inputs);
    std::vector<std::string> problems;
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string problem = check_output(names[i], outputs[i], expected[i], options);
      if (!problem.empty()) problems.push_back(problem);
    }
    if (!problems.empty()) {
      std::string joined;
      for (const std::string& problem : problems) joined += (joined.empty() ? "" : "; ") + problem;
      std::cerr << "kiln: error: --check: the " << options.target << " target disagrees with the interpreter: " << joined
                << "\n";
      return 1;
    }
  }
  return 0;
}
}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand("run", "Run a model on given or random inputs, on any target (the interpreter by default).");
  add_model_argument(*run, options->model);
  run->add_option("--input,-i", options->inputs, "An input as NAME=FILE.npy (repeatable)");
  run->add_option("--random-inputs", options->random_seed,
                  "Fill every input not given with --input with random values from this seed");
  run->add_option("--dim", options->dims, "Size of a symbolic dimension for random inputs, SYMBOL=N (repeatable)");
  run->add_flag("--sample-inputs", options->sample_inputs,
                "Run on the sample inputs a .pt2 archive carries (the example inputs given to torch.export)");
  run->add_option("--out,-o", options->out_dir, "Write each output to DIR/NAME.npy");
  run->add_option("--show", options->show, "How many leading values of each output to print")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI::Option* target = add_target_option(*run, options->target, "Where the model runs:")->capture_default_str();
  options->backend = add_backend_alias(*run, options->target, target);
  run->add_flag("--freeze", options->freeze,
                "Compiling targets: the parameters are constants (folded; on cpu convolution weights prepacked once)");
  run->add_flag("--check", options->check, "Also run the interpreter; print the max abs and rel error; exit 1 where an element is past atol + rtol * |expected|");
  run->add_option("--rtol", options->rtol, "Relative tolerance of --check")->capture_default_str();
  run->add_option("--atol", options->atol, "Absolute tolerance of --check")->capture_default_str();
  run->add_option("--isa", options->isa, "--target cpu: instruction set, scalar, avx2 or avx512 (default: the host's best)")
      ->check(CLI::IsMember({"scalar", "avx2", "avx512"}));
  run->add_option("--batch-chunks", options->batch_chunks,
                  "--target cpu: the batch runs as N chunks side by side, each on one thread, where the model computes its samples apart and N divides the batch (0: chosen; 1: never split)")
      ->check(CLI::Range(0, 64));
  run->add_option("--threads", options->threads, "--target cpu: OpenMP threads (0: the default)")->check(CLI::NonNegativeNumber);
  run->footer(
      "Examples:\n"
      "  kiln run samples/models/mlp.kiln --random-inputs 0 --dim s0=4\n"
      "  kiln run samples/models/cnn.kiln --input x=image.npy --out results/\n"
      "  kiln run samples/models/cnn.kiln --target cpu --check --random-inputs 0\n"
      "  kiln run model.pt2 --sample-inputs --target cpu\n"
      "  kiln run attention_pkg/ --random-inputs 0     (a package of kiln compile -o)");
  register_action(run, [options] { return run_run(*options); });
}

}  // namespace kiln::tools
