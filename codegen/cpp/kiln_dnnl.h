// Kiln's oneDNN glue for generated C++: the text the C++ backend pastes after the prelude of a
// module that has convolutions (embedded by codegen/CMakeLists.txt as
// kiln::codegen::cpp_dnnl_glue()). The module links oneDNN (Debian's libdnnl, OpenMP build).
//
// kiln_convolution runs one channels-last convolution (ExternKind::Convolution, codegen/loop_ir.h)
// through oneDNN's C API: src [N, H, W, C] and dst [N, OH, OW, O] as nhwc memory, the weights
// [O, C/groups, KH, KW] reordered into the layout the chosen implementation wants (for
// AVX-512: brgconv, its depthwise kernel for groups == C). Each convolution of a module keeps a
// KilnConvolutionCache: the primitives made for the last few geometries (sizes, thread count),
// made once, and the reordered weights. With `constant_weights` (the model was compiled with
// frozen parameters) the weights are reordered once per weights pointer and kept ("prepacked");
// otherwise they are reordered on every call, since the caller may change them in place.
// Calls of one convolution with constant weights run concurrently (the chunks of a batch split,
// each on its own thread): the cache's mutex is held only to find the entry and prepack its
// weights, and an entry in use is never remade or repacked; a call runs with the entry's own
// memory objects and stream when no other call holds them, else with objects of its own and an
// arena's stream. Weights that may change are reordered by every call into its own scratch
// memory, so those calls run concurrently too.
//
// Winograd: a 3x3 stride-1 convolution with constant weights and enough channels and work
// (kiln_winograd_suits) runs as oneDNN's Winograd convolution (F(2x2,3x3) or F(4x4,3x3)), which
// does 2.25-4x fewer multiplies: its weights are transformed once with the prepacking, and its
// source and destination are reordered between nhwc and the blocked layout it wants (nChw16c)
// around each call. Measured at 2 threads (bench/README.md): ResNet's 3x3 layers 1.3-1.8x faster
// with the reorders. Its results differ from the direct convolution's by rounding (about 1e-6 of
// the output's magnitude), and a NaN or infinity in its input reaches every output of its tile
// (as NaN), a few positions further than the direct convolution's window. KILN_WINOGRAD=0 in the
// environment keeps every convolution direct; where oneDNN has no Winograd kernel for a shape
// (no AVX-512) the convolution is direct. The copies to and from nChw16c are Kiln's own loops
// (kiln_copy_blocked), faster than oneDNN's reorder primitive. A dilated 3x3 convolution (DeepLab's,
// FCN's) runs as the Winograd of its phases where that suits (kiln_phase_geometry): those copies
// split the image into them and join the output again. The Winograd kernels take no
// activation post-op: a clamp (relu, relu6) is done by the copy back to nhwc, any other
// activation runs as oneDNN's eltwise primitive on the convolution's output, in place.
//
// On a CPU without AVX-512 (oneDNN's effective ISA), where oneDNN has no Winograd and no brgemm
// convolution, a direct convolution with a kernel of more than one point runs on nChw8c, the
// layout its AVX2 kernels block by (kiln_blocked8_suits): 7-25% faster than on nhwc for ResNet's
// 3x3 layers with their weights coming from memory, the larger gains at 14 x 14 and 7 x 7
// (bench/README.md). Kiln's copies take the source there and the output back (an output that
// accumulates a residual is copied in first, for oneDNN's sum post-op); the activation stays a
// post-op.
//
// kiln_matmul runs one GEMM whose right operand is a parameter (ExternKind::Gemm with
// CppEmitOptions::library_matmul): C [M, N] = A [M, K] @ B [K, N], A and B in the layouts
// kiln_blas_layout gives (row-major or transposed, with leading dims), C row-major with its own
// row stride (a batch of GEMMs sharing B whose output rows interleave), plus a bias vector along
// C's rows where the shape says (a linear layer's, added by the kernel before it stores C: no
// pass over C after it). A frozen B is reordered
// once per pointer into the layout oneDNN's matmul wants (brgemm's blocks for AVX-512; for its gemm
// kernels on CPUs without, a plain matrix with its rows padded apart: kiln_padded_plain_md), which
// OpenBLAS would instead pack again on every call; that copy is the module's, shared by every
// kernel's cache entries of that layout (kiln_shared_packing). A B that may change between calls (a model
// compiled without frozen parameters: KilnMatmulShape::runtime_b) is read in place on every call,
// in its own layout, which oneDNN's brgemm matmul takes (row-major or transposed with dense rows;
// its own sgemm other leading dims): about 1.6x OpenBLAS's speed on an MLP's 64 x 784 x 128
// (bench/README.md). A batch of GEMMs with their own operands (attention's Q K^T and P V, whose
// right operand is an activation: KilnMatmulShape::batch, batch strides) is one matmul over
// [batch, M, K] @ [batch, K, N], B read in place. A KilnMatmulCache keeps the primitives of the
// last few (M, thread count) as the convolutions' cache does. A GEMM of at most 4 rows with a
// frozen B (a recurrent step, a decoder's token), and where oneDNN lacks AVX-512 any frozen GEMM
// that is one call, is Kiln's own product instead (kiln_panel_matmul): B packed once per weight
// for the whole module, streamed in panels of 16 columns. kiln_matmul_rows runs such a GEMM
// (or a batch of them sharing B) as blocks of rows on the caller's own threads (Kiln's pool), each
// a one-thread matmul, so that no OpenMP team starts beside the pool.
//
// Compile latency rules here as in the prelude: oneDNN's C header only, <pthread.h> and
// <stdlib.h>; every function `static` with a `kiln_` prefix.
#ifndef KILN_DNNL_H
#define KILN_DNNL_H

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

extern "C" int omp_get_max_threads(void);

// Everything that decides a primitive. Padding is the same at both ends of a dim.
typedef struct KilnConvolutionShape {
  int64_t batch, channels, height, width;
  int64_t out_channels, kernel_h, kernel_w, out_h, out_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
  int64_t has_bias, threads;
  int64_t activation;  // a KilnConvolutionActivation applied by oneDNN as a post-op
  int64_t winograd;    // asks for oneDNN's Winograd convolution (set by kiln_convolution)
  int64_t constant_weights;  // the weights never change (set by kiln_convolution)
  float clip_low, clip_high;  // kKilnActivationClip's bounds (a relu: 0 and +inf)
  // 1: dst = conv(src) + dst, then the activation: the destination already holds a residual
  // (oneDNN's sum post-op; a Winograd convolution's copy back to nhwc adds it).
  int64_t accumulate;
  // A 3-d convolution's depth (a video's frames, a volume's slices): src [N, D, H, W, C] and dst
  // [N, OD, OH, OW, O] as ndhwc, the weights [O, C/groups, KD, KH, KW]; depth 0 for a 2-d one.
  int64_t depth, kernel_d, out_d, stride_d, pad_d, dilation_d;
} KilnConvolutionShape;

// Activations oneDNN applies to the convolution's output as it writes it. The first two keep a
// NaN a NaN (as Kiln's own epilogue does): tanh, and hardswish (x * relu6(x + 3) / 6: the clip
// loses a NaN, the product with x brings it back). A SiLU is Kiln's loop after the call (oneDNN's
// swish post-op measured slower: codegen/cpp/cpp_library_calls.cpp). oneDNN's clip and relu turn NaN into 0, so a clamp (a relu, a relu6) is its post-op only
// where the output has no NaN: a convolution whose output has a finite bound
// (passes/value_bounds.h), in a call whose inputs are within the bound that assumes
// (kiln_inputs_bounded); in other calls it is Kiln's loop.
enum KilnConvolutionActivation {
  kKilnActivationNone = 0,
  kKilnActivationTanh = 1,
  kKilnActivationHardswish = 2,
  kKilnActivationClip = 3
};

// 1 while this thread runs a call (or a chunk of one) whose floating-point inputs are all within
// the bound the compiler's value bounds assume (a NaN is not): set by kiln_run before the kernels.
KILN_MODULE_STATE thread_local int32_t kiln_inputs_bounded = 0;
// The same for the tighter bound passes::kSmallInput (2^8), which deeper layers' bounds assume.
KILN_MODULE_STATE thread_local int32_t kiln_inputs_small = 0;

// The largest |x| of the `count` values at `x`, as the bits of its magnitude (the sign cleared):
// a NaN's are above +infinity's, so that it fails every comparison with a bound's bits. One pass
// decides both flags above. An integer max: Clang 14 left a float max that maps NaN to infinity
// unvectorized (20x slower), and this one is faster than the comparisons it replaces.
template <class Bits, class Float>
static inline Bits kiln_largest_magnitude_bits_of(const Float* x, int64_t count) {
  static_assert(sizeof(Bits) == sizeof(Float), "the bits of one value");
  const Bits magnitude = Bits(~Bits(0) >> 1);
  Bits largest = 0;
#pragma omp simd reduction(max : largest)
  for (int64_t i = 0; i < count; ++i) {
    Bits bits;
    __builtin_memcpy(&bits, &x[i], sizeof bits);
    bits &= magnitude;
    largest = bits > largest ? bits : largest;
  }
  return largest;
}
static inline uint32_t kiln_largest_magnitude_bits(const float* x, int64_t count) {
  return kiln_largest_magnitude_bits_of<uint32_t>(x, count);
}
static inline uint64_t kiln_largest_magnitude_bits(const double* x, int64_t count) {
  return kiln_largest_magnitude_bits_of<uint64_t>(x, count);
}

typedef struct KilnConvolutionEntry {
  KilnConvolutionShape shape;
  // The primitive's geometry: `shape`, or for a dilated convolution run as the Winograd of its
  // phases, theirs (kiln_phase_geometry), split and joined again by the copies to and from
  // nChw16c; `phases_*`: the dilations then, else 1.
  KilnConvolutionShape geometry;
  int64_t phases_h, phases_w;
  dnnl_primitive_t convolution;
  dnnl_primitive_t reorder;  // plain weights -> the convolution's weights layout
  dnnl_memory_t src, weights, packed, bias, dst, scratchpad;
  dnnl_memory_t own_packed;  // the entry's own object for a call's reordered weights (not frozen)
  // Where the convolution wants another source or destination layout than nhwc (Winograd's,
  // nChw8c without AVX-512): copies between the caller's nhwc memory and blocked buffers in the
  // call's arena: Kiln's own loop for oneDNN's nChw16c and nChw8c (kiln_copy_blocked; `*_block`,
  // the width: 16 or 8, else 0), else oneDNN's reorders.
  dnnl_primitive_t src_reorder, dst_reorder;
  int src_block, dst_block;
  int dst_clip;  // the clamp (kKilnActivationClip) done by the blocked destination's copy
  // 1: the blocked destination starts as a copy of the caller's (the residual oneDNN's sum
  // post-op adds to); its copy back then adds nothing.
  int dst_prefill;
  dnnl_primitive_t activation;  // the activation as its own primitive, where it cannot be a post-op
  dnnl_memory_t blocked_src, blocked_dst;
  // The bytes of the scratchpad and the blocked buffers, which live in a KilnScratch for the
  // length of a call (their memory objects get its addresses then).
  size_t scratchpad_bytes, blocked_src_bytes, blocked_dst_bytes;
  dnnl_stream_t stream;      // made once with the primitives, not per call
  void* packed_data;         // the reordered weights (owned)
  const void* packed_from;   // constant weights: the pointer `packed_data` was reordered from
  uint64_t last_used;
  int ready;
  int users;       // calls running with the entry outside the cache's mutex (never remade meanwhile)
  int own_in_use;  // 1 while a call runs with the entry's own memory objects and stream
} KilnConvolutionEntry;

enum { kKilnConvolutionEntries = 4 };

typedef struct KilnConvolutionCache {
  pthread_mutex_t mutex;
  uint64_t clock;
  KilnConvolutionEntry entries[kKilnConvolutionEntries];
} KilnConvolutionCache;

#define KILN_CONVOLUTION_CACHE_INIT {PTHREAD_MUTEX_INITIALIZER, 0, {}}

static dnnl_engine_t kiln_dnnl_engine(void) {
  static dnnl_engine_t engine = nullptr;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, [] {
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = nullptr;
  });
  return engine;
}

// Copies between nhwc [N, H, W, C] and oneDNN's nChw16c [N, ceil(C/16), H, W, 16] (the layout of
// oneDNN's Winograd convolutions) or nChw8c (its AVX2 kernels'), toward the blocked side when
// `to_blocked` (the channels past C zero, as oneDNN's reorder pads them), else toward the plain
// side, adding the value already there when `accumulate` (a residual), then clamping into
// [low, high] when `clip`. One block of pixels per thread of OpenMP's team (GOMP_parallel: the
// team oneDNN's kernels run on). Measured
// against oneDNN's reorder primitive (jit:uni) on 64 x 56 x 56: 13 against 52 us (to nChw16c) and
// 12 against 35 us (back), each alone with its data hot (bench/README.md).
extern "C" void GOMP_parallel(void (*)(void*), void*, unsigned, unsigned);
extern "C" int omp_get_thread_num(void);
extern "C" int omp_get_num_threads(void);

typedef struct KilnBlockedCopy {
  const float* from;
  float* to;
  int64_t channels;
  int64_t height, width;          // the plain side's image
  int64_t phases_h, phases_w;     // 1, or a dilated convolution's phases (kiln_phase_geometry)
  int64_t blocked_h, blocked_w;   // the blocked side's image (one phase of the plain one)
  int64_t rows;  // the rows walked: every blocked row when `to_blocked` (each is written), else every plain one
  int to_blocked, clip, accumulate;
  float low, high;
} KilnBlockedCopy;

// `width` values of a blocked row into a plain one: plus the plain value (Accumulate), clamped
// into [low, high] (Clip; a NaN stays NaN).
template <int Block, bool Accumulate, bool Clip>
static inline void kiln_copy_to_plain(const float* from, float* to, int width, float low, float high) {
  if (width == Block) {
#pragma omp simd
    for (int j = 0; j < Block; ++j) {
      const float v = Accumulate ? from[j] + to[j] : from[j];
      to[j] = Clip ? (v < low ? low : (v > high ? high : v)) : v;
    }
    return;
  }
  for (int j = 0; j < width; ++j) {
    const float v = Accumulate ? from[j] + to[j] : from[j];
    to[j] = Clip ? (v < low ? low : (v > high ? high : v)) : v;
  }
}

// The offsets of one row of a KilnBlockedCopy in blocks of `Block` channels: `row` walks the
// blocked side's pixels when `to_blocked`, else the plain side's. Plain pixel (n, y, x) is pixel (y / phases_h, x / phases_w)
// of blocked image (n phases_h + y % phases_h) phases_w + x % phases_w; `*plain` is -1 for a blocked
// pixel past the plain image's edge (written as zeros).
template <int Block>
static inline void kiln_blocked_row(const KilnBlockedCopy* c, int64_t row, int64_t* plain, int64_t* blocked) {
  const int64_t blocks = (c->channels + Block - 1) / Block, blocked_pixels = c->blocked_h * c->blocked_w;
  if (c->phases_h == 1 && c->phases_w == 1) {  // the same image on both sides
    *plain = row * c->channels;
    *blocked = ((row / blocked_pixels) * blocks * blocked_pixels + row % blocked_pixels) * Block;
    return;
  }
  const int64_t phases = c->phases_h * c->phases_w;
  if (c->to_blocked) {
    const int64_t image = row / blocked_pixels, pixel = row % blocked_pixels, phase = image % phases;
    const int64_t y = pixel / c->blocked_w * c->phases_h + phase / c->phases_w;
    const int64_t x = pixel % c->blocked_w * c->phases_w + phase % c->phases_w;
    *plain = y < c->height && x < c->width ? (((image / phases) * c->height + y) * c->width + x) * c->channels : -1;
    *blocked = (image * blocks * blocked_pixels + pixel) * Block;
    return;
  }
  const int64_t pixels = c->height * c->width, n = row / pixels, y = row % pixels / c->width, x = row % c->width;
  const int64_t image = (n * c->phases_h + y % c->phases_h) * c->phases_w + x % c->phases_w;
  *plain = row * c->channels;
  *blocked = (image * blocks * blocked_pixels + (y / c->phases_h) * c->blocked_w + x / c->phases_w) * Block;
}

template <int Block>
static void kiln_copy_blocked_part(void* data) {
  const KilnBlockedCopy* c = (const KilnBlockedCopy*)data;
  const int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
  const int64_t q = c->rows / threads, r = c->rows % threads;
  const int64_t begin = t * q + (t < r ? t : r), end = begin + q + (t < r ? 1 : 0);
  const int64_t blocks = (c->channels + Block - 1) / Block, block_stride = c->blocked_h * c->blocked_w * Block;
  const float low = c->low, high = c->high;
  for (int64_t row = begin; row < end; ++row) {
    int64_t plain, blocked;
    kiln_blocked_row<Block>(c, row, &plain, &blocked);
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t width = c->channels - b * Block < Block ? c->channels - b * Block : Block;
      if (c->to_blocked) {
        float* to = c->to + blocked + b * block_stride;
        if (plain < 0) {
          for (int j = 0; j < Block; ++j) to[j] = 0.0f;
          continue;
        }
        const float* from = c->from + plain + b * Block;
        if (width == Block) {
#pragma omp simd
          for (int j = 0; j < Block; ++j) to[j] = from[j];
        } else {
          for (int j = 0; j < Block; ++j) to[j] = j < width ? from[j] : 0.0f;
        }
      } else {
        const float* from = c->from + blocked + b * block_stride;
        float* to = c->to + plain + b * Block;
        const int w = int(width);
        if (c->accumulate && c->clip) kiln_copy_to_plain<Block, true, true>(from, to, w, low, high);
        else if (c->accumulate) kiln_copy_to_plain<Block, true, false>(from, to, w, low, high);
        else if (c->clip) kiln_copy_to_plain<Block, false, true>(from, to, w, low, high);
        else kiln_copy_to_plain<Block, false, false>(from, to, w, low, high);
      }
    }
  }
}

// `from` nhwc [batch, height, width, channels] and `to` blocked by `block` (16 or 8) channels
// when `to_blocked`, else the other way; the blocked side is [batch phases_h phases_w,
// ceil(channels / block), blocked_h, blocked_w, block].
static void kiln_copy_blocked(int block, const float* from, float* to, int64_t batch, int64_t channels, int64_t height,
                              int64_t width, int64_t phases_h, int64_t phases_w, int64_t blocked_h, int64_t blocked_w,
                              int to_blocked, int clip, float low, float high, int accumulate = 0) {
  const int64_t rows = to_blocked ? batch * phases_h * phases_w * blocked_h * blocked_w : batch * height * width;
  KilnBlockedCopy copy = {from,      to,   channels,   height, width, phases_h, phases_w, blocked_h,
                          blocked_w, rows, to_blocked, clip,   accumulate, low,  high};
  GOMP_parallel(block == 8 ? kiln_copy_blocked_part<8> : kiln_copy_blocked_part<16>, &copy, 0, 0);
}

static void* kiln_aligned_bytes(size_t bytes) {
  void* data = nullptr;
  if (posix_memalign(&data, 64, bytes == 0 ? 64 : bytes) != 0) return nullptr;
  return data;
}

static void kiln_release_entry(KilnConvolutionEntry* e) {
  if (e->convolution) dnnl_primitive_destroy(e->convolution);
  if (e->reorder) dnnl_primitive_destroy(e->reorder);
  if (e->src_reorder) dnnl_primitive_destroy(e->src_reorder);
  if (e->dst_reorder) dnnl_primitive_destroy(e->dst_reorder);
  if (e->activation) dnnl_primitive_destroy(e->activation);
  if (e->stream) dnnl_stream_destroy(e->stream);
  dnnl_memory_t* memories[] = {&e->src,        &e->weights,     &e->packed,      &e->bias,      &e->dst,
                               &e->scratchpad, &e->blocked_src, &e->blocked_dst, &e->own_packed};
  for (dnnl_memory_t* m : memories) {
    if (*m) dnnl_memory_destroy(*m);
  }
  free(e->packed_data);
  __builtin_memset(e, 0, sizeof(*e));
}

// Scratch memory the convolutions and matmuls of a module share. A convolution's scratchpad and
// Winograd's blocked source and destination are dead between calls, and the calls of one thread
// come one after another, so one arena per concurrent caller holds them all, grown to the largest
// call (kept per convolution entry, they took 640 MB for ResNet-50 at batch 32). A matmul split
// into blocks of rows (kiln_matmul_rows) takes one per block running at once, with the arena's
// stream. A caller takes the first free arena; when all are taken it waits for the first. Never
// freed, as the caches are not.
typedef struct KilnScratch {
  pthread_mutex_t mutex;
  void* data;
  size_t bytes;
  dnnl_stream_t stream;  // made by the first block that runs in the arena
} KilnScratch;

enum { kKilnScratchArenas = 64 };

static KilnScratch kiln_scratch_arenas[kKilnScratchArenas] = {
#define KILN_SCRATCH_INIT {PTHREAD_MUTEX_INITIALIZER, nullptr, 0, nullptr}
#define KILN_SCRATCH_INIT_8 KILN_SCRATCH_INIT, KILN_SCRATCH_INIT, KILN_SCRATCH_INIT, KILN_SCRATCH_INIT, \
                            KILN_SCRATCH_INIT, KILN_SCRATCH_INIT, KILN_SCRATCH_INIT, KILN_SCRATCH_INIT
    KILN_SCRATCH_INIT_8, KILN_SCRATCH_INIT_8, KILN_SCRATCH_INIT_8, KILN_SCRATCH_INIT_8,
    KILN_SCRATCH_INIT_8, KILN_SCRATCH_INIT_8, KILN_SCRATCH_INIT_8, KILN_SCRATCH_INIT_8};
#undef KILN_SCRATCH_INIT_8
#undef KILN_SCRATCH_INIT

static size_t kiln_round_up_64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// An arena of at least `bytes`, held until kiln_give_back_scratch; nullptr when it cannot grow.
static KilnScratch* kiln_take_scratch(size_t bytes) {
  KilnScratch* arena = nullptr;
  for (int i = 0; i < kKilnScratchArenas && !arena; ++i)
    if (pthread_mutex_trylock(&kiln_scratch_arenas[i].mutex) == 0) arena = &kiln_scratch_arenas[i];
  if (!arena) {
    arena = &kiln_scratch_arenas[0];
    pthread_mutex_lock(&arena->mutex);
  }
  if (arena->bytes < bytes) {
    free(arena->data);
    arena->data = kiln_aligned_bytes(bytes);
    arena->bytes = arena->data ? bytes : 0;
    if (!arena->data) {
      pthread_mutex_unlock(&arena->mutex);
      return nullptr;
    }
  }
  return arena;
}

static void kiln_give_back_scratch(KilnScratch* arena) { pthread_mutex_unlock(&arena->mutex); }

// Whether a convolution runs faster as oneDNN's Winograd than direct, by measurement at 2 threads
// on AVX-512 (bench/README.md): 3x3, stride 1, no dilation or groups; at least 48 input and 48
// output channels, past which the Winograd's fewer multiplies outweigh the reorders of source and
// destination and its kernel fills its blocks of channels (64 -> 64 wins by 1.4x at 56x56,
// 48 -> 192 by 1.6x; 32 -> 32 loses by 1.3x at 112x112, DenseNet's 128 -> 32 by 1.1x); at least 2^24
// multiply-adds, below which its fixed costs lose (512 -> 512 at 2x2 by 1.7x); and at least 64
// output points per weight (batch x OH x OW): its transformed weights are 16/9 the size of the
// direct ones and, streamed from memory in a model, they bound a convolution with fewer points
// (ResNet-18's 512 -> 512 at 7x7, batch 1: 0.55 ms direct, 0.62 ms Winograd with its reorders;
// two such layers alone at 7x7 and 6x6 even, 256 -> 256 at 7x7 1.1x slower), while from 8x8 it
// wins: 512 -> 512 1.60 -> 1.24 ms for two layers at 8x8, 2.29 -> 1.56 at 10x10, 256 -> 256 at
// 9x9 1.1x; ResNet-18 at 320 x 320 (its last stage 10x10) 16.9 -> 16.0 ms.
static int kiln_winograd_suits(const KilnConvolutionShape* s) {
  if (s->depth != 0 || s->groups != 1 || s->kernel_h != 3 || s->kernel_w != 3 || s->stride_h != 1 || s->stride_w != 1 ||
      s->dilation_h != 1 || s->dilation_w != 1)
    return 0;
  if (s->channels < 48 || s->out_channels < 48) return 0;
  const int64_t points = s->batch * s->out_h * s->out_w;
  return points >= 64 && points * s->channels * s->out_channels * 9 >= (int64_t(1) << 24);
}

// A dilated convolution as the undilated one of its phases (the atrous convolution's "space to
// batch"): with dilation d and a padding p that d divides, output row d i + r reads input rows
// d (i - p/d + k) + r, k = 0, 1, 2, all of phase r. So the d_h d_w phases of the image (rows
// r, r + d_h, ...; columns likewise), each ceil(H / d_h) x ceil(W / d_w) with zeros past the
// image's edge, convolved undilated with padding p / d, are the output's phases. Where the
// Winograd suits that geometry (kiln_winograd_suits) the convolution runs so: the copies to and
// from nChw16c that Winograd needs anyway split the image and join the output, so the split
// costs no pass of its own. Fills `*g` and returns 1 for such a convolution: 3x3, stride 1, no
// groups, dilated, its padding a multiple of its dilation and its output the input's size less
// what the dilated window takes, whose output fills at least 70% of the 4 x 4 tiles of
// Winograd's F(4x4, 3x3) over the phases (the rest is computed and dropped). Measured at 2
// threads, frozen, batch 1 (bench/README.md), against the direct dilated convolution: 512 -> 512
// at 28 x 28 with dilation 2 or 4 (77% filled) 1.6x and 1.35x faster, with 8 (phases of 4 x 4,
// 77%) 1.07x; with 6 (phases of 5 x 5, 34%) 1.5x slower, as 256 -> 256 at 64 x 64 with dilation
// 12 (44%).
static int64_t kiln_winograd_tiled(int64_t outputs) { return (outputs + 3) / 4 * 4; }
static int kiln_phase_geometry(const KilnConvolutionShape* s, KilnConvolutionShape* g) {
  const int64_t dh = s->dilation_h, dw = s->dilation_w;
  if ((dh == 1 && dw == 1) || dh < 1 || dw < 1 || s->depth != 0) return 0;
  if (s->groups != 1 || s->kernel_h != 3 || s->kernel_w != 3 || s->stride_h != 1 || s->stride_w != 1) return 0;
  if (s->pad_h % dh != 0 || s->pad_w % dw != 0) return 0;
  if (s->out_h != s->height + 2 * s->pad_h - 2 * dh || s->out_w != s->width + 2 * s->pad_w - 2 * dw) return 0;
  *g = *s;
  g->batch = s->batch * dh * dw;
  g->height = (s->height + dh - 1) / dh;
  g->width = (s->width + dw - 1) / dw;
  g->pad_h = s->pad_h / dh;
  g->pad_w = s->pad_w / dw;
  g->out_h = g->height + 2 * g->pad_h - 2;
  g->out_w = g->width + 2 * g->pad_w - 2;
  g->dilation_h = g->dilation_w = 1;
  const double filled = double(s->out_h) / double(dh * kiln_winograd_tiled(g->out_h)) *
                        double(s->out_w) / double(dw * kiln_winograd_tiled(g->out_w));
  return g->out_h > 0 && g->out_w > 0 && filled >= 0.7;
}

// 0 where the environment variable `name` is "0", else 1; read once into `*cached` (-1 before).
static int kiln_environment_allows(const char* name, int* cached) {
  int value = __atomic_load_n(cached, __ATOMIC_RELAXED);
  if (value < 0) {
    const char* text = getenv(name);
    value = !(text && text[0] == '0' && text[1] == 0);
    __atomic_store_n(cached, value, __ATOMIC_RELAXED);
  }
  return value;
}

// KILN_WINOGRAD=0 keeps every convolution direct (read once per module).
static int kiln_winograd_allowed(void) {
  static int allowed = -1;
  return kiln_environment_allows("KILN_WINOGRAD", &allowed);
}

// Whether oneDNN runs its AVX-512 kernels here (its effective ISA: the CPU's, or less where
// ONEDNN_MAX_CPU_ISA holds it there). Without, its matmul is its gemm and its convolutions have
// no Winograd.
static int kiln_onednn_has_avx512(void) {
  static int has = -1;
  int value = __atomic_load_n(&has, __ATOMIC_RELAXED);
  if (value < 0) {
    value = (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? 1 : 0;
    __atomic_store_n(&has, value, __ATOMIC_RELAXED);
  }
  return value;
}

// Whether a GEMM whose right operand may change between calls (parameters not frozen), B's rows
// (or columns, transposed) `ldb` floats apart, goes to oneDNN's matmul, which reads B in place.
// KILN_ONEDNN_MATMUL=0 keeps them all on OpenBLAS, as before oneDNN ran them (read once per
// module). Without AVX-512 oneDNN's gemm runs a B whose rows are a multiple of 4 KiB apart at under
// half its speed (kiln_padded_plain_md pads a frozen one); such a B stays on OpenBLAS (the suite's
// GPT at batch 1 without frozen weights: 7.1-7.4 ms against 8.1-8.9, bench/README.md).
static int kiln_runtime_b_matmul_allowed(int64_t ldb) {
  static int allowed = -1;
  if (!kiln_environment_allows("KILN_ONEDNN_MATMUL", &allowed)) return 0;
  return ldb % 1024 != 0 || kiln_onednn_has_avx512();
}

// Writes "<name>: oneDNN <what> failed (status <status>)" to error.
static int kiln_dnnl_failure(const char* name, const char* what, dnnl_status_t status, char* error,
                             int64_t capacity) {
  const char* parts[] = {name, ": oneDNN ", what, " failed (status ", nullptr, ")"};
  const int64_t ints[] = {0, 0, 0, 0, int64_t(status), 0};
  kiln_message(error, capacity, parts, ints, 6);
  return 1;
}

#define KILN_DNNL_TRY(call, what)                                                          \
  do {                                                                                     \
    dnnl_status_t kiln_status = (call);                                                    \
    if (kiln_status != dnnl_success) return kiln_dnnl_failure(name, what, kiln_status, error, capacity); \
  } while (0)

// oneDNN's form of a KilnConvolutionActivation.
typedef struct KilnEltwise {
  dnnl_alg_kind_t algorithm;
  float alpha, beta;
} KilnEltwise;

static KilnEltwise kiln_activation_eltwise(const KilnConvolutionShape* s) {
  if (s->activation == kKilnActivationTanh) return {dnnl_eltwise_tanh, 0.0f, 0.0f};
  if (s->activation == kKilnActivationClip) {
    if (s->clip_low == 0.0f && s->clip_high == __builtin_inff()) return {dnnl_eltwise_relu, 0.0f, 0.0f};
    return {dnnl_eltwise_clip, s->clip_low, s->clip_high};
  }
  return {dnnl_eltwise_hardswish, 0.0f, 0.0f};
}

// A convolution's attributes: the scratchpad is the caller's; with `accumulate`, the value already
// in the destination added (oneDNN's sum post-op), then `post_op`, where given, applied to the
// output as oneDNN writes it.
static dnnl_status_t kiln_convolution_attr(dnnl_primitive_attr_t* attr, const KilnEltwise* post_op, int accumulate) {
  dnnl_status_t status = dnnl_primitive_attr_create(attr);
  if (status == dnnl_success) status = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
  if (status == dnnl_success && (post_op || accumulate)) {
    dnnl_post_ops_t post_ops = nullptr;
    status = dnnl_post_ops_create(&post_ops);
    if (status == dnnl_success && accumulate) status = dnnl_post_ops_append_sum(post_ops, 1.0f);
    if (status == dnnl_success && post_op)
      status = dnnl_post_ops_append_eltwise(post_ops, 1.0f, post_op->algorithm, post_op->alpha, post_op->beta);
    if (status == dnnl_success) status = dnnl_primitive_attr_set_post_ops(*attr, post_ops);
    if (post_ops) dnnl_post_ops_destroy(post_ops);
  }
  if (status != dnnl_success && *attr) {
    dnnl_primitive_attr_destroy(*attr);
    *attr = nullptr;
  }
  return status;
}

// An eltwise primitive applying `eltwise` to memory described by `md` (run in place).
static dnnl_status_t kiln_make_eltwise(dnnl_primitive_t* primitive, const dnnl_memory_desc_t* md,
                                       const KilnEltwise* eltwise, dnnl_engine_t engine) {
  if (!md) return dnnl_runtime_error;
  dnnl_eltwise_desc_t desc;
  dnnl_status_t status =
      dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, eltwise->algorithm, md, eltwise->alpha, eltwise->beta);
  dnnl_primitive_desc_t pd = nullptr;
  if (status == dnnl_success) status = dnnl_primitive_desc_create(&pd, &desc, nullptr, engine, nullptr);
  if (status == dnnl_success) status = dnnl_primitive_create(primitive, pd);
  if (pd) dnnl_primitive_desc_destroy(pd);
  return status;
}

// Where the convolution `pd` wants a source or destination layout other than nhwc: the blocked
// buffers' memory objects and sizes (their memory is a KilnScratch's during a call), and how the
// caller's nhwc source and destination get there: Kiln's own copy for nChw16c and nChw8c, else
// oneDNN's reorder primitives.
static dnnl_status_t kiln_make_layout_reorders(KilnConvolutionEntry* e, const_dnnl_primitive_desc_t pd,
                                               const dnnl_memory_desc_t* src_md, const dnnl_memory_desc_t* dst_md,
                                               dnnl_engine_t engine) {
  struct Side {
    dnnl_query_t query;
    const dnnl_memory_desc_t* plain;
    dnnl_memory_t* blocked;
    size_t* bytes;
    dnnl_primitive_t* reorder;
    int* block;
    int to_plain;
  } sides[] = {{dnnl_query_src_md, src_md, &e->blocked_src, &e->blocked_src_bytes, &e->src_reorder, &e->src_block, 0},
               {dnnl_query_dst_md, dst_md, &e->blocked_dst, &e->blocked_dst_bytes, &e->dst_reorder, &e->dst_block, 1}};
  for (const Side& side : sides) {
    const dnnl_memory_desc_t* wanted = dnnl_primitive_desc_query_md(pd, side.query, 0);
    if (!wanted) return dnnl_runtime_error;
    if (dnnl_memory_desc_equal(wanted, side.plain)) continue;
    *side.bytes = kiln_round_up_64(dnnl_memory_desc_get_size(wanted));
    dnnl_status_t status = dnnl_memory_create(side.blocked, wanted, engine, DNNL_MEMORY_NONE);
    dnnl_memory_desc_t blocked16, blocked8;
    if (status == dnnl_success)
      status = dnnl_memory_desc_init_by_tag(&blocked16, 4, side.plain->dims, dnnl_f32, dnnl_nChw16c);
    if (status == dnnl_success) status = dnnl_memory_desc_init_by_tag(&blocked8, 4, side.plain->dims, dnnl_f32, dnnl_nChw8c);
    if (status != dnnl_success) return status;
    if (dnnl_memory_desc_equal(wanted, &blocked16) || dnnl_memory_desc_equal(wanted, &blocked8)) {
      *side.block = dnnl_memory_desc_equal(wanted, &blocked16) ? 16 : 8;
      continue;
    }
    dnnl_primitive_desc_t reorder_pd = nullptr;
    if (status == dnnl_success)
      status = side.to_plain ? dnnl_reorder_primitive_desc_create(&reorder_pd, wanted, engine, side.plain, engine, nullptr)
                             : dnnl_reorder_primitive_desc_create(&reorder_pd, side.plain, engine, wanted, engine, nullptr);
    if (status == dnnl_success) status = dnnl_primitive_create(side.reorder, reorder_pd);
    if (reorder_pd) dnnl_primitive_desc_destroy(reorder_pd);
    if (status != dnnl_success) return status;
  }
  return dnnl_success;
}

// Whether the direct convolution `s` runs on nChw8c (see the top of this file): a 2-d one with a
// kernel of more than one point (a 1x1 convolution is a GEMM, as fast on nhwc: 2048 -> 512 at
// 7 x 7 736 us on nhwc, 798 on nChw8c), one group, and whole blocks of channels on both sides,
// where oneDNN's kernels are its AVX2 ones.
static int kiln_blocked8_suits(const KilnConvolutionShape* s) {
  if (s->depth != 0 || s->groups != 1 || s->kernel_h * s->kernel_w < 2 || s->channels % 8 != 0 || s->out_channels % 8 != 0)
    return 0;
  return (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2 && !kiln_onednn_has_avx512();
}

// Makes the primitives and memory objects of `e` for `shape`, of the geometry `s` (`shape` itself,
// or its phases': kiln_phase_geometry); their data handles are set per call.
static int kiln_make_entry_of(KilnConvolutionEntry* e, const KilnConvolutionShape* shape, const KilnConvolutionShape* s,
                              const char* name, char* error, int64_t capacity) {
  dnnl_engine_t engine = kiln_dnnl_engine();
  if (!engine) return kiln_dnnl_failure(name, "engine creation", dnnl_runtime_error, error, capacity);
  e->shape = *shape;
  e->geometry = *s;
  e->phases_h = s->dilation_h == shape->dilation_h ? 1 : shape->dilation_h;
  e->phases_w = s->dilation_w == shape->dilation_w ? 1 : shape->dilation_w;
  // 2-d: nhwc and 2 spatial dims; 3-d: ndhwc and 3 (the depth first).
  const int volume = s->depth > 0, ndims = volume ? 5 : 4;
  dnnl_memory_desc_t src_md, dst_md, weights_any_md, weights_plain_md, bias_md;
  dnnl_dims_t src_dims = {s->batch, s->channels, s->height, s->width};
  dnnl_dims_t dst_dims = {s->batch, s->out_channels, s->out_h, s->out_w};
  dnnl_dims_t strides = {s->stride_h, s->stride_w};
  dnnl_dims_t dilates = {s->dilation_h - 1, s->dilation_w - 1};
  dnnl_dims_t padding = {s->pad_h, s->pad_w};
  // The far padding oneDNN wants: what makes the last output position fit exactly.
  dnnl_dims_t padding_r = {
      (s->out_h - 1) * s->stride_h + (s->kernel_h - 1) * s->dilation_h + 1 - s->height - s->pad_h,
      (s->out_w - 1) * s->stride_w + (s->kernel_w - 1) * s->dilation_w + 1 - s->width - s->pad_w};
  if (volume) {
    const int64_t src_3d[] = {s->batch, s->channels, s->depth, s->height, s->width};
    const int64_t dst_3d[] = {s->batch, s->out_channels, s->out_d, s->out_h, s->out_w};
    const int64_t strides_3d[] = {s->stride_d, s->stride_h, s->stride_w};
    const int64_t dilates_3d[] = {s->dilation_d - 1, s->dilation_h - 1, s->dilation_w - 1};
    const int64_t padding_3d[] = {s->pad_d, s->pad_h, s->pad_w};
    const int64_t padding_r_3d[] = {
        (s->out_d - 1) * s->stride_d + (s->kernel_d - 1) * s->dilation_d + 1 - s->depth - s->pad_d, padding_r[0],
        padding_r[1]};
    for (int d = 0; d < 5; ++d) src_dims[d] = src_3d[d], dst_dims[d] = dst_3d[d];
    for (int d = 0; d < 3; ++d)
      strides[d] = strides_3d[d], dilates[d] = dilates_3d[d], padding[d] = padding_3d[d], padding_r[d] = padding_r_3d[d];
  }
  KILN_DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, ndims, src_dims, dnnl_f32, volume ? dnnl_ndhwc : dnnl_nhwc),
                "source descriptor");
  KILN_DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, ndims, dst_dims, dnnl_f32, volume ? dnnl_ndhwc : dnnl_nhwc),
                "destination descriptor");
  {
    // [groups,] O/groups, C/groups, [KD,] KH, KW
    dnnl_dims_t w;
    int rank = 0;
    if (s->groups != 1) w[rank++] = s->groups;
    w[rank++] = s->out_channels / s->groups;
    w[rank++] = s->channels / s->groups;
    if (volume) w[rank++] = s->kernel_d;
    w[rank++] = s->kernel_h;
    w[rank++] = s->kernel_w;
    const dnnl_format_tag_t plain = s->groups != 1 ? (volume ? dnnl_goidhw : dnnl_goihw) : (volume ? dnnl_oidhw : dnnl_oihw);
    KILN_DNNL_TRY(dnnl_memory_desc_init_by_tag(&weights_any_md, rank, w, dnnl_f32, dnnl_format_tag_any), "weights descriptor");
    KILN_DNNL_TRY(dnnl_memory_desc_init_by_tag(&weights_plain_md, rank, w, dnnl_f32, plain), "weights descriptor");
  }
  dnnl_dims_t bias_dims = {s->out_channels};
  KILN_DNNL_TRY(dnnl_memory_desc_init_by_tag(&bias_md, 1, bias_dims, dnnl_f32, dnnl_a), "bias descriptor");
  // Winograd takes the layouts it wants (format `any`); the direct convolution works on nhwc.
  dnnl_memory_desc_t src_any_md, dst_any_md;
  KILN_DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_any_md, ndims, src_dims, dnnl_f32, dnnl_format_tag_any), "source descriptor");
  KILN_DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_any_md, ndims, dst_dims, dnnl_f32, dnnl_format_tag_any),
                "destination descriptor");
  dnnl_convolution_desc_t desc, winograd_desc;
  KILN_DNNL_TRY(dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct,
                                                           &src_md, &weights_any_md, s->has_bias ? &bias_md : nullptr,
                                                           &dst_md, strides, dilates, padding, padding_r),
                "convolution descriptor");
  // Accumulating, Winograd's output must come back through Kiln's copy (which adds the residual)
  // before any activation but a clamp (which that copy applies after the sum).
  int winograd = s->winograd &&
                 (!s->accumulate || s->activation == kKilnActivationNone || s->activation == kKilnActivationClip) &&
                 dnnl_dilated_convolution_forward_desc_init(&winograd_desc, dnnl_forward_inference, dnnl_convolution_winograd,
                                                            &src_any_md, &weights_any_md, s->has_bias ? &bias_md : nullptr,
                                                            &dst_any_md, strides, dilates, padding, padding_r) == dnnl_success;
  // The direct convolution applies the activation as a post-op; oneDNN's Winograd kernels take
  // none of these, so there the activation is an eltwise primitive run on the convolution's
  // output in place, before the output is reordered to nhwc.
  const KilnEltwise activation = kiln_activation_eltwise(s);
  dnnl_primitive_attr_t attr = nullptr, winograd_attr = nullptr;
  dnnl_status_t status =
      kiln_convolution_attr(&attr, s->activation != kKilnActivationNone ? &activation : nullptr, int(s->accumulate));
  if (status == dnnl_success && winograd) status = kiln_convolution_attr(&winograd_attr, nullptr, 0);
  if (status != dnnl_success) {
    if (attr) dnnl_primitive_attr_destroy(attr);
    return kiln_dnnl_failure(name, "activation post-op", status, error, capacity);
  }
  dnnl_primitive_desc_t pd = nullptr;
  // oneDNN has no Winograd kernel for every shape and CPU: then the direct one.
  if (winograd && dnnl_primitive_desc_create(&pd, &winograd_desc, winograd_attr, engine, nullptr) != dnnl_success) {
    pd = nullptr;
    winograd = 0;
  }
  if (winograd && s->accumulate) {
    // The residual is added by the copy to nhwc, which only an nChw16c destination takes.
    dnnl_memory_desc_t blocked16;
    const dnnl_memory_desc_t* wanted = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    if (dnnl_memory_desc_init_by_tag(&blocked16, 4, dst_dims, dnnl_f32, dnnl_nChw16c) != dnnl_success || !wanted ||
        !dnnl_memory_desc_equal(wanted, &blocked16)) {
      dnnl_primitive_desc_destroy(pd);
      pd = nullptr;
      winograd = 0;
    }
  }
  // Direct on nChw8c where that suits (and oneDNN makes a kernel of its own for it, not a reference one).
  int blocked8 = !winograd && kiln_blocked8_suits(s);
  if (blocked8) {
    dnnl_memory_desc_t src8_md, dst8_md;
    dnnl_convolution_desc_t desc8;
    const char* chosen = nullptr;
    blocked8 = dnnl_memory_desc_init_by_tag(&src8_md, 4, src_dims, dnnl_f32, dnnl_nChw8c) == dnnl_success &&
               dnnl_memory_desc_init_by_tag(&dst8_md, 4, dst_dims, dnnl_f32, dnnl_nChw8c) == dnnl_success &&
               dnnl_dilated_convolution_forward_desc_init(&desc8, dnnl_forward_inference, dnnl_convolution_direct,
                                                          &src8_md, &weights_any_md, s->has_bias ? &bias_md : nullptr,
                                                          &dst8_md, strides, dilates, padding, padding_r) == dnnl_success &&
               dnnl_primitive_desc_create(&pd, &desc8, attr, engine, nullptr) == dnnl_success;
    if (blocked8 && (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &chosen) != dnnl_success || !chosen ||
                     __builtin_strstr(chosen, "ref") != nullptr))
      blocked8 = 0;
    if (!blocked8 && pd) {
      dnnl_primitive_desc_destroy(pd);
      pd = nullptr;
    }
  }
  if (!pd) status = dnnl_primitive_desc_create(&pd, &desc, attr, engine, nullptr);
  dnnl_primitive_attr_destroy(attr);
  if (winograd_attr) dnnl_primitive_attr_destroy(winograd_attr);
  if (status != dnnl_success) return kiln_dnnl_failure(name, "convolution choice", status, error, capacity);
  if (blocked8) {
    // Both sides are nChw8c, which Kiln's copies take (src_block and dst_block 8). A residual is
    // added by oneDNN's sum post-op, so the blocked destination starts as it.
    status = kiln_make_layout_reorders(e, pd, &src_md, &dst_md, engine);
    e->dst_prefill = int(s->accumulate);
    if (status != dnnl_success) {
      dnnl_primitive_desc_destroy(pd);
      return kiln_dnnl_failure(name, "nChw8c setup", status, error, capacity);
    }
  }
  if (winograd) {
    status = kiln_make_layout_reorders(e, pd, &src_md, &dst_md, engine);
    // A clamp is done by Kiln's copy of an nChw16c destination to nhwc, as it writes each value.
    e->dst_clip = e->dst_block != 0 && s->activation == kKilnActivationClip;
    if (status == dnnl_success && s->activation != kKilnActivationNone && !e->dst_clip)
      status = kiln_make_eltwise(&e->activation, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &activation,
                                 engine);
    if (status != dnnl_success) {
      dnnl_primitive_desc_destroy(pd);
      return kiln_dnnl_failure(name, "Winograd setup", status, error, capacity);
    }
  }
  const dnnl_memory_desc_t* packed_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const dnnl_memory_desc_t* scratch_md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  status = dnnl_primitive_create(&e->convolution, pd);
  // Constant weights are packed once into the entry's buffer; weights that may change, by every
  // call into its own scratch memory (the entry's `packed` then only describes their layout).
  if (status == dnnl_success && s->constant_weights) {
    e->packed_data = kiln_aligned_bytes(dnnl_memory_desc_get_size(packed_md));
    if (!e->packed_data) status = dnnl_out_of_memory;
  }
  if (status == dnnl_success) status = dnnl_memory_create(&e->packed, packed_md, engine, s->constant_weights ? e->packed_data : DNNL_MEMORY_NONE);
  if (status == dnnl_success) status = dnnl_memory_create(&e->own_packed, packed_md, engine, DNNL_MEMORY_NONE);
  if (status == dnnl_success && scratch_md && dnnl_memory_desc_get_size(scratch_md) > 0) {
    e->scratchpad_bytes = kiln_round_up_64(dnnl_memory_desc_get_size(scratch_md));
    status = dnnl_memory_create(&e->scratchpad, scratch_md, engine, DNNL_MEMORY_NONE);
  }
  dnnl_primitive_desc_t reorder_pd = nullptr;
  if (status == dnnl_success) {
    status = dnnl_reorder_primitive_desc_create(&reorder_pd, &weights_plain_md, engine, packed_md, engine, nullptr);
  }
  dnnl_primitive_desc_destroy(pd);
  if (status != dnnl_success) return kiln_dnnl_failure(name, "convolution setup", status, error, capacity);
  status = dnnl_primitive_create(&e->reorder, reorder_pd);
  dnnl_primitive_desc_destroy(reorder_pd);
  if (status != dnnl_success) return kiln_dnnl_failure(name, "weights reorder setup", status, error, capacity);
  KILN_DNNL_TRY(dnnl_memory_create(&e->src, &src_md, engine, DNNL_MEMORY_NONE), "memory creation");
  KILN_DNNL_TRY(dnnl_memory_create(&e->dst, &dst_md, engine, DNNL_MEMORY_NONE), "memory creation");
  KILN_DNNL_TRY(dnnl_memory_create(&e->weights, &weights_plain_md, engine, DNNL_MEMORY_NONE), "memory creation");
  KILN_DNNL_TRY(dnnl_memory_create(&e->bias, &bias_md, engine, DNNL_MEMORY_NONE), "memory creation");
  KILN_DNNL_TRY(dnnl_stream_create(&e->stream, engine, dnnl_stream_default_flags), "stream creation");
  e->ready = 1;
  return 0;
}

// Makes `e` for `s`: a dilated convolution asked to run as Winograd runs as its phases' Winograd
// where oneDNN makes one whose source and destination are nChw16c (Kiln's copies then split and
// join the phases), else direct and dilated.
static int kiln_make_entry(KilnConvolutionEntry* e, const KilnConvolutionShape* s, const char* name, char* error,
                           int64_t capacity) {
  KilnConvolutionShape phases;
  if (!s->winograd || !kiln_phase_geometry(s, &phases)) return kiln_make_entry_of(e, s, s, name, error, capacity);
  if (kiln_make_entry_of(e, s, &phases, name, error, capacity) == 0 && e->src_block == 16 && e->dst_block == 16) return 0;
  kiln_release_entry(e);
  KilnConvolutionShape direct = *s;
  direct.winograd = 0;
  return kiln_make_entry_of(e, s, &direct, name, error, capacity);
}

// The ready entry of `cache` (a convolution's or a matmul's) for `s`, or nullptr. Under the
// cache's mutex.
template <class Cache, class Shape>
static auto kiln_found_entry(Cache* cache, const Shape* s) -> decltype(&cache->entries[0]) {
  for (int i = 0; i < kKilnConvolutionEntries; ++i) {
    auto* e = &cache->entries[i];
    if (e->ready && __builtin_memcmp(&e->shape, s, sizeof(Shape)) == 0) {
      e->last_used = ++cache->clock;
      return e;
    }
  }
  return nullptr;
}

// `victim` released and remade by `make`; nullptr when making fails. Under the cache's mutex.
template <class Cache, class Entry, class Make, class Release>
static Entry* kiln_remade_entry(Cache* cache, Entry* victim, Make make, Release release) {
  release(victim);
  if (make(victim) != 0) {
    release(victim);
    return nullptr;
  }
  victim->last_used = ++cache->clock;
  return victim;
}

// The entry of `cache` for `s`: a ready one, else the least recently used one, released and
// remade by `make`; nullptr when making fails (the message is in `error`). Under the cache's mutex.
template <class Cache, class Shape, class Make, class Release>
static auto kiln_cached_entry(Cache* cache, const Shape* s, Make make, Release release) -> decltype(&cache->entries[0]) {
  if (auto* found = kiln_found_entry(cache, s)) return found;
  // The least recently used entry that no call outside the mutex is using; while all are (a
  // model running more shapes of one call at once than the cache keeps), wait for one.
  for (;;) {
    decltype(&cache->entries[0]) victim = nullptr;
    for (int i = 0; i < kKilnConvolutionEntries; ++i) {
      auto* e = &cache->entries[i];
      if (__atomic_load_n(&e->users, __ATOMIC_ACQUIRE) > 0) continue;
      if (!victim || !e->ready || (victim->ready && e->last_used < victim->last_used)) victim = e;
    }
    if (victim) return kiln_remade_entry(cache, victim, make, release);
    pthread_mutex_unlock(&cache->mutex);
    sched_yield();
    pthread_mutex_lock(&cache->mutex);
    if (auto* found = kiln_found_entry(cache, s)) return found;
  }
}

static KilnConvolutionEntry* kiln_convolution_entry(KilnConvolutionCache* cache, const KilnConvolutionShape* s,
                                                    const char* name, char* error, int64_t capacity) {
  return kiln_cached_entry(cache, s, [&](KilnConvolutionEntry* e) { return kiln_make_entry(e, s, name, error, capacity); },
                           kiln_release_entry);
}

// Reorders `weights` into the entry's packed buffer with its own stream. Under the cache's mutex,
// with no other call using the entry.
static dnnl_status_t kiln_pack_convolution_weights(KilnConvolutionEntry* e, const float* weights) {
  e->packed_from = nullptr;
  dnnl_status_t status = dnnl_memory_set_data_handle(e->weights, (void*)weights);
  dnnl_exec_arg_t reorder_args[] = {{DNNL_ARG_FROM, e->weights}, {DNNL_ARG_TO, e->packed}};
  if (status == dnnl_success) status = dnnl_primitive_execute(e->reorder, e->stream, 2, reorder_args);
  if (status == dnnl_success) status = dnnl_stream_wait(e->stream);
  return status;
}

// The memory objects of one call: the entry's own, or made for the call. `weights` and `packed`
// serve weights that may change (reordered on every call into the call's arena); constant weights
// are the entry's packed ones.
typedef struct KilnConvolutionMemories {
  dnnl_memory_t src, bias, dst, scratchpad, blocked_src, blocked_dst, weights, packed;
} KilnConvolutionMemories;

// A memory object like `like` (nullptr stays nullptr), without data yet.
static dnnl_status_t kiln_memory_like(dnnl_memory_t* made, const_dnnl_memory_t like) {
  *made = nullptr;
  if (!like) return dnnl_success;
  const dnnl_memory_desc_t* md = nullptr;
  dnnl_status_t status = dnnl_memory_get_memory_desc(like, &md);
  if (status == dnnl_success) status = dnnl_memory_create(made, md, kiln_dnnl_engine(), DNNL_MEMORY_NONE);
  return status;
}

static void kiln_destroy_memories(KilnConvolutionMemories* m) {
  dnnl_memory_t all[] = {m->src, m->bias, m->dst, m->scratchpad, m->blocked_src, m->blocked_dst, m->weights, m->packed};
  for (dnnl_memory_t memory : all) {
    if (memory) dnnl_memory_destroy(memory);
  }
}

static size_t kiln_memory_bytes(const_dnnl_memory_t memory) {
  const dnnl_memory_desc_t* md = nullptr;
  return memory && dnnl_memory_get_memory_desc(memory, &md) == dnnl_success ? kiln_round_up_64(dnnl_memory_desc_get_size(md)) : 0;
}

// Runs the convolution of `e` from src to dst with the memory objects `m`, on `stream`, its
// scratchpad and blocked buffers in `arena` (and, with `reorder_from`, weights that may change,
// reordered there first; else the entry's packed weights).
static dnnl_status_t kiln_execute_convolution(const KilnConvolutionEntry* e, const KilnConvolutionMemories* m,
                                              dnnl_stream_t stream, KilnScratch* arena, const float* src,
                                              const float* bias, float* dst, const float* reorder_from) {
  dnnl_status_t status = dnnl_memory_set_data_handle(m->src, (void*)src);
  if (status == dnnl_success) status = dnnl_memory_set_data_handle(m->dst, dst);
  if (status == dnnl_success && bias) status = dnnl_memory_set_data_handle(m->bias, (void*)bias);
  // The scratchpad, the blocked source and destination, then the reordered weights, in the arena.
  char* at = (char*)arena->data;
  if (status == dnnl_success && m->scratchpad) status = dnnl_memory_set_data_handle(m->scratchpad, at);
  at += e->scratchpad_bytes;
  float* const blocked_src = (float*)at;
  if (status == dnnl_success && m->blocked_src) status = dnnl_memory_set_data_handle(m->blocked_src, blocked_src);
  at += e->blocked_src_bytes;
  float* const blocked_dst = (float*)at;
  if (status == dnnl_success && m->blocked_dst) status = dnnl_memory_set_data_handle(m->blocked_dst, blocked_dst);
  at += e->blocked_dst_bytes;
  dnnl_memory_t packed = e->packed;
  if (status == dnnl_success && reorder_from) {
    packed = m->packed;
    status = dnnl_memory_set_data_handle(m->weights, (void*)reorder_from);
    if (status == dnnl_success) status = dnnl_memory_set_data_handle(packed, at);
    dnnl_exec_arg_t reorder_args[] = {{DNNL_ARG_FROM, m->weights}, {DNNL_ARG_TO, packed}};
    if (status == dnnl_success) status = dnnl_primitive_execute(e->reorder, stream, 2, reorder_args);
  }
  if (status == dnnl_success && e->src_block) {
    const KilnConvolutionShape *s = &e->shape, *g = &e->geometry;
    kiln_copy_blocked(e->src_block, src, blocked_src, s->batch, s->channels, s->height, s->width, e->phases_h,
                      e->phases_w, g->height, g->width, 1, 0, 0.0f, 0.0f);
  } else if (status == dnnl_success && e->src_reorder) {
    dnnl_exec_arg_t reorder_args[] = {{DNNL_ARG_FROM, m->src}, {DNNL_ARG_TO, m->blocked_src}};
    status = dnnl_primitive_execute(e->src_reorder, stream, 2, reorder_args);
  }
  if (status == dnnl_success && e->dst_prefill) {
    const KilnConvolutionShape* s = &e->shape;
    kiln_copy_blocked(e->dst_block, dst, blocked_dst, s->batch, s->out_channels, s->out_h, s->out_w, 1, 1, s->out_h,
                      s->out_w, 1, 0, 0.0f, 0.0f);
  }
  if (status == dnnl_success) {
    dnnl_memory_t conv_src = e->blocked_src_bytes ? m->blocked_src : m->src;
    dnnl_memory_t conv_dst = e->blocked_dst_bytes ? m->blocked_dst : m->dst;
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, conv_src}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_DST, conv_dst}};
    int count = 3;
    if (bias) args[count++] = {DNNL_ARG_BIAS, m->bias};
    if (m->scratchpad) args[count++] = {DNNL_ARG_SCRATCHPAD, m->scratchpad};
    status = dnnl_primitive_execute(e->convolution, stream, count, args);
  }
  if (status == dnnl_success && e->activation) {
    dnnl_memory_t out = e->blocked_dst_bytes ? m->blocked_dst : m->dst;
    dnnl_exec_arg_t eltwise_args[] = {{DNNL_ARG_SRC, out}, {DNNL_ARG_DST, out}};
    status = dnnl_primitive_execute(e->activation, stream, 2, eltwise_args);
  }
  if (status == dnnl_success && e->dst_block) {
    // oneDNN's kernels ran on the stream: wait before reading their output.
    status = dnnl_stream_wait(stream);
    const KilnConvolutionShape *s = &e->shape, *g = &e->geometry;
    if (status == dnnl_success)
      kiln_copy_blocked(e->dst_block, blocked_dst, dst, s->batch, s->out_channels, s->out_h, s->out_w, e->phases_h,
                        e->phases_w, g->out_h, g->out_w, 0, e->dst_clip, s->clip_low, s->clip_high,
                        int(s->accumulate) && !e->dst_prefill);
  } else if (status == dnnl_success && e->dst_reorder) {
    dnnl_exec_arg_t reorder_args[] = {{DNNL_ARG_FROM, m->blocked_dst}, {DNNL_ARG_TO, m->dst}};
    status = dnnl_primitive_execute(e->dst_reorder, stream, 2, reorder_args);
  }
  if (status == dnnl_success) status = dnnl_stream_wait(stream);
  return status;
}

// Runs `e` (the caller counted among its users; with `reorder_from`, weights that may change,
// reordered for this call alone, else the entry's packed ones): with the entry's own memory
// objects and stream when no other call holds them, else with the call's own objects and the
// arena's stream.
static dnnl_status_t kiln_run_convolution(KilnConvolutionEntry* e, const float* src, const float* bias, float* dst,
                                          const float* reorder_from) {
  const size_t packed_bytes = reorder_from ? kiln_memory_bytes(e->packed) : 0;
  KilnScratch* arena = kiln_take_scratch(e->scratchpad_bytes + e->blocked_src_bytes + e->blocked_dst_bytes + packed_bytes);
  if (!arena) return dnnl_out_of_memory;
  dnnl_status_t status = dnnl_success;
  if (__atomic_exchange_n(&e->own_in_use, 1, __ATOMIC_ACQUIRE) == 0) {
    KilnConvolutionMemories own = {e->src, e->bias, e->dst, e->scratchpad, e->blocked_src, e->blocked_dst, e->weights, e->own_packed};
    status = kiln_execute_convolution(e, &own, e->stream, arena, src, bias, dst, reorder_from);
    __atomic_store_n(&e->own_in_use, 0, __ATOMIC_RELEASE);
  } else {
    KilnConvolutionMemories mine = {};
    const_dnnl_memory_t like[] = {e->src, e->bias, e->dst, e->scratchpad, e->blocked_src, e->blocked_dst,
                                  reorder_from ? e->weights : nullptr, reorder_from ? e->packed : nullptr};
    dnnl_memory_t* made[] = {&mine.src,         &mine.bias,        &mine.dst,     &mine.scratchpad,
                             &mine.blocked_src, &mine.blocked_dst, &mine.weights, &mine.packed};
    for (int i = 0; i < 8 && status == dnnl_success; ++i) status = kiln_memory_like(made[i], like[i]);
    if (status == dnnl_success && !arena->stream)
      status = dnnl_stream_create(&arena->stream, kiln_dnnl_engine(), dnnl_stream_default_flags);
    if (status == dnnl_success) status = kiln_execute_convolution(e, &mine, arena->stream, arena, src, bias, dst, reorder_from);
    kiln_destroy_memories(&mine);
  }
  kiln_give_back_scratch(arena);
  return status;
}

// Runs one convolution (see the file's comment); 0, or 1 with a message in `error`.
static int kiln_convolution(KilnConvolutionCache* cache, KilnConvolutionShape shape, const float* src,
                            const float* weights, const float* bias, float* dst, int constant_weights,
                            const char* name, char* error, int64_t capacity) {
  shape.has_bias = bias != nullptr;
  shape.threads = omp_get_max_threads();
  KilnConvolutionShape phases;
  shape.winograd = constant_weights && kiln_winograd_allowed() &&
                   (kiln_winograd_suits(&shape) || (kiln_phase_geometry(&shape, &phases) && kiln_winograd_suits(&phases)));
  shape.constant_weights = constant_weights != 0;
  pthread_mutex_lock(&cache->mutex);
  KilnConvolutionEntry* e = nullptr;
  dnnl_status_t status = dnnl_success;
  for (;;) {
    e = kiln_convolution_entry(cache, &shape, name, error, capacity);
    // Constant weights are reordered once per pointer, when no call is running with the entry's
    // packed copy; weights that may change, on every call (kiln_run_convolution).
    if (!e || !constant_weights || e->packed_from == weights) break;
    if (__atomic_load_n(&e->users, __ATOMIC_ACQUIRE) == 0) {
      status = kiln_pack_convolution_weights(e, weights);
      if (status == dnnl_success) e->packed_from = weights;
      break;
    }
    pthread_mutex_unlock(&cache->mutex);
    sched_yield();
    pthread_mutex_lock(&cache->mutex);
  }
  if (!e || status != dnnl_success) {
    pthread_mutex_unlock(&cache->mutex);
    return e ? kiln_dnnl_failure(name, "weights reorder", status, error, capacity) : 1;
  }
  __atomic_add_fetch(&e->users, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&cache->mutex);
  status = kiln_run_convolution(e, src, bias, dst, constant_weights ? nullptr : weights);
  pthread_mutex_lock(&cache->mutex);
  __atomic_sub_fetch(&e->users, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&cache->mutex);
  if (status != dnnl_success) return kiln_dnnl_failure(name, "convolution", status, error, capacity);
  return 0;
}

// ---------------------------------------------------------------- matmul with prepacked weights

typedef struct KilnMatmulShape {
  int64_t m, k, n;
  int64_t trans_a, lda, trans_b, ldb;  // CBLAS's 111 (row-major) or 112 (transposed), leading dims
  int64_t threads;
  int64_t ldc;       // C's row stride (N when its rows are dense)
  int64_t borrowed;  // > 0: the entry reads the packed B of the entry of `borrowed` rows (kiln_matmul_rows' last block)
  int64_t runtime_b;  // 1: B may change between calls (not frozen): read in place on every call
  // A batch of `batch` GEMMs (> 1), each with its own A, B and C, `batch_stride_*` elements apart
  // (attention's Q K^T and P V: B is an activation, so runtime_b); 0 or 1 for one GEMM.
  int64_t batch, batch_stride_a, batch_stride_b, batch_stride_c;
  // 1: C = A @ B + bias, a vector of n floats added to every row of C (a linear layer's bias,
  // which the brgemm kernels add to their accumulators before the store: no pass over C after).
  int64_t bias;
  // 1: C += A @ B (+ bias): C already holds a residual (oneDNN's sum post-op), which the product
  // is added to as the kernel stores it.
  int64_t accumulate;
  // 1: a batch's right operands are frozen parameters (an MoE's experts), which oneDNN reads in
  // place as runtime_b, and Kiln's product over panels packs once (kiln_panel_batch_suits).
  int64_t frozen_b;
} KilnMatmulShape;

typedef struct KilnMatmulEntry {
  KilnMatmulShape shape;
  dnnl_primitive_t matmul;
  dnnl_primitive_t reorder;  // plain weights -> the matmul's weights layout
  dnnl_memory_t src, weights, packed, dst, scratchpad, bias;
  dnnl_memory_desc_t src_md, dst_md, scratch_md, bias_md;  // for kiln_matmul_block's own memory objects
  dnnl_memory_desc_t packed_md;                    // B's layout for this primitive
  dnnl_stream_t stream;
  void* packed_data;         // frozen B: the module's packed copy of it (kiln_shared_packing; not owned)
  void* scratchpad_data;
  const void* packed_from;   // the pointer `packed_data` was reordered from
  uint64_t last_used;
  int ready;
  int users;       // calls running with the entry outside the cache's mutex (never remade meanwhile)
  int own_in_use;  // 1 while a call runs with the entry's own memory objects and stream
} KilnMatmulEntry;

typedef struct KilnMatmulCache {
  pthread_mutex_t mutex;
  uint64_t clock;
  KilnMatmulEntry entries[kKilnConvolutionEntries];
} KilnMatmulCache;

#define KILN_MATMUL_CACHE_INIT {PTHREAD_MUTEX_INITIALIZER, 0, {}}

static void kiln_release_matmul(KilnMatmulEntry* e) {
  if (e->matmul) dnnl_primitive_destroy(e->matmul);
  if (e->reorder) dnnl_primitive_destroy(e->reorder);
  if (e->stream) dnnl_stream_destroy(e->stream);
  dnnl_memory_t* memories[] = {&e->src, &e->weights, &e->packed, &e->dst, &e->scratchpad, &e->bias};
  for (dnnl_memory_t* m : memories) {
    if (*m) dnnl_memory_destroy(*m);
  }
  free(e->scratchpad_data);  // packed_data is the module's (kiln_shared_packing)
  __builtin_memset(e, 0, sizeof(*e));
}

// A [rows, cols] matrix in a CBLAS layout as oneDNN strides; with `batch` > 1, [batch, rows, cols]
// with the matrices `batch_stride` elements apart.
static dnnl_status_t kiln_matrix_md(dnnl_memory_desc_t* md, int64_t rows, int64_t cols, int64_t trans, int64_t ld,
                                    int64_t batch = 1, int64_t batch_stride = 0) {
  if (batch > 1) {
    dnnl_dims_t dims = {batch, rows, cols};
    dnnl_dims_t strides = {batch_stride, trans == 111 ? ld : 1, trans == 111 ? 1 : ld};
    return dnnl_memory_desc_init_by_strides(md, 3, dims, dnnl_f32, strides);
  }
  dnnl_dims_t dims = {rows, cols};
  dnnl_dims_t strides = {trans == 111 ? ld : 1, trans == 111 ? 1 : ld};
  return dnnl_memory_desc_init_by_strides(md, 2, dims, dnnl_f32, strides);
}

// Where oneDNN's matmul takes a frozen B as a plain matrix (its gemm kernels: CPUs without
// AVX-512, where it has no brgemm), the same matrix with its rows (or columns, transposed) 16
// floats further apart, in `padded`. Rows a multiple of 4 KiB apart (1024, 2048, 3072 columns) map
// to the same L1 sets as the kernel walks down B: on a Zen 3 core its sgemm ran 64 x 256 x 1024 at
// 40 GFLOP/s on B as it came and 97 padded, 256 x 2048 x 2048 at 42 and 91 (one thread, of a
// 101 peak); other widths gain 2-8% (768: 90 -> 98). bench/README.md.
static bool kiln_padded_plain_md(const dnnl_memory_desc_t* md, dnnl_memory_desc_t* padded) {
  if (!md || md->ndims != 2 || md->format_kind != dnnl_blocked || md->format_desc.blocking.inner_nblks != 0) return false;
  const dnnl_dim_t* strides = md->format_desc.blocking.strides;
  const int outer = strides[0] >= strides[1] ? 0 : 1;
  if (strides[1 - outer] != 1 || md->offset0 != 0) return false;
  dnnl_dims_t wider = {strides[0], strides[1]};
  wider[outer] += 16;
  return dnnl_memory_desc_init_by_strides(padded, 2, md->dims, md->data_type, wider) == dnnl_success;
}

// Makes `e` for `s`: a primitive with B in the layout it prefers, and B's reorder and packed
// memory; or, with `packed_like` (an entry whose packed B this one borrows), a primitive with B in
// that entry's layout, which fails where only oneDNN's reference kernels take that layout for
// these rows (the caller then makes one of its own).
static int kiln_make_matmul(KilnMatmulEntry* e, const KilnMatmulShape* s, const KilnMatmulEntry* packed_like,
                            const char* name, char* error, int64_t capacity) {
  dnnl_engine_t engine = kiln_dnnl_engine();
  if (!engine) return kiln_dnnl_failure(name, "engine creation", dnnl_runtime_error, error, capacity);
  e->shape = *s;
  dnnl_memory_desc_t src_md, weights_plain_md, weights_any_md, dst_md, bias_md;
  dnnl_dims_t weights_dims = {s->k, s->n};
  KILN_DNNL_TRY(kiln_matrix_md(&src_md, s->m, s->k, s->trans_a, s->lda, s->batch, s->batch_stride_a), "source descriptor");
  KILN_DNNL_TRY(kiln_matrix_md(&weights_plain_md, s->k, s->n, s->trans_b, s->ldb, s->batch, s->batch_stride_b),
                "weights descriptor");
  if (packed_like) {
    weights_any_md = packed_like->packed_md;
  } else if (s->runtime_b) {
    weights_any_md = weights_plain_md;
  } else {
    KILN_DNNL_TRY(dnnl_memory_desc_init_by_tag(&weights_any_md, 2, weights_dims, dnnl_f32, dnnl_format_tag_any),
                  "weights descriptor");
  }
  KILN_DNNL_TRY(kiln_matrix_md(&dst_md, s->m, s->n, 111, s->ldc, s->batch, s->batch_stride_c), "destination descriptor");
  // The bias: one row, broadcast over C's rows (and its batch).
  if (s->bias) KILN_DNNL_TRY(kiln_matrix_md(&bias_md, 1, s->n, 111, s->n, s->batch, 0), "bias descriptor");
  dnnl_matmul_desc_t desc;
  KILN_DNNL_TRY(dnnl_matmul_desc_init(&desc, &src_md, &weights_any_md, s->bias ? &bias_md : nullptr, &dst_md),
                "matmul descriptor");
  if (s->bias) e->bias_md = bias_md;
  dnnl_primitive_attr_t attr;
  KILN_DNNL_TRY(dnnl_primitive_attr_create(&attr), "attribute creation");
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  dnnl_status_t status = dnnl_success;
  if (s->accumulate) {
    dnnl_post_ops_t post_ops = nullptr;
    status = dnnl_post_ops_create(&post_ops);
    if (status == dnnl_success) status = dnnl_post_ops_append_sum(post_ops, 1.0f);
    if (status == dnnl_success) status = dnnl_primitive_attr_set_post_ops(attr, post_ops);
    if (post_ops) dnnl_post_ops_destroy(post_ops);
  }
  dnnl_primitive_desc_t pd = nullptr;
  if (status == dnnl_success) status = dnnl_primitive_desc_create(&pd, &desc, attr, engine, nullptr);
  // A frozen B packed as a plain matrix: padded, where the same kernel takes it so.
  dnnl_memory_desc_t padded_md;
  if (status == dnnl_success && !packed_like && !s->runtime_b && s->batch <= 1 &&
      kiln_padded_plain_md(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &padded_md)) {
    dnnl_matmul_desc_t padded_desc;
    dnnl_primitive_desc_t padded_pd = nullptr;
    const char *chosen = nullptr, *padded_chosen = nullptr;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &chosen);
    if (dnnl_matmul_desc_init(&padded_desc, &src_md, &padded_md, s->bias ? &bias_md : nullptr, &dst_md) == dnnl_success &&
        dnnl_primitive_desc_create(&padded_pd, &padded_desc, attr, engine, nullptr) == dnnl_success) {
      dnnl_primitive_desc_query(padded_pd, dnnl_query_impl_info_str, 0, &padded_chosen);
      if (chosen && padded_chosen && __builtin_strcmp(chosen, padded_chosen) == 0) {
        dnnl_primitive_desc_destroy(pd);
        pd = padded_pd;
      } else {
        dnnl_primitive_desc_destroy(padded_pd);
      }
    }
  }
  dnnl_primitive_attr_destroy(attr);
  if (status != dnnl_success) return kiln_dnnl_failure(name, "matmul choice", status, error, capacity);
  const dnnl_memory_desc_t* packed_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const dnnl_memory_desc_t* scratch_md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  e->src_md = src_md;
  e->dst_md = dst_md;
  e->packed_md = *packed_md;
  if (scratch_md) e->scratch_md = *scratch_md;
  const char* implementation = nullptr;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &implementation);
  if (packed_like && (!implementation || __builtin_strstr(implementation, "ref") != nullptr)) {
    dnnl_primitive_desc_destroy(pd);
    return kiln_dnnl_failure(name, "matmul choice for a shared B", dnnl_unimplemented, error, capacity);
  }
  if (s->runtime_b) {
    // B read where it is: `packed` is pointed at it before each use (kiln_matmul_prepare).
    status = dnnl_primitive_create(&e->matmul, pd);
    if (status == dnnl_success && scratch_md) {
      e->scratchpad_data = kiln_aligned_bytes(dnnl_memory_desc_get_size(scratch_md));
      if (!e->scratchpad_data) status = dnnl_out_of_memory;
    }
    if (status == dnnl_success && scratch_md) status = dnnl_memory_create(&e->scratchpad, scratch_md, engine, e->scratchpad_data);
    if (status == dnnl_success) status = dnnl_memory_create(&e->packed, packed_md, engine, DNNL_MEMORY_NONE);
    dnnl_primitive_desc_destroy(pd);
    if (status != dnnl_success) return kiln_dnnl_failure(name, "matmul setup", status, error, capacity);
    KILN_DNNL_TRY(dnnl_memory_create(&e->src, &src_md, engine, DNNL_MEMORY_NONE), "memory creation");
    KILN_DNNL_TRY(dnnl_memory_create(&e->dst, &dst_md, engine, DNNL_MEMORY_NONE), "memory creation");
    if (s->bias) KILN_DNNL_TRY(dnnl_memory_create(&e->bias, &bias_md, engine, DNNL_MEMORY_NONE), "memory creation");
    KILN_DNNL_TRY(dnnl_stream_create(&e->stream, engine, dnnl_stream_default_flags), "stream creation");
    e->ready = 1;
    return 0;
  }
  status = dnnl_primitive_create(&e->matmul, pd);
  if (status == dnnl_success && packed_like) {
    // B is the other entry's: kiln_matmul_rows points `packed` at it before each use.
    dnnl_primitive_desc_destroy(pd);
    if (scratch_md) status = dnnl_memory_create(&e->scratchpad, scratch_md, engine, DNNL_MEMORY_NONE);
    if (status == dnnl_success) status = dnnl_memory_create(&e->packed, packed_md, engine, DNNL_MEMORY_NONE);
    if (status != dnnl_success) return kiln_dnnl_failure(name, "matmul setup", status, error, capacity);
    e->ready = 1;
    return 0;
  }
  if (status == dnnl_success) {
    e->scratchpad_data = kiln_aligned_bytes(scratch_md ? dnnl_memory_desc_get_size(scratch_md) : 0);
    if (!e->scratchpad_data) status = dnnl_out_of_memory;
  }
  // The packed weights are the module's (kiln_shared_packing), pointed at by kiln_matmul_prepare.
  if (status == dnnl_success) status = dnnl_memory_create(&e->packed, packed_md, engine, DNNL_MEMORY_NONE);
  if (status == dnnl_success && scratch_md) status = dnnl_memory_create(&e->scratchpad, scratch_md, engine, e->scratchpad_data);
  dnnl_primitive_desc_t reorder_pd = nullptr;
  if (status == dnnl_success)
    status = dnnl_reorder_primitive_desc_create(&reorder_pd, &weights_plain_md, engine, packed_md, engine, nullptr);
  dnnl_primitive_desc_destroy(pd);
  if (status != dnnl_success) return kiln_dnnl_failure(name, "matmul setup", status, error, capacity);
  status = dnnl_primitive_create(&e->reorder, reorder_pd);
  dnnl_primitive_desc_destroy(reorder_pd);
  if (status != dnnl_success) return kiln_dnnl_failure(name, "weights reorder setup", status, error, capacity);
  KILN_DNNL_TRY(dnnl_memory_create(&e->src, &src_md, engine, DNNL_MEMORY_NONE), "memory creation");
  KILN_DNNL_TRY(dnnl_memory_create(&e->weights, &weights_plain_md, engine, DNNL_MEMORY_NONE), "memory creation");
  KILN_DNNL_TRY(dnnl_memory_create(&e->dst, &dst_md, engine, DNNL_MEMORY_NONE), "memory creation");
  if (s->bias) KILN_DNNL_TRY(dnnl_memory_create(&e->bias, &bias_md, engine, DNNL_MEMORY_NONE), "memory creation");
  KILN_DNNL_TRY(dnnl_stream_create(&e->stream, engine, dnnl_stream_default_flags), "stream creation");
  e->ready = 1;
  return 0;
}

// B's element (row, col) as `shape` lays it out, and three of them (first, middle, last) as
// bits: a different B at the same address shows in them.
static inline float kiln_b_element(const KilnMatmulShape* shape, const float* b, int64_t row, int64_t col) {
  return shape->trans_b == 111 ? b[row * shape->ldb + col] : b[col * shape->ldb + row];
}

static inline void kiln_b_samples(const KilnMatmulShape* shape, const float* b, uint32_t* samples) {
  const float values[3] = {kiln_b_element(shape, b, 0, 0), kiln_b_element(shape, b, shape->k / 2, shape->n / 2),
                           kiln_b_element(shape, b, shape->k - 1, shape->n - 1)};
  __builtin_memcpy(samples, values, sizeof(values));
}

// A frozen B reordered into a matmul's layout, one copy per (B, layout) for the whole module:
// every kernel's cache entry points at it (an unrolled recurrent layer multiplies by one weight in
// each step's kernel, and each entry packing its own kept 64 copies of an LSTM's 1 MB weight).
// Made once, read-only after, kept for the module's life (KILN_MODULE_STATE: one list whatever
// translation unit a kernel is in).
typedef struct KilnSharedPacking {
  struct KilnSharedPacking* next;
  const float* from;
  int64_t k, n, trans_b, ldb;
  uint32_t samples[3];
  dnnl_memory_desc_t md;
  void* data;
} KilnSharedPacking;

KILN_MODULE_STATE KilnSharedPacking* kiln_shared_packings = nullptr;
KILN_MODULE_STATE pthread_mutex_t kiln_shared_packings_mutex = PTHREAD_MUTEX_INITIALIZER;

// Points `e`'s packed memory at the module's copy of `b` in its layout, reordering `b` into a
// new one first (with `e`'s reorder) if no entry has; false with a message in `error`.
static bool kiln_shared_packing(KilnMatmulEntry* e, const KilnMatmulShape* shape, const float* b, const char* name,
                                char* error, int64_t capacity) {
  uint32_t samples[3];
  kiln_b_samples(shape, b, samples);
  pthread_mutex_lock(&kiln_shared_packings_mutex);
  KilnSharedPacking* found = kiln_shared_packings;
  for (; found; found = found->next) {
    if (found->from == b && found->k == shape->k && found->n == shape->n && found->trans_b == shape->trans_b &&
        found->ldb == shape->ldb && __builtin_memcmp(found->samples, samples, sizeof(samples)) == 0 &&
        dnnl_memory_desc_equal(&found->md, &e->packed_md))
      break;
  }
  dnnl_status_t status = dnnl_success;
  void* data = found ? found->data : kiln_aligned_bytes(dnnl_memory_desc_get_size(&e->packed_md));
  if (!data) status = dnnl_out_of_memory;
  if (status == dnnl_success) status = dnnl_memory_set_data_handle(e->packed, data);
  if (status == dnnl_success && !found) {
    status = dnnl_memory_set_data_handle(e->weights, (void*)b);
    dnnl_exec_arg_t reorder_args[] = {{DNNL_ARG_FROM, e->weights}, {DNNL_ARG_TO, e->packed}};
    if (status == dnnl_success) status = dnnl_primitive_execute(e->reorder, e->stream, 2, reorder_args);
    if (status == dnnl_success) status = dnnl_stream_wait(e->stream);
    KilnSharedPacking* made = status == dnnl_success ? (KilnSharedPacking*)calloc(1, sizeof(KilnSharedPacking)) : nullptr;
    if (made) {
      *made = KilnSharedPacking{kiln_shared_packings, b, shape->k, shape->n, shape->trans_b, shape->ldb,
                                {samples[0], samples[1], samples[2]}, e->packed_md, data};
      kiln_shared_packings = made;
    } else {
      if (status == dnnl_success) status = dnnl_out_of_memory;
      free(data);
    }
  }
  pthread_mutex_unlock(&kiln_shared_packings_mutex);
  if (status != dnnl_success) {
    kiln_dnnl_failure(name, "weights reorder", status, error, capacity);
    return false;
  }
  e->packed_data = data;
  return true;
}

// The entry of `cache` for `shape`, its B packed from `b` (a B that may change between calls:
// its memory object pointed at `b`); nullptr with a message in `error`. Under the cache's mutex,
// which it lets go while it waits for calls running with the entry's packed B to end.
static KilnMatmulEntry* kiln_matmul_prepare(KilnMatmulCache* cache, const KilnMatmulShape* shape, const float* b,
                                            const char* name, char* error, int64_t capacity) {
  for (;;) {
    KilnMatmulEntry* e = kiln_cached_entry(
        cache, shape, [&](KilnMatmulEntry* fresh) { return kiln_make_matmul(fresh, shape, nullptr, name, error, capacity); },
        kiln_release_matmul);
    if (e && e->shape.runtime_b) {
      if (dnnl_memory_set_data_handle(e->packed, (void*)b) == dnnl_success) return e;
      kiln_dnnl_failure(name, "matmul setup", dnnl_runtime_error, error, capacity);
      return nullptr;
    }
    if (!e || e->packed_from == b) return e;
    if (__atomic_load_n(&e->users, __ATOMIC_ACQUIRE) > 0) {
      pthread_mutex_unlock(&cache->mutex);
      sched_yield();
      pthread_mutex_lock(&cache->mutex);
      continue;
    }
    e->packed_from = nullptr;
    if (!kiln_shared_packing(e, shape, b, name, error, capacity)) return nullptr;
    e->packed_from = b;
    return e;
  }
}

// One block of rows through `e` (made for the block's row count and one thread; B in `packed`,
// the entry's own or a call's) on the calling thread, with memory objects of its own and an
// arena's stream and scratchpad, so that blocks and calls run concurrently on different threads
// (a primitive is immutable once made).
static dnnl_status_t kiln_matmul_block(const KilnMatmulEntry* e, const float* a, const float* bias, float* c,
                                       dnnl_memory_t packed) {
  dnnl_engine_t engine = kiln_dnnl_engine();
  KilnScratch* arena = kiln_take_scratch(e->scratchpad ? dnnl_memory_desc_get_size(&e->scratch_md) : 0);
  if (!arena) return dnnl_out_of_memory;
  dnnl_status_t status =
      arena->stream ? dnnl_success : dnnl_stream_create(&arena->stream, engine, dnnl_stream_default_flags);
  dnnl_memory_t src = nullptr, dst = nullptr, scratchpad = nullptr, bias_memory = nullptr;
  if (status == dnnl_success) status = dnnl_memory_create(&src, &e->src_md, engine, (void*)a);
  if (status == dnnl_success) status = dnnl_memory_create(&dst, &e->dst_md, engine, c);
  if (status == dnnl_success && e->scratchpad) status = dnnl_memory_create(&scratchpad, &e->scratch_md, engine, arena->data);
  if (status == dnnl_success && e->shape.bias) status = dnnl_memory_create(&bias_memory, &e->bias_md, engine, (void*)bias);
  if (status == dnnl_success) {
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_DST, dst}};
    int count = 3;
    if (scratchpad) args[count++] = {DNNL_ARG_SCRATCHPAD, scratchpad};
    if (bias_memory) args[count++] = {DNNL_ARG_BIAS, bias_memory};
    status = dnnl_primitive_execute(e->matmul, arena->stream, count, args);
  }
  if (status == dnnl_success) status = dnnl_stream_wait(arena->stream);
  kiln_give_back_scratch(arena);
  dnnl_memory_t made[] = {src, dst, scratchpad, bias_memory};
  for (dnnl_memory_t m : made) {
    if (m) dnnl_memory_destroy(m);
  }
  return status;
}

// One matmul through `e` (B packed; the caller counted among its users) outside the cache's
// mutex: with the entry's own memory objects and stream when no other call holds them, else with
// objects of its own and an arena's stream and scratchpad. A B read in place gets a memory object
// of the call's own either way (the entry's is the blocks' of kiln_matmul_rows).
static dnnl_status_t kiln_execute_matmul(KilnMatmulEntry* e, const float* a, const float* b, const float* bias, float* c) {
  dnnl_engine_t engine = kiln_dnnl_engine();
  dnnl_status_t status = dnnl_success;
  dnnl_memory_t packed = e->packed, runtime_b = nullptr;
  if (e->shape.runtime_b) {
    const dnnl_memory_desc_t* md = nullptr;
    status = dnnl_memory_get_memory_desc(e->packed, &md);
    if (status == dnnl_success) status = dnnl_memory_create(&runtime_b, md, engine, (void*)b);
    packed = runtime_b;
  }
  if (status == dnnl_success && __atomic_exchange_n(&e->own_in_use, 1, __ATOMIC_ACQUIRE) == 0) {
    status = dnnl_memory_set_data_handle(e->src, (void*)a);
    if (status == dnnl_success) status = dnnl_memory_set_data_handle(e->dst, c);
    if (status == dnnl_success && e->bias) status = dnnl_memory_set_data_handle(e->bias, (void*)bias);
    if (status == dnnl_success) {
      dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, e->src}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_DST, e->dst}};
      int count = 3;
      if (e->scratchpad) args[count++] = {DNNL_ARG_SCRATCHPAD, e->scratchpad};
      if (e->bias) args[count++] = {DNNL_ARG_BIAS, e->bias};
      status = dnnl_primitive_execute(e->matmul, e->stream, count, args);
    }
    if (status == dnnl_success) status = dnnl_stream_wait(e->stream);
    __atomic_store_n(&e->own_in_use, 0, __ATOMIC_RELEASE);
  } else if (status == dnnl_success) {
    status = kiln_matmul_block(e, a, bias, c, packed);
  }
  if (runtime_b) dnnl_memory_destroy(runtime_b);
  return status;
}

// ------------------------------------------------- Kiln's product over panels of a frozen B
//
// A GEMM of a few rows (a recurrent layer's step, a decoder's token, a classifier on one image)
// reads each of B's k * n weights for a handful of multiply-adds: it is bound by how fast B
// streams from memory or cache. Through oneDNN's matmul, when its cache and packed B were each
// kernel's own, an LSTM unrolled over 64 steps kept 64 packed copies of its recurrent weight (1 MB
// each) and read each step's from memory: [1, 256] @ [256, 1024] took ~30 us a step on 2 threads,
// where ONNX Runtime's whole step takes ~15 us. Here B is packed once per weight for the module
// (kiln_panels_of: read-only once made, shared by every kernel) into panels of 16 columns, [k][16]
// each, which a row's product walks contiguously. A call's work is tiles of rows by groups of four
// panels (kiln_panel_tile); within a tile, blocks of at most four rows, each block against as
// many panels at once as the vector registers hold accumulators for (kiln_panels_at_once), every
// row of the block against each panel row while it is in registers. The bias and a residual
// (shape.accumulate) are added as C is stored. On OpenMP's team the groups split evenly between
// the threads, and the rows too where there are too few groups for the threads
// (kiln_panel_row_parts); the split is static, so each thread reads the same panels every call,
// which stay in its core's cache.
//
// Which GEMMs (kiln_panel_gemm_suits): where oneDNN has its AVX-512 kernels, those of at most 4
// rows; its brgemm matmul ran more rows faster (256 x 1024 at 8 rows: 27 against 34 us). Without
// them, every frozen GEMM that is one call (not a batch): one core runs this product as fast as
// oneDNN's gemm kernel (92-99 GFLOP/s on Zen 3, 96-101% of the core's FMA peak, for 8 to 512 rows),
// and that kernel allocates its packing buffers on every call, which glibc gave back and mapped
// again each time in a model (an LSTM language model's 512 x 256 x 4000 head: ~700 page faults a
// call). Measured (2 threads, `kiln bench --freeze`, bench/README.md): the LSTM of 64 steps at
// batch 1 2.1 -> 1.0 ms, ONNX Runtime 0.9 ms; a GRU of 128 over 100 steps 1.29 -> 0.51 ms, ONNX
// Runtime 0.54 ms.
static constexpr int64_t kKilnSmallRows = 4, kKilnPanel = 16, kKilnPanelsAtOnce = 4, kKilnRowBlock = 4;

// A core's L2 in bytes (sysconf; 1 MB where the system does not say), read once: the generated
// code runs a module's few-row products on the team from fewer multiply-adds where their weights
// outgrow it (codegen/cpp/cpp_library_calls.cpp, kFewRowsTeamMacs).
static inline int64_t kiln_l2_bytes() {
  static const int64_t bytes = [] {
    const long reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return reported > 0 ? int64_t(reported) : int64_t(1) << 20;
  }();
  return bytes;
}

// A frozen B packed into panels of 16 columns, each [k][16] (the columns past n zero), for every
// GEMM of the module that reads it: one copy per weight, however many kernels read it (an
// unrolled recurrent layer reads its weights in every step's kernel). Entries are made once and
// never change; the module keeps them in a list (KILN_MODULE_STATE: one list whatever translation
// unit a kernel is in), read without a lock, added to under the mutex.
typedef struct KilnPanels {
  struct KilnPanels* next;
  const float* from;  // the B packed
  int64_t k, n, trans_b, ldb;
  uint32_t samples[3];  // B's first, middle and last element as packed: another B at the same address differs
  float* data;
} KilnPanels;

KILN_MODULE_STATE KilnPanels* kiln_panels_list = nullptr;
KILN_MODULE_STATE pthread_mutex_t kiln_panels_mutex = PTHREAD_MUTEX_INITIALIZER;

static const KilnPanels* kiln_find_panels(const KilnMatmulShape* shape, const float* b, const uint32_t* samples) {
  for (const KilnPanels* p = __atomic_load_n(&kiln_panels_list, __ATOMIC_ACQUIRE); p; p = p->next) {
    if (p->from == b && p->k == shape->k && p->n == shape->n && p->trans_b == shape->trans_b && p->ldb == shape->ldb &&
        __builtin_memcmp(p->samples, samples, sizeof(p->samples)) == 0)
      return p;
  }
  return nullptr;
}

// The panels of `b`, packed now if no kernel of the module packed them yet; nullptr when memory
// runs out.
static const KilnPanels* kiln_panels_of(const KilnMatmulShape* shape, const float* b) {
  uint32_t samples[3];
  kiln_b_samples(shape, b, samples);
  if (const KilnPanels* found = kiln_find_panels(shape, b, samples)) return found;
  pthread_mutex_lock(&kiln_panels_mutex);
  const KilnPanels* found = kiln_find_panels(shape, b, samples);
  if (found) {
    pthread_mutex_unlock(&kiln_panels_mutex);
    return found;
  }
  const int64_t k = shape->k, n = shape->n, panels = (n + kKilnPanel - 1) / kKilnPanel;
  const size_t bytes = (size_t(panels * k * kKilnPanel) * sizeof(float) + 63) / 64 * 64;
  KilnPanels* p = (KilnPanels*)malloc(sizeof(KilnPanels));
  float* data = (float*)aligned_alloc(64, bytes);
  if (!p || !data) {
    free(p);
    free(data);
    pthread_mutex_unlock(&kiln_panels_mutex);
    return nullptr;
  }
  for (int64_t q = 0; q < panels; ++q) {
    for (int64_t kk = 0; kk < k; ++kk) {
      float* to = data + (q * k + kk) * kKilnPanel;
      for (int64_t j = 0; j < kKilnPanel; ++j) {
        const int64_t col = q * kKilnPanel + j;
        to[j] = col < n ? kiln_b_element(shape, b, kk, col) : 0.0f;
      }
    }
  }
  *p = KilnPanels{kiln_panels_list, b, k, n, shape->trans_b, shape->ldb, {samples[0], samples[1], samples[2]}, data};
  __atomic_store_n(&kiln_panels_list, p, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&kiln_panels_mutex);
  return p;
}

// Whether Kiln's product over panels runs this GEMM (see above: which GEMMs).
static bool kiln_panel_gemm_suits(const KilnMatmulShape* shape) {
  return !shape->runtime_b && shape->batch <= 1 && shape->k > 0 && shape->n > 0 &&
         (shape->m <= kKilnSmallRows || !kiln_onednn_has_avx512());
}

// A panel row is one AVX-512 vector (32 registers: four rows by four panels accumulate in 16), or
// two AVX2 vectors (16 registers: 8 accumulators keep both FMA units busy through their latency,
// 12 is the most that leaves room for the panel row and the broadcast; a block of three rows
// against two panels spilled under Clang and ran slower than against one).
#if defined(__AVX512F__)
typedef float KilnPanelVec __attribute__((vector_size(64), aligned(64)));
template <int R>
static constexpr int kiln_panels_at_once() {
  return 4;
}
#else
typedef float KilnPanelVec __attribute__((vector_size(32), aligned(32)));
template <int R>
static constexpr int kiln_panels_at_once() {
  return R == 1 ? 4 : R == 2 ? 2 : 1;
}
#endif
static constexpr int kKilnPanelVecs = int(kKilnPanel * sizeof(float) / sizeof(KilnPanelVec));

// Stores C's row m over panel `q` (its first `width` columns): the sums plus the bias, added to
// the residual already there where shape.accumulate.
static inline void kiln_panel_store(const KilnMatmulShape* shape, const KilnPanelVec* sums, int64_t m, int64_t q,
                                    const float* bias, float* c) {
  float values[kKilnPanel];
  __builtin_memcpy(values, sums, sizeof(values));
  const int64_t col0 = q * kKilnPanel, width = shape->n - col0 < kKilnPanel ? shape->n - col0 : kKilnPanel;
  float* out = c + m * shape->ldc + col0;
  for (int64_t j = 0; j < width; ++j) {
    const float value = values[j] + (bias ? bias[col0 + j] : 0.0f);
    out[j] = shape->accumulate ? out[j] + value : value;
  }
}

// Rows [m0, m0 + R) of C over panels [q, q + P): R x P panel rows of accumulators.
template <int R, int P>
static inline void kiln_panel_block(const KilnMatmulShape* shape, const float* a, const float* packed, const float* bias,
                                    float* c, int64_t m0, int64_t q) {
  const int64_t k = shape->k;
  const int64_t a_row = shape->trans_a == 111 ? shape->lda : 1, a_col = shape->trans_a == 111 ? 1 : shape->lda;
  const float* rows = a + m0 * a_row;
  const KilnPanelVec* w = (const KilnPanelVec*)(packed + q * k * kKilnPanel);
  KilnPanelVec acc[R][P * kKilnPanelVecs] = {};
  for (int64_t kk = 0; kk < k; ++kk) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      KilnPanelVec row[kKilnPanelVecs];
#pragma GCC unroll 2
      for (int v = 0; v < kKilnPanelVecs; ++v) row[v] = w[(p * k + kk) * kKilnPanelVecs + v];
#pragma GCC unroll 4
      for (int m = 0; m < R; ++m) {
        const float x = rows[m * a_row + kk * a_col];
#pragma GCC unroll 2
        for (int v = 0; v < kKilnPanelVecs; ++v) acc[m][p * kKilnPanelVecs + v] += x * row[v];
      }
    }
  }
  for (int m = 0; m < R; ++m)
    for (int p = 0; p < P; ++p) kiln_panel_store(shape, &acc[m][p * kKilnPanelVecs], m0 + m, q + p, bias, c);
}

// Rows [m0, m0 + R) over panels [first, last): as many at once as R allows, then one at a time.
template <int R>
static void kiln_panel_row_block(const KilnMatmulShape* shape, const float* a, const float* packed, const float* bias,
                                 float* c, int64_t m0, int64_t first, int64_t last) {
  constexpr int P = kiln_panels_at_once<R>();
  int64_t q = first;
  for (; q + P <= last; q += P) kiln_panel_block<R, P>(shape, a, packed, bias, c, m0, q);
  for (; q < last; ++q) kiln_panel_block<R, 1>(shape, a, packed, bias, c, m0, q);
}

// Rows [m_begin, m_end) of C over panels [first, last): groups of kKilnPanelsAtOnce, each read by
// every block of rows while it is in cache.
static void kiln_panel_tile(const KilnMatmulShape* shape, const float* a, const float* packed, const float* bias,
                            float* c, int64_t m_begin, int64_t m_end, int64_t first, int64_t last) {
  for (int64_t group = first; group < last; group += kKilnPanelsAtOnce) {
    const int64_t end = group + kKilnPanelsAtOnce < last ? group + kKilnPanelsAtOnce : last;
    for (int64_t m0 = m_begin; m0 < m_end; m0 += kKilnRowBlock) {
      switch (m_end - m0 < kKilnRowBlock ? m_end - m0 : kKilnRowBlock) {
        case 1: kiln_panel_row_block<1>(shape, a, packed, bias, c, m0, group, end); break;
        case 2: kiln_panel_row_block<2>(shape, a, packed, bias, c, m0, group, end); break;
        case 3: kiln_panel_row_block<3>(shape, a, packed, bias, c, m0, group, end); break;
        default: kiln_panel_row_block<4>(shape, a, packed, bias, c, m0, group, end); break;
      }
    }
  }
}

// The rows of a call on `threads` threads in parts of `*part_rows` (whole row blocks): one part
// where the groups of panels give each thread at least four, else as many as bring the tasks
// (parts x groups) to four per thread, at most one per row block. Returns the count of parts.
static inline int64_t kiln_panel_row_parts(const KilnMatmulShape* shape, int64_t threads, int64_t* part_rows) {
  const int64_t panels = (shape->n + kKilnPanel - 1) / kKilnPanel;
  const int64_t groups = (panels + kKilnPanelsAtOnce - 1) / kKilnPanelsAtOnce;
  const int64_t blocks = (shape->m + kKilnRowBlock - 1) / kKilnRowBlock;
  int64_t parts = groups >= 4 * threads ? 1 : (4 * threads + groups - 1) / groups;
  if (parts > blocks) parts = blocks;
  *part_rows = (blocks + parts - 1) / parts * kKilnRowBlock;
  return (shape->m + *part_rows - 1) / *part_rows;
}

typedef struct KilnPanelCall {
  const KilnMatmulShape* shape;
  const float *a, *packed, *bias;
  float* c;
} KilnPanelCall;

// One thread's tasks: an even share of the parts x groups, the same ones on every call.
static void kiln_panel_part(void* data) {
  const KilnPanelCall* call = (const KilnPanelCall*)data;
  const KilnMatmulShape* shape = call->shape;
  const int64_t panels = (shape->n + kKilnPanel - 1) / kKilnPanel;
  const int64_t groups = (panels + kKilnPanelsAtOnce - 1) / kKilnPanelsAtOnce;
  const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
  int64_t part_rows = 0;
  const int64_t tasks = kiln_panel_row_parts(shape, count, &part_rows) * groups;
  for (int64_t task = tasks * t / count; task < tasks * (t + 1) / count; ++task) {
    const int64_t m_begin = task / groups * part_rows, first = task % groups * kKilnPanelsAtOnce;
    const int64_t m_end = m_begin + part_rows < shape->m ? m_begin + part_rows : shape->m;
    kiln_panel_tile(shape, call->a, call->packed, call->bias, call->c, m_begin, m_end, first,
                    first + kKilnPanelsAtOnce < panels ? first + kKilnPanelsAtOnce : panels);
  }
}

// On OpenMP's team (GOMP_parallel, as kiln_copy_blocked) when the caller asked for threads
// (shape.threads: the generated code asks for one below its team threshold) and there are two
// tasks or more, else on the calling thread.
static void kiln_panel_run(const KilnMatmulShape* shape, const float* a, const float* packed, const float* bias,
                           float* c) {
  const int64_t panels = (shape->n + kKilnPanel - 1) / kKilnPanel;
  const int64_t groups = (panels + kKilnPanelsAtOnce - 1) / kKilnPanelsAtOnce;
  int64_t part_rows = 0;
  const int64_t tasks = shape->threads > 1 ? kiln_panel_row_parts(shape, shape->threads, &part_rows) * groups : 1;
  if (tasks < 2) {
    kiln_panel_tile(shape, a, packed, bias, c, 0, shape->m, 0, panels);
    return;
  }
  KilnPanelCall call = {shape, a, packed, bias, c};
  GOMP_parallel(kiln_panel_part, &call, unsigned(shape->threads), 0);
}

// Whether Kiln's product over panels runs a batch of GEMMs whose right operands are frozen
// parameters (shape.frozen_b), or a part of one (the generated code splits a batch between the
// pool's threads: a part may be a single GEMM): where oneDNN lacks AVX-512, whose gemm kernel
// packs each B again on every call (an MoE's experts: 8 x 512 x 512 x 256 at 43% of the FMA peak
// on 2 threads).
static bool kiln_panel_batch_suits(const KilnMatmulShape* shape) {
  return shape->frozen_b && shape->k > 0 && shape->n > 0 && !kiln_onednn_has_avx512();
}

// C = A @ B (+ bias) for a shape kiln_panel_gemm_suits takes; 0, or 1 with a message in `error`.
static int kiln_panel_matmul(const KilnMatmulShape* shape, const float* a, const float* b, const float* bias, float* c,
                             const char* name, char* error, int64_t capacity) {
  const KilnPanels* p = kiln_panels_of(shape, b);
  if (!p) {
    const char* parts[] = {name, ": out of memory packing a matmul's weights"};
    kiln_message(error, capacity, parts, nullptr, 2);
    return 1;
  }
  kiln_panel_run(shape, a, p->data, bias, c);
  return 0;
}

// The GEMMs of a batch kiln_panel_batch_suits takes, one after another, each B packed once.
static int kiln_panel_batch(const KilnMatmulShape* shape, const float* a, const float* b, const float* bias, float* c,
                            const char* name, char* error, int64_t capacity) {
  KilnMatmulShape one = *shape;
  one.batch = 1;
  one.runtime_b = 0;
  for (int64_t i = 0; i < (shape->batch > 1 ? shape->batch : 1); ++i) {
    if (kiln_panel_matmul(&one, a + i * shape->batch_stride_a, b + i * shape->batch_stride_b, bias,
                          c + i * shape->batch_stride_c, name, error, capacity) != 0)
      return 1;
  }
  return 0;
}

// Runs C = A @ B (+ bias where shape.bias: n floats; nullptr otherwise) (see the file's
// comment); 0, or 1 with a message in `error`. Calls of one matmul run concurrently (the chunks
// of a batch split).
static int kiln_matmul(KilnMatmulCache* cache, KilnMatmulShape shape, const float* a, const float* b, const float* bias,
                       float* c, const char* name, char* error, int64_t capacity) {
  shape.threads = omp_get_max_threads();
  if (kiln_panel_gemm_suits(&shape)) return kiln_panel_matmul(&shape, a, b, bias, c, name, error, capacity);
  if (kiln_panel_batch_suits(&shape)) return kiln_panel_batch(&shape, a, b, bias, c, name, error, capacity);
  pthread_mutex_lock(&cache->mutex);
  KilnMatmulEntry* e = kiln_matmul_prepare(cache, &shape, b, name, error, capacity);
  if (!e) {
    pthread_mutex_unlock(&cache->mutex);
    return 1;
  }
  __atomic_add_fetch(&e->users, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&cache->mutex);
  const dnnl_status_t status = kiln_execute_matmul(e, a, b, bias, c);
  pthread_mutex_lock(&cache->mutex);
  __atomic_sub_fetch(&e->users, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&cache->mutex);
  if (status != dnnl_success) return kiln_dnnl_failure(name, "matmul", status, error, capacity);
  return 0;
}

// ------------------------------------------------- matmul in blocks of rows on the caller's threads

// The rows of one block when each of a batch of `batch` GEMMs of `rows` rows, [rows, k] @ [k, n],
// splits into blocks spread over `threads` threads: whole GEMMs when the batch has a GEMM per
// thread, else about threads / batch blocks per GEMM, a multiple of 16 rows (the matmul kernels'
// tile). 0 when the blocks would not run in parallel (one thread, or one GEMM that does not
// split): oneDNN's own team splits those. A GEMM splits where measurement said it gains
// (bench/README.md, "Frozen GEMMs in blocks of rows on Kiln's pool"):
// - every block reads all of B, so only where B is within 1 MB (a core's L2 holds it) or the GEMM
//   has at least as many rows as columns (B is the smaller operand): a ViT-B layer, 197 x 768 @
//   768 x 3072, ran 10% slower in blocks, each thread streaming all of B's 9 MB;
// - blocks of at least 64 rows: an MLP's 64-row layers ran 7% slower in 32-row blocks than on
//   oneDNN's team, while GPT's 128-row ones ran 15% faster in 64-row blocks.
static int64_t kiln_matmul_split_rows(int64_t rows, int64_t batch, int64_t threads, int64_t k, int64_t n) {
  if (threads <= 1 || rows < 1 || batch < 1) return 0;
  const int64_t parts = (threads + batch - 1) / batch;
  const bool splits = rows >= 64 * parts && (k * n <= 262144 || rows >= n);
  if (parts <= 1) return rows;
  if (!splits) return batch == 1 ? 0 : rows;
  const int64_t block = (rows + parts - 1) / parts;
  return (block + 15) / 16 * 16;
}

// Runs a batch of GEMMs that share B (and the bias, where shape.bias), C_i = A_i @ B for
// i < `batch` (`locate(i, &a, &c)` gives GEMM i's operands, laid out as `shape` says), as blocks
// of `block` rows, each a one-thread matmul, spread by `for_each(count, body)` (the pool's
// kiln_parallel_for: body(begin, end) runs blocks [begin, end) on one thread) over threads that
// each ask OpenMP for one thread. So no OpenMP team starts, and a frozen B packed once serves
// blocks of any rows: unlike OpenBLAS, which would pack B again in every block. The blocks of a
// GEMM but its last share one primitive. 0, or 1 with a message in `error`.
template <class Locate, class ForEach>
static int kiln_matmul_rows(KilnMatmulCache* cache, KilnMatmulShape shape, int64_t block, int64_t batch,
                            const Locate& locate, const float* b, const float* bias, const char* name, char* error,
                            int64_t capacity,
                            const ForEach& for_each) {
  const int64_t rows = shape.m, blocks = (rows + block - 1) / block, last_rows = rows - (blocks - 1) * block;
  shape.threads = 1;
  shape.m = block;
  KilnMatmulShape last_shape = shape;
  last_shape.m = last_rows;
  pthread_mutex_lock(&cache->mutex);
  KilnMatmulEntry* whole = kiln_matmul_prepare(cache, &shape, b, name, error, capacity);
  // In use until the blocks end: not remade for the last block's entry meanwhile.
  if (whole) __atomic_add_fetch(&whole->users, 1, __ATOMIC_ACQ_REL);
  KilnMatmulEntry* last = whole;
  if (whole && last_rows != block && shape.runtime_b) {
    // B is not packed once, so there is nothing to borrow: the last block's own entry.
    last = kiln_matmul_prepare(cache, &last_shape, b, name, error, capacity);
  } else if (whole && last_rows != block) {
    // The last block's primitive reads the same packed B wherever one of oneDNN's optimized
    // kernels takes B's layout for its rows (a second packed copy of every weight would double a
    // model's weights in memory: ViT's 197 rows split 112 + 85); else it packs its own (looked up
    // first, so that a refused borrow is not tried again on every call).
    last = kiln_found_entry(cache, &last_shape);
    if (last && last->packed_from != b) last = kiln_matmul_prepare(cache, &last_shape, b, name, error, capacity);
    last_shape.borrowed = block;  // the packed layout is the whole blocks' entry's: borrowed from one of that shape only
    if (!last) last = kiln_cached_entry(
        cache, &last_shape,
        [&](KilnMatmulEntry* fresh) { return kiln_make_matmul(fresh, &last_shape, whole, name, error, capacity); },
        kiln_release_matmul);
    if (last && last->shape.borrowed && dnnl_memory_set_data_handle(last->packed, whole->packed_data) != dnnl_success)
      last = nullptr;
    if (!last) {
      last_shape.borrowed = 0;
      last = kiln_matmul_prepare(cache, &last_shape, b, name, error, capacity);
    }
  }
  int rc = last ? 0 : 1;
  if (last) {
    const int64_t a_step = block * (shape.trans_a == 111 ? shape.lda : 1), c_step = block * shape.ldc;
    int failed = dnnl_success;
    for_each(batch * blocks, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t i = task % blocks;
        const float* a = nullptr;
        float* c = nullptr;
        locate(task / blocks, &a, &c);
        const KilnMatmulEntry* entry = i == blocks - 1 ? last : whole;
        dnnl_status_t status = kiln_matmul_block(entry, a + i * a_step, bias, c + i * c_step, entry->packed);
        if (status != dnnl_success) __atomic_store_n(&failed, int(status), __ATOMIC_RELAXED);
      }
    });
    if (failed != dnnl_success) rc = kiln_dnnl_failure(name, "matmul", dnnl_status_t(failed), error, capacity);
  }
  if (whole) __atomic_sub_fetch(&whole->users, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&cache->mutex);
  return rc;
}

#undef KILN_DNNL_TRY

#endif  // KILN_DNNL_H
