// Graph inputs of a node test that Kiln needs at import time. ONNX's node tests feed the
// arguments that define output shapes or index sets (Reshape's shape, Slice's starts, a
// reduction's axes, Pad's pads, Resize's scales and sizes, ...) as graph inputs; Kiln compiles
// ahead of time with static (or symbolic) shapes, so its importer takes those as constants.
// The runner specializes such a case as a user would (as onnx-mlir's backend tests do with
// their constant-input mode): those inputs become initializers holding the data set's values,
// and the case runs on the remaining inputs.
//
// An input is needed at import time when it reaches one of these argument positions, directly
// or through other nodes (not through Shape or Size, which read only a value's shape, known at
// import anyway).
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace kiln::conformance {

// The names of `model`'s graph inputs (that are not initializers) needed at import time.
std::set<std::string> import_time_inputs(const onnx::ModelProto& model);

// `model` with each input named in `values` (TensorProtos of the data set) turned into an
// initializer of that value, and removed from the graph inputs.
onnx::ModelProto with_inputs_as_initializers(onnx::ModelProto model, const std::vector<onnx::TensorProto>& values);

}  // namespace kiln::conformance
