// CpuArtifact: the cpu target's runtime loader (runtime/artifact.h). Loads a compiled model
// from its artifact directory (manifest.json + module.so, the C ABI of runtime/compiled_abi.h,
// the manifest format of runtime/cpu/artifact_manifest.h) and runs it on Tensors: checks what it
// is given, lets the module's kiln_bind check its guards and bind the shape symbols, allocates
// the outputs, reuses one workspace across runs, and turns every failure into a kiln::Error.
// Fallback nodes (graph nodes the generated code leaves to the reference kernels) call back
// into a FallbackHandler.
//
// Loading checks the manifest's format and ABI, that this CPU can run the module's instruction
// set, and that the module exports every entry point and reports the same ABI version.
// run() may be called from several threads; calls on one artifact run one at a time.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/artifact.h"
#include "runtime/cpu/artifact_manifest.h"
#include "kiln/tensor.h"

namespace kiln {

class CpuArtifact final : public Artifact {
 public:
  // Throws kiln::Error for a missing or garbled manifest, a wrong format or ABI, an instruction
  // set this CPU lacks, a library that does not load or misses an entry point.
  static CpuArtifact load(const std::filesystem::path& directory);

  ~CpuArtifact() override;
  CpuArtifact(CpuArtifact&&) noexcept;
  CpuArtifact& operator=(CpuArtifact&&) noexcept;

  const std::filesystem::path& directory() const override;
  const ArtifactManifest& manifest() const;
  const std::vector<ArtifactTensor>& inputs() const override { return manifest().inputs; }
  const std::vector<ArtifactTensor>& outputs() const override { return manifest().outputs; }
  const std::vector<ArtifactParameter>& parameters() const override { return manifest().parameters; }
  const std::vector<std::string>& symbols() const { return manifest().symbols; }
  const std::vector<std::string>& fallbacks() const override { return manifest().fallbacks; }
  Isa isa() const { return manifest().isa; }
  const std::string& key() const { return manifest().key; }

  // Checks the guards on `inputs` (any strides; the module's guards decide what they accept)
  // and returns the shape symbols' values (manifest "symbols" order). Throws GuardError with
  // the module's message on a failed guard, kiln::Error on a wrong input count or device.
  std::vector<int64_t> bind(const std::vector<Tensor>& inputs) const;

  // Runs the model: returns fresh contiguous outputs. `parameters` in manifest order, each
  // contiguous with the manifest's dtype and shape. `fallback` is required when the manifest
  // lists fallbacks. `num_threads` 0: the OpenMP default.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                          const FallbackHandler& fallback = {}, int num_threads = 0) override;

  // Bytes of the workspace kept for runs (0 before the first run).
  size_t workspace_capacity() const;

 private:
  struct Loaded;
  explicit CpuArtifact(std::unique_ptr<Loaded> loaded);
  std::unique_ptr<Loaded> loaded_;
};

}  // namespace kiln
