// The thread pool of generated C++ modules, pasted after the prelude (codegen/cpp/kiln_prelude.h)
// by the C++ backend: kiln_parallel_for(n, body, parallel) runs body(begin, end) over [0, n) in
// chunks, on the calling thread and on the pool's workers (or, when `parallel` is false, on the
// calling thread alone), and returns when every chunk has run.
//
// Why not an OpenMP parallel region per loop: with one region (and its barrier) per kernel, a
// worker that the OS has descheduled stalls every kernel until it runs again, while the others
// spin (GNU OpenMP spins ~300000 pauses before it sleeps) and keep it off the CPU. On a loaded
// 2-core machine that made a small GPT 250x slower than ONNX Runtime. Here, as in ONNX Runtime's
// pool, the caller takes chunks itself and waits only for chunks a worker has already claimed:
// a worker that has not woken up by the time the chunks are gone is not waited for. Workers spin
// a bounded time for the next job (kernels follow each other within microseconds), then sleep
// on a futex. Chunks are claimed with a compare-and-swap on a ticket that carries the job's
// epoch, so a worker that wakes late for a finished job can never claim a chunk of it (or of the
// next job with the old one's fields).
//
// One pool per module (its workers start on the first parallel loop, and a destructor stops and
// joins them when the module is unloaded). A second caller while a job runs (another thread
// calling the same module, or a parallel loop inside a chunk) runs its loop alone, serially.
//
// Compile latency rules the form, as in the prelude: no header; the few libc functions are
// declared under other names bound to the real symbols (asm labels), so that a file that also
// includes <pthread.h> (the oneDNN glue) sees no conflicting declaration.

extern "C" int kiln_pool_pthread_create(unsigned long*, const void*, void* (*)(void*), void*) __asm__("pthread_create");
extern "C" int kiln_pool_pthread_join(unsigned long, void**) __asm__("pthread_join");
extern "C" long kiln_pool_syscall(long, ...) __asm__("syscall");
extern "C" int kiln_pool_sched_yield(void) __asm__("sched_yield");
struct KilnPoolTimespec {
  long seconds, nanoseconds;
};
extern "C" int kiln_pool_clock_gettime(int, KilnPoolTimespec*) __asm__("clock_gettime");
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

#define KILN_POOL_MAX_WORKERS 255
// How long a worker spins for the next job before it sleeps, in nanoseconds (the caller spins half
// as long for claimed chunks before it yields its CPU to the thread running them): a number of
// pauses timed when the workers start (kiln_pool_pauses_in). A pause takes ~35 ns on a Zen 4 but
// ~9.5 ns on an Intel Xeon, where the 4096 pauses first chosen (140 us on the Zen 4) were 39 us.
#define KILN_POOL_WORKER_SPIN_NS 140000

struct KilnPool {
  // The job: body(context, begin, end) for chunks of `chunk` elements of [0, n).
  void (*body)(void*, int64_t, int64_t);
  void* context;
  int64_t n, chunk, chunks;
  int32_t joining;    // workers 0 .. joining-1 may take chunks of this job
  uint64_t ticket;    // the job's epoch << 32 | the next chunk to claim (0xffffffff: closed)
  int64_t done;       // chunks finished
  uint32_t wake;      // futex word: advanced for every job
  int32_t sleepers;   // workers asleep on `wake` (or about to be)
  int32_t stop;
  int32_t park;       // 1: workers sleep at once instead of spinning (kiln_pool_park)
  int32_t caller;     // 1 while a caller runs a job
  int32_t threads;    // threads a loop may use, the caller's included (kiln_pool_set_threads)
  int32_t started;    // workers started
  int32_t worker_spin, caller_spin;  // pauses, set before the first worker starts
  unsigned long workers[KILN_POOL_MAX_WORKERS];
};
// One pool per module however many translation units the module was compiled in (KILN_MODULE_STATE:
// one hidden inline variable, never shared with another module).
KILN_MODULE_STATE KilnPool kiln_pool;
// 1 on a thread while it runs a chunk of a batch split into chunks side by side (the kiln_run of
// a chunked program): the chunk's loops, GEMMs and library calls run on that thread alone.
KILN_MODULE_STATE thread_local int32_t kiln_pool_in_chunk = 0;

static inline void kiln_pool_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static inline void kiln_pool_futex(uint32_t* word, int op, uint32_t value) {
#if defined(__x86_64__)
  kiln_pool_syscall(202, word, op, value, (void*)0, (void*)0, 0);
#elif defined(__aarch64__)
  kiln_pool_syscall(98, word, op, value, (void*)0, (void*)0, 0);
#else
  (void)word; (void)op; (void)value;
  kiln_pool_sched_yield();  // no futex: a sleeping worker polls
#endif
}
#define KILN_FUTEX_WAIT_PRIVATE 128
#define KILN_FUTEX_WAKE_PRIVATE 129

#define KILN_LOAD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define KILN_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)

// The threads (the caller's included) that parallel loops may use from now on.
static inline void kiln_pool_set_threads(int threads) {
  if (threads < 1) threads = 1;
  if (threads > KILN_POOL_MAX_WORKERS + 1) threads = KILN_POOL_MAX_WORKERS + 1;
  __atomic_store_n(&kiln_pool.threads, threads, __ATOMIC_RELAXED);  // two callers may race: either value is right
}

static inline int32_t kiln_pool_threads() {
  if (kiln_pool_in_chunk) return 1;
  const int32_t threads = __atomic_load_n(&kiln_pool.threads, __ATOMIC_RELAXED);
  return threads < 1 ? 1 : threads;
}

template <class F>
static void kiln_pool_trampoline(void* context, int64_t begin, int64_t end) {
  (*(const F*)context)(begin, end);
}

// The pool's code that is the same in every module (kiln_parallel_run, its workers, the shutdown)
// is compiled once per compile cache when the in-process compiler builds modules: with
// KILN_RUNNER_SEPARATE a module's units only declare kiln_parallel_run, and the cache's
// runner.o, compiled from this text with KILN_RUNNER_DEFINITIONS too, defines it (hidden: each
// module links its own copy, with its own pool). Otherwise every module defines it, static.
#if defined(KILN_RUNNER_SEPARATE) && !defined(KILN_RUNNER_DEFINITIONS)
__attribute__((visibility("hidden"))) void kiln_parallel_run(int64_t n, void (*body)(void*, int64_t, int64_t),
                                                             void* context, bool parallel);
#else
#if defined(KILN_RUNNER_SEPARATE)
#define KILN_RUNNER_LINKAGE __attribute__((visibility("hidden")))
#else
#define KILN_RUNNER_LINKAGE static
#endif

// The pauses that take `nanoseconds` on this CPU: the fastest of three timed runs of 256 (the one
// the OS did not interrupt), 2.5-9 us each.
static int32_t kiln_pool_pauses_in(int64_t nanoseconds) {
  int64_t fastest = 0;
  for (int run = 0; run < 3; ++run) {
    KilnPoolTimespec begin, end;
    kiln_pool_clock_gettime(1 /* CLOCK_MONOTONIC */, &begin);
    for (int i = 0; i < 256; ++i) kiln_pool_pause();
    kiln_pool_clock_gettime(1, &end);
    const int64_t ns = int64_t(end.seconds - begin.seconds) * 1000000000 + int64_t(end.nanoseconds - begin.nanoseconds);
    if (ns > 0 && (fastest == 0 || ns < fastest)) fastest = ns;
  }
  if (fastest == 0) return 4096;  // no clock: the Zen 4's count
  const int64_t pauses = nanoseconds * 256 / fastest;
  return int32_t(pauses < 256 ? 256 : pauses > (int64_t(1) << 20) ? (int64_t(1) << 20) : pauses);
}

// Claims and runs chunks of the current job until none is left.
static inline void kiln_pool_run_chunks(KilnPool* p) {
  uint64_t t = KILN_LOAD(p->ticket);
  for (;;) {
    void (*body)(void*, int64_t, int64_t) = KILN_LOAD(p->body);
    void* context = KILN_LOAD(p->context);
    const int64_t n = KILN_LOAD(p->n), chunk = KILN_LOAD(p->chunk), chunks = KILN_LOAD(p->chunks);
    const int64_t c = int64_t(uint32_t(t));
    if (c >= chunks) return;
    // Succeeds only while the ticket is still this job's: the fields read above are its own.
    if (!__atomic_compare_exchange_n(&p->ticket, &t, t + 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) continue;
    const int64_t begin = c * chunk;
    body(context, begin, n - begin < chunk ? n : begin + chunk);
    __atomic_fetch_add(&p->done, 1, __ATOMIC_SEQ_CST);
    t = KILN_LOAD(p->ticket);
  }
}

static void* kiln_pool_worker(void* arg) {
  KilnPool* p = &kiln_pool;
  const int32_t index = int32_t((int64_t)arg);
  // BLAS (OpenBLAS's OpenMP build) called from a chunk runs on this thread alone.
  omp_set_num_threads(1);
  uint32_t seen = KILN_LOAD(p->wake);
  for (;;) {
    int spins = 0;
    while (KILN_LOAD(p->wake) == seen && !KILN_LOAD(p->stop)) {
      if (++spins < p->worker_spin && !KILN_LOAD(p->park)) {
        kiln_pool_pause();
        continue;
      }
      __atomic_fetch_add(&p->sleepers, 1, __ATOMIC_SEQ_CST);
      if (KILN_LOAD(p->wake) == seen && !KILN_LOAD(p->stop)) kiln_pool_futex(&p->wake, KILN_FUTEX_WAIT_PRIVATE, seen);
      __atomic_fetch_sub(&p->sleepers, 1, __ATOMIC_SEQ_CST);
      spins = p->worker_spin;
    }
    if (KILN_LOAD(p->stop)) return nullptr;
    seen = KILN_LOAD(p->wake);
    if (index < KILN_LOAD(p->joining)) kiln_pool_run_chunks(p);
  }
}

// Stops and joins the workers when the module is unloaded (or the process exits), so that no
// thread runs this module's code after it is gone.
__attribute__((destructor)) static void kiln_pool_shutdown() {
  KilnPool* p = &kiln_pool;
  KILN_STORE(p->stop, 1);
  __atomic_fetch_add(&p->wake, 1u, __ATOMIC_SEQ_CST);
  kiln_pool_futex(&p->wake, KILN_FUTEX_WAKE_PRIVATE, 0x7fffffff);
  for (int32_t i = 0; i < p->started; ++i) kiln_pool_pthread_join(p->workers[i], nullptr);
  p->started = 0;
}

// Runs body(context, begin, end) over chunks of [0, n): on the caller and the pool's workers when
// `parallel`, else (or when the pool is busy or has one thread) on the caller alone, in one call.
// Never inlined, and the same function for every loop of a module: the loop's body is reached
// only through `body`, so the compiler optimizes it once, in its trampoline (see kiln_parallel_for).
__attribute__((noinline)) KILN_RUNNER_LINKAGE void kiln_parallel_run(int64_t n, void (*body)(void*, int64_t, int64_t), void* context,
                                                        bool parallel) {
  KilnPool* p = &kiln_pool;
  if (n <= 0) return;
  const int32_t threads = kiln_pool_threads();
  int32_t idle = 0;
  if (!parallel || threads <= 1 || n == 1 ||
      !__atomic_compare_exchange_n(&p->caller, &idle, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    body(context, int64_t(0), n);
    return;
  }
  const int32_t joining = threads - 1;
  if (p->worker_spin == 0) {
    p->worker_spin = kiln_pool_pauses_in(KILN_POOL_WORKER_SPIN_NS);
    p->caller_spin = p->worker_spin / 2;
  }
  while (p->started < joining) {
    if (kiln_pool_pthread_create(&p->workers[p->started], nullptr, kiln_pool_worker, (void*)(int64_t)p->started) != 0) break;
    ++p->started;
  }
  // A few chunks per thread: a worker that is late or slow leaves its share to the others.
  int64_t chunks = int64_t(threads) * 4;
  if (chunks > n) chunks = n;
  const int64_t chunk = (n + chunks - 1) / chunks;
  chunks = (n + chunk - 1) / chunk;
  const uint64_t epoch = (KILN_LOAD(p->ticket) >> 32) + 1;
  KILN_STORE(p->ticket, (epoch << 32) | 0xffffffffull);  // closed while the fields change
  KILN_STORE(p->body, body);
  KILN_STORE(p->context, context);
  KILN_STORE(p->n, n);
  KILN_STORE(p->chunk, chunk);
  KILN_STORE(p->chunks, chunks);
  KILN_STORE(p->joining, p->started < joining ? p->started : joining);
  KILN_STORE(p->done, int64_t(0));
  KILN_STORE(p->park, 0);
  KILN_STORE(p->ticket, epoch << 32);
  __atomic_fetch_add(&p->wake, 1u, __ATOMIC_SEQ_CST);
  if (KILN_LOAD(p->sleepers) > 0) kiln_pool_futex(&p->wake, KILN_FUTEX_WAKE_PRIVATE, 0x7fffffff);
  kiln_pool_run_chunks(p);
  // Chunks that workers claimed and still run: spin a little, then give the CPU away (the
  // thread running them may be waiting for it).
  int spins = 0;
  while (KILN_LOAD(p->done) < chunks) {
    if (++spins < p->caller_spin) {
      kiln_pool_pause();
    } else {
      kiln_pool_sched_yield();
    }
  }
  KILN_STORE(p->caller, 0);
}

#undef KILN_RUNNER_LINKAGE
#endif  // the pool's code

// Runs body(begin, end) over chunks of [0, n) on the caller and the pool's workers; with
// `parallel` false, on the caller alone. Generated code passes its size test as `parallel`
// (`kiln_parallel_for(n, body, n * width >= threshold)`) rather than calling body(0, n) itself
// when the work is small: each inlined call of the body was another copy of the loop nest for the
// compiler to optimize and vectorize (three per loop, with kiln_parallel_run's own serial path),
// which was about half of a cold compile of the MLP sample (bench/README.md, "Cold compile
// latency"). A loop known to be small when the code is generated calls its body directly.
template <class F>
static inline void kiln_parallel_for(int64_t n, const F& body, bool parallel = true) {
  kiln_parallel_run(n, &kiln_pool_trampoline<F>, (void*)&body, parallel);
}

// Sends the workers to sleep now rather than after their spin: a library call that runs its own
// threads (oneDNN's OpenMP team) follows, and a spinning worker would take a CPU from them.
static inline void kiln_pool_park() {
  if (!kiln_pool_in_chunk) KILN_STORE(kiln_pool.park, 1);
}

// How the GEMMs of a batch split into tasks (codegen/cpp/cpp_library_calls.cpp), each task one
// BLAS call on one thread that packs the whole of one operand and its share of the other: whole
// GEMMs on one thread or when the batch gives every thread two; else blocks of the longer of the
// rows and the columns, so that the larger operand is packed once (blocks of rows re-pack all of
// B, K x N, in every task; blocks of columns re-pack A, rows x K: an im2col convolution's columns
// matrix, K x H*W, is far larger than its weights). Blocks are multiples of 16 (the BLAS kernels'
// tile) and every thread gets about two; a GEMM of at most 16 rows (a batch-1 linear layer) splits
// its columns when there are 64 or more.
static inline bool kiln_gemm_splits_columns(int64_t batch, int64_t rows, int64_t cols) {
  const int64_t threads = kiln_pool_threads();
  if (threads == 1 || batch >= threads * 2 || cols < 64) return false;
  return rows <= 16 || cols > rows;
}

static inline int64_t kiln_gemm_task_block(int64_t batch, int64_t extent) {
  const int64_t per_gemm = (kiln_pool_threads() * 2 + batch - 1) / batch;
  const int64_t task = (extent + per_gemm - 1) / per_gemm;
  return (task + 15) / 16 * 16;
}

// Rows of one GEMM task.
static inline int64_t kiln_gemm_task_rows(int64_t batch, int64_t rows, int64_t cols) {
  const int64_t threads = kiln_pool_threads();
  if (threads == 1 || rows <= 16 || batch >= threads * 2 || kiln_gemm_splits_columns(batch, rows, cols))
    return rows > 0 ? rows : 1;
  return kiln_gemm_task_block(batch, rows);
}

// Columns of one GEMM task.
static inline int64_t kiln_gemm_task_cols(int64_t batch, int64_t rows, int64_t cols) {
  if (!kiln_gemm_splits_columns(batch, rows, cols)) return cols > 0 ? cols : 1;
  return kiln_gemm_task_block(batch, cols);
}

#undef KILN_LOAD
#undef KILN_STORE
