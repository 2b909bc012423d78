// Reading a cubin's ELF header and sections. See runtime/cuda/cubin_elf.h.
#include "runtime/cuda/cubin_elf.h"

#include <cstdint>
#include <cstring>

#include "kiln/error.h"

namespace kiln::cuda {

namespace {

constexpr uint16_t kMachineCuda = 190;  // EM_CUDA
constexpr int kNewAbiVersion = 8;       // e_ident[EI_ABIVERSION] from which the SM sits in bits 8-15 of e_flags

template <typename T>
T read_at(std::string_view image, size_t offset, const std::string& what) {
  if (offset + sizeof(T) > image.size()) fail("device code ", what, " is damaged: it ends inside its ELF tables");
  T value;
  std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;
}

}  // namespace

bool CubinInfo::has_section(std::string_view name) const {
  for (const std::string& section : section_names) {
    if (section == name) return true;
  }
  return false;
}

std::vector<std::string> CubinInfo::kernels() const {
  std::vector<std::string> names;
  for (const std::string& section : section_names) {
    if (section.rfind(".text.", 0) == 0) names.push_back(section.substr(6));
  }
  return names;
}

CubinInfo read_cubin(std::string_view image, const std::string& what) {
  if (image.size() < 64 || std::memcmp(image.data(), "\x7f" "ELF", 4) != 0) {
    fail("device code ", what, " is not a cubin (no ELF header)");
  }
  if (image[4] != 2 || image[5] != 1) fail("device code ", what, " is not a 64-bit little-endian ELF object");
  if (read_at<uint16_t>(image, 18, what) != kMachineCuda) {
    fail("device code ", what, " is an ELF object for another machine than a CUDA GPU");
  }
  CubinInfo info;
  uint32_t flags = read_at<uint32_t>(image, 48, what);
  int abi_version = static_cast<unsigned char>(image[8]);
  info.sm = int(abi_version >= kNewAbiVersion ? (flags >> 8) & 0xff : flags & 0xff);

  uint64_t section_offset = read_at<uint64_t>(image, 40, what);
  uint16_t section_size = read_at<uint16_t>(image, 58, what);
  uint16_t section_count = read_at<uint16_t>(image, 60, what);
  uint16_t names_index = read_at<uint16_t>(image, 62, what);
  if (section_count == 0) return info;
  if (section_size < 64 || names_index >= section_count) fail("device code ", what, " is damaged: bad ELF section table");
  auto header = [&](size_t index) { return size_t(section_offset) + index * section_size; };
  uint64_t names_offset = read_at<uint64_t>(image, header(names_index) + 24, what);
  uint64_t names_size = read_at<uint64_t>(image, header(names_index) + 32, what);
  if (names_offset + names_size > image.size()) fail("device code ", what, " is damaged: section names past its end");
  std::string_view names = image.substr(size_t(names_offset), size_t(names_size));
  for (size_t i = 0; i < section_count; ++i) {
    uint32_t name = read_at<uint32_t>(image, header(i), what);
    if (name >= names.size()) fail("device code ", what, " is damaged: a section name past the name table");
    info.section_names.emplace_back(names.data() + name, strnlen(names.data() + name, names.size() - name));
  }
  return info;
}

bool cubin_runs_on(int cubin_sm, int device_sm) { return cubin_sm / 10 == device_sm / 10 && cubin_sm % 10 <= device_sm % 10; }

}  // namespace kiln::cuda
