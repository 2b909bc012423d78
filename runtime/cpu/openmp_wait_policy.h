// How GNU OpenMP's threads wait in the process that loads compiled CPU modules: a short spin
// (GOMP_SPINCOUNT=3000, about 0.1 ms here) and then asleep on a futex, unless the user chose
// otherwise. libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it is loaded, and Kiln
// itself does not link it: the first compiled module (which links it for oneDNN's and OpenBLAS's
// threads) loads it, so the loader sets the policy just before.
//
// Why this spin (bench/README.md, "Threads"; 2 threads, `kiln bench --freeze`, side by side):
// - libgomp's default spins ~300000 pauses (~10 ms) at every barrier and between regions; on a
//   loaded machine a spinning thread keeps the thread it waits for off the CPU (ResNet-18 4x
//   slower than with passive waits at load average 7-10);
// - passive waits (asleep at once) pay a futex wake-up at every oneDNN convolution: MobileNet-v2
//   took 8.3 ms quiet against 5.2 ms with the short spin, ResNet-18 13.1 against 12.4; under 8 busy
//   processes on the 2 CPUs the two were alike (ResNet-18 99-119 ms passive, 116 ms spinning).
// Kiln's own loops do not use OpenMP (codegen/cpp/kiln_thread_pool.h).
#pragma once

namespace kiln {

enum class OpenMPWaitPolicy {
  SetShortSpin,   // GOMP_SPINCOUNT=3000 was set for the libgomp about to be loaded
  UserSetting,    // OMP_WAIT_POLICY or GOMP_SPINCOUNT was already set: left alone
  AlreadyLoaded,  // libgomp is already loaded and has read its settings: nothing changed
};

// The spin count set when the user set neither variable.
inline constexpr const char* kKilnOpenMPSpinCount = "3000";

// Called before a compiled module is loaded; acts once per process (later calls return the first
// call's result).
OpenMPWaitPolicy prefer_short_openmp_spins();

}  // namespace kiln
