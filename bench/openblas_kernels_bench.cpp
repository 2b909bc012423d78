// The OpenBLAS calls compiled modules make where they keep GEMMs on BLAS, timed on one thread with
// whichever kernels OpenBLAS runs in this process: its own choice, or OPENBLAS_CORETYPE's (which
// Kiln's loader sets before a module loads OpenBLAS: runtime/cpu/openblas_core_type.h). Run it
// both ways and compare (bench/README.md, "OpenBLAS on a CPU it does not know"):
//   OMP_NUM_THREADS=1 build/bench/kiln_openblas_kernels_bench
//   OMP_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX build/bench/kiln_openblas_kernels_bench
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <vector>

extern "C" char* openblas_get_corename(void);

namespace {

// A short run of attention's products: [128, 128] x [128, 64].
void BM_Sgemm128x64x128(benchmark::State& state) {
  const int m = 128, n = 64, k = 128;
  std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(k) * n, 0.25f), c(size_t(m) * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetItemsProcessed(state.iterations() * 2 * int64_t(m) * n * k);  // flops
  state.SetLabel(openblas_get_corename());
}
BENCHMARK(BM_Sgemm128x64x128);

// A classifier at batch 1: 1280 -> 1000 (EfficientNet-B0's), a matrix-vector product.
void BM_Sgemv1000x1280(benchmark::State& state) {
  const int rows = 1000, cols = 1280;
  std::vector<float> w(size_t(rows) * cols, 0.5f), x(cols, 1.0f), y(rows);
  for (auto _ : state) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, cols, 1.0f, w.data(), cols, x.data(), 1, 0.0f, y.data(), 1);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t(rows) * cols * 4);
  state.SetLabel(openblas_get_corename());
}
BENCHMARK(BM_Sgemv1000x1280);

}  // namespace

BENCHMARK_MAIN();
