// The CPU backend driver: graph -> passes (simplified stage) -> lowering -> scheduling -> C++
// -> the system compiler -> a shared object in the compile cache -> a loaded CompiledArtifact.
//
// The cache key hashes the generated source (a function of the final graph and the options),
// the instruction set, the C++ compiler command and flags, the BLAS library and Kiln's
// version: a second compile of the same model finds the entry and compiles no C++; a change of
// the code generator changes the source and so the key (an old entry is never reused). Two
// processes compiling one key at once take the cache's per-key lock; the second finds the
// first one's entry. Parameters are not part of the key: they are passed at run time, read
// from the model's safetensors file (mmap'd by the IR loader).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/schedule.h"
#include "compiler/codegen_stages.h"  // kiln dump's codegen stages, which callers of this header use
#include "ir/graph.h"
#include "runtime/compiled_artifact.h"
#include "runtime/cpu_features.h"

namespace kiln::compiler {

struct CpuCompileOptions {
  std::optional<Isa> isa;                         // default: resolve_isa (KILN_ISA, else the host's)
  std::optional<std::filesystem::path> cache_dir;  // default: CompileCache's
  bool use_cache = true;
  bool fuse = true;       // false: one kernel per loop node (debugging)
  bool freeze = false;    // constant-fold parameters
  // Also copy the artifact (module.so, manifest.json, module.cpp) here; refuses to overwrite a
  // directory that exists and is not empty unless `overwrite`.
  std::optional<std::filesystem::path> output_dir;
  bool overwrite = false;
  // Called as each stage ends, with its wall time in milliseconds.
  std::function<void(const std::string& stage, double milliseconds)> on_stage;
};

struct CpuCompileResult {
  std::string key;
  bool cache_hit = false;
  size_t kernel_count = 0;
  std::filesystem::path artifact_dir;
};

class CpuModel {
 public:
  // Compiles (or loads from the cache) `graph`, which may be at any stage; the graph is copied.
  static CpuModel compile(const ir::Graph& graph, const CpuCompileOptions& options = {});

  // Runs on inputs by placeholder name; returns outputs in the graph's output order, less the
  // mutation outputs of the graph signature, which it copies back into their inputs,
  // parameters and buffers.
  // Non-contiguous inputs are copied contiguous first (the compiled code assumes contiguity).
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, int num_threads = 0);

  const CpuCompileResult& result() const { return result_; }
  const CompiledArtifact& artifact() const { return artifact_; }
  const ir::Graph& graph() const { return graph_; }

 private:
  CpuModel(ir::Graph graph, CompiledArtifact artifact, CpuCompileResult result);
  ir::Graph graph_;  // the final graph: parameters and fallback nodes come from it
  CompiledArtifact artifact_;
  CpuCompileResult result_;
  std::vector<Tensor> parameters_;
};

}  // namespace kiln::compiler
