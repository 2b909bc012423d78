// CubinInfo: what the ELF header and section table of a cubin say: that it is a CUDA ELF
// object (EM_CUDA), the real architecture it was built for (sm_80 = 80), and its sections
// (".text.<kernel>" per kernel, ".nv.info" with the kernels' parameter layout). Used to check
// cached device code before it is trusted, and by tests. Needs no GPU.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::cuda {

struct CubinInfo {
  int sm = 0;                              // 80 for sm_80
  std::vector<std::string> section_names;  // in section-table order

  bool has_section(std::string_view name) const;
  // The kernel names, from the ".text.<name>" sections.
  std::vector<std::string> kernels() const;
};

// Parses `image` (a 64-bit little-endian ELF of machine EM_CUDA); throws kiln::Error naming
// `what` and the first thing wrong (too short, not ELF, not a CUDA object, a section table
// past the end).
CubinInfo read_cubin(std::string_view image, const std::string& what);

// Whether a cubin built for `cubin_sm` runs on a GPU of `device_sm` (both as 80 for sm_80): a
// cubin's machine code runs on GPUs of its major version and the same or a later minor one
// (sm_80's on sm_86, not on sm_90; sm_86's not on sm_80). PTX has no such limit: the driver
// compiles it for the GPU at load.
bool cubin_runs_on(int cubin_sm, int device_sm);

}  // namespace kiln::cuda
