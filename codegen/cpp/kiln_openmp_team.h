// OpenMP's team for generated C++ modules, pasted after the prelude (codegen/cpp/kiln_prelude.h)
// by the C++ backend into a module whose loops run as OpenMP regions (CppEmitOptions::Threading::
// Team: a convolution-led module, whose loops share the team that oneDNN's convolutions already
// keep spinning): kiln_team_for(n, body, parallel) runs body(begin, end) over [0, n), one
// contiguous block per thread of the team (OpenMP's schedule(static)), and returns when every
// block has run.
//
// Why not an `omp parallel for` pragma: the region is started through GNU libgomp's ABI
// (GOMP_parallel, the call GCC itself emits for a parallel region) by this runner, so a module
// needs no OpenMP lowering from the compiler that builds it. Clang lowers OpenMP regions to
// LLVM libomp's __kmpc_* entry points, which libgomp (the OpenMP of oneDNN and OpenBLAS that
// Kiln links) lacks; a module built by Clang in the Kiln process (compiler/targets/
// cpu_toolchain.h) would otherwise bring a second OpenMP runtime and a second team of spinning
// threads. The compilers only vectorize `omp simd` loops (-fopenmp-simd).
//
// As kiln_parallel_for (codegen/cpp/kiln_thread_pool.h), the runner is one non-inlined function
// for every loop of a module, and a loop's body is reached only through its trampoline: the
// compiler optimizes each loop body once.
//
// Compile latency rules the form, as in the prelude: no header.

extern "C" void GOMP_parallel(void (*)(void*), void*, unsigned, unsigned);
extern "C" int omp_get_thread_num(void);
extern "C" int omp_get_num_threads(void);
extern "C" int omp_get_max_threads(void);

struct KilnTeamJob {
  void (*body)(void*, int64_t, int64_t);
  void* context;
  int64_t n;
};

// One thread's block of the job: threads below n % T take one element more.
static void kiln_team_block(void* data) {
  const KilnTeamJob* job = (const KilnTeamJob*)data;
  const int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
  const int64_t q = job->n / threads, r = job->n % threads;
  const int64_t begin = t * q + (t < r ? t : r);
  const int64_t end = begin + q + (t < r ? 1 : 0);
  if (begin < end) job->body(job->context, begin, end);
}

template <class F>
static void kiln_team_trampoline(void* context, int64_t begin, int64_t end) {
  (*(const F*)context)(begin, end);
}

// Runs body(context, begin, end) over [0, n): on the team when `parallel`, else on the caller
// alone, in one call. A region inside a region runs on the calling thread (OpenMP's default
// max-active-levels).
__attribute__((noinline)) static void kiln_team_run(int64_t n, void (*body)(void*, int64_t, int64_t), void* context,
                                                    bool parallel) {
  if (n <= 0) return;
  if (!parallel || n == 1) {
    body(context, int64_t(0), n);
    return;
  }
  KilnTeamJob job = {body, context, n};
  GOMP_parallel(kiln_team_block, &job, 0, 0);
}

template <class F>
static inline void kiln_team_for(int64_t n, const F& body, bool parallel = true) {
  kiln_team_run(n, &kiln_team_trampoline<F>, (void*)&body, parallel);
}

#ifdef KILN_POOL_MAX_WORKERS
// In a module whose loops run on Kiln's pool (codegen/cpp/kiln_thread_pool.h) and whose library
// calls run on OpenMP's team: a loop runs on the team while the pool's workers are parked for it
// (kiln_pool_park: a library call just ran there, and the team's threads still spin), else on
// the pool. Waking the parked workers costs more than a small loop saves: an LSTM layer at batch 8
// with its gates (2048 points, five exponentials each) split after each step's GEMM on the team
// took 2.98-3.42 ms with the gates on the pool, 2.92-3.03 with them on one thread, 2.62-2.68 on
// the team (bench/README.md). One trampoline serves both runners: the body is compiled once.
template <class F>
static inline void kiln_team_or_pool_for(int64_t n, const F& body, bool parallel = true) {
  if (!kiln_pool_in_chunk && __atomic_load_n(&kiln_pool.park, __ATOMIC_SEQ_CST))
    kiln_team_run(n, &kiln_pool_trampoline<F>, (void*)&body, parallel && kiln_pool_threads() > 1);
  else
    kiln_parallel_run(n, &kiln_pool_trampoline<F>, (void*)&body, parallel);
}
#endif

// Threads a loop of this module may use (the team's size).
static inline int64_t kiln_team_threads() {
  const int threads = omp_get_max_threads();
  return threads < 1 ? 1 : threads;
}
