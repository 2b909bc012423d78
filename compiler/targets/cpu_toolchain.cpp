// The system C++ toolchain of the cpu target. See compiler/targets/cpu_toolchain.h.
#include "compiler/targets/cpu_toolchain.h"

#include <cstdlib>
#include <fstream>

#include "compiler/child_process.h"
#include "kiln/error.h"

#ifndef KILN_BLAS_LIBRARY
#define KILN_BLAS_LIBRARY ""
#endif
// oneDNN, which modules with convolutions link (compiler/CMakeLists.txt; "" when not found:
// convolutions then lower to im2col + GEMM).
#ifndef KILN_DNNL_LIBRARY
#define KILN_DNNL_LIBRARY ""
#endif

namespace kiln::compiler {

namespace {

std::string read_head(const std::filesystem::path& file, size_t max_lines) {
  std::ifstream in(file);
  std::string line, out;
  for (size_t i = 0; i < max_lines && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

}  // namespace

std::string cxx_command() {
  const char* cxx = std::getenv("CXX");
  return cxx != nullptr && *cxx != '\0' ? cxx : "c++";
}

std::vector<std::string> generated_code_flags(Isa isa) {
  std::vector<std::string> flags = {"-O3", "-std=c++17", "-fPIC", "-fopenmp", "-fno-math-errno", "-fno-trapping-math",
                                    "-fno-semantic-interposition"};
  for (const std::string& flag : isa_compiler_flags(isa)) flags.push_back(flag);
  return flags;
}

std::string blas_library() { return KILN_BLAS_LIBRARY; }
std::string dnnl_library() { return KILN_DNNL_LIBRARY; }

void run_build_step(const std::vector<std::string>& argv, const std::filesystem::path& directory,
                    const std::filesystem::path& log, const std::string& what) {
  int status = run_child_process(argv, directory, log);
  if (status == 127) {
    if (argv[0] == cxx_command())
      fail("the C++ compiler '", argv[0], "' was not found: install g++ or set $CXX to a C++ compiler");
    fail("'", argv[0], "' was not found (needed to build ", what, ")");
  }
  if (status != 0) {
    std::string tool = argv[0] == cxx_command() ? "the C++ compiler '" + argv[0] + "'" : "'" + argv[0] + "'";
    fail(tool, " failed (exit ", status, ") on ", what, ":\n", read_head(log, 20));
  }
}

}  // namespace kiln::compiler
