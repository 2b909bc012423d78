// `kiln bench MODEL [--target cpu|cuda|interp|eager] [--iters N] [--warmup N] [--threads N] [--freeze]
//  [--input NAME=FILE.npy]... [--random-inputs SEED] [--dim S=N]... [--json]`: times a model's
// runs on a target of the registry (compiler/target_registry.h) after warm-up runs and prints
// the median latency with its spread (min, p10, p90, max), and for the compiling targets the
// compile (or cache load) time; where the target measures it (cuda), also the median device
// time of the steps alone (without the host-device copies), and the FLOPs of the model's
// convolutions and matrix products per run with their rate at the median (passes/flop_count.h; not
// for a package, which has no graph to count). --json prints one JSON object.
// An ONNX model whose shapes depend on an input's value (a Reshape's shape, EmbeddingBag's
// offsets as a Slice's starts) is specialized on the value --input gives, as `kiln run` does.
// --backend is the deprecated old name of --target. MODEL may be a package folder (`kiln compile
// -o DIR`): its own library runs it (compiler/package_runner.h), as an app would.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "compiler/model_files.h"
#include "compiler/package_runner.h"
#include "compiler/target_registry.h"
#include "ir/interpreter.h"
#include "passes/flop_count.h"
#include "runtime/cpu/openblas_core_type.h"
#include "tools/commands.h"
#include "tools/model_inputs.h"

namespace kiln::tools {

namespace {
struct BenchOptions {
  std::string model;
  std::string target = "cpu";
  const CLI::Option* backend = nullptr;  // the deprecated spelling of --target, when given
  int iters = 50;
  int warmup = 5;
  int threads = 0;
  std::vector<std::string> inputs;
  uint64_t random_seed = 0;
  std::vector<std::string> dims;
  bool json = false;
  bool freeze = false;
  int batch_chunks = 0;
};

using Clock = std::chrono::steady_clock;

double milliseconds(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double position = p * double(sorted.size() - 1);
  size_t low = size_t(position);
  size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - double(low));
}

int run_bench(const BenchOptions& options) {
  check_target(options.target);
  warn_if_used(options.backend);
  std::map<std::string, int64_t> dims = parse_dim_flags(options.dims);
  std::map<std::string, Tensor> inputs;
  std::unique_ptr<compiler::Executable> model;
  std::optional<passes::FlopCount> flops;  // of the model's products (a package has no graph to count)
  int64_t parameter_values = 0;  // of a model compiled without --freeze: its parameters' values
  std::string target = options.target;
  auto compile_start = Clock::now();
  double compile_ms = 0;
  if (compiler::is_package(options.model)) {
    if (options.target != "cpu" || options.backend->count() > 0 || options.freeze)
      fail("a package runs as it was compiled: --target and --freeze do not apply");
    compiler::PackageModel package = compiler::load_package(options.model);
    std::vector<ModelInput> placeholders;
    for (const auto& [name, meta] : package.inputs) placeholders.push_back({name, meta});
    inputs = prepare_inputs(placeholders, parse_input_flags(options.inputs), dims, options.random_seed);
    model = std::move(package.executable);
    target = "package (" + package.isa + ")";
    compile_ms = milliseconds(Clock::now() - compile_start);
  } else {
    // Specialized, as `kiln run` is, on the values --input gives to ONNX inputs that decide a
    // shape or a slice at import (tools/model_inputs.h).
    std::map<std::string, std::string> files = parse_input_flags(options.inputs);
    ir::Graph graph = load_model_for_run(options.model, files);
    inputs = prepare_inputs(graph, files, dims, options.random_seed);
    CompileOptions compile_options;
    compile_options.target = options.target;
    compile_options.freeze = options.freeze;
    compile_options.batch_chunks = options.batch_chunks;
    compile_start = Clock::now();
    model = compiler::prepare(graph, compile_options);
    compile_ms = milliseconds(Clock::now() - compile_start);
    // Counted once the model compiled (the compile says what is wrong with a model it refuses).
    flops = passes::count_model_flops(graph, ir::bind_symbols(graph, inputs));
    if (!options.freeze && (options.target == "cpu" || options.target == "cuda")) {
      for (const auto& [name, value] : graph.parameters()) parameter_values += value.numel();
    }
  }
  const CompileResult* compiled = model->compile_result();
  std::vector<double> device_times;
  // One run, timed; then the device's own time of it, where the target measures one.
  auto run_once = [&] {
    auto start = Clock::now();
    model->run(inputs, options.threads);
    double elapsed = milliseconds(Clock::now() - start);
    if (double device = model->last_device_milliseconds(); device >= 0) device_times.push_back(device);
    return elapsed;
  };
  for (int i = 0; i < options.warmup; ++i) run_once();
  std::vector<double> times;
  for (int i = 0; i < options.iters; ++i) times.push_back(run_once());
  std::sort(times.begin(), times.end());
  double median = percentile(times, 0.5);
  // The products' rate at the median, where they were counted (GFLOP/s).
  const bool rated = flops && median > 0;
  const double rate = rated ? flops->total / median / 1e6 : 0.0;
  // The device times of the timed runs only (the warm-up ones come first).
  device_times.erase(device_times.begin(), device_times.end() - std::min<ptrdiff_t>(ptrdiff_t(device_times.size()), options.iters));
  std::sort(device_times.begin(), device_times.end());
  if (options.json) {
    nlohmann::json out = {{"model", options.model},       {"target", target},
                          {"iters", options.iters},       {"median_ms", median},
                          {"min_ms", times.front()},      {"p10_ms", percentile(times, 0.1)},
                          {"p90_ms", percentile(times, 0.9)}, {"max_ms", times.back()},
                          {"compile_ms", compile_ms},     {"cache_hit", compiled != nullptr && compiled->cache_hit}};
    if (!device_times.empty()) out["device_median_ms"] = percentile(device_times, 0.5);
    if (const std::string core = loaded_openblas_core(); !core.empty()) out["openblas_core"] = core;
    if (flops) out["gflop"] = flops->total / 1e9;
    if (rated) out["gflops"] = rate;
    if (!compiler::is_package(options.model)) out["frozen"] = options.freeze;
    std::cout << out.dump() << "\n";
    return 0;
  }
  char line[256];
  std::snprintf(line, sizeof line, "%s on %s: median %.4f ms (min %.4f, p10 %.4f, p90 %.4f, max %.4f) over %d runs after %d warm-up",
                options.model.c_str(), target.c_str(), median, times.front(), percentile(times, 0.1),
                percentile(times, 0.9), times.back(), options.iters, options.warmup);
  std::cout << line << "\n";
  if (!device_times.empty()) {
    std::snprintf(line, sizeof line, "device time of the steps: median %.4f ms", percentile(device_times, 0.5));
    std::cout << line << "\n";
  }
  if (compiled != nullptr) {
    std::snprintf(line, sizeof line, "compile: %.1f ms (%s)", compile_ms, compiled->cache_hit ? "cache hit" : "compiled");
    std::cout << line << "\n";
  }
  // How fast the products ran: compare with the machine's FMA peak (passes/flop_count.h).
  if (rated && flops->total > 0) {
    std::snprintf(line, sizeof line, "products: %.4g GFLOP per run (convolutions and matrix products, 2 per multiply-add), %.1f GFLOP/s at the median",
                  flops->total / 1e9, rate);
    std::cout << line << "\n";
  }
  // Which kernels the model's BLAS calls ran (runtime/cpu/openblas_core_type.h).
  if (const std::string core = loaded_openblas_core(); !core.empty()) std::cout << "OpenBLAS kernels: " << core << "\n";
  // A new user times a model as ONNX Runtime runs it, whose initializers are constants: say what
  // --freeze does (ResNet-18 at 320 x 320, 2 threads: 24.1 ms without, 16.1 ms with).
  if (parameter_values >= 4096) {
    std::cout << "parameters: not frozen (" << parameter_values
              << " values, read as inputs that may change between calls); --freeze makes them constants "
                 "(folded where they can be, convolution and matmul weights prepacked once), as ONNX "
                 "Runtime treats initializers\n";
  }
  return 0;
}
}  // namespace

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand("bench", "Time a model's runs: median latency and spread, after warm-up.");
  add_model_argument(*bench, options->model);
  CLI::Option* target = add_target_option(*bench, options->target, "Where the model runs:")->capture_default_str();
  options->backend = add_backend_alias(*bench, options->target, target);
  bench->add_option("--iters,-n", options->iters, "Timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  bench->add_option("--warmup", options->warmup, "Untimed runs first")->check(CLI::NonNegativeNumber)->capture_default_str();
  bench->add_option("--batch-chunks", options->batch_chunks,
                  "--target cpu: the batch runs as N chunks side by side, each on one thread, where the model computes its samples apart and N divides the batch (0: chosen; 1: never split)")
      ->check(CLI::Range(0, 64));
  bench->add_option("--threads", options->threads, "--target cpu: OpenMP threads (0: the default)")
      ->check(CLI::NonNegativeNumber);
  bench->add_option("--input,-i", options->inputs, "An input as NAME=FILE.npy (repeatable)");
  bench->add_option("--random-inputs", options->random_seed, "Seed of the random values of inputs not given")
      ->capture_default_str();
  bench->add_option("--dim", options->dims, "Size of a symbolic dimension, SYMBOL=N (repeatable)");
  bench->add_flag("--json", options->json, "Print one JSON object");
  bench->add_flag("--freeze", options->freeze,
                  "The parameters are constants: folded, and on cpu convolution weights prepacked once");
  bench->footer(
      "Examples:\n"
      "  kiln bench samples/models/mlp.kiln --dim s0=64 --threads 2\n"
      "  kiln bench samples/models/cnn.kiln --target cpu --freeze\n"
      "  kiln bench attention_pkg/");
  register_action(bench, [options] { return run_bench(*options); });
}

}  // namespace kiln::tools
