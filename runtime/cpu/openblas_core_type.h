// Which kernels OpenBLAS runs in the process that loads compiled CPU modules. Debian's OpenBLAS is
// built with DYNAMIC_ARCH: when it is loaded it picks its kernels by the CPU's vendor, family and
// model, and a CPU newer than its table gets its oldest x86-64 kernels. Debian 12's 0.3.21 runs
// Prescott's (SSE3) on an Emerald Rapids Xeon (family 6, model 207), where one thread took 80 us
// for a 128x64x128 sgemm against 20 us with SkylakeX's, and 361 us for a 1000x1280 sgemv against
// 198 (bench/README.md, "OpenBLAS on a CPU it does not know"). Kiln's compiled modules call
// OpenBLAS for the GEMMs they keep there (matrix-vector products at batch 1, small GEMMs,
// attention's short runs).
//
// So unless the user has chosen (OPENBLAS_CORETYPE set), the loader sets OPENBLAS_CORETYPE just
// before the first compiled module loads OpenBLAS, to the kernels OpenBLAS itself picks on the CPUs
// it knows with the host's instruction set: SkylakeX with AVX-512 (Cooperlake's differ only in
// bfloat16 routines, which Kiln does not call), Haswell for an Intel CPU with AVX2 and FMA, Zen
// for an AMD one; nothing for other CPUs. Kiln itself does not link OpenBLAS, as it does not link
// libgomp (runtime/cpu/openmp_wait_policy.h does the same for libgomp's settings). A program that
// links a compiled package links OpenBLAS itself, which is loaded before any of Kiln's code runs:
// there only the user's OPENBLAS_CORETYPE counts.
#pragma once

#include <string>

#include "runtime/cpu_features.h"

namespace kiln {

enum class CpuVendor { intel, amd, other };

// The OpenBLAS core type for a host with this instruction set and vendor; empty for none.
std::string openblas_core_type_for(Isa isa, CpuVendor vendor);

enum class OpenBlasCoreTypeChoice {
  Set,            // OPENBLAS_CORETYPE was set for the OpenBLAS about to be loaded
  UserSetting,    // OPENBLAS_CORETYPE was already set: left alone
  AlreadyLoaded,  // OpenBLAS is already loaded and has chosen: nothing changed
  NoneFits,       // no core type for this host (neither AVX2 nor AVX-512, or another vendor's AVX2)
};

// Called before a compiled module is loaded; acts once per process (later calls return the first
// call's result).
OpenBlasCoreTypeChoice choose_openblas_core_type();

// The kernels of the OpenBLAS loaded in this process, as OpenBLAS names them
// (openblas_get_corename: "SkylakeX", "Haswell", "Prescott", ...); empty when none is loaded
// (no compiled module with matrix products loaded yet). `kiln bench` reports it.
std::string loaded_openblas_core();

}  // namespace kiln
