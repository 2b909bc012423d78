// TensorProto to kiln::Tensor: raw bytes viewed in place, external files memory-mapped,
// typed fields converted.
#include "frontends/onnx/onnx_tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <limits>

#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "runtime/strides.h"

namespace kiln::frontends {

namespace fs = std::filesystem;

std::optional<DType> dtype_from_onnx(int32_t element_type) {
  switch (element_type) {
    case onnx::TensorProto::FLOAT: return DType::f32;
    case onnx::TensorProto::FLOAT16: return DType::f16;
    case onnx::TensorProto::BFLOAT16: return DType::bf16;
    case onnx::TensorProto::DOUBLE: return DType::f64;
    case onnx::TensorProto::INT64: return DType::i64;
    case onnx::TensorProto::INT32: return DType::i32;
    case onnx::TensorProto::INT16: return DType::i16;
    case onnx::TensorProto::INT8: return DType::i8;
    case onnx::TensorProto::UINT8: return DType::u8;
    case onnx::TensorProto::UINT16: return DType::u16;
    case onnx::TensorProto::UINT32: return DType::u32;
    case onnx::TensorProto::UINT64: return DType::u64;
    case onnx::TensorProto::BOOL: return DType::boolean;
    default: return std::nullopt;
  }
}

int32_t onnx_type_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return onnx::TensorProto::FLOAT;
    case DType::f16: return onnx::TensorProto::FLOAT16;
    case DType::bf16: return onnx::TensorProto::BFLOAT16;
    case DType::f64: return onnx::TensorProto::DOUBLE;
    case DType::i64: return onnx::TensorProto::INT64;
    case DType::i32: return onnx::TensorProto::INT32;
    case DType::i16: return onnx::TensorProto::INT16;
    case DType::i8: return onnx::TensorProto::INT8;
    case DType::u8: return onnx::TensorProto::UINT8;
    case DType::u16: return onnx::TensorProto::UINT16;
    case DType::u32: return onnx::TensorProto::UINT32;
    case DType::u64: return onnx::TensorProto::UINT64;
    case DType::boolean: return onnx::TensorProto::BOOL;
  }
  throw InternalError("a dtype without an ONNX element type");
}

onnx::TensorProto onnx_tensor_proto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(onnx_type_of(tensor.dtype()));
  for (int64_t size : tensor.sizes()) proto.add_dims(size);
  Tensor dense = tensor.contiguous();
  proto.set_raw_data(std::string(static_cast<const char*>(dense.data_ptr()), dense.nbytes()));
  return proto;
}

std::string onnx_type_name(int32_t element_type) {
  if (onnx::TensorProto::DataType_IsValid(element_type) && element_type != onnx::TensorProto::UNDEFINED)
    return onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(element_type));
  return "element type " + std::to_string(element_type);
}

// One external data file, mapped (copy-on-write) for as long as a tensor views it.
struct OnnxTensorReader::MappedFile {
  void* address = nullptr;
  size_t size = 0;
  ~MappedFile() {
    if (address) ::munmap(address, size);
  }
};

OnnxTensorReader::OnnxTensorReader(std::shared_ptr<const void> bytes_owner, std::string model_path)
    : bytes_owner_(std::move(bytes_owner)), model_path_(std::move(model_path)) {}

namespace {

// A tensor over `bytes` (owned by `owner`), or a copy when the address is misaligned for the
// element type or the elements are bools (any nonzero byte means true).
Tensor tensor_over(const void* bytes, DType dtype, const Sizes& sizes, std::shared_ptr<const void> owner) {
  size_t nbytes = size_t(numel_of(sizes)) * dtype_size(dtype);
  bool aligned = reinterpret_cast<uintptr_t>(bytes) % dtype_size(dtype) == 0;
  if (nbytes == 0 || !aligned || dtype == DType::boolean) {
    Tensor copy = Tensor::empty(sizes, dtype);
    if (dtype == DType::boolean) {
      const auto* source = static_cast<const uint8_t*>(bytes);
      bool* target = copy.data<bool>();
      for (size_t i = 0; i < nbytes; ++i) target[i] = source[i] != 0;
    } else if (nbytes > 0) {
      std::memcpy(copy.data_ptr(), bytes, nbytes);
    }
    return copy;
  }
  auto storage = std::make_shared<Storage>(const_cast<void*>(bytes), nbytes, Device::cpu(),
                                           [owner](void*) mutable { owner.reset(); });
  return Tensor(std::move(storage), sizes, contiguous_strides(sizes), 0, dtype);
}

}  // namespace

Tensor OnnxTensorReader::read(const onnx::TensorProto& proto, const std::string& what) {
  std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  if (!dtype)
    fail("'", model_path_, "': ", what, " has element type ", onnx_type_name(proto.data_type()),
         ", which Kiln does not support (supported: FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT64, INT32, INT16, INT8, UINT8, UINT16, UINT32, UINT64, BOOL)");
  if (proto.has_segment()) fail("'", model_path_, "': ", what, " is segmented, which Kiln does not support");
  Sizes sizes;
  for (int64_t dim : proto.dims()) {
    if (dim < 0) fail("'", model_path_, "': ", what, " has a negative dimension ", dim);
    sizes.push_back(dim);
  }
  // Every byte count below is then exact (no int64 or size_t overflow).
  if (!checked_nbytes(sizes, *dtype))
    fail("'", model_path_, "': ", what, " has the shape ", sizes_to_string(sizes), " of ", dtype_name(*dtype),
         ", whose byte count overflows");
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) return read_external(proto, *dtype, sizes, what);
  if (proto.has_raw_data()) {
    size_t expected = size_t(numel_of(sizes)) * dtype_size(*dtype);
    if (proto.raw_data().size() != expected)
      fail("'", model_path_, "': ", what, " has ", proto.raw_data().size(), " bytes of raw data, but its shape ",
           sizes_to_string(sizes), " of ", dtype_name(*dtype), " needs ", expected);
    return tensor_over(proto.raw_data().data(), *dtype, sizes, bytes_owner_);
  }
  return read_typed_fields(proto, *dtype, sizes, what);
}

Tensor OnnxTensorReader::read_typed_fields(const onnx::TensorProto& proto, DType dtype, const Sizes& sizes,
                                           const std::string& what) {
  int64_t count = numel_of(sizes);
  Tensor tensor = Tensor::empty(sizes, dtype);
  auto check_count = [&](int64_t found, const char* field) {
    if (found != count)
      fail("'", model_path_, "': ", what, " has ", found, " values in ", field, ", but its shape ", sizes_to_string(sizes),
           " needs ", count);
  };
  switch (proto.data_type()) {
    case onnx::TensorProto::FLOAT:
      check_count(proto.float_data_size(), "float_data");
      if (count > 0) std::memcpy(tensor.data_ptr(), proto.float_data().data(), size_t(count) * sizeof(float));
      break;
    case onnx::TensorProto::DOUBLE:
      check_count(proto.double_data_size(), "double_data");
      if (count > 0) std::memcpy(tensor.data_ptr(), proto.double_data().data(), size_t(count) * sizeof(double));
      break;
    case onnx::TensorProto::INT64:
      check_count(proto.int64_data_size(), "int64_data");
      if (count > 0) std::memcpy(tensor.data_ptr(), proto.int64_data().data(), size_t(count) * sizeof(int64_t));
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      // The 16-bit patterns, one per int32 element.
      check_count(proto.int32_data_size(), "int32_data");
      auto* bits = static_cast<uint16_t*>(tensor.data_ptr());
      for (int64_t i = 0; i < count; ++i) bits[i] = uint16_t(proto.int32_data(int(i)));
      break;
    }
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      check_count(proto.uint64_data_size(), "uint64_data");
      for (int64_t i = 0; i < count; ++i)
        store_int(dtype, static_cast<char*>(tensor.data_ptr()) + size_t(i) * dtype_size(dtype),
                  int64_t(proto.uint64_data(int(i))));
      break;
    default:  // INT32, INT16, INT8, UINT8, UINT16, BOOL: values in int32_data
      check_count(proto.int32_data_size(), "int32_data");
      for (int64_t i = 0; i < count; ++i)
        store_int(dtype, static_cast<char*>(tensor.data_ptr()) + size_t(i) * dtype_size(dtype), proto.int32_data(int(i)));
      break;
  }
  return tensor;
}

std::shared_ptr<const OnnxTensorReader::MappedFile> OnnxTensorReader::map_external_file(const std::string& location,
                                                                                        const std::string& what) {
  if (auto found = mapped_files_.find(location); found != mapped_files_.end()) return found->second;
  fs::path relative(location);
  if (relative.empty() || relative.is_absolute())
    fail("'", model_path_, "': ", what, " names the external data file '", location,
         "'; it must be a path relative to the model's folder");
  for (const fs::path& part : relative)
    if (part == "..")
      fail("'", model_path_, "': ", what, " names the external data file '", location,
           "', which leaves the model's folder ('..' is not allowed)");
  fs::path path = fs::path(model_path_).parent_path() / relative;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail("'", model_path_, "': ", what, " keeps its data in '", location, "', but '", path.string(), "' ",
         errno == ENOENT ? "does not exist" : std::string("cannot be opened: ") + std::strerror(errno));
  auto file = std::make_shared<MappedFile>();
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    fail("'", model_path_, "': ", what, ": the external data file '", path.string(), "' is not a regular file");
  }
  file->size = size_t(status.st_size);
  if (file->size > 0) {
    // Private and writable, like the safetensors reader's: a write never reaches the file.
    void* address = ::mmap(nullptr, file->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      ::close(fd);
      fail("'", model_path_, "': ", what, ": cannot map the external data file '", path.string(), "': ", std::strerror(errno));
    }
    file->address = address;
  }
  ::close(fd);
  mapped_files_[location] = file;
  return file;
}

Tensor OnnxTensorReader::read_external(const onnx::TensorProto& proto, DType dtype, const Sizes& sizes,
                                       const std::string& what) {
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto& entry : proto.external_data()) {
    auto number = [&](const std::string& text) {
      try {
        size_t used = 0;
        unsigned long long value = std::stoull(text, &used);
        if (used == text.size()) return uint64_t(value);
      } catch (const std::exception&) {
      }
      fail("'", model_path_, "': ", what, " has an external data ", entry.key(), " '", text, "' that is not a number");
    };
    if (entry.key() == "location") location = entry.value();
    else if (entry.key() == "offset") offset = number(entry.value());
    else if (entry.key() == "length") length = number(entry.value());
  }
  if (location.empty()) fail("'", model_path_, "': ", what, " is stored externally but names no location");
  std::shared_ptr<const MappedFile> file = map_external_file(location, what);
  uint64_t needed = uint64_t(numel_of(sizes)) * dtype_size(dtype);
  uint64_t begin = offset.value_or(0);
  if (length && *length != needed)
    fail("'", model_path_, "': ", what, " has an external length of ", *length, " bytes, but its shape ", sizes_to_string(sizes),
         " of ", dtype_name(dtype), " needs ", needed);
  if (begin > file->size || file->size - begin < needed)
    fail("'", model_path_, "': ", what, " needs bytes ", begin, "..", begin + needed, " of '", location, "', which has only ",
         file->size, " bytes");
  const char* bytes = static_cast<const char*>(file->address) + begin;
  return tensor_over(bytes, dtype, sizes, file);
}

Tensor read_onnx_tensor_file(const std::string& path) {
  std::error_code status;
  if (!fs::is_regular_file(path, status)) fail("tensor file '", path, "' does not exist");
  auto proto = std::make_shared<onnx::TensorProto>();
  if (!proto->ParseFromString(read_file(path)))
    fail("'", path, "' is not a readable ONNX TensorProto: protobuf cannot parse it");
  return OnnxTensorReader(proto, path).read(*proto, "the tensor '" + proto->name() + "'");
}

}  // namespace kiln::frontends
