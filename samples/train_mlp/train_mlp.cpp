// train_mlp: trains a small MLP to classify a generated 2-D spiral of three classes with Kiln's
// compiled training step, using nothing but the public header <kiln/kiln.h>.
//
//   train_mlp [LOSS_CSV] [--epochs N]      (defaults: loss.csv, 40 epochs)
//
// Each epoch prints one line (epoch, mean training loss, accuracy on the whole set, time) and
// appends the same numbers to LOSS_CSV ("epoch,loss,accuracy,ms"). The exit status is 0 when
// the final accuracy reaches 95%, 1 otherwise.
#include <kiln/kiln.h>

#include "../common/spiral_dataset.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

using spiral::Dataset;
using spiral::kClasses;
constexpr int64_t kBatch = 64;

// Batch `index` of kBatch points (the set's size is a multiple of kBatch).
kiln::Batch batch(const Dataset& data, int64_t index) {
  return {{kiln::Tensor::from_doubles({kBatch, 2}, data.points_from(index * kBatch, kBatch), kiln::DType::f32)},
          {kiln::Tensor::from_doubles({kBatch}, data.labels_from(index * kBatch, kBatch), kiln::DType::i64)}};
}

// The share of points whose largest logit is their label, with the model in eval mode.
double accuracy(kiln::CompiledTraining& training, const Dataset& data) {
  const kiln::Tensor points = kiln::Tensor::from_doubles({data.size(), 2}, data.points, kiln::DType::f32);
  const kiln::Tensor logits = training.evaluate({points}).at(0);
  return spiral::accuracy(data, [&](int64_t i, int64_t c) { return logits.flat_double(i * kClasses + c); });
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
      kiln::fail("usage: train_mlp [LOSS_CSV] [--epochs N] (unknown argument '", arg, "')");
    }
  }
  std::ofstream csv(csv_path);
  if (!csv) kiln::fail("cannot write ", csv_path);
  csv << "epoch,loss,accuracy,ms\n";

  const Dataset data = spiral::make_dataset(7);
  kiln::manual_seed(0);
  kiln::nn::Sequential model(kiln::nn::Linear(2, 64), kiln::nn::ReLU(), kiln::nn::Linear(64, 64), kiln::nn::ReLU(),
                             kiln::nn::Linear(64, kClasses));
  namespace F = kiln::nn::functional;
  auto compile_start = std::chrono::steady_clock::now();
  kiln::CompiledTraining training = kiln::compile_training(
      model, [](const kiln::Var& logits, const kiln::Var& labels) { return F::cross_entropy(logits, labels); },
      kiln::AdamOptions{.lr = 0.01}, batch(data, 0));
  std::printf("compiled the training step in %.0f ms (%zu graphs)\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count(),
              training.compile_count());

  double final_accuracy = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    const int64_t batches = data.size() / kBatch;
    for (int64_t b = 0; b < batches; ++b) loss_sum += training.step(batch(data, b));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const double loss = loss_sum / double(batches);
    final_accuracy = accuracy(training, data);
    std::printf("epoch %3d  loss %.4f  accuracy %5.1f%%  %6.2f ms\n", epoch, loss, 100 * final_accuracy, ms);
    csv << epoch << "," << loss << "," << final_accuracy << "," << ms << "\n";
  }
  std::printf("final accuracy %.1f%% (loss curve in %s)\n", 100 * final_accuracy, csv_path.c_str());
  return final_accuracy >= 0.95 ? 0 : 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "train_mlp: %s\n", error.what());
  return 2;
}
