// The data set of the training samples (train_mlp, train_ddp): three interleaved spiral arms in
// 2-D (the classic CS231n toy set), shuffled, with a little noise, the same for the same seed (so
// every rank of train_ddp holds the same set, and train_ddp's loss curve can be compared with
// train_mlp's). Header-only, standard C++ only, so each sample still builds from its one .cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

namespace spiral {

constexpr int64_t kClasses = 3;
constexpr int64_t kPointsPerClass = 256;

struct Dataset {
  std::vector<double> points;  // [n, 2]
  std::vector<double> labels;  // [n]
  int64_t size() const { return int64_t(labels.size()); }
};

inline Dataset make_dataset(uint32_t seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<double> noise(0.0, 0.15);
  std::vector<std::pair<std::pair<double, double>, int64_t>> samples;
  for (int64_t label = 0; label < kClasses; ++label) {
    for (int64_t i = 0; i < kPointsPerClass; ++i) {
      const double radius = double(i) / double(kPointsPerClass - 1);
      const double angle = double(label) * 2 * std::numbers::pi / double(kClasses) + 4.0 * radius + noise(generator) * radius;
      samples.push_back({{radius * std::sin(angle), radius * std::cos(angle)}, label});
    }
  }
  std::shuffle(samples.begin(), samples.end(), generator);
  Dataset data;
  for (const auto& [point, label] : samples) {
    data.points.push_back(point.first);
    data.points.push_back(point.second);
    data.labels.push_back(double(label));
  }
  return data;
}

}  // namespace spiral
