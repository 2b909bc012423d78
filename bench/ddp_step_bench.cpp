// Times data-parallel training steps (kiln::compile_training with TrainingOptions::data_parallel)
// of the models of bench/training_step_bench.cpp, on every rank of a job started by mpirun or
// `kiln launch` (1 rank works too); run by bench/compare_ddp.py against PyTorch DDP.
//
//   mpirun -np N kiln_ddp_step_bench --model mlp|attention [--weights FILE] [--iters N] [--warmup N]
//                                    [--threads N] [--check-steps K] [--block N] [--bucket-bytes B]
//                                    [--overlap automatic|always|never]
//
// Each rank trains on its own batch of the model's size (mlp: 64 x 784 with labels, cross_entropy;
// attention: 2 x 8 x 32 with a target, mse_loss), made by a formula of the rank and the element's
// index that bench/compare_ddp.py repeats exactly (see local_batch), with SGD (lr 0.01, momentum
// 0.9) from the weights in FILE (a .safetensors of the module's parameters; else manual_seed(0)).
// It measures, one step at a time, alternating blocks of --block steps so that both see the same
// machine:
//   step     a data-parallel step (gradients averaged across the ranks);
//   local    the same step of a second training compiled without data_parallel (no communication),
//            run by every rank at the same time: the step's cost without communication;
// and, after them, `allreduce`: one all_reduce (average) of a flat f32 tensor holding as many
// elements as all the gradients, after a barrier, as a sequential average of every gradient would
// cost. The first --check-steps data-parallel steps' losses are recorded before any timing (for
// the comparison with PyTorch), and at the end every rank compares its parameters with every other
// rank's (all_gather, bit for bit). Each rank prints one JSON line: rank, world, the three
// medians (ms), the check losses, the last loss and whether the ranks' weights are identical.
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/training_workloads.h"

namespace {

using namespace kiln;
using Clock = std::chrono::steady_clock;
namespace F = nn::functional;

// Element `index` of this rank's batch: a value in [-1, 1) on a 1/1000 grid, computed the same way
// (integers, then one double division and subtraction, rounded to f32) by bench/compare_ddp.py.
double grid_value(int64_t index, int64_t multiplier) {
  return double((index * multiplier) % 2000) / 1000.0 - 1.0;
}

Tensor grid_tensor(const Sizes& sizes, int64_t first_index, int64_t multiplier) {
  std::vector<double> values(size_t(numel_of(sizes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = grid_value(first_index + int64_t(i), multiplier);
  return Tensor::from_doubles(sizes, values, DType::f32);
}

constexpr int64_t kInputMultiplier = 2654435761;
constexpr int64_t kTargetMultiplier = 40503;

struct Workload {
  std::unique_ptr<nn::Module> model;
  LossFunction loss;
  Batch batch;
};

Workload make_workload(const std::string& name, int rank) {
  Workload workload;
  if (name == "mlp") {
    constexpr int64_t kBatch = 64;
    workload.model = std::make_unique<bench::Mlp>();
    workload.loss = [](const std::vector<Var>& outputs, const std::vector<Var>& targets) {
      return F::cross_entropy(outputs[0], targets[0]);
    };
    std::vector<double> labels(kBatch);
    for (int64_t b = 0; b < kBatch; ++b) labels[size_t(b)] = double((rank * kBatch + b) * 7 % 10);
    workload.batch = {{grid_tensor({kBatch, 784}, rank * kBatch * 784, kInputMultiplier)},
                      {Tensor::from_doubles({kBatch}, labels, DType::i64)}};
  } else if (name == "attention") {
    const Sizes sizes = {2, 8, 32};
    const int64_t count = numel_of(sizes);
    workload.model = std::make_unique<bench::AttentionBlock>();
    workload.loss = [](const std::vector<Var>& outputs, const std::vector<Var>& targets) {
      return F::mse_loss(outputs[0], targets[0]);
    };
    workload.batch = {{grid_tensor(sizes, rank * count, kInputMultiplier)},
                      {grid_tensor(sizes, rank * count, kTargetMultiplier)}};
  } else {
    fail("--model must be mlp or attention, got '", name, "'");
  }
  return workload;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool ranks_hold_the_same_weights(distributed::ProcessGroup& group, const CompiledTraining& training) {
  bool same = true;
  for (const std::string& name : training.parameter_names()) {
    const Tensor parameter = training.parameter(name).contiguous();
    const Tensor gathered = group.all_gather(parameter);
    for (int rank = 1; rank < group.world_size(); ++rank)
      same = same && std::memcmp(gathered.select(0, rank).data_ptr(), gathered.select(0, 0).data_ptr(),
                                 parameter.nbytes()) == 0;
  }
  return same;
}

struct Options {
  std::string model = "mlp", weights;
  int iters = 200, warmup = 20, threads = 1, check_steps = 10, block = 10;
  int64_t bucket_bytes = int64_t(25) << 20;  // TrainingOptions::gradient_bucket_bytes
  TrainingOptions::Overlap overlap = TrainingOptions::Overlap::automatic;
};

int run(const Options& options) {
  std::shared_ptr<distributed::ProcessGroup> group = distributed::init_process_group();
  const int rank = group->rank();
  const SgdOptions sgd{.lr = 0.01, .momentum = 0.9};
  auto compile = [&](Workload& workload, bool data_parallel) {
    if (!options.weights.empty()) workload.model->load_state_dict(options.weights);
    TrainingOptions training_options;
    training_options.num_threads = options.threads;
    if (data_parallel) training_options.data_parallel = group;
    training_options.gradient_bucket_bytes = options.bucket_bytes;
    training_options.overlap_communication = options.overlap;
    return compile_training(*workload.model, workload.loss, sgd, workload.batch, training_options);
  };
  manual_seed(0);
  Workload parallel_workload = make_workload(options.model, rank);
  manual_seed(0);
  Workload local_workload = make_workload(options.model, rank);
  CompiledTraining parallel = compile(parallel_workload, true);
  CompiledTraining local = compile(local_workload, false);

  std::vector<double> check_losses;
  for (int i = 0; i < options.check_steps; ++i) check_losses.push_back(parallel.step(parallel_workload.batch));
  for (int i = 0; i < options.warmup; ++i) {
    parallel.step(parallel_workload.batch);
    local.step(local_workload.batch);
  }
  std::vector<double> step_ms, local_ms;
  float last_loss = 0;
  while (int(step_ms.size()) < options.iters) {
    group->barrier();
    for (int i = 0; i < options.block && int(local_ms.size()) < options.iters; ++i) {
      const auto start = Clock::now();
      local.step(local_workload.batch);
      local_ms.push_back(milliseconds_since(start));
    }
    group->barrier();
    for (int i = 0; i < options.block && int(step_ms.size()) < options.iters; ++i) {
      const auto start = Clock::now();
      last_loss = parallel.step(parallel_workload.batch);
      step_ms.push_back(milliseconds_since(start));
    }
  }
  int64_t gradient_elements = 0;
  for (const std::string& name : parallel.parameter_names()) gradient_elements += parallel.parameter(name).numel();
  const Tensor gradients = Tensor::full({gradient_elements}, 0.5, DType::f32);
  std::vector<double> allreduce_ms;
  for (int i = 0; i < std::max(options.iters / 2, 10); ++i) {
    group->barrier();
    const auto start = Clock::now();
    group->all_reduce(gradients, distributed::ReduceOp::average);
    allreduce_ms.push_back(milliseconds_since(start));
  }
  const bool identical = ranks_hold_the_same_weights(*group, parallel);
  std::string losses;
  for (double loss : check_losses) losses += (losses.empty() ? "" : ", ") + std::to_string(loss);
  char line[1024];
  std::snprintf(line, sizeof line,
                "{\"rank\": %d, \"world\": %d, \"model\": \"%s\", \"threads\": %d, \"iters\": %d, "
                "\"step_ms\": %.6f, \"local_ms\": %.6f, \"allreduce_ms\": %.6f, \"gradient_elements\": %lld, "
                "\"last_loss\": %.9g, \"weights_identical\": %s, \"check_losses\": [",
                rank, group->world_size(), options.model.c_str(), options.threads, options.iters, median(step_ms),
                median(local_ms), median(allreduce_ms), static_cast<long long>(gradient_elements), double(last_loss),
                identical ? "true" : "false");
  std::string json = line;
  for (size_t i = 0; i < check_losses.size(); ++i) {
    std::snprintf(line, sizeof line, "%s%.9g", i ? ", " : "", check_losses[i]);
    json += line;
  }
  std::printf("%s]}\n", json.c_str());
  std::fflush(stdout);
  group->barrier();
  return identical ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) try {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(arg, " needs a value");
      return argv[++i];
    };
    auto count = [&](int minimum) { return std::max(minimum, std::atoi(value().c_str())); };
    if (arg == "--model") options.model = value();
    else if (arg == "--weights") options.weights = value();
    else if (arg == "--iters") options.iters = count(1);
    else if (arg == "--warmup") options.warmup = count(0);
    else if (arg == "--threads") options.threads = count(0);
    else if (arg == "--check-steps") options.check_steps = count(0);
    else if (arg == "--block") options.block = count(1);
    else if (arg == "--bucket-bytes") options.bucket_bytes = count(1);
    else if (arg == "--overlap") {
      const std::string mode = value();
      if (mode == "automatic") options.overlap = TrainingOptions::Overlap::automatic;
      else if (mode == "always") options.overlap = TrainingOptions::Overlap::always;
      else if (mode == "never") options.overlap = TrainingOptions::Overlap::never;
      else fail("--overlap must be automatic, always or never, got '", mode, "'");
    }
    else
      fail("unknown argument '", arg,
           "' (usage: --model mlp|attention [--weights FILE] [--iters N] [--warmup N] [--threads N] "
           "[--check-steps K] [--block N] [--bucket-bytes B] [--overlap automatic|always|never])");
  }
  return run(options);
} catch (const std::exception& error) {
  std::fprintf(stderr, "kiln_ddp_step_bench: %s\n", error.what());
  return 2;
}
