// The op layer of generated C-like code (codegen/c_like/c_ops.cpp): one function per loop-IR op
// the loop op table spells kop_<name> (codegen/loop_ops.h), for every compute type, shared by
// the C++ and CUDA backends.
//
// The text needs, from the target's prelude printed before it:
//   KILN_OP                  the specifiers of an op function (`static inline`, or
//                            `static __device__ __forceinline__`);
//   KILN_FAULT_FLAG(name)    declares a run-time fault flag, an int initialized to 0;
//   KILN_RAISE_FAULT(name)   sets it (atomically: many threads may raise it);
//   float and double overloads of kiln_fabs, kiln_exp, kiln_log, kiln_log1p, kiln_expm1,
//   kiln_sqrt, kiln_rsqrt, kiln_sin, kiln_cos, kiln_tanh, kiln_sigmoid, kiln_erf, kiln_floor,
//   kiln_ceil, kiln_round, kiln_div_trunc, kiln_div_floor, kiln_pow, kiln_fmod, with the
//   interpreter's semantics (ir/kernels/),
//   and the float and double overloads of every function the loop op table spells directly
//   instead of a kop_ op of this layer (its c_spelling and cuda_spelling columns).
#pragma once

#include <string_view>

namespace kiln::codegen {

std::string_view c_ops_text();

}  // namespace kiln::codegen
