// Runs two packages in one program through their C++ classes: the MLP (x: f32[s0, 784], here
// 3 rows) and the attention block (x: f32[2, 8, 32]), on inputs x[i] = sin(0.37 * i) / 2, and
// prints every output as "name rank sizes... : values..." (the tests compare them with Kiln's
// interpreter). Usage: two_models_cpp MLP_WEIGHTS ATTENTION_WEIGHTS
#include <cmath>
#include <cstdio>
#include <vector>

#include "attention.h"
#include "mlp.h"

namespace {

std::vector<float> sample_input(size_t count) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = float(std::sin(0.37 * double(i)) / 2);
  return values;
}

void print(const char* model, const std::map<std::string, KilnTensor>& outputs) {
  for (const auto& [name, tensor] : outputs) {
    std::printf("%s.%s %d", model, name.c_str(), tensor.rank);
    size_t count = 1;
    for (int d = 0; d < tensor.rank; ++d) {
      std::printf(" %lld", static_cast<long long>(tensor.sizes[d]));
      count *= size_t(tensor.sizes[d]);
    }
    std::printf(" :");
    for (size_t i = 0; i < count; ++i) std::printf(" %.9g", double(static_cast<const float*>(tensor.data)[i]));
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MLP_WEIGHTS ATTENTION_WEIGHTS\n", argv[0]);
    return 2;
  }
  try {
    mlp::Model classifier(argv[1]);
    attention::Model block(argv[2]);

    std::vector<float> x = sample_input(3 * 784);
    const int64_t x_sizes[] = {3, 784};
    print("mlp", classifier.run({{"x", KilnTensor{x.data(), x_sizes, nullptr, 2, KILN_F32}}}));

    std::vector<float> y = sample_input(2 * 8 * 32);
    const int64_t y_sizes[] = {2, 8, 32};
    print("attention", block.run({{"x", KilnTensor{y.data(), y_sizes, nullptr, 3, KILN_F32}}}));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
