// The code generation flags compile and report share. See tools/codegen_flags.h.
#include "tools/codegen_flags.h"

#include <CLI/CLI.hpp>

#include "kiln/error.h"
#include "runtime/cpu_features.h"

namespace kiln::tools {

void add_codegen_flags(CLI::App& command, CodegenFlags& flags, bool packages) {
  if (packages) {
    command
        .add_option("--isa", flags.isa,
                    "--target cpu: instruction set, scalar, avx2 or avx512 (default: $KILN_ISA, else the host's best); "
                    "packages: all (the default: each set, chosen at run time) or one of them")
        ->check(CLI::IsMember({"scalar", "avx2", "avx512", "all"}));
  } else {
    command
        .add_option("--isa", flags.isa,
                    "--target cpu: instruction set, scalar, avx2 or avx512 (default: $KILN_ISA, else the host's best)")
        ->check(CLI::IsMember({"scalar", "avx2", "avx512"}));
  }
  command.add_option("--sm", flags.sm, "--target cuda: architecture, e.g. 90 for sm_90 (default: the GPU's, else 80)")
      ->check(CLI::Range(30, 200));
  command.add_flag("--no-cache", flags.no_cache, "Build without reading or writing the compile cache (the link stubs every build shares, made once, are still kept there)");
  command.add_flag("--freeze", flags.freeze, "Let constant folding fold parameters");
}

void check_codegen_flags(const std::string& target, const CodegenFlags& flags) {
  if (!flags.isa.empty() && target != "cpu") fail("--isa applies only to --target cpu (not --target ", target, ")");
  if (flags.sm != 0 && target != "cuda") fail("--sm applies only to --target cuda (not --target ", target, ")");
}

CompileOptions codegen_compile_options(const std::string& target, const CodegenFlags& flags) {
  CompileOptions options;
  options.target = target;
  if (!flags.isa.empty() && flags.isa != "all") options.isa = parse_isa(flags.isa);
  if (flags.sm != 0) options.sm = flags.sm;
  options.use_cache = !flags.no_cache;
  options.freeze = flags.freeze;
  return options;
}

}  // namespace kiln::tools
