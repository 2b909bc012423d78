// ArtifactManifest: the manifest.json of a cpu target's artifact, which tells its loader
// (runtime/cpu/cpu_artifact.h) what the module.so beside it expects and produces. The
// compiler writes it (write_artifact_manifest); the loader reads it (read_artifact_manifest).
//
// Format (JSON; every field required, unknown fields ignored):
//   {"format": "kiln-artifact", "abi": 1, "kiln_version": "0.1.0", "isa": "avx512", "key": "<hex>",
//    "inputs": [{"name": "x", "dtype": "f32", "rank": 2}], "outputs": [{"name": "probs", "dtype": "f32", "rank": 2}],
//    "parameters": [{"name": "fc1.weight", "dtype": "f32", "shape": [512, 784]}],
//    "symbols": ["s0"], "fallbacks": ["scatter_1"], "library": "module.so", "source": "module.cpp"}
// - abi: kKilnAbiVersion of runtime/compiled_abi.h the module was generated against;
// - isa: "scalar", "avx2" or "avx512" (runtime/cpu_features.h), the instruction set it was built for;
// - key: the compile cache key it was built under (may be empty for an artifact built outside it);
// - inputs, outputs: in graph placeholder and output order; dtypes by their short names;
// - parameters: in the order kiln_run takes their pointers; each must be passed contiguous with
//   exactly this dtype and shape;
// - symbols: the shape symbols kiln_bind binds, in order; fallbacks: the graph nodes run by the
//   reference kernel through the fallback callback, in fallback-index order;
// - library, source: file names relative to the artifact directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/artifact.h"
#include "runtime/compiled_abi.h"
#include "runtime/cpu_features.h"
#include "kiln/dtype.h"

namespace kiln {

struct ArtifactManifest {
  int64_t abi = kKilnAbiVersion;
  std::string kiln_version;
  Isa isa = Isa::scalar;
  std::string key;
  std::vector<ArtifactTensor> inputs;
  std::vector<ArtifactTensor> outputs;
  std::vector<ArtifactParameter> parameters;
  std::vector<std::string> symbols;
  std::vector<std::string> fallbacks;
  std::string library = "module.so";
  std::string source = "module.cpp";
};

inline constexpr const char* kArtifactFormat = "kiln-artifact";
inline constexpr const char* kArtifactManifestFile = "manifest.json";

// Parses manifest text; `where` (the file) starts every error message, which names the field
// at fault ("inputs[0].dtype"). The abi is read, not checked: the loader checks it.
ArtifactManifest parse_artifact_manifest(const std::string& text, const std::string& where);
// Reads `file`; a missing file or bad contents throw kiln::Error naming it.
ArtifactManifest read_artifact_manifest(const std::filesystem::path& file);

std::string artifact_manifest_to_json(const ArtifactManifest& manifest);  // indented, ends in "\n"
// Writes `file` atomically (runtime/atomic_file.h).
void write_artifact_manifest(const std::filesystem::path& file, const ArtifactManifest& manifest);

}  // namespace kiln
