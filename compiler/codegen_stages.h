// The code generator's stages as `kiln dump --stage` prints them, for both backends: the loop
// IR lowered from the simplified graph ("loops"), the kernels with what each fuses and the
// memory plan ("scheduled"), the C++ backend's source ("cpp"), and the CUDA backend's launch
// plan (as // comments) followed by its kernels ("cuda"; no NVRTC or GPU needed).
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"

namespace kiln::compiler {

struct CodegenStageOptions {
  bool fuse = true;     // false: one kernel per loop node
  bool freeze = false;  // constant-fold parameters
};

// Whether `stage` is one of "loops", "scheduled", "cpp", "cuda".
bool is_codegen_stage(std::string_view stage);
// Runs the pipeline on a copy of `graph` and returns the text of codegen stage `stage`.
std::string dump_codegen_stage(const ir::Graph& graph, std::string_view stage, const CodegenStageOptions& options = {});

}  // namespace kiln::compiler
