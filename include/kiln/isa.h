// kiln::Isa: the SIMD instruction set generated CPU code targets (CompileOptions::isa,
// kiln/compile_options.h); runtime/cpu_features.h detects what the host runs and resolves a
// compile's choice.
#pragma once

namespace kiln {

// Ordered: each level includes the one before.
enum class Isa { scalar, avx2, avx512 };

}  // namespace kiln
