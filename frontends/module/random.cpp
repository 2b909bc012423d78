// The front end's global generator: a seed and a count of draws, mapped through Philox (random.h).
#include "kiln/random.h"

#include <mutex>

#include "runtime/philox.h"

namespace kiln {

namespace {

struct GeneratorState {
  std::mutex mutex;
  uint64_t seed = 0;
  uint64_t draws = 0;
};

GeneratorState& generator() {
  static GeneratorState state;
  return state;
}

// The (seed, offset) of the next draw.
std::pair<uint64_t, uint64_t> take_draw() {
  GeneratorState& state = generator();
  std::lock_guard lock(state.mutex);
  return {state.seed, state.draws++};
}

}  // namespace

void manual_seed(uint64_t seed) {
  GeneratorState& state = generator();
  std::lock_guard lock(state.mutex);
  state.seed = seed;
  state.draws = 0;
}

namespace random {

Tensor uniform(const Sizes& sizes, double low, double high) {
  auto [seed, offset] = take_draw();
  Tensor result = Tensor::empty(sizes, DType::f32);
  float* data = result.data<float>();
  for (int64_t i = 0; i < result.numel(); ++i) {
    data[i] = float(low + (high - low) * double(philox_uniform(seed, offset, uint64_t(i))));
  }
  return result;
}

Tensor normal(const Sizes& sizes, double mean, double std) {
  auto [seed, offset] = take_draw();
  Tensor result = Tensor::empty(sizes, DType::f32);
  float* data = result.data<float>();
  for (int64_t i = 0; i < result.numel(); ++i) {
    data[i] = float(mean + std * double(philox_normal(seed, offset, uint64_t(i))));
  }
  return result;
}

int64_t next_seed() {
  auto [seed, offset] = take_draw();
  PhiloxCounter words = philox_words(seed, offset, 0);
  return int64_t(uint64_t(words[0]) | (uint64_t(words[1] & 0x7fffffffu) << 32));
}

}  // namespace random
}  // namespace kiln
