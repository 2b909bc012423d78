// How GNU OpenMP's threads wait in the process that loads compiled CPU modules: a short spin
// (about 0.1 ms, GOMP_SPINCOUNT set from the measured cost of a pause) and then asleep on a futex,
// unless the user chose otherwise. libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it
// is loaded, and Kiln itself does not link it: the first compiled module (which links it for
// oneDNN's and OpenBLAS's threads) loads it, so the loader sets the policy just before.
//
// Why this spin (bench/README.md, "Threads"; 2 threads, `kiln bench --freeze`, side by side):
// - libgomp's default spins ~300000 pauses (~10 ms on a Zen 4) at every barrier and between
//   regions; on a loaded machine a spinning thread keeps the thread it waits for off the CPU
//   (ResNet-18 4x slower than with passive waits at load average 7-10);
// - passive waits (asleep at once) pay a futex wake-up at every oneDNN convolution: MobileNet-v2
//   took 8.3 ms quiet against 5.2 ms with the short spin, ResNet-18 13.1 against 12.4; under 8 busy
//   processes on the 2 CPUs the two were alike (ResNet-18 99-119 ms passive, 116 ms spinning).
// Why a time and not a count: a pause takes ~35 ns on a Zen 4 but ~9.5 ns on the Intel Xeon this
// project now runs on, where the 3000 pauses first chosen (0.1 ms on the Zen 4) were 28 us: the
// team fell asleep between the regions of a decode step (a Llama layer at batch 1, 2 threads:
// 0.157 ms at 3000 pauses, 0.104 ms at 10000, 0.106 ms at 1 thread).
// Kiln's own loops do not use OpenMP (codegen/cpp/kiln_thread_pool.h).
#pragma once

#include <cstdint>

namespace kiln {

enum class OpenMPWaitPolicy {
  SetShortSpin,   // GOMP_SPINCOUNT was set (openmp_spin_count) for the libgomp about to be loaded
  UserSetting,    // OMP_WAIT_POLICY or GOMP_SPINCOUNT was already set: left alone
  AlreadyLoaded,  // libgomp is already loaded and has read its settings: nothing changed
};

// How long OpenMP's threads spin before they sleep, when the user set neither variable.
inline constexpr double kKilnOpenMPSpinMicroseconds = 100;

// The pauses that make up kKilnOpenMPSpinMicroseconds when one takes `pause_nanoseconds`, within
// [1000, 300000] (libgomp's throttled count and its default).
int64_t openmp_spin_count(double pause_nanoseconds);

// The cost of one pause instruction (libgomp's spin step) on this CPU, measured once per process:
// the fastest of a few timed runs of pauses.
double measured_pause_nanoseconds();

// Called before a compiled module is loaded; acts once per process (later calls return the first
// call's result).
OpenMPWaitPolicy prefer_short_openmp_spins();

}  // namespace kiln
