// Turning the user's input flags into the tensors a model's placeholders expect:
// --input NAME=FILE.npy, --random-inputs SEED, --dim SYMBOL=N; and a one-line summary of a
// tensor for printing results.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/model_files.h"  // ir::Graph, as load_model returns it
#include "kiln/tensor.h"

namespace kiln::tools {

// "x=a.npy" -> {"x": "a.npy"}; errors name the malformed flag.
std::map<std::string, std::string> parse_input_flags(const std::vector<std::string>& flags);
// "s0=4" -> {"s0": 4}.
std::map<std::string, int64_t> parse_dim_flags(const std::vector<std::string>& flags);

// The graph of `path` for a run on the --input `files`: an .onnx model whose shape-deciding
// inputs (Reshape's shape, Slice's starts, ...) are among them is specialized on their values
// (frontends/onnx/onnx_specialization.h), and their files leave `files`; any other model is
// loaded as it is.
ir::Graph load_model_for_run(const std::string& path, std::map<std::string, std::string>& files);

// An input of a model: its name and type (a placeholder of a graph, or an input of a package).
struct ModelInput {
  std::string name;
  ir::TensorMeta meta;
};

// One tensor per placeholder: read from its file, or random (from `seed`) with symbolic
// sizes taken from `dims`. Errors: unknown input name, missing input, unbound symbol, a
// --dim that contradicts a given input.
std::map<std::string, Tensor> prepare_inputs(const ir::Graph& graph,
                                             const std::map<std::string, std::string>& files,
                                             const std::map<std::string, int64_t>& dims,
                                             std::optional<uint64_t> seed);
std::map<std::string, Tensor> prepare_inputs(const std::vector<ModelInput>& placeholders,
                                             const std::map<std::string, std::string>& files,
                                             const std::map<std::string, int64_t>& dims,
                                             std::optional<uint64_t> seed);

// "probs: f32[3, 10] = [0.1, 0.2, ...]"
std::string summarize_tensor(const std::string& name, const Tensor& tensor, int64_t max_values);

}  // namespace kiln::tools
