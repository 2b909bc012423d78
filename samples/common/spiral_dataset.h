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
  // Points [first, first + count): their coordinates (x and y interleaved) and their labels.
  std::vector<double> points_from(int64_t first, int64_t count) const {
    return {points.begin() + first * 2, points.begin() + (first + count) * 2};
  }
  std::vector<double> labels_from(int64_t first, int64_t count) const {
    return {labels.begin() + first, labels.begin() + first + count};
  }
};

// The share of the set's points whose largest of the kClasses values logit(i, c) is their label.
template <class Logit>
double accuracy(const Dataset& data, const Logit& logit) {
  int64_t correct = 0;
  for (int64_t i = 0; i < data.size(); ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < kClasses; ++c)
      if (logit(i, c) > logit(i, best)) best = c;
    correct += best == int64_t(data.labels[size_t(i)]);
  }
  return double(correct) / double(data.size());
}

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
