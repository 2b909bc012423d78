// The manifest.json of a package (`kiln compile MODEL -o DIR`, compiler/package_writer.h): the
// package step writes it, kiln::Package (include/kiln/package.h) reads it.
//
// manifest.json (JSON; fields required unless said):
//   {"format": "kiln-package", "abi": 2, "name": "mlp", "kiln_version": "0.1.0", "source": "mlp.kiln",
//    "isas": ["avx512", "avx2", "scalar"],
//    "inputs": [{"name": "x", "dtype": "f32", "shape": ["s0", "784"]}], "outputs": [...],
//    "symbols": ["s0"],
//    "parameters": [{"name": "fc1.weight", "dtype": "f32", "shape": [128, 784], "offset": 64, "bytes": 401408}],
//    "weights": {"file": "mlp.safetensors", "bytes": 401472, "xxh64": "<16 hex digits>"},
//    "embedded_weights": false, "header": "mlp.h",
//    "libraries": {"shared": "libmlp.so", "static": "libmlp.a"}, "requires": ["openmp", "blas"],
//    "mutated_inputs": ["y"]}
// - abi: KILN_PACKAGE_ABI (runtime/package_abi.h) of the package's C API;
// - shapes: each dim as text, an integer or a shape symbol (outputs may hold expressions of them);
// - parameters: in the kernels' order; offset and bytes locate each in the weights file;
// - outputs: the model's outputs as `kiln run` prints them (names, order; no mutation outputs);
// - requires: what the libraries link beyond libc and libstdc++ ("openmp", "blas", "onednn");
// - mutated_inputs (optional, absent when none): the inputs each run writes in place, as the
//   model's in-place ops write them (`kiln run` writes them back too).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/package.h"

namespace kiln {

struct PackageParameterSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t bytes = 0;
};

struct PackageManifest {
  int64_t abi = 2;  // KILN_PACKAGE_ABI
  std::string name;
  std::string kiln_version;
  std::string source;
  std::vector<std::string> isas;
  std::vector<PackageTensorInfo> inputs;
  std::vector<PackageTensorInfo> outputs;
  std::vector<std::string> symbols;
  std::vector<PackageParameterSpec> parameters;
  std::string weights_file;
  int64_t weights_bytes = 0;
  std::string weights_xxh64;
  bool embedded_weights = false;
  std::string header;
  std::string shared_library;
  std::string static_library;
  std::vector<std::string> requires_;
  std::vector<std::string> mutated_inputs;
};

inline constexpr const char* kPackageFormat = "kiln-package";
inline constexpr const char* kPackageManifestFile = "manifest.json";

std::string package_manifest_to_json(const PackageManifest& manifest);  // indented, ends in "\n"
// Throws kiln::Error naming the file and the field at fault.
PackageManifest read_package_manifest(const std::filesystem::path& file);
// Whether `path` is a folder whose manifest.json says it is a package (not an artifact).
bool is_package_directory(const std::filesystem::path& path);

// A loaded package, created through its C API with its weights: those compiled into the
// library when it has them (--embed-weights), else the manifest's file in the package folder;
// `weights` names another file instead.
}  // namespace kiln
