// CompileOptions and CompileResult: what compiling a graph for any target takes and reports
// (kiln::compile in kiln/model.h; inside Kiln the driver, compiler/compile_driver.h, and the
// targets, compiler/target_registry.h). One struct for every target: the common options, then
// the few that only one target reads.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "kiln/isa.h"

namespace kiln {

// Which input dims a compiled callable (kiln::compile(fn), kiln::compile_training) traces as
// symbols: automatic, a dim once it changes between calls (TorchDynamo's automatic dynamic
// shapes); always, every dim from the first call; never, none (each new size recompiles).
enum class DynamicShapes { automatic, always, never };

struct CompileOptions {
  std::string target = "cpu";  // cpu, cuda (compiled), interp or eager (run as a graph): `kiln --help`
  std::optional<std::filesystem::path> cache_dir;  // default: CompileCache's
  bool use_cache = true;
  bool fuse = true;     // false: one kernel per loop node (debugging)
  bool freeze = false;  // constant-fold parameters
  // Also copy the artifact's files here (cpu: module.so, manifest.json, module.cpp; cuda:
  // kernels.cu, launch_plan.json, device.cubin); refuses a directory that exists and is not
  // empty unless `overwrite`.
  std::optional<std::filesystem::path> output_dir;
  bool overwrite = false;
  // Called as each stage ends, with its wall time in milliseconds.
  std::function<void(const std::string& stage, double milliseconds)> on_stage;

  // cpu only: the instruction set; default resolve_isa (KILN_ISA, else the host's best).
  std::optional<Isa> isa;
  // cpu only: how many chunks of its batch a model whose samples are computed apart runs as, side
  // by side, each chunk on one thread (passes/batch_split.h): 0 chooses (for the CPUs this process
  // may run on when it compiles); 1 never splits; 2 to 64 exactly that many, where they divide
  // the batch.
  int batch_chunks = 0;
  // cuda only: the GPU architecture (80 for sm_80); default the device's, else 80.
  std::optional<int> sm;
};

struct CompileResult {
  std::string target;
  std::string key;  // of the artifact in the compile cache
  bool cache_hit = false;
  size_t kernel_count = 0;
  std::string details;  // what the target adds, for people: "isa avx2", "1 library call, sm_90"
  // Where the artifact is: output_dir when given, else its cache entry (or, without the cache,
  // the directory it was built in).
  std::filesystem::path artifact_dir;
};

}  // namespace kiln
