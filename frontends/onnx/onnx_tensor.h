// ONNX tensors as Kiln tensors: the element-type mapping, and TensorProto (an initializer,
// a Constant's value) to kiln::Tensor without copying where it can:
//  - raw_data becomes a view into the parsed model (kept alive by the tensor's storage);
//  - external data (data_location EXTERNAL) is memory-mapped from its file, found relative
//    to the model's folder, each file mapped once per import and shared by its tensors;
//  - typed fields (float_data, int32_data, ...) are converted into a new tensor.
// Data misaligned for its element type, and bool bytes, are copied (and normalized to 0/1).
//
// Every defect is a kiln::Error naming the model file and the tensor: an element type Kiln has
// no dtype for, a value count that does not match the shape, an external file that is missing,
// absolute or outside the model's folder, or too short for the offset and length it is given.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "kiln/tensor.h"

namespace kiln::frontends {

// Kiln's dtype for an ONNX element type (TensorProto::DataType), or nullopt when Kiln has none.
std::optional<DType> dtype_from_onnx(int32_t element_type);
// The ONNX element type's name ("FLOAT", "STRING", ...), for messages.
std::string onnx_type_name(int32_t element_type);
// The ONNX element type of a Kiln dtype (every dtype has one).
int32_t onnx_type_of(DType dtype);
// `tensor` as a TensorProto named `name`, its data as raw little-endian bytes.
onnx::TensorProto onnx_tensor_proto(const Tensor& tensor, const std::string& name);

// Reads TensorProtos of one model. `bytes_owner` (the parsed model the protos belong to) is
// kept alive by every tensor that views its bytes; `model_path` names the file in messages and
// locates external data.
class OnnxTensorReader {
 public:
  OnnxTensorReader(std::shared_ptr<const void> bytes_owner, std::string model_path);

  // `what` names the tensor in messages ("initializer 'fc.weight'").
  Tensor read(const onnx::TensorProto& proto, const std::string& what);

 private:
  struct MappedFile;
  std::shared_ptr<const MappedFile> map_external_file(const std::string& location, const std::string& what);
  Tensor read_external(const onnx::TensorProto& proto, DType dtype, const Sizes& sizes, const std::string& what);
  Tensor read_typed_fields(const onnx::TensorProto& proto, DType dtype, const Sizes& sizes, const std::string& what);

  std::shared_ptr<const void> bytes_owner_;
  std::string model_path_;
  std::map<std::string, std::shared_ptr<const MappedFile>> mapped_files_;
};

// A TensorProto stored alone in a file (as ONNX's backend tests keep their inputs and expected
// outputs, test_data_set_<n>/input_<k>.pb), as a tensor. Throws kiln::Error naming the file.
Tensor read_onnx_tensor_file(const std::string& path);

}  // namespace kiln::frontends
