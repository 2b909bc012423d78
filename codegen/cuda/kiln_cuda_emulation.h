// Kiln's CPU emulation of CUDA: with this header first, generated CUDA source (and hand-written
// kernels in tests) compiles as host C++ and runs on the CPU, so every kernel is checked where
// no GPU exists (embedded by codegen/CMakeLists.txt as kiln::codegen::cuda::cuda_emulation_header()).
//
// What it emulates, and how faithfully:
//  - the language: __global__/__device__/__forceinline__/__launch_bounds__/__align__, dim3,
//    threadIdx/blockIdx/blockDim/gridDim, float4 and friends, bit casts, __umulhi, atomics,
//    __half/__nv_bfloat16 (bit for bit as runtime/half.h: round to nearest even), and the math
//    functions CUDA has and the C library lacks (erfinv, erfinvf);
//  - threads: every thread of a block is a fiber (ucontext) that runs until it reaches a
//    synchronization point (__syncthreads, a warp shuffle, __syncwarp) or returns. A warp
//    operation completes as soon as its lanes arrive, and the warp that ran last keeps running
//    while it can, so one warp runs as far ahead of the others as a GPU would let it; warps and
//    lanes are otherwise drawn at random (seeded per launch). Code that reads what another
//    thread writes without synchronizing gets wrong values, not accidentally right ones;
//  - shared memory: dynamic shared memory (KILN_SHARED_MEMORY, extern __shared__ on a GPU) is
//    one buffer per block, filled with 0xff bytes (NaN as floats, -1 as integers) before the
//    block starts. Static `__shared__` variables become function statics: blocks run one at a
//    time, so they are per block, but not poisoned;
//  - __syncthreads: releases when every thread of the block waits at one; a thread that returns
//    while others wait, or a block where every thread waits and none can go on, is an error;
//  - warp shuffles (__shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync) and
//    __syncwarp, with masks: they complete when every lane named in the mask has reached one
//    with the same mask; a lane that calls with a mask not naming itself, lanes that disagree on
//    the mask or the operation, a read from a lane outside the mask, and a named lane that
//    returns or waits at __syncthreads instead are errors. Results follow CUDA's rules for
//    `width` and for source lanes out of range (the caller's own value);
//  - blocks run one after another, in a scrambled order.
// An error stops the launch: launch() returns false and error() says what happened where.
#ifndef KILN_CUDA_EMULATION_H
#define KILN_CUDA_EMULATION_H
#define KILN_CUDA_EMULATION 1
#define KILN_CUDA_HALF 1

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __restrict__ __restrict
#define __shared__ static

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
static const int warpSize = 32;

// ---------------------------------------------------------------- bits
inline float __int_as_float(int v) { float f; memcpy(&f, &v, 4); return f; }
inline float __uint_as_float(unsigned v) { float f; memcpy(&f, &v, 4); return f; }
inline int __float_as_int(float f) { int v; memcpy(&v, &f, 4); return v; }
inline unsigned __float_as_uint(float f) { unsigned v; memcpy(&v, &f, 4); return v; }
inline double __longlong_as_double(long long v) { double d; memcpy(&d, &v, 8); return d; }
inline long long __double_as_longlong(double d) { long long v; memcpy(&v, &d, 8); return v; }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((unsigned long long)a * b >> 32); }

// ---------------------------------------------------------------- halves (runtime/half.h's rules)
struct __half { uint16_t bits; };
struct __nv_bfloat16 { uint16_t bits; };
inline float __half2float(__half h) {
  uint32_t sign = uint32_t(h.bits & 0x8000u) << 16, exponent = (h.bits >> 10) & 0x1fu, mantissa = h.bits & 0x3ffu;
  if (exponent == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) return __uint_as_float(sign | __float_as_uint(float(mantissa) * 0x1p-24f));
  return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}
inline __half __float2half_rn(float value) {
  uint32_t bits = __float_as_uint(value), sign = (bits >> 16) & 0x8000u, magnitude = bits & 0x7fffffffu;
  uint16_t out;
  if (magnitude > 0x7f800000u) out = uint16_t(sign | 0x7e00u);
  else if (magnitude >= 0x477ff000u) out = uint16_t(sign | 0x7c00u);
  else if (magnitude < 0x38800000u) out = uint16_t(sign | (__float_as_uint(__uint_as_float(magnitude) + 0.5f) - 0x3f000000u));
  else out = uint16_t(sign | ((magnitude + 0xfffu + ((magnitude >> 13) & 1u) - (112u << 23)) >> 13));
  return __half{out};
}
inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float(uint32_t(b.bits) << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float value) {
  uint32_t bits = __float_as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{uint16_t((bits >> 16) | 0x40u)};
  return __nv_bfloat16{uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16)};
}

// ---------------------------------------------------------------- math CUDA has and C lacks
// erfinv (CUDA: 5 ulp in double, 2 ulp in float): ir/kernels/erfinv.h's method, a start from
// M. Giles' approximation (or, near 1, the asymptotic form of erfc) and three Halley steps on
// erf and erfc (within 1 ulp in double); the float version rounds the double result once.
inline double erfinv(double x) {
  if (x != x || x < -1.0 || x > 1.0) return __builtin_nan("");
  if (x == 1.0 || x == -1.0) return copysign(__builtin_inf(), x);
  if (x == 0.0) return x;
  const double a = fabs(x);
  double w = -log((1.0 - a) * (1.0 + a)), y;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      p = c + p * w;
    y = p * a;
  } else if (w < 16.0) {
    w = sqrt(w) - 3.0;
    double p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = c + p * w;
    y = p * a;
  } else {
    const double tail = -log(1.0 - a);
    y = sqrt(tail - 0.5 * log(tail) - 0.57236494292470008);
  }
  for (int step = 0; step < 3; ++step) {
    double residual = a <= 0.5 ? erf(y) - a : (1.0 - a) - erfc(y);
    y -= residual / (1.1283791670955126 * exp(-y * y) + y * residual);
  }
  return copysign(y, x);
}
inline float erfinvf(float x) { return float(erfinv(double(x))); }

// ---------------------------------------------------------------- atomics (threads of one
// launch never run at the same time, so plain read-modify-writes are atomic)
template <class T> inline T atomicExch(T* address, T value) { T old = *address; *address = value; return old; }
template <class T> inline T atomicAdd(T* address, T value) { T old = *address; *address = old + value; return old; }
template <class T> inline T atomicMax(T* address, T value) { T old = *address; if (value > old) *address = value; return old; }
inline void __threadfence() {}

namespace kiln_emu {

enum class Wait { None, Barrier, Warp, Done };
enum class WarpOp { Sync, Index, Up, Down, Xor };

struct Fiber {
  ucontext_t context;
  uint3 index;
  Wait wait = Wait::None;
  // A pending warp operation: its kind, mask, argument, width and value; then the result.
  WarpOp op = WarpOp::Sync;
  unsigned mask = 0;
  int argument = 0, width = 32;
  unsigned long long value = 0, result = 0;
};

struct Launch {
  uint3 block_index;
  dim3 grid, block;
  std::vector<Fiber> fibers;
  std::vector<std::unique_ptr<char[]>> stacks;
  std::vector<unsigned char> shared;
  ucontext_t scheduler;
  Fiber* current = nullptr;
  void (*body)(void*) = nullptr;
  void* body_state = nullptr;
  std::string error;
  unsigned long long random = 0x9E3779B97F4A7C15ull;
  unsigned next_random(unsigned bound) {
    random ^= random << 13;
    random ^= random >> 7;
    random ^= random << 17;
    return unsigned(random % bound);
  }
};

inline Launch*& active() {
  static thread_local Launch* launch = nullptr;
  return launch;
}
inline Fiber& self() { return *active()->current; }
inline unsigned char* dynamic_shared_memory() { return active()->shared.data(); }
inline std::string where(const Fiber& f) {
  const Launch& l = *active();
  char text[128];
  std::snprintf(text, sizeof text, "block (%u,%u,%u) thread (%u,%u,%u)", l.block_index.x, l.block_index.y,
                l.block_index.z, f.index.x, f.index.y, f.index.z);
  return text;
}
inline void yield() {
  Launch& l = *active();
  swapcontext(&l.current->context, &l.scheduler);
}
inline void fail_here(const std::string& message) {
  Launch& l = *active();
  if (l.error.empty()) l.error = where(self()) + ": " + message;
  self().wait = Wait::Done;
  yield();  // never resumed: the launch stops
}
inline void fiber_entry() {
  Launch& l = *active();
  l.body(l.body_state);
  l.current->wait = Wait::Done;
  swapcontext(&l.current->context, &l.scheduler);
}
inline int lane_of(const Fiber& f) {
  const Launch& l = *active();
  unsigned linear = f.index.x + l.block.x * (f.index.y + l.block.y * f.index.z);
  return int(linear & 31u);
}

// Completes the warp operation that fiber `i` waits at when every lane its mask names has
// arrived, making those lanes runnable again (appended to `runnable`); false on an error.
inline bool resolve_warp(Launch& l, size_t i, std::vector<size_t>& runnable) {
  const size_t n = l.fibers.size();
  const size_t warp_start = i / 32 * 32, warp_end = warp_start + 32 < n ? warp_start + 32 : n;
  Fiber& f = l.fibers[i];
  for (size_t j = warp_start; j < warp_end; ++j) {
    if (!(f.mask >> (j - warp_start) & 1u)) continue;
    Fiber& g = l.fibers[j];
    if (g.wait == Wait::None) return true;  // still running towards it
    if (g.wait == Wait::Done || g.wait == Wait::Barrier) {
      l.error = where(f) + ": a warp operation names lane " + std::to_string(j - warp_start) + ", which " +
                (g.wait == Wait::Done ? "returned" : "waits at __syncthreads") + " instead";
      return false;
    }
    if (g.mask != f.mask || g.op != f.op) {
      l.error = where(f) + ": lanes of one warp operation disagree on its mask or kind";
      return false;
    }
  }
  for (size_t j = warp_start; j < warp_end; ++j) {
    if (!(f.mask >> (j - warp_start) & 1u)) continue;
    Fiber& g = l.fibers[j];
    int lane = int(j - warp_start), width = g.width, base = lane & ~(width - 1), source = lane;
    switch (g.op) {
      case WarpOp::Sync: break;
      case WarpOp::Index: source = base + (g.argument & (width - 1)); break;
      case WarpOp::Up: source = lane - g.argument >= base ? lane - g.argument : lane; break;
      case WarpOp::Down: source = lane + g.argument < base + width ? lane + g.argument : lane; break;
      case WarpOp::Xor: source = (lane ^ g.argument) < base + width ? lane ^ g.argument : lane; break;
    }
    if (!(f.mask >> source & 1u) || warp_start + size_t(source) >= warp_end) {
      l.error = where(g) + ": a shuffle reads lane " + std::to_string(source) + ", which is not in its mask";
      return false;
    }
    g.result = l.fibers[warp_start + size_t(source)].value;
  }
  for (size_t j = warp_start; j < warp_end; ++j) {
    if (!(f.mask >> (j - warp_start) & 1u)) continue;
    l.fibers[j].wait = Wait::None;
    runnable.push_back(j);
  }
  return true;
}

// Threads that may run, by warp. The next one runs from the warp that ran last while that warp
// has any (so a warp runs ahead of the others as far as it can, as one may on a GPU), else
// from a warp drawn at random; within a warp, lanes are drawn at random.
struct Runnable {
  std::vector<std::vector<size_t>> by_warp;
  size_t count = 0, last_warp = 0;
  void add(size_t i) {
    by_warp[i / 32].push_back(i);
    ++count;
  }
  size_t take(Launch& l) {
    if (by_warp[last_warp].empty()) {
      size_t skip = l.next_random(unsigned(by_warp.size()));
      while (by_warp[skip].empty()) skip = (skip + 1) % by_warp.size();
      last_warp = skip;
    }
    std::vector<size_t>& lanes = by_warp[last_warp];
    size_t pick = l.next_random(unsigned(lanes.size()));
    size_t i = lanes[pick];
    lanes[pick] = lanes.back();
    lanes.pop_back();
    --count;
    return i;
  }
};

// Runs one block: a thread runs to its next synchronization point; a warp operation completes
// as soon as its lanes have arrived; a barrier opens when every thread waits at it.
inline bool run_block(Launch& l) {
  const size_t n = l.fibers.size();
  Runnable runnable;
  runnable.by_warp.resize((n + 31) / 32);
  for (size_t i = 0; i < n; ++i) {
    Fiber& f = l.fibers[i];
    f = Fiber{};
    f.index = {unsigned(i % l.block.x), unsigned(i / l.block.x % l.block.y), unsigned(i / (size_t(l.block.x) * l.block.y))};
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = l.stacks[i].get();
    f.context.uc_stack.ss_size = 64 * 1024;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_entry, 0);
    runnable.add(i);
  }
  runnable.last_warp = l.next_random(unsigned(runnable.by_warp.size()));
  memset(l.shared.data(), 0xff, l.shared.size());
  std::vector<size_t> released;
  for (;;) {
    while (runnable.count > 0) {
      size_t i = runnable.take(l);
      Fiber& f = l.fibers[i];
      l.current = &f;
      swapcontext(&l.scheduler, &f.context);
      l.current = nullptr;
      if (!l.error.empty()) return false;
      released.clear();
      if (f.wait == Wait::Warp && !resolve_warp(l, i, released)) return false;
      for (size_t j : released) runnable.add(j);
    }
    size_t done = 0, at_barrier = 0;
    for (const Fiber& f : l.fibers) {
      done += f.wait == Wait::Done;
      at_barrier += f.wait == Wait::Barrier;
    }
    if (done == n) return true;
    for (size_t i = 0; i < n; ++i) {
      const Fiber& f = l.fibers[i];
      if (f.wait == Wait::Done && at_barrier > 0) {
        l.error = where(f) + " returned while other threads of its block wait at __syncthreads";
        return false;
      }
      if (f.wait == Wait::Warp) {
        for (size_t j = i / 32 * 32; j < n && j < i / 32 * 32 + 32; ++j) {
          const Fiber& g = l.fibers[j];
          if ((f.mask >> (j % 32) & 1u) && (g.wait == Wait::Done || g.wait == Wait::Barrier)) {
            l.error = where(f) + ": a warp operation names lane " + std::to_string(j % 32) + ", which " +
                      (g.wait == Wait::Done ? "returned" : "waits at __syncthreads") + " instead";
            return false;
          }
        }
      }
    }
    if (at_barrier + done < n) {
      l.error = "block (" + std::to_string(l.block_index.x) + "," + std::to_string(l.block_index.y) + "," +
                std::to_string(l.block_index.z) + ") is stuck: its threads wait at different synchronization points";
      return false;
    }
    for (size_t i = 0; i < n; ++i) {
      l.fibers[i].wait = Wait::None;
      runnable.add(i);
    }
  }
}

template <class Body>
inline bool run_grid(dim3 grid, dim3 block, size_t shared_bytes, Body& body, std::string* error, unsigned long long seed) {
  Launch l;
  l.grid = grid;
  l.block = block;
  l.random ^= seed * 0x2545F4914F6CDD1Dull + 1;
  const size_t threads = size_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024) {
    if (error) *error = "a block of " + std::to_string(threads) + " threads (CUDA allows 1 to 1024)";
    return false;
  }
  if (shared_bytes > 227 * 1024) {
    if (error) *error = std::to_string(shared_bytes) + " bytes of dynamic shared memory (more than any GPU has)";
    return false;
  }
  l.fibers.resize(threads);
  for (size_t i = 0; i < threads; ++i) l.stacks.emplace_back(new char[64 * 1024]);
  l.shared.resize(shared_bytes > 0 ? shared_bytes : 1);
  l.body = [](void* state) { (*static_cast<Body*>(state))(); };
  l.body_state = &body;
  Launch* outer = active();
  active() = &l;
  const size_t blocks = size_t(grid.x) * grid.y * grid.z;
  std::vector<size_t> order(blocks);
  for (size_t i = 0; i < blocks; ++i) order[i] = i;
  for (size_t i = blocks; i > 1; --i) std::swap(order[i - 1], order[l.next_random(unsigned(i))]);
  bool ok = true;
  for (size_t b : order) {
    l.block_index = {unsigned(b % grid.x), unsigned(b / grid.x % grid.y), unsigned(b / (size_t(grid.x) * grid.y))};
    if (!run_block(l)) {
      ok = false;
      break;
    }
  }
  active() = outer;
  if (!ok && error) *error = l.error;
  return ok;
}

template <class T>
inline T warp_operation(WarpOp op, unsigned mask, T value, int argument, int width) {
  static_assert(sizeof(T) <= 8, "a shuffled value has at most 8 bytes");
  Fiber& f = self();
  if (!(mask >> lane_of(f) & 1u)) fail_here("a warp operation's mask does not name the calling lane");
  if (width <= 0 || width > 32 || (width & (width - 1)) != 0) fail_here("a shuffle width that is not a power of 2 up to 32");
  f.op = op;
  f.mask = mask;
  f.argument = argument;
  f.width = width;
  f.value = 0;
  memcpy(&f.value, &value, sizeof(T));
  f.wait = Wait::Warp;
  yield();
  T result;
  memcpy(&result, &f.result, sizeof(T));
  return result;
}

// Runs `kernel` over the grid with `args`; false with `error` set when the emulation finds a fault.
template <class... Params, class... Args>
inline bool launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, std::string* error,
                   Args&&... args) {
  auto body = [&] { kernel(args...); };
  return run_grid(grid, block, shared_bytes, body, error, 1);
}

template <class... Params, size_t... I>
inline bool launch_params(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, void** params,
                          std::string* error, std::index_sequence<I...>) {
  auto body = [&] { kernel(*static_cast<Params*>(params[I])...); };
  return run_grid(grid, block, shared_bytes, body, error, 1);
}

// The driver API's form: `params[i]` points at the value of parameter i (cuLaunchKernel).
template <class... Params>
inline bool launch_params(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, void** params,
                          std::string* error) {
  return launch_params(kernel, grid, block, shared_bytes, params, error, std::index_sequence_for<Params...>{});
}

}  // namespace kiln_emu

#define threadIdx (::kiln_emu::self().index)
#define blockIdx (::kiln_emu::active()->block_index)
#define blockDim (::kiln_emu::active()->block)
#define gridDim (::kiln_emu::active()->grid)
#define KILN_SHARED_MEMORY(name) unsigned char* name = ::kiln_emu::dynamic_shared_memory()

inline void __syncthreads() {
  ::kiln_emu::self().wait = ::kiln_emu::Wait::Barrier;
  ::kiln_emu::yield();
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::kiln_emu::warp_operation(::kiln_emu::WarpOp::Sync, mask, 0, 0, 32);
}
template <class T> inline T __shfl_sync(unsigned mask, T value, int lane, int width = 32) {
  return ::kiln_emu::warp_operation(::kiln_emu::WarpOp::Index, mask, value, lane, width);
}
template <class T> inline T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  return ::kiln_emu::warp_operation(::kiln_emu::WarpOp::Up, mask, value, int(delta), width);
}
template <class T> inline T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  return ::kiln_emu::warp_operation(::kiln_emu::WarpOp::Down, mask, value, int(delta), width);
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  return ::kiln_emu::warp_operation(::kiln_emu::WarpOp::Xor, mask, value, lane_mask, width);
}

#endif  // KILN_CUDA_EMULATION_H
