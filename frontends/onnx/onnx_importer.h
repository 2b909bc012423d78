// The ONNX front end: an .onnx file to a Kiln graph (the "traced" stage of the pipeline).
//
//  1. read_onnx_model (onnx_model_file.h): parse, opset range check, ONNX's checker; graph
//     inputs given values in OnnxImportOptions (the freeze) become initializers of those values;
//  2. every node's op is looked up in the op table first, and all unsupported ones are
//     reported at once (op type, count, node names) before any conversion;
//  3. initializers (and graph inputs that have one) become constants: raw data is viewed in
//     place and external data memory-mapped (onnx_tensor.h), never copied; a constant becomes
//     a graph parameter of its (sanitized) name where an op reads it as a tensor;
//  4. graph inputs become placeholders named after them ([A-Za-z0-9_]: "input.1" is input_1);
//     dim_param dims become symbols (onnx_symbols.h);
//  5. nodes are converted in order by their converters (onnx_op_table.h), which check every
//     attribute they read against the actual ranks (axes); a node that names an output its
//     converter does not compute is the model's error (kiln::Error). A converter that
//     needs a value at import time (Reshape's shape, Slice's starts, ...) which the model
//     computes from graph inputs fed at run time throws OnnxInputValuesNeeded naming those
//     inputs: give their values (onnx_specialization.h does, keyed by the values). A node whose
//     inputs are all constants is folded: converted into a scratch graph and evaluated by the
//     interpreter (unless its result is larger than its inputs and over 1 MiB), so static
//     shape arithmetic (Shape -> Gather -> Concat -> Reshape) leaves nothing behind; with
//     symbolic dims that arithmetic is carried out on symbolic sizes instead (onnx_value.h).
//     Where an op needs two sizes equal that differ only by their dim_params (an Add of
//     [batch_x, 4] and [batch_y, 4], a MatMul of past + 1 against total), the import starts
//     again with one symbol replaced by the value that makes them equal (onnx_symbols.h; the
//     run-time guards check every input against it; KILN_LOG=dynamic names each);
//  6. ONNX shape inference where the library knows the opset, after the conversion: some of
//     ONNX's inference functions crash on attributes out of range (LayerNormalization's axis),
//     which step 5 has refused by then;
//  7. each converted value of the main graph is checked against ONNX's type of it: a type the
//     model file declares (graph outputs, value_info) that disagrees is the model's error
//     (kiln::Error naming the node, the declared and the computed type); a type ONNX inferred
//     that disagrees is an importer bug (kiln::InternalError naming the node);
//  8. the graph outputs, each under its ONNX name (onnx_value_name): the node computing it is
//     renamed, or, for an output that is a graph input or another output's value (Identity,
//     Clip without bounds, ...), a copy of it gets the name.
// Each node records the ONNX node name and op type in its SourceInfo.
//
// Sequences and optionals (onnx_value.h) are resolved at import time, specialized on what is
// fed at run time, as TorchDynamo specializes a Python list on its length:
//  - a sequence graph input `s` is fed as tensors named `s.0`, `s.1`, ... (Kiln names s_0,
//    s_1: `kiln run m.onnx --input s_0=a.npy --input s_1=b.npy`); its length is the number of
//    consecutive elements given (none: an empty sequence), each element a placeholder of the
//    type fed. An optional tensor input `o` is fed as `o`, or not at all (an empty optional);
//    an optional sequence as a sequence, and it is empty (none) when no element is given.
//    OnnxImportOptions::fed_types carries what is fed; without it such a model is refused in
//    one line;
//  - a sequence graph output `y` comes out as tensors named `y.0`, `y.1`, ... (Kiln names
//    y_0, y_1); an empty optional output is left out, one holding a value is that value;
//  - every sequence position, split and length must be known when the model is imported
//    (positions fed at run time are specialized on, like Reshape's shape).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/error.h"

namespace kiln::frontends {

struct OnnxImportOptions {
  // Graph inputs taken as constants of these values, by ONNX name (the freeze): each becomes
  // an initializer, so that the importer knows shape-deciding values. Each must be a graph
  // input without an initializer, of its declared element type, rank and static sizes.
  std::map<std::string, Tensor> input_values;
  // The tensors fed at run time, by Kiln name, with their types: the elements of sequence and
  // optional graph inputs are read from them (see above).
  std::optional<std::map<std::string, ir::TensorMeta>> fed_types;
  // Receives the Kiln names of the model's sequence and optional graph inputs (when not null).
  std::vector<std::string>* collection_inputs = nullptr;
};

// Throws kiln::Error for everything a model file can get wrong, naming the file (and node).
ir::Graph import_onnx(const std::string& path, const OnnxImportOptions& options = {});

// What import_onnx throws when a converter needs a value at import time that the model
// computes from graph inputs fed at run time: a kiln::Error whose message names the node and
// the inputs, and those graph inputs (ONNX names) whose values would make it known.
class OnnxInputValuesNeeded : public Error {
 public:
  OnnxInputValuesNeeded(const std::string& message, std::vector<std::string> inputs)
      : Error(message), inputs_(std::move(inputs)) {}
  const std::vector<std::string>& inputs() const { return inputs_; }

 private:
  std::vector<std::string> inputs_;
};

// The ONNX op types the importer converts (default domain), sorted.
std::vector<std::string> supported_onnx_ops();

// The name of the placeholder or output for the graph input or output ONNX names `onnx_name`
// ([A-Za-z0-9_]: "input.1" is input_1).
std::string onnx_value_name(const std::string& onnx_name);

}  // namespace kiln::frontends
