// ONNX's signal-processing constants: the window functions (HannWindow, HammingWindow,
// BlackmanWindow: periodic or symmetric, of a size known at import time) and MelWeightMatrix
// (the triangular mel filter bank of ONNX's reference), computed in double at import time as
// constants of the output type asked for.
#include <cmath>
#include <numbers>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

DType output_type(const OnnxNodeContext& context, int64_t fallback) {
  int64_t type = context.int_attribute("output_datatype", fallback);
  std::optional<DType> dtype = dtype_from_onnx(int32_t(type));
  if (!dtype) context.fail("output_datatype ", onnx_type_name(int32_t(type)), " is not supported");
  return *dtype;
}

int64_t integer_input(const OnnxNodeContext& context, size_t index, std::string_view what) {
  const Tensor& value = context.constant_input(index, what);
  if (value.numel() != 1 || !is_integral(value.dtype())) context.fail(what, " must be one integer");
  return value.flat_int(0);
}

enum class Window { hann, hamming, blackman };

void convert_window(OnnxNodeContext& context, Window window) {
  int64_t size = integer_input(context, 0, "size");
  if (size < 0) context.fail("size must not be negative, but it is ", size);
  bool periodic = context.int_attribute("periodic", 1) != 0;
  double n = double(periodic ? size : size - 1), pi = std::numbers::pi;
  std::vector<double> values;
  for (int64_t i = 0; i < size; ++i) {
    double k = double(i);
    switch (window) {
      case Window::hann: values.push_back(std::pow(std::sin(k * pi / n), 2)); break;
      case Window::hamming: values.push_back(25.0 / 46.0 - (1 - 25.0 / 46.0) * std::cos(2 * pi * k / n)); break;
      case Window::blackman: values.push_back(0.42 - 0.5 * std::cos(2 * pi * k / n) + 0.08 * std::cos(4 * pi * k / n)); break;
    }
  }
  context.set_output(0, OnnxValue::of_constant(Tensor::from_doubles({size}, values, output_type(context, 1))));
}

// The reference's filter bank: mel-spaced edges mapped to DFT bins, a rising and a falling
// slope per filter; [dft_length / 2 + 1, num_mel_bins].
void convert_mel_weight_matrix(OnnxNodeContext& context) {
  int64_t bins = integer_input(context, 0, "num_mel_bins"), dft_length = integer_input(context, 1, "dft_length");
  int64_t sample_rate = integer_input(context, 2, "sample_rate");
  double lower = context.constant_scalar(3, "lower_edge_hertz"), upper = context.constant_scalar(4, "upper_edge_hertz");
  if (bins < 1 || dft_length < 1 || sample_rate < 1) context.fail("num_mel_bins, dft_length and sample_rate must be positive");
  int64_t spectrogram = dft_length / 2 + 1;
  double low_mel = 2595 * std::log10(1 + lower / 700), high_mel = 2595 * std::log10(1 + upper / 700);
  double step = (high_mel - low_mel) / double(bins + 2);
  std::vector<int64_t> edges;
  for (int64_t i = 0; i < bins + 2; ++i) {
    double hertz = 700 * (std::pow(10.0, (double(i) * step + low_mel) / 2595) - 1);
    edges.push_back(int64_t(std::floor(double(dft_length + 1) * hertz / double(sample_rate))));
  }
  std::vector<double> out(size_t(spectrogram * bins), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= spectrogram) context.fail("a mel edge falls outside the ", spectrogram, " spectrogram bins");
    return out[size_t(j * bins + i)];
  };
  for (int64_t i = 0; i < bins; ++i) {
    int64_t left = edges[size_t(i)], center = edges[size_t(i + 1)], right = edges[size_t(i + 2)];
    if (center == left) {
      at(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j) at(j, i) = double(j - left) / double(center - left);
    }
    for (int64_t j = center; j < right; ++j) at(j, i) = double(right - j) / double(right - center);
  }
  context.set_output(0, OnnxValue::of_constant(Tensor::from_doubles({spectrogram, bins}, out, output_type(context, 1))));
}

}  // namespace

void register_onnx_signal_ops(OnnxOpTable& table) {
  table.add("HannWindow", [](OnnxNodeContext& c) { convert_window(c, Window::hann); });
  table.add("HammingWindow", [](OnnxNodeContext& c) { convert_window(c, Window::hamming); });
  table.add("BlackmanWindow", [](OnnxNodeContext& c) { convert_window(c, Window::blackman); });
  table.add("MelWeightMatrix", convert_mel_weight_matrix);
}

}  // namespace kiln::frontends
