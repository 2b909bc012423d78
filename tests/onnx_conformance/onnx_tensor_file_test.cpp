// read_onnx_tensor_file: a TensorProto stored alone in a file (ONNX's backend tests keep their
// inputs and expected outputs so) as a tensor, and the errors for a missing or unreadable file.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "frontends/onnx/onnx_tensor.h"
#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "tests/support/test_paths.h"

namespace kiln::frontends {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

fs::path scratch_file(const std::string& name) {
  fs::path folder = fs::path(KILN_BINARY_DIR) / "onnx_tensor_file_test";
  fs::create_directories(folder);
  return folder / name;
}

TEST(OnnxTensorFile, RawAndTypedDataAreRead) {
  onnx::TensorProto raw;
  raw.set_name("x");
  raw.set_data_type(onnx::TensorProto::FLOAT);
  raw.add_dims(2);
  raw.add_dims(2);
  float values[] = {1.5f, -2.0f, 0.25f, 8.0f};
  raw.set_raw_data(std::string(reinterpret_cast<const char*>(values), sizeof values));
  write_file_atomically(scratch_file("raw.pb").string(), raw.SerializeAsString());
  Tensor read = read_onnx_tensor_file(scratch_file("raw.pb").string());
  ASSERT_EQ(read.dtype(), DType::f32);
  ASSERT_EQ(read.sizes(), (Sizes{2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(read.flat_double(i), values[i]);

  onnx::TensorProto typed;
  typed.set_data_type(onnx::TensorProto::INT64);
  typed.add_dims(3);
  for (int64_t v : {int64_t(7), int64_t(-1), int64_t(1) << 40}) typed.add_int64_data(v);
  write_file_atomically(scratch_file("typed.pb").string(), typed.SerializeAsString());
  Tensor ints = read_onnx_tensor_file(scratch_file("typed.pb").string());
  ASSERT_EQ(ints.dtype(), DType::i64);
  EXPECT_EQ(ints.flat_int(2), 1LL << 40);
}

TEST(OnnxTensorFile, AMissingOrUnreadableFileIsNamed) {
  std::string missing = scratch_file("missing.pb").string();
  EXPECT_EQ(error_of([&] { read_onnx_tensor_file(missing); }), "tensor file '" + missing + "' does not exist");
  write_file_atomically(scratch_file("garbage.pb").string(), "\xff\xff\xff\xff not a protobuf");
  EXPECT_NE(error_of([&] { read_onnx_tensor_file(scratch_file("garbage.pb").string()); }).find("not a readable ONNX TensorProto"),
            std::string::npos);
  onnx::TensorProto strings;
  strings.set_data_type(onnx::TensorProto::STRING);
  write_file_atomically(scratch_file("strings.pb").string(), strings.SerializeAsString());
  EXPECT_NE(error_of([&] { read_onnx_tensor_file(scratch_file("strings.pb").string()); }).find("element type STRING"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::frontends
