// The model files the tools read, reached through compiler/ like everything else they call:
// load_model forwards to the front ends' loader (frontends/model_loader.h: .onnx through the ONNX
// importer, .kiln and .json through the IR's own formats, with the same-stem .safetensors
// weights).
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln::compiler {

// Throws kiln::Error for a missing file, an unsupported extension (listing .onnx, .kiln and
// .json), and anything the format's loader rejects.
ir::Graph load_model(const std::string& path);

}  // namespace kiln::compiler
