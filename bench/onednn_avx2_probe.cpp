// Measures the two oneDNN layout choices Kiln makes on CPUs without AVX-512 (codegen/cpp/kiln_dnnl.h),
// outside any model, each side by side in one process:
//   matmul: a frozen B as oneDNN's `any` gives it (its gemm kernel's plain matrix) against the same
//           B with its rows 16 floats further apart (kiln_padded_plain_md), and OpenBLAS's sgemm;
//   conv:   ResNet's convolutions at batch 1 on nhwc against nChw8c (kiln_blocked8_suits), the
//           weights cycled through 8 copies so that they come from memory as in a model.
// Build and run (bench/README.md):
//   g++ -O2 -std=c++17 bench/onednn_avx2_probe.cpp -o /tmp/probe -ldnnl -lopenblas
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /tmp/probe matmul
//   OMP_NUM_THREADS=2 /tmp/probe conv
// ONEDNN_MAX_CPU_ISA=AVX2 gives oneDNN's AVX2 kernels on a CPU with AVX-512 too.
#include <cblas.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best of 5 rounds of `iters` calls, seconds per call.
double best_time(int iters, const std::function<void(int)>& call) {
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const double start = now();
    for (int i = 0; i < iters; ++i) call(i);
    best = std::min(best, (now() - start) / iters);
  }
  return best;
}

void probe_matmul(dnnl::engine& engine, dnnl::stream& stream, int iters) {
  struct Shape { int m, k, n; };
  const std::vector<Shape> shapes = {{64, 256, 1024}, {64, 256, 768}, {64, 1024, 256}, {64, 256, 256},
                                     {128, 256, 1024}, {256, 2048, 2048}, {197, 768, 3072}};
  for (const Shape& s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k, 0.5f), b(size_t(s.k) * s.n, 0.25f), c(size_t(s.m) * s.n);
    memory::desc a_md({s.m, s.k}, memory::data_type::f32, Tag::ab), c_md({s.m, s.n}, memory::data_type::f32, Tag::ab);
    double seconds[2];
    std::string kernels[2];
    for (int padded = 0; padded < 2; ++padded) {
      memory::desc b_md = padded ? memory::desc({s.k, s.n}, memory::data_type::f32, memory::dims{s.n + 16, 1})
                                 : memory::desc({s.k, s.n}, memory::data_type::f32, Tag::any);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
      dnnl::matmul matmul(pd);
      memory a_mem(a_md, engine, a.data()), c_mem(c_md, engine, c.data()), b_mem(pd.weights_desc(), engine);
      std::memset(b_mem.get_data_handle(), 0, pd.weights_desc().get_size());
      seconds[padded] = best_time(iters, [&](int) {
        matmul.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
        stream.wait();
      });
      kernels[padded] = pd.impl_info_str();
    }
    const double blas = best_time(iters, [&](int) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1, a.data(), s.k, b.data(), s.n, 0,
                  c.data(), s.n);
    });
    const double flop = 2.0 * s.m * s.n * s.k * 1e-9;
    std::printf("%4d x %4d x %4d  oneDNN as `any` %8.1f us %5.0f GFLOP/s (%s)  rows padded %8.1f us %5.0f (%s)"
                "  OpenBLAS %8.1f us %5.0f\n",
                s.m, s.k, s.n, seconds[0] * 1e6, flop / seconds[0], kernels[0].c_str(), seconds[1] * 1e6,
                flop / seconds[1], kernels[1].c_str(), blas * 1e6, flop / blas);
  }
}

void probe_conv(dnnl::engine& engine, dnnl::stream& stream, int iters) {
  struct Shape { int channels, out_channels, side, kernel, stride; };
  const std::vector<Shape> shapes = {{64, 64, 56, 3, 1},   {128, 128, 28, 3, 1}, {256, 256, 14, 3, 1},
                                     {512, 512, 7, 3, 1},  {64, 128, 56, 3, 2},  {256, 512, 14, 3, 2},
                                     {64, 256, 56, 1, 1},  {2048, 512, 7, 1, 1}};
  constexpr int kWeightCopies = 8;
  for (const Shape& s : shapes) {
    const int pad = s.kernel / 2, out = (s.side + 2 * pad - s.kernel) / s.stride + 1;
    double seconds[2];
    std::string kernels[2];
    const Tag tags[2] = {Tag::nhwc, Tag::nChw8c};
    for (int blocked = 0; blocked < 2; ++blocked) {
      memory::desc src({1, s.channels, s.side, s.side}, memory::data_type::f32, tags[blocked]);
      memory::desc dst({1, s.out_channels, out, out}, memory::data_type::f32, tags[blocked]);
      memory::desc weights({s.out_channels, s.channels, s.kernel, s.kernel}, memory::data_type::f32, Tag::any);
      memory::desc bias({s.out_channels}, memory::data_type::f32, Tag::x);
      dnnl::convolution_forward::primitive_desc pd(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                          weights, bias, dst, {s.stride, s.stride}, {pad, pad}, {pad, pad}),
          engine);
      dnnl::convolution_forward conv(pd);
      memory src_mem(pd.src_desc(), engine), dst_mem(pd.dst_desc(), engine), bias_mem(bias, engine);
      std::memset(src_mem.get_data_handle(), 0, pd.src_desc().get_size());
      std::memset(bias_mem.get_data_handle(), 0, bias.get_size());
      std::vector<memory> weight_copies;
      for (int i = 0; i < kWeightCopies; ++i) {
        weight_copies.emplace_back(pd.weights_desc(), engine);
        std::memset(weight_copies.back().get_data_handle(), 0, pd.weights_desc().get_size());
      }
      seconds[blocked] = best_time(iters, [&](int i) {
        conv.execute(stream, {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, weight_copies[i % kWeightCopies]},
                              {DNNL_ARG_BIAS, bias_mem}, {DNNL_ARG_DST, dst_mem}});
        stream.wait();
      });
      kernels[blocked] = pd.impl_info_str();
    }
    const double flop = 2.0 * out * out * s.out_channels * s.channels * s.kernel * s.kernel * 1e-9;
    std::printf("%4d -> %4d at %3d, %dx%d stride %d  nhwc %7.1f us %5.0f GFLOP/s (%s)  nChw8c %7.1f us %5.0f (%s)\n",
                s.channels, s.out_channels, s.side, s.kernel, s.kernel, s.stride, seconds[0] * 1e6, flop / seconds[0],
                kernels[0].c_str(), seconds[1] * 1e6, flop / seconds[1], kernels[1].c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  const int iters = argc > 2 ? std::atoi(argv[2]) : 30;
  if ((what != "matmul" && what != "conv") || iters <= 0) {
    std::fprintf(stderr, "usage: %s matmul|conv [CALLS PER ROUND, default 30]\n", argv[0]);
    return 2;
  }
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  if (what == "matmul") probe_matmul(engine, stream, iters);
  else probe_conv(engine, stream, iters);
  return 0;
}
