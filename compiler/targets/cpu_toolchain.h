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

// The system compiler: $KILN_CXX, else $CXX, else c++. It builds generated code when the
// in-process compiler (compiler/targets/in_process_compiler.h) is not used, and always makes the
// link stubs and builds packages.
std::string cxx_command();
// Which compiler cxx_command() runs, for cache keys: its path (found on $PATH when it names no
// folder, symbolic links resolved), size and modification time, so that an entry records the
// compiler that built it and a compiler upgraded or switched in place (update-alternatives)
// changes the key. The command itself when it cannot be found.
std::string cxx_identity();
// -O3, OpenMP's simd loops (-fopenmp-simd: a module starts its parallel regions itself, through
// libgomp), the math flags and `isa`'s flags (no -shared, no output).
std::vector<std::string> generated_code_flags(Isa isa);
std::string blas_library();  // "" when Kiln was configured without one
std::string openmp_library();  // GNU OpenMP (libgomp), which every module links
std::string dnnl_library();  // "" when Kiln was configured without oneDNN

// Runs `argv` in `directory` with its stdout and stderr in `log`. Throws kiln::Error when the
// program cannot be found ("install g++ or set $CXX" for the compiler) or fails: the message
// names `what` (the file being built) and the log's first 20 lines.
void run_build_step(const std::vector<std::string>& argv, const std::filesystem::path& directory,
                    const std::filesystem::path& log, const std::string& what);

// Runs the C++ compiler on generated code as run_build_step does, except when the compiler runs
// and rejects it (an error located in `source`, "module.cpp:12:3: error: ..."): that is a bug in
// Kiln's code generator, so this throws kiln::InternalError (exit 2 from the CLI) with the
// compiler's diagnostic (the log's first 20 lines) and where `source`
// and the log are kept for the report. With `copy_kept`, both are copied first into a new folder
// kiln-failed-build-XXXXXX of the temporary directory ($TMPDIR, else /tmp), for a `directory`
// that the caller deletes (a cache staging folder); without, they stay where they are (a package).
void compile_generated_code(const std::vector<std::string>& argv, const std::filesystem::path& directory,
                            const std::filesystem::path& log, const std::filesystem::path& source, bool copy_kept);

// Throws the kiln::InternalError of generated code that `compiler` ("the C++ compiler 'g++'")
// rejected (`status`: " (exit 1)" or ""), with the diagnostic's `head` and where `source` and
// `log` are kept (copied first into a new kiln-failed-build-XXXXXX folder with `copy_kept`).
[[noreturn]] void report_rejected_code(const std::string& compiler, const std::string& status,
                                       const std::filesystem::path& source, const std::filesystem::path& log,
                                       const std::string& head, bool copy_kept);

}  // namespace kiln::compiler
