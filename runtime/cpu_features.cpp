// Host ISA detection (cpuid + xgetbv), ISA names, compiler flags and the ISA choice.
#include "runtime/cpu_features.h"

#include <cstdint>
#include <cstdlib>

#include "kiln/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define KILN_X86 1
#endif

namespace kiln {

namespace {

#ifdef KILN_X86
// XCR0: which register states the OS saves on a context switch.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}

Isa detect_host_isa() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return Isa::scalar;
  const bool fma = ecx & (1u << 12), osxsave = ecx & (1u << 27), avx = ecx & (1u << 28);
  if (!(osxsave && avx && fma)) return Isa::scalar;
  const uint64_t xcr0 = read_xcr0();
  constexpr uint64_t kYmmState = 0x6;   // SSE (bit 1) + AVX (bit 2)
  constexpr uint64_t kZmmState = 0xe0;  // opmask (5) + ZMM_Hi256 (6) + Hi16_ZMM (7)
  if ((xcr0 & kYmmState) != kYmmState) return Isa::scalar;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return Isa::scalar;
  const bool avx2 = ebx & (1u << 5);
  if (!avx2) return Isa::scalar;
  const bool avx512f = ebx & (1u << 16), avx512dq = ebx & (1u << 17), avx512bw = ebx & (1u << 30),
             avx512vl = ebx & (1u << 31);
  if (avx512f && avx512dq && avx512bw && avx512vl && (xcr0 & kZmmState) == kZmmState) return Isa::avx512;
  return Isa::avx2;
}
#else
Isa detect_host_isa() { return Isa::scalar; }
#endif

constexpr const char* kChoices = "scalar, avx2, avx512";

}  // namespace

Isa host_isa() {
  static const Isa detected = detect_host_isa();
  return detected;
}

bool host_supports(Isa isa) { return int(isa) <= int(host_isa()); }

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  KILN_CHECK(false, "unknown Isa ", int(isa));
}

Isa parse_isa(std::string_view text) {
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512})
    if (text == isa_name(isa)) return isa;
  fail("unknown instruction set '", text, "' (choose one of: ", kChoices, ")");
}

std::vector<std::string> isa_compiler_flags(Isa isa) {
  switch (isa) {
    case Isa::scalar: return {};
    case Isa::avx2: return {"-mavx2", "-mfma"};
    case Isa::avx512:
      return {"-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-mavx2", "-mfma", "-mprefer-vector-width=512"};
  }
  KILN_CHECK(false, "unknown Isa ", int(isa));
}

Isa resolve_isa(std::optional<Isa> requested, const char* kiln_isa_variable, Isa host) {
  if (requested) {
    if (int(*requested) > int(host))
      fail("instruction set ", isa_name(*requested), " was requested but this CPU supports at most ", isa_name(host),
           " (code built for it would crash here)");
    return *requested;
  }
  if (kiln_isa_variable != nullptr && *kiln_isa_variable != '\0') {
    std::string_view text = kiln_isa_variable;
    Isa chosen = Isa::scalar;
    try {
      chosen = parse_isa(text);
    } catch (const Error&) {
      fail("environment variable KILN_ISA='", text, "' is not an instruction set (choose one of: ", kChoices, ")");
    }
    if (int(chosen) > int(host))
      fail("environment variable KILN_ISA=", text, " asks for an instruction set this CPU lacks (it supports at most ",
           isa_name(host), ")");
    return chosen;
  }
  return host;
}

Isa resolve_isa(std::optional<Isa> requested) { return resolve_isa(requested, std::getenv("KILN_ISA"), host_isa()); }

}  // namespace kiln
