// Reading (memory-mapped or from bytes) and writing safetensors files: header validation,
// tensor layout, and the mapping's lifetime.
#include "kiln/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "runtime/json_brief.h"
#include "runtime/message_text.h"
#include "runtime/strides.h"

namespace kiln {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

constexpr size_t kLengthBytes = 8;
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the safetensors library's own limit
constexpr std::string_view kMetadataKey = "__metadata__";

struct DTypeName {
  std::string_view name;
  DType dtype;
};

constexpr DTypeName kDTypeNames[] = {
    {"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"F64", DType::f64},       {"I64", DType::i64},
    {"I32", DType::i32}, {"I16", DType::i16}, {"I8", DType::i8},     {"U8", DType::u8},        {"BOOL", DType::boolean},
    {"U16", DType::u16}, {"U32", DType::u32}, {"U64", DType::u64},
};

std::optional<DType> parse_dtype_name(std::string_view name) {
  for (const DTypeName& entry : kDTypeNames)
    if (entry.name == name) return entry.dtype;
  return std::nullopt;
}

std::string_view dtype_name_of(DType dtype) {
  for (const DTypeName& entry : kDTypeNames)
    if (entry.dtype == dtype) return entry.name;
  KILN_CHECK(false, "no safetensors name for ", dtype_name(dtype));
}

// One tensor as the header describes it.
struct Entry {
  std::string name;
  DType dtype;
  Sizes shape;
  uint64_t begin;
  uint64_t end;
};

struct SafetensorsHeader {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  size_t data_start;  // offset of the data buffer in the file
};

std::string offsets_text(const Entry& entry) {
  return "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "]";
}


// A JSON value as a non-negative integer, or nullopt.
std::optional<uint64_t> as_count(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return uint64_t(value.get<int64_t>());
  return std::nullopt;
}

template <typename... Parts>
[[noreturn]] void tensor_error(const std::string& file, const std::string& name, const Parts&... parts) {
  fail(file, ": tensor '", excerpt(name, 80), "': ", parts...);
}

Entry parse_entry(const std::string& file, const std::string& name, const nlohmann::json& info) {
  if (!info.is_object())
    tensor_error(file, name, "expected an object with dtype, shape and data_offsets, found ", json_brief(info));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!info.contains(key)) tensor_error(file, name, "missing \"", key, "\"");

  Entry entry{name, DType::f32, {}, 0, 0};
  const nlohmann::json& dtype = info["dtype"];
  std::optional<DType> parsed = dtype.is_string() ? parse_dtype_name(dtype.get<std::string>()) : std::nullopt;
  if (!parsed)
    tensor_error(file, name, "unknown dtype ", json_brief(dtype),
                 " (Kiln reads F32, F16, BF16, F64, I64, I32, I16, I8, U8, U16, U32, U64 and BOOL)");
  entry.dtype = *parsed;

  const nlohmann::json& shape = info["shape"];
  if (!shape.is_array()) tensor_error(file, name, "shape ", json_brief(shape), " is not a list");
  for (const nlohmann::json& dim : shape) {
    std::optional<uint64_t> size = as_count(dim);
    if (!size || *size > uint64_t(std::numeric_limits<int64_t>::max()))
      tensor_error(file, name, "bad shape ", json_brief(shape));
    entry.shape.push_back(int64_t(*size));
  }

  const nlohmann::json& offsets = info["data_offsets"];
  bool valid = offsets.is_array() && offsets.size() == 2 && as_count(offsets[0]) && as_count(offsets[1]);
  if (valid) {
    entry.begin = *as_count(offsets[0]);
    entry.end = *as_count(offsets[1]);
  }
  if (!valid || entry.begin > entry.end)
    tensor_error(file, name, "bad data_offsets ", json_brief(offsets), " (expected [begin, end] with begin <= end)");
  return entry;
}

// Validates the header and every tensor's offsets against a file of `size` bytes.
SafetensorsHeader parse_header(const unsigned char* bytes, size_t size, const std::string& file) {
  if (size < kLengthBytes)
    fail(file, ": truncated safetensors file: ", size, " bytes, too short for the 8-byte header length");
  uint64_t header_length = 0;
  for (size_t i = kLengthBytes; i-- > 0;) header_length = (header_length << 8) | bytes[i];
  if (header_length > size - kLengthBytes)
    fail(file, ": safetensors header length ", header_length, " goes beyond the end of the file (",
         size - kLengthBytes, " bytes follow the length)");
  if (header_length > kMaxHeaderBytes)
    fail(file, ": safetensors header length ", header_length, " is larger than the limit of ", kMaxHeaderBytes);

  std::string_view text(reinterpret_cast<const char*>(bytes) + kLengthBytes, header_length);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    fail(file, ": bad JSON in the safetensors header: ", excerpt(error.what(), 200));
  }
  if (!json.is_object()) fail(file, ": the safetensors header is not a JSON object");

  SafetensorsHeader header;
  header.data_start = kLengthBytes + header_length;
  uint64_t data_size = size - header.data_start;
  for (const auto& [name, info] : json.items()) {
    if (name == kMetadataKey) {
      if (!info.is_object()) fail(file, ": \"__metadata__\" is not an object of strings");
      for (const auto& [key, value] : info.items()) {
        if (!value.is_string()) fail(file, ": \"__metadata__\" entry '", excerpt(key, 80), "' is not a string");
        header.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    Entry entry = parse_entry(file, name, info);
    if (entry.end > data_size)
      tensor_error(file, name, "data_offsets ", offsets_text(entry), " are outside the data (",
           data_size, " bytes)");
    if (!checked_numel(entry.shape))
      tensor_error(file, name, "shape ", sizes_to_string(entry.shape), " is too large (its element count overflows int64)");
    uint64_t expected = dtype_size(entry.dtype);
    for (int64_t dim : entry.shape) {
      if (dim != 0 && expected > std::numeric_limits<uint64_t>::max() / uint64_t(dim))
        tensor_error(file, name, "shape ", sizes_to_string(entry.shape), " is too large");
      expected *= uint64_t(dim);
    }
    if (entry.end - entry.begin != expected)
      tensor_error(file, name, "data_offsets ", offsets_text(entry), " hold ", entry.end - entry.begin,
           " bytes but shape ", sizes_to_string(entry.shape), " of ", dtype_name_of(entry.dtype), " needs ",
           expected);
    header.entries.push_back(std::move(entry));
  }

  // No two tensors may share bytes (empty tensors occupy none).
  std::vector<const Entry*> by_offset;
  for (const Entry& entry : header.entries)
    if (entry.end > entry.begin) by_offset.push_back(&entry);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->begin < by_offset[i - 1]->end)
      fail(file, ": tensors '", excerpt(by_offset[i - 1]->name, 80), "' ", offsets_text(*by_offset[i - 1]), " and '",
           excerpt(by_offset[i]->name, 80), "' ", offsets_text(*by_offset[i]), " overlap");
  return header;
}

// Checks that BOOL data holds only 0 and 1 (anything else is not a valid C++ bool).
void check_bool_data(const unsigned char* data, uint64_t nbytes, const std::string& file, const Entry& entry) {
  for (uint64_t i = 0; i < nbytes; ++i)
    if (data[i] > 1)
      tensor_error(file, entry.name, "BOOL byte ", i, " is ", int(data[i]), " (expected 0 or 1)");
}

Tensor copy_of(const unsigned char* data, const Entry& entry) {
  Tensor tensor = Tensor::empty(entry.shape, entry.dtype);
  if (entry.end > entry.begin) std::memcpy(tensor.data_ptr(), data, entry.end - entry.begin);
  return tensor;
}

// Builds tensors from a validated header; `view` makes a tensor over bytes it may keep.
SafetensorsContents build(const unsigned char* bytes, const SafetensorsHeader& header, const std::string& file,
                          const std::function<Tensor(const unsigned char*, const Entry&)>& view) {
  SafetensorsContents contents;
  contents.metadata = header.metadata;
  for (const Entry& entry : header.entries) {
    const unsigned char* data = bytes + header.data_start + entry.begin;
    if (entry.dtype == DType::boolean) check_bool_data(data, entry.end - entry.begin, file, entry);
    bool aligned = reinterpret_cast<uintptr_t>(data) % dtype_size(entry.dtype) == 0;
    contents.tensors[entry.name] = aligned && entry.end > entry.begin ? view(data, entry) : copy_of(data, entry);
  }
  return contents;
}

// A private, writable (copy-on-write) mapping of a whole file.
class Mapping {
 public:
  explicit Mapping(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open '", path, "': ", std::strerror(errno));
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
      int error = errno;
      ::close(fd);
      fail("cannot read '", path, "': ", std::strerror(error));
    }
    if (S_ISDIR(info.st_mode)) {
      ::close(fd);
      fail("cannot read '", path, "': it is a directory");
    }
    size_ = size_t(info.st_size);
    if (size_ > 0) {
      void* address = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
      int error = errno;
      ::close(fd);
      if (address == MAP_FAILED) fail("cannot map '", path, "' into memory: ", std::strerror(error));
      data_ = static_cast<unsigned char*>(address);
    } else {
      ::close(fd);
    }
  }
  ~Mapping() {
    if (data_) ::munmap(data_, size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

SafetensorsContents load_safetensors(const std::string& path) {
  auto mapping = std::make_shared<Mapping>(path);
  SafetensorsHeader header = parse_header(mapping->data(), mapping->size(), path);
  return build(mapping->data(), header, path, [&](const unsigned char* data, const Entry& entry) {
    // Each tensor's storage holds a reference to the mapping; the last one unmaps it.
    auto storage = std::make_shared<Storage>(const_cast<unsigned char*>(data), entry.end - entry.begin,
                                             Device::cpu(), [mapping](void*) {});
    return Tensor(storage, entry.shape, contiguous_strides(entry.shape), 0, entry.dtype);
  });
}

std::map<std::string, Tensor> read_safetensors(const std::string& path) {
  return load_safetensors(path).tensors;
}

SafetensorsContents parse_safetensors(std::string_view bytes, const std::string& name) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  SafetensorsHeader header = parse_header(data, bytes.size(), name);
  return build(data, header, name, copy_of);
}

std::string serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, Tensor>> ordered;
  for (const auto& [name, tensor] : tensors) {
    if (name == kMetadataKey) fail("a tensor may not be named \"__metadata__\" in a safetensors file");
    if (!tensor.defined()) fail("tensor '", name, "' is undefined; cannot write it to safetensors");
    if (!tensor.device().is_cpu())
      fail("tensor '", name, "' is on ", tensor.device().to_string(), "; copy it to the CPU before saving");
    ordered.emplace_back(name, tensor.contiguous());
  }
  // Larger elements first keeps every tensor aligned to its element size (names break ties).
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.second.element_size() > b.second.element_size();
  });

  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  if (!metadata.empty()) json[std::string(kMetadataKey)] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : ordered) {
    uint64_t end = offset + tensor.nbytes();
    json[name] = {{"dtype", dtype_name_of(tensor.dtype())},
                  {"shape", tensor.sizes()},
                  {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string header = json.dump();
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string bytes;
  bytes.reserve(kLengthBytes + header.size() + offset);
  for (size_t i = 0; i < kLengthBytes; ++i) bytes += char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  bytes += header;
  for (const auto& [name, tensor] : ordered)
    bytes.append(static_cast<const char*>(tensor.data_ptr()), tensor.nbytes());
  return bytes;
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::string bytes;
  try {
    bytes = serialize_safetensors(tensors, metadata);
  } catch (const Error& error) {
    fail(path, ": ", error.what());
  }
  write_file_atomically(path, bytes);
}

}  // namespace kiln
