// The SIMD instruction set generated CPU code targets: detection of what the host supports
// (cpuid and xgetbv: the CPU must have the instructions and the OS must save their registers),
// the compiler flags for each, and the choice for a compile (a request, $KILN_ISA, or the best
// the host has). Code built for an ISA the host lacks dies on an illegal instruction, so every
// choice is checked against the host.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/isa.h"

namespace kiln {

// The best ISA this machine can run:
//   avx512: AVX-512 F, DQ, BW and VL, and the OS saves opmask and zmm state (XCR0 bits 5-7),
//           plus everything avx2 needs;
//   avx2:   AVX, AVX2 and FMA, and the OS saves xmm and ymm state (XCR0 bits 1-2);
//   scalar: otherwise (and on every non-x86-64 machine).
Isa host_isa();
bool host_supports(Isa isa);

std::string_view isa_name(Isa isa);  // "scalar", "avx2", "avx512"
// Parses "scalar", "avx2" or "avx512"; anything else throws kiln::Error naming the text and
// listing the choices.
Isa parse_isa(std::string_view text);

// g++/clang flags for generated code of `isa`. scalar: none (the x86-64 baseline, SSE2).
std::vector<std::string> isa_compiler_flags(Isa isa);

// The ISA a compile targets: `requested` when given, else $KILN_ISA when set and non-empty,
// else host_isa(). A requested or $KILN_ISA choice the host cannot run throws kiln::Error
// (naming KILN_ISA when it came from there).
Isa resolve_isa(std::optional<Isa> requested);
// resolve_isa with the environment value and the host's ISA given (testable on any host).
Isa resolve_isa(std::optional<Isa> requested, const char* kiln_isa_variable, Isa host);

}  // namespace kiln
