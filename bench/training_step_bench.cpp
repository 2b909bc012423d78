// Times one compiled training step (forward, backward, optimizer: kiln::CompiledTraining::step)
// of the two models bench/compare_training.py compares with PyTorch:
//   mlp        784-128-10 (fc1, ReLU, fc2), cross_entropy, batch 64 (the parity MLP)
//   attention  the pre-LayerNorm causal attention block of samples/models/attention.kiln
//              ([2, 8, 32], 2 heads, GELU MLP of 64), mse_loss against a fixed target
// with SGD (lr 0.01, momentum 0.9). Prints the median step time with its spread, the compile
// time, and the partition's saved bytes, as one JSON object with --json.
//
//   kiln_training_step_bench --model mlp|attention [--iters N] [--warmup N] [--threads N] [--json]
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/training_workloads.h"
#include "compiler/training/training_access.h"

namespace {

using namespace kiln;
using kiln::bench::AttentionBlock;
using kiln::bench::Mlp;
namespace F = nn::functional;
using Clock = std::chrono::steady_clock;

Tensor random_tensor(const Sizes& sizes, std::mt19937& random) {
  std::normal_distribution<double> normal;
  std::vector<double> values(size_t(numel_of(sizes)));
  for (double& value : values) value = normal(random);
  return Tensor::from_doubles(sizes, values, DType::f32);
}

Tensor random_labels(int64_t count, int64_t classes, std::mt19937& random) {
  std::vector<double> labels(static_cast<size_t>(count));
  for (double& label : labels) label = double(random() % uint32_t(classes));
  return Tensor::from_doubles({count}, labels, DType::i64);
}

double percentile(const std::vector<double>& sorted, double p) { return sorted[size_t(p * double(sorted.size() - 1))]; }

struct Workload {
  std::unique_ptr<nn::Module> model;
  LossFunction loss;
  Batch batch;
};

Workload make_workload(const std::string& name, std::mt19937& random) {
  Workload workload;
  if (name == "mlp") {
    workload.model = std::make_unique<Mlp>();
    workload.loss = [](const std::vector<Var>& outputs, const std::vector<Var>& targets) {
      return F::cross_entropy(outputs[0], targets[0]);
    };
    workload.batch = {{random_tensor({64, 784}, random)}, {random_labels(64, 10, random)}};
  } else if (name == "attention") {
    workload.model = std::make_unique<AttentionBlock>();
    workload.loss = [](const std::vector<Var>& outputs, const std::vector<Var>& targets) {
      return F::mse_loss(outputs[0], targets[0]);
    };
    workload.batch = {{random_tensor({2, 8, 32}, random)}, {random_tensor({2, 8, 32}, random)}};
  } else {
    fail("--model must be mlp or attention, got '", name, "'");
  }
  return workload;
}

int run(const std::string& model_name, int iters, int warmup, int threads, bool json) {
  manual_seed(0);
  std::mt19937 random(0);
  Workload workload = make_workload(model_name, random);
  TrainingOptions options;
  options.num_threads = threads;
  const auto compile_start = Clock::now();
  CompiledTraining training = compile_training(*workload.model, workload.loss,
                                               SgdOptions{.lr = 0.01, .momentum = 0.9}, workload.batch, options);
  const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - compile_start).count();
  float loss = 0;
  for (int i = 0; i < warmup; ++i) loss = training.step(workload.batch);
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    const auto start = Clock::now();
    loss = training.step(workload.batch);
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  const passes::Partition& partition = TrainingAccess::training(training).partition();
  if (json) {
    std::printf(
        "{\"model\": \"%s\", \"median_ms\": %.6f, \"min_ms\": %.6f, \"p10_ms\": %.6f, \"p90_ms\": %.6f, "
        "\"max_ms\": %.6f, \"iters\": %d, \"threads\": %d, \"compile_ms\": %.1f, \"compiles\": %zu, "
        "\"saved_bytes\": %lld, \"baseline_bytes\": %lld, \"last_loss\": %.6f}\n",
        model_name.c_str(), percentile(times, 0.5), times.front(), percentile(times, 0.1), percentile(times, 0.9),
        times.back(), iters, threads, compile_ms, training.compile_count(), static_cast<long long>(partition.saved_bytes),
        static_cast<long long>(partition.baseline_bytes), double(loss));
  } else {
    std::printf("%s: step median %.3f ms (min %.3f, p10 %.3f, p90 %.3f, max %.3f) over %d steps, %d threads\n",
                model_name.c_str(), percentile(times, 0.5), times.front(), percentile(times, 0.1),
                percentile(times, 0.9), times.back(), iters, threads);
    std::printf("compile %.1f ms (%zu graphs); saved %lld bytes (saving every activation: %lld); last loss %.5f\n",
                compile_ms, training.compile_count(), static_cast<long long>(partition.saved_bytes),
                static_cast<long long>(partition.baseline_bytes), double(loss));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string model = "mlp";
  int iters = 200, warmup = 20, threads = 0;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(arg, " needs a value");
      return argv[++i];
    };
    if (arg == "--model") model = value();
    else if (arg == "--iters") iters = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--warmup") warmup = std::max(0, std::atoi(value().c_str()));
    else if (arg == "--threads") threads = std::max(0, std::atoi(value().c_str()));
    else if (arg == "--json") json = true;
    else fail("unknown argument '", arg, "' (usage: --model mlp|attention [--iters N] [--warmup N] [--threads N] [--json])");
  }
  return run(model, iters, warmup, threads, json);
} catch (const std::exception& error) {
  std::fprintf(stderr, "kiln_training_step_bench: %s\n", error.what());
  return 2;
}
