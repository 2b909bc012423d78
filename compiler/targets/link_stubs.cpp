// Link stubs of the cpu target. See compiler/targets/link_stubs.h.
#include "compiler/targets/link_stubs.h"

#include <elf.h>

#include <cstring>
#include <fstream>

#include "compiler/targets/cpu_toolchain.h"
#include "kiln/error.h"
#include "runtime/checksum.h"
#include "runtime/compile_cache.h"
#include "runtime/log.h"

namespace kiln::compiler {

namespace {

namespace fs = std::filesystem;

// Reads `count` bytes at `offset` of `in` into `out`; false past the end.
bool read_at(std::ifstream& in, uint64_t offset, void* out, size_t count) {
  in.seekg(std::streamoff(offset));
  in.read(static_cast<char*>(out), std::streamsize(count));
  return bool(in);
}

}  // namespace

std::string link_stub_key(const std::string& soname) {
  std::string content = "kiln link stub 1\ncxx " + cxx_identity() + "\nsoname " + soname + "\n";
  Checksum64 a(0), b(0x9E3779B97F4A7C15ULL);
  a.update(content.data(), content.size());
  b.update(content.data(), content.size());
  return checksum_hex(a.digest()) + checksum_hex(b.digest());
}

namespace {

// An empty shared library named `soname` whose DT_SONAME is `soname`, made in `directory`.
void make_stub(const fs::path& directory, const std::string& soname) {
  std::vector<std::string> argv = {cxx_command(), "-shared", "-nostdlib", "-x", "c", "/dev/null",
                                   "-Wl,-soname," + soname, "-o", soname};
  run_build_step(argv, directory, directory / "stub.log", "a link stub for " + soname);
  fs::remove(directory / "stub.log");
  if (elf_soname(directory / soname) != soname) fail("the link stub made for ", soname, " has another SONAME");
}

// The stub's path for `library`, made when missing; std::nullopt (logged) when none can be used.
std::optional<fs::path> stub_for(const std::string& library, CompileCache& cache, bool& made) {
  std::string soname = elf_soname(library);
  if (soname.empty() || soname == "." || soname == ".." || soname.find('/') != std::string::npos) {
    log("cache", "no link stub for " + library + " (no SONAME read from it): the module links the library itself");
    return std::nullopt;
  }
  bool foreign = false;  // the cache asks twice (before and after taking the lock): one line
  auto usable = [&](const fs::path& entry) {
    if (elf_soname(entry / soname) == soname) return true;
    if (!foreign) log("cache", "the link stub entry " + entry.string() + " is not a stub of " + soname + ": it is rebuilt, not used");
    foreign = true;
    return false;
  };
  try {
    CacheEntry entry = cache.get_or_build(link_stub_key(soname), [&](const fs::path& staging) { make_stub(staging, soname); }, usable);
    if (std::string damage = cache.last_damage(); !damage.empty())
      log("cache", "the link stub entry " + damage + "; it was rebuilt, not used");
    made = made || !entry.hit;
    return entry.directory / soname;
  } catch (const Error& error) {
    log("cache", std::string("no link stub for ") + library + " (" + error.what() + "): the module links the library itself");
  } catch (const fs::filesystem_error& error) {
    log("cache", std::string("no link stub for ") + library + " (" + error.what() + "): the module links the library itself");
  }
  return std::nullopt;
}

}  // namespace

std::string elf_soname(const fs::path& library) {
  std::ifstream in(library, std::ios::binary);
  Elf64_Ehdr header;
  if (!in || !read_at(in, 0, &header, sizeof header)) return "";
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_type != ET_DYN || header.e_shentsize != sizeof(Elf64_Shdr))
    return "";
  for (uint16_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr dynamic;
    if (!read_at(in, header.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), &dynamic, sizeof dynamic)) return "";
    if (dynamic.sh_type != SHT_DYNAMIC) continue;
    Elf64_Shdr strings;
    if (dynamic.sh_link >= header.e_shnum ||
        !read_at(in, header.e_shoff + uint64_t(dynamic.sh_link) * sizeof(Elf64_Shdr), &strings, sizeof strings))
      return "";
    for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= dynamic.sh_size; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      if (!read_at(in, dynamic.sh_offset + at, &entry, sizeof entry) || entry.d_tag == DT_NULL) return "";
      if (entry.d_tag != DT_SONAME || entry.d_un.d_val >= strings.sh_size) continue;
      std::string name;
      char c = 0;
      in.seekg(std::streamoff(strings.sh_offset + entry.d_un.d_val));
      while (name.size() < 4096 && in.get(c) && c != '\0') name += c;
      return in && c == '\0' ? name : "";
    }
    return "";
  }
  return "";
}

LinkInputs link_inputs(const std::vector<std::string>& libraries, const std::optional<fs::path>& cache_dir) {
  LinkInputs inputs;
  if (libraries.empty()) return inputs;
  CompileCache cache(cache_dir);
  for (const std::string& library : libraries) {
    std::optional<fs::path> stub = stub_for(library, cache, inputs.made_stub);
    if (!stub) {
      inputs.arguments.push_back(library);
      continue;
    }
    // Linked whether or not the module's code ends up calling it (as the library was), even
    // where the compiler passes --as-needed by default.
    inputs.arguments.insert(inputs.arguments.end(), {"-Wl,--push-state,--no-as-needed", stub->string(), "-Wl,--pop-state"});
  }
  return inputs;
}

}  // namespace kiln::compiler
