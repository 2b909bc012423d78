// The prelude of generated C++: the text of codegen/cpp/kiln_prelude.h (the ABI declarations,
// vectorizable float math, exact division and rounding, f16/bf16 conversions and Philox),
// which the C++ backend pastes at the top of every generated source file. codegen/CMakeLists.txt
// embeds the header's text at build time, so editing it regenerates this string.
#pragma once

#include <string_view>

namespace kiln::codegen {

std::string_view cpp_prelude();
// The oneDNN glue pasted after the support functions of a module with convolutions: the text of
// codegen/cpp/kiln_dnnl.h.
std::string_view cpp_dnnl_glue();
// The thread pool pasted after the prelude of a module whose loops run on it: the text of
// codegen/cpp/kiln_thread_pool.h.
std::string_view cpp_thread_pool();
// The OpenMP team runner pasted after the prelude of a module whose loops run as OpenMP regions:
// the text of codegen/cpp/kiln_openmp_team.h.
std::string_view cpp_openmp_team();
// The scans and top-k selections pasted after the runner of a module that computes such fallback
// nodes itself: the text of codegen/cpp/kiln_sequence_kernels.h.
std::string_view cpp_sequence_kernels();

}  // namespace kiln::codegen
