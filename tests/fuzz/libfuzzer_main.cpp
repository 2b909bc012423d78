// The libFuzzer entry point of one target (KILN_FUZZ_TARGET names it; one executable per
// target, fuzz_<name>): an input that breaks the contract of fuzz_target.h prints why and
// aborts, so that libFuzzer saves it as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kiln::fuzz::FuzzTarget* target = kiln::fuzz::find_fuzz_target(KILN_FUZZ_TARGET);
  if (target == nullptr) {
    std::fprintf(stderr, "no fuzz target named '%s'\n", KILN_FUZZ_TARGET);
    std::abort();
  }
  kiln::fuzz::FuzzVerdict verdict =
      kiln::fuzz::check_fuzz_input(*target, std::string_view(reinterpret_cast<const char*>(data), size));
  if (!verdict.bug.empty()) {
    std::fprintf(stderr, "fuzz target %s: %s\n", KILN_FUZZ_TARGET, verdict.bug.c_str());
    std::abort();
  }
  return 0;
}
