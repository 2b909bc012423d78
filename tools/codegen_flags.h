// The code generation flags that `kiln compile` and `kiln report` share (--isa, --sm, --no-cache,
// --freeze): one registration, one check of which target each applies to, one translation into
// kiln::CompileOptions.
#pragma once

#include <string>

#include "kiln/compile_options.h"

namespace CLI {
class App;
}

namespace kiln::tools {

struct CodegenFlags {
  std::string isa;  // empty: $KILN_ISA, else the host's best; "all" only where packages take it
  int sm = 0;       // cuda: 0 means the device's architecture, else sm_80
  bool no_cache = false;
  bool freeze = false;
};

// Adds --isa, --sm, --no-cache and --freeze to `command`. With `packages`, --isa also takes
// "all" and its help says what packages do with it.
void add_codegen_flags(CLI::App& command, CodegenFlags& flags, bool packages);

// kiln::Error for --isa with a target other than cpu, and --sm with a target other than cuda.
void check_codegen_flags(const std::string& target, const CodegenFlags& flags);

// The compile options of `target` with the flags (--isa all leaves the isa unset).
CompileOptions codegen_compile_options(const std::string& target, const CodegenFlags& flags);

}  // namespace kiln::tools
