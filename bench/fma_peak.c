// Peak fp32 FMA throughput: every OpenMP thread runs chains of independent AVX-512 (or, built
// without AVX-512, AVX2) fused multiply-adds on registers only, enough chains to cover the FMA
// latency on two pipes. GFLOP/s = 2 * lanes * FMAs / time, best of REPS runs; the reference the
// GEMM-bound figures of bench/compare_suite.py are a fraction of.
// Build: cc -O2 -fopenmp -march=native fma_peak.c -o fma_peak
// Run:   OMP_NUM_THREADS=2 ./fma_peak [ITERATIONS] [REPS]   (prints one JSON object)
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define ADD _mm512_add_ps
static float sum_lanes(vec v) { return _mm512_reduce_add_ps(v); }
#define ISA "avx512"
#else
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define ADD _mm256_add_ps
static float sum_lanes(vec v) {
  float out[8];
  _mm256_storeu_ps(out, v);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
#define ISA "avx2"
#endif

#define CHAINS 12  // FMA latency 4 cycles x 2 pipes = 8 in flight, with room to spare

int main(int argc, char** argv) {
  long long iterations = argc > 1 ? atoll(argv[1]) : 20000000LL;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (iterations <= 0 || reps <= 0 || reps > 1000) {
    fprintf(stderr, "usage: fma_peak [ITERATIONS > 0] [REPS in 1..1000]\n");
    return 2;
  }
  double best = 0;
  float sink = 0;
  int threads = omp_get_max_threads();
  for (int r = 0; r < reps; ++r) {
    double start = omp_get_wtime();
#pragma omp parallel reduction(+ : sink)
    {
      vec b = SET1(0.999f), c = SET1(1e-4f);
      vec a0 = SET1(0.1f), a1 = SET1(0.2f), a2 = SET1(0.3f), a3 = SET1(0.4f), a4 = SET1(0.5f), a5 = SET1(0.6f);
      vec a6 = SET1(0.7f), a7 = SET1(0.8f), a8 = SET1(0.9f), a9 = SET1(1.0f), a10 = SET1(1.1f), a11 = SET1(1.2f);
      for (long long i = 0; i < iterations; ++i) {
        a0 = FMA(a0, b, c); a1 = FMA(a1, b, c); a2 = FMA(a2, b, c); a3 = FMA(a3, b, c);
        a4 = FMA(a4, b, c); a5 = FMA(a5, b, c); a6 = FMA(a6, b, c); a7 = FMA(a7, b, c);
        a8 = FMA(a8, b, c); a9 = FMA(a9, b, c); a10 = FMA(a10, b, c); a11 = FMA(a11, b, c);
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
      }
      vec total = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));
      total = ADD(total, ADD(ADD(a8, a9), ADD(a10, a11)));
      sink += sum_lanes(total);
    }
    double seconds = omp_get_wtime() - start;
    double gflops = 2.0 * LANES * CHAINS * (double)iterations * threads / seconds * 1e-9;
    if (gflops > best) best = gflops;
  }
  printf("{\"isa\": \"%s\", \"threads\": %d, \"iterations\": %lld, \"reps\": %d, \"best_gflops\": %.2f, \"sink\": %g}\n",
         ISA, threads, iterations, reps, best, (double)sink);
  return 0;
}
