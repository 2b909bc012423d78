// Tests for runtime/safetensors: the byte layout written matches the Hugging Face format,
// files laid out by other writers read back (memory-mapped, with a copy only when misaligned),
// tensors outlive the map they came from, and each malformed file gives its message.
// Expected bytes and headers are written out by hand from the format description.
#include "runtime/message_text.h"
#include "kiln/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "kiln/error.h"

namespace kiln {
namespace {

// A safetensors file: 8-byte little-endian header length, header, data.
std::string file_bytes(const std::string& header, const std::string& data) {
  std::string bytes;
  for (size_t i = 0; i < 8; ++i) bytes += char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  return bytes + header + data;
}

template <typename T>
std::string raw(std::initializer_list<T> values) {
  std::string bytes;
  for (T value : values) bytes.append(reinterpret_cast<const char*>(&value), sizeof(T));
  return bytes;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("kiln_safetensors_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::string path = file(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  size_t entry_count() const {
    return size_t(std::distance(std::filesystem::directory_iterator(path_), std::filesystem::directory_iterator()));
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(Safetensors, WritesTheHuggingFaceLayout) {
  std::map<std::string, Tensor> tensors;
  tensors["b"] = Tensor::from_vector<int>({3}, {7, 8, 9}, DType::u8);
  tensors["a"] = Tensor::from_vector<double>({2}, {1.5, -2}, DType::f32);
  std::string bytes = serialize_safetensors(tensors, {{"format", "pt"}});

  uint64_t length = 0;
  for (size_t i = 8; i-- > 0;) length = (length << 8) | uint8_t(bytes[i]);
  EXPECT_EQ(length % 8, 0u);  // header padded so the data starts 8-byte aligned
  std::string header = bytes.substr(8, length);
  EXPECT_EQ(header.find_first_not_of(' ', header.rfind('}') + 1), std::string::npos);  // padding is spaces
  // Larger elements first: the f32 tensor occupies [0, 8), the u8 tensor [8, 11).
  nlohmann::json expected = {
      {"__metadata__", {{"format", "pt"}}},
      {"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
      {"b", {{"dtype", "U8"}, {"shape", {3}}, {"data_offsets", {8, 11}}}},
  };
  EXPECT_EQ(nlohmann::json::parse(header), expected);
  EXPECT_EQ(bytes.substr(8 + length), raw<float>({1.5f, -2.0f}) + std::string("\x07\x08\x09", 3));
}

TEST(Safetensors, EveryDTypeAndMetadataRoundTripThroughAFile) {
  TempDir dir;
  std::map<std::string, Tensor> tensors;
  std::vector<double> values = {0, 1, -2, 3};
  std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32, DType::i16, DType::i8};
  for (DType dtype : dtypes) tensors[std::string(dtype_name(dtype))] = Tensor::from_vector({2, 2}, values, dtype);
  tensors["u8"] = Tensor::from_vector<int>({4}, {0, 1, 128, 255}, DType::u8);
  tensors["bool"] = Tensor::from_vector<int>({2}, {1, 0}, DType::boolean);
  tensors["scalar"] = Tensor::scalar(4.25, DType::f64);
  tensors["empty"] = Tensor::zeros({0, 5}, DType::f32);
  std::string path = dir.file("m.safetensors");
  write_safetensors(path, tensors, {{"source", "test"}, {"version", "3"}});
  EXPECT_EQ(dir.entry_count(), 1u);  // no temporary file left behind

  SafetensorsContents back = load_safetensors(path);
  EXPECT_EQ(back.metadata, (std::map<std::string, std::string>{{"source", "test"}, {"version", "3"}}));
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (DType dtype : dtypes) {
    const Tensor& tensor = back.tensors.at(std::string(dtype_name(dtype)));
    EXPECT_EQ(tensor.dtype(), dtype);
    EXPECT_EQ(tensor.sizes(), (Sizes{2, 2}));
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(tensor.flat_double(i), values[size_t(i)]) << dtype_name(dtype);
  }
  EXPECT_EQ(back.tensors.at("u8").flat_int(3), 255);
  EXPECT_EQ(back.tensors.at("bool").dtype(), DType::boolean);
  EXPECT_EQ(back.tensors.at("bool").flat_int(0), 1);
  EXPECT_EQ(back.tensors.at("scalar").dim(), 0);
  EXPECT_EQ(back.tensors.at("scalar").item(), 4.25);
  EXPECT_EQ(back.tensors.at("empty").sizes(), (Sizes{0, 5}));
}

TEST(Safetensors, ReadsAFileWrittenByAnotherWriter) {
  // Unpadded header, tensors out of name order, integer shapes; written by hand.
  std::string header =
      R"({"w":{"dtype":"I64","shape":[2],"data_offsets":[4,20]},"v":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})";
  std::string data = raw<int32_t>({-3}) + raw<int64_t>({1LL << 40, -1});
  SafetensorsContents contents = parse_safetensors(file_bytes(header, data));
  EXPECT_TRUE(contents.metadata.empty());
  EXPECT_EQ(contents.tensors.at("v").flat_int(0), -3);
  EXPECT_EQ(contents.tensors.at("w").flat_int(0), int64_t(1) << 40);
  EXPECT_EQ(contents.tensors.at("w").flat_int(1), -1);
}

TEST(Safetensors, UnsignedTypesAreU16U32U64) {
  // torch.uint16/32/64 as safetensors names them ("U16", "U32", "U64"), read and written back.
  std::string header = R"({"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"U32","shape":[2],"data_offsets":[4,12]},)"
                       R"("c":{"dtype":"U64","shape":[2],"data_offsets":[12,28]}})";
  std::string data = raw<uint16_t>({65535, 3}) + raw<uint32_t>({4294967295u, 5}) + raw<uint64_t>({~0ull, 9});
  SafetensorsContents contents = parse_safetensors(file_bytes(header, data));
  EXPECT_EQ(contents.tensors.at("a").dtype(), DType::u16);
  EXPECT_EQ(contents.tensors.at("a").flat_int(0), 65535);
  EXPECT_EQ(contents.tensors.at("b").dtype(), DType::u32);
  EXPECT_EQ(contents.tensors.at("b").flat_int(0), 4294967295);
  EXPECT_EQ(contents.tensors.at("c").dtype(), DType::u64);
  EXPECT_EQ(contents.tensors.at("c").flat_double(0), 0x1p64);
  EXPECT_EQ(contents.tensors.at("c").flat_int(1), 9);
  std::string bytes = serialize_safetensors({{"c", contents.tensors.at("c")}}, {});
  EXPECT_NE(bytes.find(R"("dtype":"U64")"), std::string::npos) << bytes.substr(0, 80);
}

TEST(Safetensors, Int16IsI16) {
  // torch.int16 as safetensors' torch writer names it ("I16"), read and written back.
  std::string header = R"({"s":{"dtype":"I16","shape":[3],"data_offsets":[0,6]}})";
  SafetensorsContents contents = parse_safetensors(file_bytes(header, raw<int16_t>({-32768, 7, 32767})));
  const Tensor& s = contents.tensors.at("s");
  EXPECT_EQ(s.dtype(), DType::i16);
  EXPECT_EQ(s.flat_int(0), -32768);
  EXPECT_EQ(s.flat_int(2), 32767);
  std::string bytes = serialize_safetensors({{"s", s}}, {});
  EXPECT_NE(bytes.find(R"("dtype":"I16")"), std::string::npos) << bytes.substr(0, 80);
}

TEST(Safetensors, TensorsAreViewsThatOutliveTheMapAndTheFile) {
  TempDir dir;
  std::string path = dir.file("v.safetensors");
  write_safetensors(path, {{"x", Tensor::from_vector<double>({3}, {1, 2, 3}, DType::f32)}});
  Tensor kept;
  {
    std::map<std::string, Tensor> tensors = read_safetensors(path);
    kept = tensors.at("x");
  }
  std::filesystem::remove(path);
  EXPECT_EQ(kept.flat_double(0), 1.0);
  EXPECT_EQ(kept.flat_double(2), 3.0);
}

TEST(Safetensors, WritingIntoAMappedTensorLeavesTheFileUnchanged) {
  TempDir dir;
  std::string path = dir.file("c.safetensors");
  write_safetensors(path, {{"x", Tensor::from_vector<double>({2}, {1, 2}, DType::f32)}});
  Tensor mapped = read_safetensors(path).at("x");
  mapped.set_double(std::vector<int64_t>{0}, 42.0);
  EXPECT_EQ(mapped.flat_double(0), 42.0);
  EXPECT_EQ(read_safetensors(path).at("x").flat_double(0), 1.0);
}

TEST(Safetensors, MisalignedDataIsCopiedToAlignedMemory) {
  TempDir dir;
  // A 1-byte U8 tensor first puts the F32 tensor at data offset 1: misaligned for float.
  std::string header =
      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string path = dir.write("odd.safetensors", file_bytes(header, "\x05" + raw<float>({0.5f, 8.0f})));
  std::map<std::string, Tensor> tensors = read_safetensors(path);
  const Tensor& b = tensors.at("b");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data_ptr()) % alignof(float), 0u);
  EXPECT_EQ(b.flat_double(0), 0.5);
  EXPECT_EQ(b.flat_double(1), 8.0);
  EXPECT_EQ(tensors.at("a").flat_int(0), 5);
}

TEST(Safetensors, StridedTensorsAreWrittenContiguously) {
  Tensor tensor = Tensor::from_vector<double>({2, 2}, {1, 2, 3, 4}, DType::f32).transpose(0, 1);
  SafetensorsContents back = parse_safetensors(serialize_safetensors({{"t", tensor}}));
  const Tensor& t = back.tensors.at("t");
  EXPECT_EQ(t.flat_double(1), 3.0);
  EXPECT_EQ(t.flat_double(2), 2.0);
}

// ---- malformed files: one test per message ----

TEST(SafetensorsErrors, TruncatedFile) {
  EXPECT_EQ(error_of([] { parse_safetensors(std::string("\x10\x00\x00", 3), "t.safetensors"); }),
            "t.safetensors: truncated safetensors file: 3 bytes, too short for the 8-byte header length");
  TempDir dir;
  std::string path = dir.write("empty.safetensors", "");
  EXPECT_EQ(error_of([&] { read_safetensors(path); }),
            path + ": truncated safetensors file: 0 bytes, too short for the 8-byte header length");
}

TEST(SafetensorsErrors, HeaderLengthBeyondTheFile) {
  std::string bytes = file_bytes("{}", "");
  bytes[0] = 100;
  EXPECT_EQ(error_of([&] { parse_safetensors(bytes, "h.safetensors"); }),
            "h.safetensors: safetensors header length 100 goes beyond the end of the file (2 bytes follow the length)");
}

TEST(SafetensorsErrors, BadJson) {
  std::string message = error_of([] { parse_safetensors(file_bytes("{\"a\": ", ""), "j.safetensors"); });
  EXPECT_EQ(message.rfind("j.safetensors: bad JSON in the safetensors header: ", 0), 0u) << message;
  EXPECT_EQ(error_of([] { parse_safetensors(file_bytes("[1, 2]", ""), "j.safetensors"); }),
            "j.safetensors: the safetensors header is not a JSON object");
}

TEST(SafetensorsErrors, UnknownDTypeNamesTheTensor) {
  std::string header = R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(header, "x"), "d.safetensors"); }),
            "d.safetensors: tensor 'w': unknown dtype \"F8_E4M3\" (Kiln reads F32, F16, BF16, F64, I64, I32, I16, I8, U8, "
            "U16, U32, U64 and BOOL)");
}

TEST(SafetensorsErrors, OffsetsOutsideTheData) {
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(header, raw<float>({1})), "o.safetensors"); }),
            "o.safetensors: tensor 'w': data_offsets [0, 8] are outside the data (4 bytes)");
}

TEST(SafetensorsErrors, OffsetsNotMatchingTheShape) {
  std::string header = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,8]}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(header, raw<float>({1, 2})), "s.safetensors"); }),
            "s.safetensors: tensor 'w': data_offsets [0, 8] hold 8 bytes but shape [2, 2] of F32 needs 16");
}

TEST(SafetensorsErrors, OverlappingTensors) {
  std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(header, raw<float>({1, 2, 3})), "v.safetensors"); }),
            "v.safetensors: tensors 'a' [0, 8] and 'b' [4, 12] overlap");
}

TEST(SafetensorsErrors, MalformedEntries) {
  std::string missing = R"({"w":{"dtype":"F32","shape":[1]}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(missing, ""), "e.safetensors"); }),
            "e.safetensors: tensor 'w': missing \"data_offsets\"");
  std::string reversed = R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(reversed, "abcd"), "e.safetensors"); }),
            "e.safetensors: tensor 'w': bad data_offsets [4,0] (expected [begin, end] with begin <= end)");
  std::string negative = R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(negative, ""), "e.safetensors"); }),
            "e.safetensors: tensor 'w': bad shape [-1]");
  std::string metadata = R"({"__metadata__":{"n":1}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(metadata, ""), "e.safetensors"); }),
            "e.safetensors: \"__metadata__\" entry 'n' is not a string");
}

TEST(SafetensorsErrors, InvalidBoolBytes) {
  std::string header = R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(header, std::string("\x01\x07", 2)), "b.safetensors"); }),
            "b.safetensors: tensor 'm': BOOL byte 1 is 7 (expected 0 or 1)");
}

TEST(SafetensorsErrors, MissingFileAndReservedName) {
  TempDir dir;
  std::string missing = dir.file("none.safetensors");
  EXPECT_NE(error_of([&] { read_safetensors(missing); }).find("cannot open '" + missing + "'"), std::string::npos);
  std::string path = dir.file("r.safetensors");
  EXPECT_EQ(error_of([&] { write_safetensors(path, {{"__metadata__", Tensor::scalar(1, DType::f32)}}); }),
            path + ": a tensor may not be named \"__metadata__\" in a safetensors file");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SafetensorsErrors, EveryTruncationIsAnErrorNeverACrash) {
  std::string bytes = serialize_safetensors({{"a", Tensor::from_vector<double>({3}, {1, 2, 3}, DType::f32)},
                                             {"b", Tensor::from_vector<int>({2}, {1, 0}, DType::boolean)}},
                                            {{"k", "v"}});
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::string message = error_of([&] { parse_safetensors(bytes.substr(0, length), "cut.safetensors"); });
    EXPECT_EQ(message.rfind("cut.safetensors: ", 0), 0u) << length << ": " << message;
  }
}

TEST(SafetensorsErrors, DeeplyNestedHeaderValuesAreReportedBriefly) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string header = R"({"w":{"dtype":)" + deep + R"(,"shape":[1],"data_offsets":[0,4]}})";
  std::string message = error_of([&] { parse_safetensors(file_bytes(header, raw<float>({1})), "n.safetensors"); });
  EXPECT_EQ(message.rfind("n.safetensors: tensor 'w': unknown dtype [[[[...]]]]", 0), 0u) << message.substr(0, 200);
}

// Found by fuzzing: a shape whose zero dim hid an int64 overflow of the others (undefined
// behaviour in the tensor's strides), and names or JSON quoted whole into the message.
TEST(Safetensors, HostileHeadersAreRefusedOnOneShortLine) {
  std::string header = R"({"w": {"dtype": "F32", "shape": [0, 4294967296, 4294967296], "data_offsets": [0, 0]}})";
  EXPECT_EQ(error_of([&] { parse_safetensors(file_bytes(header, ""), "n.safetensors"); }),
            "n.safetensors: tensor 'w': shape [0, 4294967296, 4294967296] is too large (its element count overflows int64)");
  std::string name(5000, 'n');
  header = "{\"" + name + "\": {\"dtype\": \"F99\", \"shape\": [], \"data_offsets\": [0, 0]}}";
  std::string message = error_of([&] { parse_safetensors(file_bytes(header, ""), "n.safetensors"); });
  EXPECT_EQ(message, "n.safetensors: tensor '" + std::string(80, 'n') +
                         "... (5000 bytes)': unknown dtype \"F99\" (Kiln reads F32, F16, BF16, F64, I64, I32, I16, I8, U8, U16, U32, U64 and BOOL)");
  message = error_of([&] { parse_safetensors(file_bytes("{\"a\": \x01" + std::string(3000, '\x02') + "}", ""), "n.safetensors"); });
  EXPECT_TRUE(is_printable(message)) << message.substr(0, 200);
  EXPECT_LT(message.size(), 400u);
}

}  // namespace
}  // namespace kiln
