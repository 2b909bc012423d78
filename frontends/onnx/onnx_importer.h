// The ONNX front end: an .onnx file to a Kiln graph (the "traced" stage of the pipeline).
//
//  1. read_onnx_model (onnx_model_file.h): parse, opset range check, ONNX's checker;
//  2. every node's op is looked up in the op table first, and all unsupported ones are
//     reported at once (op type, count, node names) before any conversion;
//  3. ONNX shape inference where the library knows the opset;
//  4. initializers (and graph inputs that have one) become constants: raw data is viewed in
//     place and external data memory-mapped (onnx_tensor.h), never copied; a constant becomes
//     a graph parameter of its (sanitized) name where an op reads it as a tensor;
//  5. graph inputs become placeholders named after them ([A-Za-z0-9_]: "input.1" is input_1);
//     dim_param dims become symbols (onnx_symbols.h);
//  6. nodes are converted in order by their converters (onnx_op_table.h). A node whose
//     inputs are all constants is folded: converted into a scratch graph and evaluated by the
//     interpreter (unless its result is larger than its inputs and over 1 MiB), so static
//     shape arithmetic (Shape -> Gather -> Concat -> Reshape) leaves nothing behind; with
//     symbolic dims that arithmetic is carried out on symbolic sizes instead (onnx_value.h);
//  7. each converted value's dtype and static dims are checked against ONNX's inferred or
//     declared type (a mismatch is an importer bug: kiln::InternalError naming the node);
//  8. the graph outputs, named after the ONNX outputs where they are computed.
// Each node records the ONNX node name and op type in its SourceInfo.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::frontends {

// Throws kiln::Error for everything a model file can get wrong, naming the file (and node).
ir::Graph import_onnx(const std::string& path);

// The ONNX op types the importer converts (default domain), sorted.
std::vector<std::string> supported_onnx_ops();

}  // namespace kiln::frontends
