// Loading any model file Kiln reads, by extension: .pt2 through the torch.export importer
// (frontends/pt2/pt2_importer.h), .onnx through the ONNX importer (frontends/onnx/onnx_importer.h), .kiln and .json through the IR's own loader
// (ir/model_file.h, with the same-stem .safetensors weights). Every command that takes a
// model calls this.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln::frontends {

// Throws kiln::Error for a missing file, an unsupported extension (listing .pt2, .onnx, .kiln and
// .json), and anything the format's loader rejects.
ir::Graph load_model(const std::string& path);

}  // namespace kiln::frontends
