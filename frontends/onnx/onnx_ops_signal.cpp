// ONNX's signal processing: the window functions (HannWindow, HammingWindow, BlackmanWindow:
// periodic or symmetric, of a size known at import time) and MelWeightMatrix (the triangular mel
// filter bank of ONNX's reference), computed in double at import time as constants of the
// output type asked for; DFT (forward or inverse, onesided, any signal axis, dft_length) and
// STFT (framed, windowed) as products with constant cos/sin matrices, computed in f64.
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

// ---- DFT and STFT: matrix products with constant cos/sin matrices, in f64 ----

struct Complex {
  ir::Node* re = nullptr;
  ir::Node* im = nullptr;  // nullptr: a real signal
};

// The DFT of length `n` (the signal padded with zeros or cut to n) along the last dim of a
// complex value: X_k = sum_j x_j e^(-+2 pi i jk / n) (divided by n when inverse), the first
// n / 2 + 1 frequencies when onesided. Angles use jk mod n, so that exact zeros stay zeros.
Complex dft_last_dim(OnnxNodeContext& context, Complex x, int64_t n, bool inverse, bool onesided) {
  int64_t length = x.re->value().shape.back().constant();
  int64_t rank = x.re->value().rank();
  auto fit = [&](ir::Node* part) -> ir::Node* {
    if (!part) return nullptr;
    part = context.call("cast", {part, DType::f64});
    if (length > n) return context.call("slice", {part, int64_t(-1), int64_t(0), n});
    if (length < n) {
      std::vector<int64_t> begin(size_t(rank), 0), end(size_t(rank), 0);
      end.back() = n - length;
      return context.call("pad", {part, ir::Argument::ints(torch_pad_list(begin, end)), "constant", 0.0});
    }
    return part;
  };
  ir::Node* re = fit(x.re);
  ir::Node* im = fit(x.im);
  int64_t frequencies = onesided ? n / 2 + 1 : n;
  std::vector<double> cosines, sines;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < frequencies; ++k) {
      double angle = 2 * std::numbers::pi * double((j * k) % n) / double(n);
      cosines.push_back(std::cos(angle));
      sines.push_back((inverse ? 1.0 : -1.0) * std::sin(angle));
    }
  ir::Node* cos_matrix = context.constant_node(Tensor::from_doubles({n, frequencies}, cosines, DType::f64));
  ir::Node* sin_matrix = context.constant_node(Tensor::from_doubles({n, frequencies}, sines, DType::f64));
  // (re + i im)(cos + i sin) = (re cos - im sin) + i (re sin + im cos), sin carrying the sign.
  ir::Node* out_re = context.call("matmul", {re, cos_matrix});
  ir::Node* out_im = context.call("matmul", {re, sin_matrix});
  if (im) {
    out_re = context.call("sub", {out_re, context.call("matmul", {im, sin_matrix})});
    out_im = context.call("add", {out_im, context.call("matmul", {im, cos_matrix})});
  }
  if (inverse) {
    out_re = context.call("div", {out_re, double(n)});
    out_im = context.call("div", {out_im, double(n)});
  }
  return {out_re, out_im};
}

// [..., 2] of the input's dtype from the complex parts.
ir::Node* complex_tensor(OnnxNodeContext& context, Complex value, DType dtype) {
  std::vector<ir::Argument> parts = {context.call("unsqueeze", {value.re, int64_t(-1)}), context.call("unsqueeze", {value.im, int64_t(-1)})};
  return context.call("cast", {context.call("cat", {ir::Argument(parts), int64_t(-1)}), dtype});
}

Complex complex_parts(OnnxNodeContext& context, ir::Node* x) {
  const ir::SymInt& last = x->value().shape.back();
  if (!(last == ir::SymInt(1)) && !(last == ir::SymInt(2))) context.fail("the last dim must be 1 (real) or 2 (complex)");
  Complex parts{context.call("select", {x, int64_t(-1), int64_t(0)}), nullptr};
  if (last == ir::SymInt(2)) parts.im = context.call("select", {x, int64_t(-1), int64_t(1)});
  return parts;
}

void convert_dft(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  int64_t rank = x->value().rank();
  int64_t axis = context.opset() >= 20 ? (context.has_input(2) ? context.constant_ints(2, "axis").at(0) : -2)
                                       : context.int_attribute("axis", 1);
  axis = ((axis % rank) + rank) % rank;
  if (axis == rank - 1 || rank < 2) context.fail("axis ", axis, " is not a signal axis (the last dim holds real and imaginary parts)");
  if (!x->value().shape[size_t(axis)].is_constant()) context.fail("the signal length must be static");
  int64_t n = x->value().shape[size_t(axis)].constant();
  if (context.has_input(1)) n = context.constant_ints(1, "dft_length").at(0);
  if (n < 1) context.fail("dft_length must be positive, but it is ", n);
  bool inverse = context.int_attribute("inverse", 0) != 0, onesided = context.int_attribute("onesided", 0) != 0;
  Complex parts = complex_parts(context, x);
  int64_t last = rank - 2;  // the parts' last dim
  auto move = [&](ir::Node* part) { return part && axis != last ? context.call("transpose", {part, axis, last}) : part; };
  Complex result = dft_last_dim(context, {move(parts.re), move(parts.im)}, n, inverse, onesided);
  result = {move(result.re), move(result.im)};
  context.set_output(0, complex_tensor(context, result, x->value().dtype));
}

// STFT: frames of frame_length every frame_step samples, times the window, each transformed.
void convert_stft(OnnxNodeContext& context) {
  ir::Node* signal = context.tensor(0);
  if (signal->value().rank() != 3 || !signal->value().shape[1].is_constant()) context.fail("the signal must be [batch, length, 1 or 2] of a static length");
  int64_t length = signal->value().shape[1].constant();
  int64_t step = context.constant_ints(1, "frame_step").at(0);
  ir::Node* window = context.has_input(2) ? context.tensor(2) : nullptr;
  int64_t frame = context.has_input(3) ? context.constant_ints(3, "frame_length").at(0)
                  : window && window->value().shape[0].is_constant() ? window->value().shape[0].constant() : 0;
  if (step < 1 || frame < 1 || frame > length) context.fail("frame_step and frame_length must fit the signal (", length, " samples)");
  int64_t frames = 1 + (length - frame) / step;
  std::vector<int64_t> positions;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t w = 0; w < frame; ++w) positions.push_back(f * step + w);
  ir::Node* index = context.constant_node(Tensor::from_vector({frames * frame}, positions, DType::i64));
  Complex parts = complex_parts(context, signal);
  ir::SymShape framed = {signal->value().shape[0], ir::SymInt(frames), ir::SymInt(frame)};
  auto cut = [&](ir::Node* part) -> ir::Node* {
    if (!part) return nullptr;
    ir::Node* picked = context.call("reshape", {context.call("index_select", {part, int64_t(1), index}), ir::Argument::sym_ints(framed)});
    return window ? context.call("mul", {picked, window}) : picked;
  };
  bool onesided = context.int_attribute("onesided", 1) != 0;
  Complex result = dft_last_dim(context, {cut(parts.re), cut(parts.im)}, frame, false, onesided);
  context.set_output(0, complex_tensor(context, result, signal->value().dtype));
}

}  // namespace

void register_onnx_signal_ops(OnnxOpTable& table) {
  table.add("DFT", convert_dft);
  table.add("STFT", convert_stft);
  table.add("HannWindow", [](OnnxNodeContext& c) { convert_window(c, Window::hann); });
  table.add("HammingWindow", [](OnnxNodeContext& c) { convert_window(c, Window::hamming); });
  table.add("BlackmanWindow", [](OnnxNodeContext& c) { convert_window(c, Window::blackman); });
  table.add("MelWeightMatrix", convert_mel_weight_matrix);
}

}  // namespace kiln::frontends
