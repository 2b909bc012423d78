// LaunchPlan: launch_plan.json, the cuda target's account of how the host runs its kernels: the
// buffers, the workspace, how each shape symbol is bound, and every step in order. The compiler
// writes it (compiler/targets/cuda_target.h, launch_plan_json); the loader
// (runtime/cuda/cuda_artifact.h) reads and checks it here, with runtime/ types only.
//
// Format (JSON; every field required unless marked optional; unknown fields are ignored):
//   {"format": "kiln-cuda-launch-plan", "version": 2, "architecture": "sm_90",
//    "nvrtc_options": ["-default-device", ...],
//    "symbols": [{"name": "s0", "input": 0, "dim": 0,    // bound from that input's dim,
//                 "min": 1, "max": 1024}],             // within [min, max] (optional: min 0, max none)
//    "inputs": ["x"], "parameters": ["fc1.weight"], "outputs": ["probs"],  // buffer names, in order
//    "fallbacks": ["scatter_1"],  // graph nodes the host runs, fallback-index order
//    "workspace_bytes": "<size>", "scratch_offset": "<size>",
//    "buffers": [{"id": 0, "name": "x", "kind": "input", "dtype": "f32", "shape": ["s0", "784"],
//                 "source": "x" (optional), "workspace_offset": "<size>" (intermediates only)}],
//    "steps": [
//      {"kernel": "k0", "grid": "<size>", "block": 256, "shared_bytes": 0,
//       "arguments": ["buffer x", "symbol s0", "scratch"]},
//      {"library": "gemm", "node": "mm", "graph_node": "mm", "inputs": [VIEW, VIEW], "outputs": [VIEW]},
//      {"library": "gemm_lt", ... as gemm ..., "epilogue": "bias_relu",
//       "bias": {"buffer": "b", "offset": "<size>"} (with a bias epilogue), "output": "relu"},
//      {"library": "fallback", "node": "scatter_1", "graph_node": "scatter_1", "fallback": 0,
//       "inputs": [VIEW, ...], "outputs": [VIEW, ...]}]}
//   VIEW: {"buffer": "x", "shape": ["<size>", ...], "strides": ["<size>", ...], "offset": "<size>"}
//   (elements). A <size> is a size expression over the symbols (runtime/size_expression.h).
// Buffer ids are their positions. Kinds: input, parameter, output (allocated per run),
// intermediate (at workspace_offset in the workspace; one no step touches may have none).
// A gemm computes out[b...] = a[b...] @ b[b...] over row-major strided views (a [batch..., m, k],
// b [batch..., k, n], out [batch..., m, n], batch dims broadcast by stride 0); gemm_lt fuses its
// epilogue (bias per output column, relu, GELU tanh: runtime/cuda/gemm_plan.h) and writes
// `output` through the GEMM output's view. Kernel arguments are a buffer's pointer, a symbol's
// value (int64_t) or the scratch area (workspace + scratch_offset).
//
// A symbol's range is the graph signature's (torch.export's range constraints): the runner checks
// it with the inputs' guards, before any launch.
// Version 1 (Kiln before the runtime loader) lacked symbols, inputs, parameters, outputs,
// fallbacks and the library steps' operands; it is refused with a request to recompile.
// Every other problem is a kiln::Error naming the file and the field ("steps[3].grid").
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/gemm_plan.h"
#include "kiln/dtype.h"
#include "runtime/size_expression.h"

namespace kiln::cuda {

inline constexpr const char* kLaunchPlanFormat = "kiln-cuda-launch-plan";
inline constexpr int kLaunchPlanVersion = 2;
inline constexpr const char* kLaunchPlanFile = "launch_plan.json";

enum class PlanBufferKind { Input, Parameter, Output, Intermediate };

struct PlanBuffer {
  std::string name;
  PlanBufferKind kind = PlanBufferKind::Intermediate;
  DType dtype = DType::f32;
  std::vector<SizeExpression> shape;
  std::string source;  // input: the placeholder; parameter: its name; output: the output's name
  std::optional<SizeExpression> workspace_offset;  // intermediates in the workspace (bytes)
};

struct PlanSymbol {
  std::string name;
  int input = 0;  // position in LaunchPlan::inputs
  int dim = 0;
  int64_t min = 0;             // the range the model was compiled for
  std::optional<int64_t> max;  // none: unbounded
};

// A strided view of a buffer, in elements.
struct PlanView {
  int buffer = -1;
  SizeExpression offset;
  std::vector<SizeExpression> shape, strides;
};

struct PlanArgument {
  enum class Kind { Buffer, Symbol, Scratch };
  Kind kind = Kind::Buffer;
  int index = -1;  // Buffer: the buffer; Symbol: the symbol
};

struct PlanStep {
  enum class Kind { Kernel, Gemm, Fallback };
  Kind kind = Kind::Kernel;
  std::string name;  // Kernel: the __global__ function; Gemm, Fallback: the loop node (for messages)
  // Kernel
  SizeExpression grid;
  int block = 0;
  int64_t shared_bytes = 0;
  std::vector<PlanArgument> arguments;
  // Gemm ({a, b} -> {out}) and Fallback (the node's tensor arguments -> its results)
  std::vector<PlanView> inputs, outputs;
  GemmEpilogue epilogue = GemmEpilogue::none;  // gemm_lt
  std::optional<PlanView> bias;                // gemm_lt with a bias: its first element (shape, strides empty)
  int epilogue_output = -1;                    // gemm_lt: the buffer the fused call writes
  int fallback = -1;                           // Fallback: index into LaunchPlan::fallbacks
};

struct LaunchPlan {
  std::string architecture;  // "sm_90", or "compute_90" for PTX
  std::vector<std::string> nvrtc_options;
  std::vector<PlanSymbol> symbols;
  std::vector<std::string> symbol_names;  // symbols[i].name: what size expressions refer to
  std::vector<PlanBuffer> buffers;
  std::vector<int> inputs, parameters, outputs;  // buffer ids
  std::vector<std::string> fallbacks;
  SizeExpression workspace_bytes, scratch_offset;
  std::vector<PlanStep> steps;

  const PlanBuffer& buffer(int id) const { return buffers.at(size_t(id)); }
};

// Parses plan text; `where` (the file) starts every error message.
LaunchPlan parse_launch_plan(const std::string& text, const std::string& where);
// Reads `file`; a missing file or bad contents throw kiln::Error naming it.
LaunchPlan read_launch_plan(const std::filesystem::path& file);

// The epilogue's name as the plan spells it ("bias_relu", "gelu_tanh"), and back
// (std::nullopt for an unknown name).
const char* plan_epilogue_name(GemmEpilogue epilogue);
std::optional<GemmEpilogue> parse_plan_epilogue(const std::string& name);

}  // namespace kiln::cuda
