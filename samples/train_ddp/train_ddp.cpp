// train_ddp: trains the spiral MLP of samples/train_mlp data-parallel across processes with
// Kiln's compiled training step, using nothing but the public header <kiln/kiln.h>.
//
//   kiln launch -n 2 train_ddp [LOSS_CSV] [--epochs N]     (or: mpirun -np 2 train_ddp ...)
//
// Every rank generates the same data set and cuts every global batch of 64 points into equal
// shares, one per rank; compile_training with TrainingOptions::data_parallel gives every rank
// rank 0's initial weights and averages the gradients across the ranks at each step, so the ranks
// train one model, as one process would on the whole batches. Rank 0 prints one line per epoch
// (the ranks' mean training loss, the accuracy on the whole set, the epoch's time) and writes the
// same numbers to LOSS_CSV ("epoch,loss,accuracy,ms"); at the end every rank checks that all hold
// the same weights. The exit status is 0 when the final accuracy reaches 95%, 1 otherwise, 2 on
// an error.
#include <kiln/kiln.h>

#include "../common/spiral_dataset.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace {

using spiral::Dataset;
using spiral::kClasses;
constexpr int64_t kGlobalBatch = 64;

// This rank's share of global batch `index`: `local` points from index * kGlobalBatch + rank * local.
kiln::Batch local_batch(const Dataset& data, int64_t index, int rank, int64_t local) {
  const int64_t first = index * kGlobalBatch + rank * local;
  return {{kiln::Tensor::from_doubles({local, 2}, data.points_from(first, local), kiln::DType::f32)},
          {kiln::Tensor::from_doubles({local}, data.labels_from(first, local), kiln::DType::i64)}};
}

// The share of points whose largest logit is their label, with the model in eval mode.
double accuracy(kiln::CompiledTraining& training, const Dataset& data) {
  const kiln::Tensor points = kiln::Tensor::from_doubles({data.size(), 2}, data.points, kiln::DType::f32);
  const kiln::Tensor logits = training.evaluate({points}).at(0);
  return spiral::accuracy(data, [&](int64_t i, int64_t c) { return logits.flat_double(i * kClasses + c); });
}

// Whether every rank holds exactly rank 0's weights (each parameter gathered from every rank).
bool ranks_hold_the_same_weights(kiln::distributed::ProcessGroup& group, const kiln::CompiledTraining& training) {
  for (const std::string& name : training.parameter_names()) {
    const kiln::Tensor parameter = training.parameter(name).contiguous();
    const kiln::Tensor gathered = group.all_gather(parameter);
    for (int rank = 1; rank < group.world_size(); ++rank)
      if (std::memcmp(gathered.select(0, rank).data_ptr(), gathered.select(0, 0).data_ptr(), parameter.nbytes()) != 0)
        return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string csv_path = "loss.csv";
  int epochs = 40;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--epochs" && i + 1 < argc) {
      epochs = std::atoi(argv[++i]);
      if (epochs <= 0) kiln::fail("--epochs must be a positive number, got '", argv[i], "'");
    } else if (!arg.empty() && arg[0] != '-') {
      csv_path = arg;
    } else {
      kiln::fail("usage: train_ddp [LOSS_CSV] [--epochs N] (unknown argument '", arg, "')");
    }
  }

  std::shared_ptr<kiln::distributed::ProcessGroup> group = kiln::distributed::init_process_group();
  const int rank = group->rank(), world = group->world_size();
  if (kGlobalBatch % world != 0)
    kiln::fail("the global batch of ", kGlobalBatch, " points does not split evenly over ", world, " ranks");
  const int64_t local = kGlobalBatch / world;
  std::ofstream csv;
  if (rank == 0) {
    csv.open(csv_path);
    if (!csv) kiln::fail("cannot write ", csv_path);
    csv << "epoch,loss,accuracy,ms\n";
  }

  const Dataset data = spiral::make_dataset(7);
  kiln::manual_seed(uint64_t(rank));  // each rank initializes its own weights; the set-up takes rank 0's
  kiln::nn::Sequential model(kiln::nn::Linear(2, 64), kiln::nn::ReLU(), kiln::nn::Linear(64, 64), kiln::nn::ReLU(),
                             kiln::nn::Linear(64, kClasses));
  namespace F = kiln::nn::functional;
  kiln::TrainingOptions options;
  options.data_parallel = group;
  auto compile_start = std::chrono::steady_clock::now();
  kiln::CompiledTraining training = kiln::compile_training(
      model, [](const kiln::Var& logits, const kiln::Var& labels) { return F::cross_entropy(logits, labels); },
      kiln::AdamOptions{.lr = 0.01}, local_batch(data, 0, rank, local), options);
  if (rank == 0)
    std::printf(
        "compiled the training step in %.0f ms (%zu graphs); %d ranks, %lld points of each batch of %lld per rank\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count(),
        training.compile_count(), world, static_cast<long long>(local), static_cast<long long>(kGlobalBatch));

  double final_accuracy = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    const int64_t batches = data.size() / kGlobalBatch;
    kiln::Tensor loss_sum = kiln::Tensor::zeros({}, kiln::DType::f64);
    for (int64_t b = 0; b < batches; ++b)
      loss_sum.data<double>()[0] += training.step(local_batch(data, b, rank, local));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    group->all_reduce(loss_sum, kiln::distributed::ReduceOp::average);  // each rank's loss is over its share
    if (rank == 0) {
      const double loss = loss_sum.item() / double(batches);
      final_accuracy = accuracy(training, data);
      std::printf("epoch %3d  loss %.4f  accuracy %5.1f%%  %6.2f ms\n", epoch, loss, 100 * final_accuracy, ms);
      csv << epoch << "," << loss << "," << final_accuracy << "," << ms << "\n";
    }
  }
  const bool same = ranks_hold_the_same_weights(*group, training);
  kiln::Tensor shared_accuracy = kiln::Tensor::full({}, final_accuracy, kiln::DType::f64);
  group->broadcast(shared_accuracy, 0);  // every rank exits with rank 0's verdict
  final_accuracy = shared_accuracy.item();
  if (!same) kiln::fail("the ranks ended with different weights");
  if (rank == 0) {
    std::printf("the %d ranks hold the same weights\n", world);
    std::printf("final accuracy %.1f%% (loss curve in %s)\n", 100 * final_accuracy, csv_path.c_str());
  }
  return final_accuracy >= 0.95 ? 0 : 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "train_ddp: %s\n", error.what());
  return 2;
}
