// The texts the CUDA backend pastes into generated source, embedded from the headers of
// codegen/cuda/ by codegen/CMakeLists.txt (so editing a header regenerates its string).
#pragma once

#include <string_view>

namespace kiln::codegen::cuda {

std::string_view cuda_prelude();           // kiln_cuda_prelude.h: types, device math, halves, Philox
std::string_view cuda_reductions_text();   // kiln_cuda_reductions.h: warp and block reductions
std::string_view cuda_emulation_header();  // kiln_cuda_emulation.h: the CUDA language on the CPU

}  // namespace kiln::codegen::cuda
