// The system C++ toolchain of the cpu target. See compiler/targets/cpu_toolchain.h.
#include "compiler/targets/cpu_toolchain.h"

#include <cstdlib>
#include <stdlib.h>
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
#ifndef KILN_OPENMP_LIBRARY
#define KILN_OPENMP_LIBRARY "libgomp.so.1"
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
  for (const char* variable : {"KILN_CXX", "CXX"}) {
    const char* cxx = std::getenv(variable);
    if (cxx != nullptr && *cxx != '\0') return cxx;
  }
  return "c++";
}

std::string cxx_identity() {
  namespace fs = std::filesystem;
  const std::string command = cxx_command();
  std::vector<fs::path> candidates;
  if (command.find('/') != std::string::npos) {
    candidates.push_back(command);
  } else if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string folders = path;
    for (size_t start = 0; start <= folders.size();) {
      size_t end = folders.find(':', start);
      if (end == std::string::npos) end = folders.size();
      candidates.push_back(fs::path(end == start ? "." : folders.substr(start, end - start)) / command);
      start = end + 1;
    }
  }
  for (const fs::path& candidate : candidates) {
    std::error_code error;
    fs::path resolved = fs::canonical(candidate, error);
    if (error || !fs::is_regular_file(resolved, error)) continue;
    uintmax_t size = fs::file_size(resolved, error);
    if (error) continue;
    auto modified = fs::last_write_time(resolved, error).time_since_epoch().count();
    if (error) continue;
    return command + " = " + resolved.string() + " " + std::to_string(size) + " bytes, modified " + std::to_string(modified);
  }
  return command;
}

std::vector<std::string> generated_code_flags(Isa isa) {
  std::vector<std::string> flags = {"-O3", "-std=c++17", "-fPIC", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math",
                                    "-fno-semantic-interposition"};
  for (const std::string& flag : isa_compiler_flags(isa)) flags.push_back(flag);
  return flags;
}

std::string blas_library() { return KILN_BLAS_LIBRARY; }
std::string openmp_library() { return KILN_OPENMP_LIBRARY; }
std::string dnnl_library() { return KILN_DNNL_LIBRARY; }

namespace {

// Copies `files` into a new folder kiln-failed-build-XXXXXX of the temporary directory; returns
// the copies' paths (the originals' when no folder could be made: they are then named as they are).
std::vector<std::filesystem::path> keep_copies(const std::vector<std::filesystem::path>& files) {
  std::error_code error;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(error);
  if (error) tmp = "/tmp";
  std::string pattern = (tmp / "kiln-failed-build-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return files;
  std::vector<std::filesystem::path> kept;
  for (const std::filesystem::path& file : files) {
    std::filesystem::path copy = std::filesystem::path(pattern) / file.filename();
    std::filesystem::copy_file(file, copy, error);
    kept.push_back(error ? file : copy);
  }
  return kept;
}

// Whether the compiler's output `log` reports an error at a line of `file`, as GCC and Clang
// print one: "file:LINE:COLUMN: error: ..." (or "fatal error").
bool located_error(const std::string& log, const std::string& file) {
  for (size_t at = log.find(file + ":"); at != std::string::npos; at = log.find(file + ":", at + 1)) {
    size_t end = log.find('\n', at);
    std::string line = log.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (line.find(": error:") != std::string::npos || line.find(": fatal error:") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

void compile_generated_code(const std::vector<std::string>& argv, const std::filesystem::path& directory,
                            const std::filesystem::path& log, const std::filesystem::path& source, bool copy_kept) {
  int status = run_child_process(argv, directory, log);
  if (status == 127) fail("the C++ compiler '", argv[0], "' was not found: install g++ or set $CXX to a C++ compiler");
  if (status == 0) return;
  std::filesystem::path source_path = source.is_absolute() ? source : directory / source;
  // Without an error located in the source ("module.cpp:12:3: error: ..."), the compiler itself
  // failed (a crash, a kill, $CXX naming something else): the user's toolchain, as before.
  std::string head = read_head(log, 20);
  if (!located_error(head, source_path.filename().string()))
    fail("the C++ compiler '", argv[0], "' failed (exit ", status, ") on the generated code in ", source_path.string(), ":\n", head);
  report_rejected_code("the C++ compiler '" + argv[0] + "'", " (exit " + std::to_string(status) + ")", source_path, log,
                       head, copy_kept);
}

void report_rejected_code(const std::string& compiler, const std::string& status, const std::filesystem::path& source,
                          const std::filesystem::path& log, const std::string& head, bool copy_kept) {
  std::vector<std::filesystem::path> kept = {source, log};
  if (copy_kept) kept = keep_copies(kept);
  throw InternalError(compiler + " rejected the generated code" + status + ": the generated source is kept at " +
                      kept[0].string() + " and the compiler's output at " + kept[1].string() + "; its first lines:\n" +
                      head);
}

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
