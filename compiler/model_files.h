// The model files the tools read, reached through compiler/ like everything else they call:
// load_model forwards to the front ends' loader (frontends/model_loader.h: .pt2 through the
// torch.export importer, .onnx through the ONNX importer, .kiln and .json through the IR's own
// formats, with the same-stem .safetensors weights); model_sample_inputs reads the sample inputs
// a .pt2 archive carries.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::compiler {

// Throws kiln::Error for a missing file, an unsupported extension (listing .pt2, .onnx, .kiln
// and .json), and anything the format's loader rejects.
ir::Graph load_model(const std::string& path);

// The sample inputs a model file carries (a .pt2 archive's data/sample_inputs), by input name.
// Throws kiln::Error for a model file of another kind or an archive without sample inputs.
std::map<std::string, Tensor> model_sample_inputs(const std::string& path);

}  // namespace kiln::compiler
