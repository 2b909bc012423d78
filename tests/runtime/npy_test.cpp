// Tests for runtime/npy: bytes written match the .npy specification, every dtype round trips,
// files numpy writes in other versions and byte orders read back, and each malformed input
// gives its message. Expected bytes are built by hand from the format description
// (numpy.lib.format), not by the code under test.
#include "runtime/message_text.h"
#include "kiln/npy.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "kiln/error.h"
#include "runtime/half.h"

namespace kiln {
namespace {

// A .npy file: magic, version, little-endian header length (2 bytes for 1.0, 4 otherwise),
// header, data. No padding: readers must not depend on it.
std::string npy_bytes(int major, const std::string& header, const std::string& data) {
  std::string bytes = "\x93NUMPY";
  bytes += char(major);
  bytes += char(0);
  size_t width = major == 1 ? 2 : 4;
  for (size_t i = 0; i < width; ++i) bytes += char((header.size() >> (8 * i)) & 0xff);
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
            ("kiln_npy_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  size_t entry_count() const {
    return size_t(std::distance(std::filesystem::directory_iterator(path_), std::filesystem::directory_iterator()));
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(Npy, WritesVersion1HeaderAsNumpyDoes) {
  Tensor tensor = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6}, DType::f32);
  std::string bytes = serialize_npy(tensor);

  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t header_length = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
  // np.save: the dict, 21 - len("2") spaces of room to grow the first dim, then spaces and
  // '\n' up to a multiple of 64 bytes. The dict is 59 characters: 10 + 59 + 20 + 1 = 90 -> 128.
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(dict.size(), 59u);
  EXPECT_EQ(header_length, 118u);
  std::string header = bytes.substr(10, header_length);
  EXPECT_EQ(header, dict + std::string(58, ' ') + "\n");
  EXPECT_EQ(bytes.substr(10 + header_length), raw<float>({1, 2, 3, 4, 5, 6}));
}

TEST(Npy, ShapeTuplesFollowPythonRepr) {
  std::string scalar = serialize_npy(Tensor::scalar(7, DType::i64));
  EXPECT_NE(scalar.find("'shape': (), }"), std::string::npos);
  std::string vector = serialize_npy(Tensor::from_vector<int>({3}, {1, 2, 3}, DType::u8));
  EXPECT_NE(vector.find("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
  EXPECT_EQ(vector.substr(vector.size() - 3), std::string("\x01\x02\x03", 3));
}

TEST(Npy, EveryDTypeRoundTrips) {
  std::vector<double> values = {0, 1, -2, 3, 100, -7};
  for (DType dtype : {DType::f32, DType::f16, DType::f64, DType::i64, DType::i32, DType::i16, DType::i8}) {
    Tensor tensor = Tensor::from_vector({2, 3}, values, dtype);
    Tensor back = parse_npy(serialize_npy(tensor));
    ASSERT_EQ(back.dtype(), dtype) << dtype_name(dtype);
    ASSERT_EQ(back.sizes(), (Sizes{2, 3}));
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(back.flat_double(i), values[size_t(i)]) << dtype_name(dtype);
  }
  Tensor bytes = parse_npy(serialize_npy(Tensor::from_vector<int>({4}, {0, 1, 200, 255}, DType::u8)));
  EXPECT_EQ(bytes.dtype(), DType::u8);
  EXPECT_EQ(bytes.flat_int(2), 200);
  EXPECT_EQ(bytes.flat_int(3), 255);
  // numpy's uint16, uint32 and uint64 ('<u2', '<u4', '<u8'), with each one's largest value.
  for (DType dtype : {DType::u16, DType::u32, DType::u64}) {
    Tensor wide = Tensor::empty({2}, dtype);
    store_int(dtype, wide.data_ptr(), 7);
    store_int(dtype, static_cast<char*>(wide.data_ptr()) + dtype_size(dtype), -1);  // all bits set
    std::string written = serialize_npy(wide);
    std::string descr = "'descr': '<u" + std::to_string(dtype_size(dtype)) + "'";
    EXPECT_NE(written.find(descr), std::string::npos) << written;
    Tensor back = parse_npy(written);
    ASSERT_EQ(back.dtype(), dtype);
    EXPECT_EQ(back.flat_int(0), 7);
    EXPECT_EQ(back.flat_double(1), dtype == DType::u16 ? 65535.0 : dtype == DType::u32 ? 4294967295.0 : 0x1p64);
  }
  Tensor flags = parse_npy(serialize_npy(Tensor::from_vector<int>({3}, {1, 0, 1}, DType::boolean)));
  EXPECT_EQ(flags.dtype(), DType::boolean);
  EXPECT_EQ(flags.flat_int(0), 1);
  EXPECT_EQ(flags.flat_int(1), 0);
}

TEST(Npy, Bf16IsWrittenAsExactF32) {
  // 1.5, -0.0078125 (-2^-7) and 65536 (2^16) are exact in bf16; widening to f32 keeps them.
  Tensor tensor = Tensor::from_vector<double>({3}, {1.5, -0.0078125, 65536}, DType::bf16);
  std::string bytes = serialize_npy(tensor);
  EXPECT_NE(bytes.find("'descr': '<f4'"), std::string::npos);
  Tensor back = parse_npy(bytes);
  EXPECT_EQ(back.dtype(), DType::f32);
  EXPECT_EQ(back.flat_double(0), 1.5);
  EXPECT_EQ(back.flat_double(1), -0.0078125);
  EXPECT_EQ(back.flat_double(2), 65536.0);
}

TEST(Npy, F16BitsAreIeeeHalf) {
  // 1.0 in IEEE half is 0x3c00, -2.0 is 0xc000.
  std::string bytes = npy_bytes(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }\n",
                                raw<uint16_t>({0x3c00, 0xc000}));
  Tensor tensor = parse_npy(bytes);
  EXPECT_EQ(tensor.dtype(), DType::f16);
  EXPECT_EQ(tensor.flat_double(0), 1.0);
  EXPECT_EQ(tensor.flat_double(1), -2.0);
}

TEST(Npy, ReadsBigEndianData) {
  // 1.5f is 0x3fc00000; big-endian bytes 3f c0 00 00. 258 as big-endian i8: 00 .. 01 02.
  std::string floats = npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                                 std::string("\x3f\xc0\x00\x00", 4));
  EXPECT_EQ(parse_npy(floats).flat_double(0), 1.5);
  std::string longs = npy_bytes(1, "{'descr': '>i8', 'fortran_order': False, 'shape': (1,), }",
                                std::string("\x00\x00\x00\x00\x00\x00\x01\x02", 8));
  Tensor value = parse_npy(longs);
  EXPECT_EQ(value.dtype(), DType::i64);
  EXPECT_EQ(value.flat_int(0), 258);
  // numpy's int16 ('<i2' as np.save writes it, '>i2'): -2 is fe ff little-endian, ff fe big.
  std::string shorts = npy_bytes(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }",
                                 std::string("\xff\xfe\x01\x02", 4));
  Tensor short_values = parse_npy(shorts);
  EXPECT_EQ(short_values.dtype(), DType::i16);
  EXPECT_EQ(short_values.flat_int(0), -2);
  EXPECT_EQ(short_values.flat_int(1), 258);
  std::string written = serialize_npy(short_values);
  EXPECT_NE(written.find("'descr': '<i2'"), std::string::npos) << written;
  EXPECT_EQ(written.substr(written.size() - 4), std::string("\xfe\xff\x02\x01", 4));
}

TEST(Npy, ReadsVersions2And3) {
  for (int major : {2, 3}) {
    std::string bytes = npy_bytes(major, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n",
                                  raw<int32_t>({-5, 9}));
    Tensor tensor = parse_npy(bytes);
    EXPECT_EQ(tensor.dtype(), DType::i32);
    EXPECT_EQ(tensor.flat_int(0), -5);
    EXPECT_EQ(tensor.flat_int(1), 9);
  }
}

TEST(Npy, AcceptsKeysInAnyOrderAndPython2Longs) {
  std::string bytes = npy_bytes(1, "{'shape': (2L,), 'fortran_order': False, 'descr': '<f8'}", raw<double>({0.25, 4}));
  Tensor tensor = parse_npy(bytes);
  EXPECT_EQ(tensor.dtype(), DType::f64);
  EXPECT_EQ(tensor.flat_double(0), 0.25);
}

TEST(Npy, FortranOrderIsAcceptedWhereItDoesNotChangeTheLayout) {
  std::string bytes = npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3), }", raw<float>({1, 2, 3}));
  EXPECT_EQ(parse_npy(bytes).flat_double(2), 3.0);
}

TEST(Npy, WritesStridedTensorsInLogicalOrder) {
  Tensor tensor = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6}, DType::f32).transpose(0, 1);
  Tensor back = parse_npy(serialize_npy(tensor));
  EXPECT_EQ(back.sizes(), (Sizes{3, 2}));
  std::vector<double> expected = {1, 4, 2, 5, 3, 6};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(back.flat_double(i), expected[size_t(i)]);
}

TEST(Npy, EmptyAndScalarShapes) {
  Tensor empty = parse_npy(serialize_npy(Tensor::zeros({0, 3}, DType::f32)));
  EXPECT_EQ(empty.sizes(), (Sizes{0, 3}));
  Tensor scalar = parse_npy(serialize_npy(Tensor::scalar(2.5, DType::f64)));
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.item(), 2.5);
}

TEST(Npy, FileRoundTripIsAtomic) {
  TempDir dir;
  std::string path = dir.file("x.npy");
  write_npy(path, Tensor::from_vector<double>({2}, {1, 2}, DType::f32));
  write_npy(path, Tensor::from_vector<double>({3}, {7, 8, 9}, DType::f32));  // replaces
  Tensor back = read_npy(path);
  EXPECT_EQ(back.sizes(), (Sizes{3}));
  EXPECT_EQ(back.flat_double(2), 9.0);
  EXPECT_EQ(dir.entry_count(), 1u);  // no temporary file left behind
}

// ---- malformed input: one test per message ----

const std::string kGoodHeader = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";

TEST(NpyErrors, BadMagic) {
  EXPECT_EQ(error_of([] { parse_npy("PK\x03\x04 not numpy", "w.npy"); }),
            "w.npy: not a .npy file (it does not start with the magic string \\x93NUMPY)");
}

TEST(NpyErrors, UnsupportedVersion) {
  std::string bytes = npy_bytes(4, kGoodHeader, raw<float>({1, 2}));
  EXPECT_EQ(error_of([&] { parse_npy(bytes, "v.npy"); }),
            "v.npy: unsupported .npy format version 4.0 (Kiln reads 1.0, 2.0 and 3.0)");
  bytes[7] = 1;  // 4.1
  bytes[6] = 1;  // 1.1
  EXPECT_EQ(error_of([&] { parse_npy(bytes, "v.npy"); }),
            "v.npy: unsupported .npy format version 1.1 (Kiln reads 1.0, 2.0 and 3.0)");
}

TEST(NpyErrors, FortranOrder) {
  std::string bytes =
      npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", raw<float>({1, 2, 3, 4}));
  EXPECT_EQ(error_of([&] { parse_npy(bytes, "f.npy"); }),
            "f.npy: fortran_order True is not supported; save with np.ascontiguousarray");
}

TEST(NpyErrors, UnsupportedDTypeIsNamed) {
  std::string complex = npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", raw<float>({1, 2}));
  EXPECT_EQ(error_of([&] { parse_npy(complex, "c.npy"); }),
            "c.npy: unsupported .npy dtype '<c8'; Kiln reads f4, f2, f8, i8, i4, i2, i1, u1, u2, u4, u8 and b1 in either "
            "byte order");
  std::string opaque = npy_bytes(1, "{'descr': '<V2', 'fortran_order': False, 'shape': (1,), }", "ab");
  std::string hint = "'<V2' (opaque 2-byte records, as ml_dtypes saves bfloat16";
  EXPECT_NE(error_of([&] { parse_npy(opaque, "b.npy"); }).find(hint), std::string::npos);
  std::string structured =
      npy_bytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", raw<float>({1}));
  EXPECT_NE(error_of([&] { parse_npy(structured, "s.npy"); }).find("unsupported .npy dtype [('a', '<f4')]"),
            std::string::npos);
}

TEST(NpyErrors, MalformedHeader) {
  std::string missing = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False}", raw<float>({1}));
  EXPECT_EQ(error_of([&] { parse_npy(missing, "m.npy"); }),
            "m.npy: malformed .npy header (missing key 'shape'): {'descr': '<f4', 'fortran_order': False}");
  std::string garbage = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,", raw<float>({1, 2}));
  EXPECT_NE(error_of([&] { parse_npy(garbage, "g.npy"); }).find("g.npy: malformed .npy header (unexpected end)"),
            std::string::npos);
  std::string negative = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "");
  EXPECT_NE(error_of([&] { parse_npy(negative, "n.npy"); }).find("'shape' entry -1 is not a non-negative integer"),
            std::string::npos);
  std::string list = npy_bytes(1, "['descr']", "");
  EXPECT_NE(error_of([&] { parse_npy(list, "l.npy"); }).find("malformed .npy header (not a dict)"), std::string::npos);
}

TEST(NpyErrors, TruncatedData) {
  std::string bytes = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                raw<float>({1, 2, 3, 4, 5}));  // 20 of 24 bytes
  EXPECT_EQ(error_of([&] { parse_npy(bytes, "t.npy"); }),
            "t.npy: truncated .npy data: shape (2, 3) of <f4 needs 24 bytes, found 20");
}

TEST(NpyErrors, TruncatedHeaderAndPreamble) {
  std::string bytes = npy_bytes(1, kGoodHeader, "");
  EXPECT_EQ(error_of([&] { parse_npy(bytes.substr(0, 30), "h.npy"); }),
            "h.npy: truncated .npy header: expected 57 bytes of header, found 20");
  EXPECT_EQ(error_of([&] { parse_npy(bytes.substr(0, 9), "p.npy"); }),
            "p.npy: truncated .npy file: the 9-byte file ends inside the preamble");
}

TEST(NpyErrors, TrailingBytes) {
  std::string bytes = npy_bytes(1, kGoodHeader, raw<float>({1, 2, 3}));
  EXPECT_EQ(error_of([&] { parse_npy(bytes, "x.npy"); }),
            "x.npy: .npy file has 4 bytes after the data of shape (2,) (expected 8 bytes of data)");
}

TEST(NpyErrors, FileErrorsNameThePath) {
  TempDir dir;
  std::string path = dir.file("bad.npy");
  std::ofstream(path, std::ios::binary) << "hello";
  EXPECT_EQ(error_of([&] { read_npy(path); }),
            path + ": not a .npy file (it does not start with the magic string \\x93NUMPY)");
  std::string missing = dir.file("missing.npy");
  EXPECT_NE(error_of([&] { read_npy(missing); }).find("cannot open '" + missing + "'"), std::string::npos);
}

TEST(NpyErrors, UndefinedTensorIsRefused) {
  TempDir dir;
  std::string path = dir.file("u.npy");
  EXPECT_EQ(error_of([&] { write_npy(path, Tensor()); }), path + ": cannot write an undefined tensor as .npy");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(NpyErrors, EveryTruncationIsAnErrorNeverACrash) {
  std::string bytes = serialize_npy(Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6}, DType::f64));
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::string message = error_of([&] { parse_npy(bytes.substr(0, length), "cut.npy"); });
    EXPECT_EQ(message.rfind("cut.npy: ", 0), 0u) << length << ": " << message;
  }
}

// Found by fuzzing: a header of nested tuples recursed without bound (a stack overflow), a
// shape whose zero dim hid an int64 overflow of the others reached Tensor::empty (undefined
// behaviour in its strides), and the whole raw header was echoed into the message.
TEST(Npy, HostileHeadersAreRefusedOnOneShortLine) {
  std::string nested = std::string(60000, '(');
  std::string message = error_of([&] { parse_npy(npy_bytes(1, nested, ""), "n.npy"); });
  EXPECT_EQ(message.rfind("n.npy: malformed .npy header (nested deeper than 16 levels): ((((", 0), 0u) << message.substr(0, 200);
  EXPECT_LT(message.size(), 300u);
  EXPECT_EQ(error_of([&] {
              parse_npy(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }", ""),
                        "n.npy");
            }),
            "n.npy: .npy shape (0, 4294967296, 4294967296) is too large (its element count overflows int64)");
  message = error_of([&] { parse_npy(npy_bytes(1, "{'descr': '\x01\n" + std::string(5000, 'x') + "'}", ""), "n.npy"); });
  EXPECT_TRUE(is_printable(message)) << message.substr(0, 200);
  EXPECT_LT(message.size(), 400u);
}

}  // namespace
}  // namespace kiln
