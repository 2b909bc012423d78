// STREAM triad memory bandwidth: a[i] = b[i] + s * c[i] over three float arrays of 64 MiB
// each (more with a larger count), OpenMP over the loop, plain stores (the compiler is not
// asked for non-temporal stores, so each store also reads its cache line first: that traffic
// is not counted, as in STREAM). GB/s counts 3 arrays * bytes per run, best of REPS runs.
// It also times the first touch of the fresh arrays, the page-fault cost that any benchmark
// allocating a fresh large output per call pays.
// Build: cc -O3 -fopenmp -march=native stream_triad.c -o stream_triad
// Run:   OMP_NUM_THREADS=2 ./stream_triad [ELEMENTS] [REPS]   (prints one JSON object)
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  long long n = argc > 1 ? atoll(argv[1]) : (1LL << 24);
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  if (n <= 0 || reps <= 0 || reps > 1000) {
    fprintf(stderr, "usage: stream_triad [ELEMENTS > 0] [REPS in 1..1000]\n");
    return 2;
  }
  size_t bytes = (size_t)n * sizeof(float);
  float *a = NULL, *b = NULL, *c = NULL;
  if (posix_memalign((void**)&a, 4096, bytes) || posix_memalign((void**)&b, 4096, bytes) ||
      posix_memalign((void**)&c, 4096, bytes)) {
    fprintf(stderr, "stream_triad: cannot allocate 3 arrays of %zu bytes\n", bytes);
    return 1;
  }

  // First touch, in parallel with the same static schedule as the triad (pages land where used).
  double start = omp_get_wtime();
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) {
    a[i] = 0.0f;
    b[i] = 1.0f;
    c[i] = 2.0f;
  }
  double first_touch_s = omp_get_wtime() - start;

  const float scalar = 3.0f;
  double* seconds = malloc(sizeof(double) * (size_t)reps);
  for (int r = 0; r < reps; ++r) {
    start = omp_get_wtime();
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
    seconds[r] = omp_get_wtime() - start;
  }

  // Every a[i] is 1 + 3 * 2 = 7: check a sample so the loop cannot be dropped.
  for (long long i = 0; i < n; i += 4093) {
    if (a[i] != 7.0f) {
      fprintf(stderr, "stream_triad: a[%lld] = %g, expected 7\n", i, (double)a[i]);
      return 1;
    }
  }

  qsort(seconds, (size_t)reps, sizeof(double), compare_doubles);
  double moved = 3.0 * (double)bytes;
  printf("{\"elements\": %lld, \"bytes_per_array\": %zu, \"threads\": %d, \"reps\": %d, "
         "\"best_gbs\": %.3f, \"median_gbs\": %.3f, \"worst_gbs\": %.3f, "
         "\"first_touch_ms_per_64mib\": %.3f}\n",
         n, bytes, omp_get_max_threads(), reps, moved / seconds[0] / 1e9, moved / seconds[reps / 2] / 1e9,
         moved / seconds[reps - 1] / 1e9, first_touch_s * 1e3 / 3.0 * (64.0 * 1048576.0 / (double)bytes));
  free(seconds);
  free(a);
  free(b);
  free(c);
  return 0;
}
