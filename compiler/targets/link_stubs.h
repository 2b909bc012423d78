// Link stubs: what a cpu module links in place of the BLAS and oneDNN libraries. Linking
// module.so against the real libopenblas.so (36 MB) or libdnnl.so (40 MB) cost the linker 20 to
// 60 ms of reading (most of the link, a quarter of the MLP sample's whole compile), and all the link keeps of them is
// a DT_NEEDED entry naming their SONAME: `-shared` leaves the module's calls into them undefined,
// for the dynamic loader to bind when module.so is loaded. A stub is an empty shared library
// with the same SONAME, so the module that links it is the same (it needs libopenblas.so.0, found
// where the loader finds the real one) and its link reads 14 KB instead.
//
// A stub is made once per compile cache (runtime/compile_cache.h) by the C++ compiler and kept
// as an entry of its own, keyed by the compiler (its resolved path, size and modification time)
// and the SONAME, so that a damaged stub is rebuilt by the cache's checksums, and one whose
// SONAME is not the one asked for (a foreign file under the key) is rebuilt too, with one
// KILN_LOG=cache line, never linked. The stubs are used under `--no-cache` as well: they are
// the toolchain's, not a model's. When a stub cannot be made (no SONAME in the library, a cache
// that cannot be written, a compiler that fails), the module links the real library, as before,
// and KILN_LOG=cache says why.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::compiler {

// The DT_SONAME of an ELF shared library ("libopenblas.so.0"); "" when `library` cannot be
// read or is no ELF shared object with one (a linker script, another format).
std::string elf_soname(const std::filesystem::path& library);

// The compile cache key of the stub for `soname` made by the current compiler (cxx_identity).
std::string link_stub_key(const std::string& soname);

// What links `libraries` (absolute paths) into a module: each one's stub, made in the cache at
// `cache_dir` (else CompileCache::default_directory()) when missing, or the library itself.
struct LinkInputs {
  std::vector<std::string> arguments;  // for the compiler's command line, in order
  bool made_stub = false;              // a stub was built now (the first build in this cache)
};
LinkInputs link_inputs(const std::vector<std::string>& libraries, const std::optional<std::filesystem::path>& cache_dir);

}  // namespace kiln::compiler
