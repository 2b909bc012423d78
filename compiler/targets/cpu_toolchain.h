// The system C++ toolchain the cpu target builds generated code with (compiler/targets/
// cpu_target.h: one module.so per artifact; compiler/targets/cpu_package.h: a package's
// libraries): the compiler ($CXX, else c++), the flags of generated code per instruction set,
// the BLAS and oneDNN libraries Kiln was configured with (compiler/CMakeLists.txt), and running
// a build step with its output kept in a log.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/cpu_features.h"

namespace kiln::compiler {

std::string cxx_command();
// -O3, OpenMP, the math flags and `isa`'s flags (no -shared, no output).
std::vector<std::string> generated_code_flags(Isa isa);
std::string blas_library();  // "" when Kiln was configured without one
std::string dnnl_library();  // "" when Kiln was configured without oneDNN

// Runs `argv` in `directory` with its stdout and stderr in `log`. Throws kiln::Error when the
// program cannot be found ("install g++ or set $CXX" for the compiler) or fails: the message
// names `what` (the file being built) and the log's first 20 lines.
void run_build_step(const std::vector<std::string>& argv, const std::filesystem::path& directory,
                    const std::filesystem::path& log, const std::string& what);

}  // namespace kiln::compiler
