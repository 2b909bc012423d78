// How GNU OpenMP's threads wait in the process that loads compiled CPU modules: passively
// (asleep on a futex) unless the user chose otherwise. libgomp reads OMP_WAIT_POLICY and
// GOMP_SPINCOUNT once, when it is loaded, and Kiln itself does not link it: the first compiled
// module (which links it for oneDNN's and OpenBLAS's threads) loads it, so the loader sets the
// policy just before. The default policy spins ~300000 pauses at every barrier and between
// regions; on a loaded machine a spinning thread keeps the thread it waits for off the CPU, and a
// ResNet-18 (oneDNN convolutions on OpenMP) took 4x longer than with passive waits, measured side
// by side (bench/README.md, "Threads"). Kiln's own loops do not use OpenMP (codegen/cpp/kiln_thread_pool.h).
#pragma once

namespace kiln {

enum class OpenMPWaitPolicy {
  SetPassive,     // OMP_WAIT_POLICY=passive was set for the libgomp about to be loaded
  UserSetting,    // OMP_WAIT_POLICY or GOMP_SPINCOUNT was already set: left alone
  AlreadyLoaded,  // libgomp is already loaded and has read its settings: nothing changed
};

// Called before a compiled module is loaded; acts once per process (later calls return the first
// call's result).
OpenMPWaitPolicy prefer_passive_openmp_waits();

}  // namespace kiln
