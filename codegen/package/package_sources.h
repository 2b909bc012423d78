// The source files of a package (`kiln compile MODEL -o DIR`; compiler/package_writer.h writes
// and builds them): from the C++ module the cpu emitter printed (codegen/cpp/cpp_emitter.h) and
// a description of the model, the texts of
//   NAME.h            the C API and a C++ class over it (codegen/package/kiln_package_header.h);
//   NAME.cpp          the API's implementation: weights, ISA choice, checks, buffers
//                     (codegen/package/kiln_package_wrapper.inc, filled with the model's tables);
//   NAME_kernels.inc  the module's source, unchanged;
//   NAME_<isa>.cpp    one per instruction set: the module with its entry points renamed
//                     (NAME_<isa>_kiln_run, ...), so that the sets, and several packages,
//                     link into one program;
//   CMakeLists.txt    `add_subdirectory(DIR)` gives the static library target NAME.
// A CUDA package (target "cuda") has instead of NAME_kernels.inc and NAME_<isa>.cpp:
//   NAME_kernels.cu   the CUDA module's source, unchanged (it builds with nvcc and NVRTC);
//   NAME_cuda.cpp     its host side (codegen/package/cuda_package_sources.h), which NAME.cpp
//                     calls as its one build, "cuda", through the device entries of its table;
// and the device code built from NAME_kernels.cu (spec.device_image_file), which the
// package step writes.
// Everything but the C API has internal linkage or a NAME_ prefix.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/cpu_features.h"
#include "kiln/dtype.h"

namespace kiln::codegen {

struct PackageTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::string> shape;  // each dim as text: "784" or a symbol "s0"
};

struct PackageParameter {
  std::string name;
  int64_t offset = 0;  // bytes from the start of the weights file
  int64_t bytes = 0;
};

// A value the kernels compute that run copies back after each run instead of returning it (the
// mutations of the graph's signature, as `kiln run` writes them back: ir/graph_signature.h):
// kernel output `output` into the caller's input `input`, or into the model's own copy of
// parameter `parameter` (a buffer such as batch norm's running mean), which later runs read.
struct PackageWriteBack {
  int64_t output = 0;
  int64_t input = -1;
  int64_t parameter = -1;
};

struct PackageSpec {
  std::string name;            // a C identifier: every exported symbol starts with it
  std::string source;          // the model file, for the header's first line
  std::string kiln_version;
  std::string description;     // the header's summary of inputs and outputs (filled by package_files)
  std::vector<PackageTensor> inputs;
  // The model's outputs as `kiln run` prints them: names, order, and no mutation outputs.
  std::vector<PackageTensor> outputs;
  // The kernels' outputs (their names are the simplified graph's), which kernel output each of
  // `outputs` is, and the write-backs of the others. Empty kernel_outputs: the same as outputs.
  std::vector<PackageTensor> kernel_outputs;
  std::vector<int64_t> output_positions;
  std::vector<PackageWriteBack> write_backs;
  std::vector<PackageParameter> parameters;  // in the order the kernels take them
  int64_t symbol_count = 0;
  uint64_t weights_bytes = 0;
  uint64_t weights_checksum = 0;  // XXH64 (runtime/checksum.h) of the whole weights file
  std::vector<Isa> isas;          // best first (cpu)
  bool embed_weights = false;     // NAME.cpp .incbin's NAME.safetensors
  bool uses_blas = false;
  bool uses_dnnl = false;
  // cpu, with oneDNN's convolutions (uses_dnnl): im2col + GEMM kernels of the same interface ship
  // too (NAME_kernels_portable.inc), which a CMake build without oneDNN compiles instead.
  bool portable_kernels = false;
  std::string blas_library;       // the BLAS Kiln links, the CMake file's default
  std::string fallback_handler;   // NAME.cpp's handler of the fallback nodes (package_fallbacks.h), or ""
  std::string target = "cpu";     // "cpu" or "cuda"
  // cuda: the device code's file in the package (NAME.fatbin, NAME.cubin or NAME.ptx), the
  // architecture it was built for ("sm_80"), and NAME_cuda.cpp's text.
  std::string device_image_file;
  std::string cuda_architecture;
  std::string cuda_host_source;
};

// The compiled-artifact ABI's C types (KilnTensorDesc, KilnRunArgs) as the cpu prelude declares
// them: what NAME.cpp and a CUDA package's host code pass the kernels' entry points.
std::string compiled_abi_text();

// Whether `name`, a C identifier, cannot name a package: a C or C++ keyword, a standard macro the
// package's sources see, an identifier reserved to the implementation, or one the package uses.
bool is_reserved_package_name(const std::string& name);

// Throws kiln::Error when `name` is not a C identifier (or is one the package reserves).
void check_package_name(const std::string& name);

// File name -> text, for every source file of the package. `module_source`: the cpu module's
// source, or the CUDA module's.
// `portable_source`: with spec.portable_kernels, the im2col + GEMM kernels' module source.
std::map<std::string, std::string> package_files(const PackageSpec& spec, const std::string& module_source,
                                                 const std::string& portable_source = "");

}  // namespace kiln::codegen
