// Reading and writing NumPy .npy files: the preamble (magic, version, header length), the
// Python-literal header {'descr': ..., 'fortran_order': ..., 'shape': (...)}, and the data.
#include "kiln/npy.h"

#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "runtime/message_text.h"

namespace kiln {

static_assert(std::endian::native == std::endian::little, "the npy reader assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlignment = 64;              // np.save pads so the data starts at a multiple of this
constexpr size_t kGrowthAxisMaxDigits = 21;    // np.save leaves room to rewrite the first dim in place

// ---- descr strings ----

struct NpyType {
  std::string_view code;  // without the byte order: "f4"
  DType dtype;
};

constexpr NpyType kTypes[] = {
    {"f4", DType::f32}, {"f2", DType::f16}, {"f8", DType::f64}, {"i8", DType::i64},
    {"i4", DType::i32}, {"i2", DType::i16}, {"i1", DType::i8},  {"u1", DType::u8},  {"b1", DType::boolean},
    {"u2", DType::u16}, {"u4", DType::u32}, {"u8", DType::u64},
};

struct Descr {
  DType dtype;
  bool byte_swapped;  // big-endian data on this little-endian host
};

std::optional<Descr> parse_descr(std::string_view descr) {
  char order = '=';
  if (!descr.empty() && (descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '=')) {
    order = descr[0];
    descr.remove_prefix(1);
  }
  for (const NpyType& type : kTypes)
    if (type.code == descr) return Descr{type.dtype, order == '>' && dtype_size(type.dtype) > 1};
  return std::nullopt;
}

std::string descr_of(DType dtype) {
  for (const NpyType& type : kTypes)
    if (type.dtype == dtype) return (dtype_size(dtype) == 1 ? "|" : "<") + std::string(type.code);
  KILN_CHECK(false, "no npy descr for ", dtype_name(dtype));
}

// ---- the header: a Python dict literal ----

// A parsed Python literal: a string, bool, None, int, tuple/list, or dict; `text` is the
// literal as written, for messages.
struct PyValue {
  enum class Kind : uint8_t { string, boolean, none, integer, sequence, dict } kind = Kind::none;
  std::string text;
  std::string string;
  bool boolean = false;
  int64_t integer = 0;
  std::vector<PyValue> items;     // sequence items, or dict values
  std::vector<std::string> keys;  // dict: keys[i] names items[i] (string keys only)
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  PyValue parse_document() {
    PyValue value = parse_value();
    skip_space();
    if (position_ != text_.size()) malformed("unexpected text after the dict");
    return value;
  }

  [[noreturn]] void malformed(const std::string& why) const {
    fail(name_, ": malformed .npy header (", why, "): ", excerpt(text_, 120));
  }

 private:
  void skip_space() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\t' ||
                                        text_[position_] == '\n' || text_[position_] == '\r'))
      ++position_;
  }
  bool at(char c) {
    skip_space();
    return position_ < text_.size() && text_[position_] == c;
  }
  void expect(char c) {
    if (!at(c)) malformed(std::string("expected '") + c + "'");
    ++position_;
  }

  PyValue parse_value() {
    // Nested tuples, lists and dicts recurse: bound them, so that hostile input cannot exhaust the stack.
    if (++depth_ > kMaxDepth) malformed("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    PyValue value = parse_value_unbounded();
    --depth_;
    return value;
  }

  PyValue parse_value_unbounded() {
    skip_space();
    if (position_ >= text_.size()) malformed("unexpected end");
    size_t start = position_;
    PyValue value;
    char c = text_[position_];
    if (c == '\'' || c == '"') {
      value.kind = PyValue::Kind::string;
      value.string = parse_string();
    } else if (c == '(' || c == '[') {
      value.kind = PyValue::Kind::sequence;
      value.items = parse_sequence(c == '(' ? ')' : ']');
    } else if (c == '{') {
      value.kind = PyValue::Kind::dict;
      parse_dict(value);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      value.kind = PyValue::Kind::integer;
      value.integer = parse_integer();
    } else if (consume_word("True")) {
      value.kind = PyValue::Kind::boolean;
      value.boolean = true;
    } else if (consume_word("False")) {
      value.kind = PyValue::Kind::boolean;
    } else if (consume_word("None")) {
      value.kind = PyValue::Kind::none;
    } else {
      malformed(std::string("unexpected character '") + c + "'");
    }
    value.text = std::string(text_.substr(start, position_ - start));
    return value;
  }

  bool consume_word(std::string_view word) {
    if (text_.substr(position_, word.size()) != word) return false;
    position_ += word.size();
    return true;
  }

  std::string parse_string() {
    char quote = text_[position_++];
    std::string result;
    while (position_ < text_.size() && text_[position_] != quote) {
      char c = text_[position_++];
      if (c == '\\' && position_ < text_.size()) c = text_[position_++];
      result += c;
    }
    if (position_ >= text_.size()) malformed("unterminated string");
    ++position_;
    return result;
  }

  int64_t parse_integer() {
    bool negative = text_[position_] == '-';
    if (negative) ++position_;
    if (position_ >= text_.size() || text_[position_] < '0' || text_[position_] > '9') malformed("bad number");
    uint64_t magnitude = 0;
    while (position_ < text_.size() && text_[position_] >= '0' && text_[position_] <= '9') {
      uint64_t digit = uint64_t(text_[position_++] - '0');
      if (magnitude > (uint64_t(std::numeric_limits<int64_t>::max()) - digit) / 10) malformed("number too large");
      magnitude = magnitude * 10 + digit;
    }
    if (position_ < text_.size() && text_[position_] == 'L') ++position_;  // Python 2 long
    return negative ? -int64_t(magnitude) : int64_t(magnitude);
  }

  std::vector<PyValue> parse_sequence(char close) {
    ++position_;
    std::vector<PyValue> items;
    while (!at(close)) {
      items.push_back(parse_value());
      if (at(',')) ++position_;
      else if (!at(close)) malformed(std::string("expected ',' or '") + close + "'");
    }
    ++position_;
    return items;
  }

  void parse_dict(PyValue& dict) {
    ++position_;
    while (!at('}')) {
      PyValue key = parse_value();
      if (key.kind != PyValue::Kind::string) malformed("dict key " + excerpt(key.text, 40) + " is not a string");
      expect(':');
      dict.keys.push_back(key.string);
      dict.items.push_back(parse_value());
      if (at(',')) ++position_;
      else if (!at('}')) malformed("expected ',' or '}'");
    }
    ++position_;
  }

  static constexpr int kMaxDepth = 16;

  std::string_view text_;
  const std::string& name_;
  size_t position_ = 0;
  int depth_ = 0;
};

struct Header {
  Descr descr;
  Sizes shape;
};

Header interpret_header(std::string_view text, const std::string& name) {
  HeaderParser parser(text, name);
  PyValue dict = parser.parse_document();
  if (dict.kind != PyValue::Kind::dict) parser.malformed("not a dict");
  const PyValue* descr = nullptr;
  const PyValue* fortran_order = nullptr;
  const PyValue* shape = nullptr;
  for (size_t i = 0; i < dict.keys.size(); ++i) {
    const std::string& key = dict.keys[i];
    const PyValue& value = dict.items[i];
    if (key == "descr") descr = &value;
    else if (key == "fortran_order") fortran_order = &value;
    else if (key == "shape") shape = &value;
    else parser.malformed("unexpected key '" + excerpt(key, 40) + "'");
  }
  if (!descr) parser.malformed("missing key 'descr'");
  if (!fortran_order) parser.malformed("missing key 'fortran_order'");
  if (!shape) parser.malformed("missing key 'shape'");

  Header header{};
  if (shape->kind != PyValue::Kind::sequence) parser.malformed("'shape' is not a tuple");
  for (const PyValue& dim : shape->items) {
    if (dim.kind != PyValue::Kind::integer || dim.integer < 0)
      parser.malformed("'shape' entry " + excerpt(dim.text, 40) + " is not a non-negative integer");
    header.shape.push_back(dim.integer);
  }

  std::optional<Descr> parsed = descr->kind == PyValue::Kind::string ? parse_descr(descr->string) : std::nullopt;
  if (!parsed) {
    std::string hint;
    if (descr->kind == PyValue::Kind::string && (descr->string == "<V2" || descr->string == "|V2"))
      hint = " (opaque 2-byte records, as ml_dtypes saves bfloat16: save it as float32 instead)";
    fail(name, ": unsupported .npy dtype ", excerpt(descr->text, 40), hint,
         "; Kiln reads f4, f2, f8, i8, i4, i2, i1, u1, u2, u4, u8 and b1 in either byte order");
  }
  header.descr = *parsed;

  if (fortran_order->kind != PyValue::Kind::boolean) parser.malformed("'fortran_order' is not True or False");
  // With at most one dimension larger than 1, Fortran and C order lay the data out the same.
  int64_t long_dims = 0;
  for (int64_t size : header.shape) long_dims += size > 1;
  if (fortran_order->boolean && long_dims > 1)
    fail(name, ": fortran_order True is not supported; save with np.ascontiguousarray");
  return header;
}

// Little-endian integer of `width` bytes at `data`.
uint64_t read_little_endian(const unsigned char* data, size_t width) {
  uint64_t value = 0;
  for (size_t i = width; i-- > 0;) value = (value << 8) | data[i];
  return value;
}

std::string shape_tuple(const Sizes& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const std::string& name) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic)
    fail(name, ": not a .npy file (it does not start with the magic string \\x93NUMPY)");
  if (bytes.size() < 8)
    fail(name, ": truncated .npy file: the ", bytes.size(), "-byte file ends inside the preamble");
  int major = data[6];
  int minor = data[7];
  if (minor != 0 || major < 1 || major > 3)
    fail(name, ": unsupported .npy format version ", major, ".", minor, " (Kiln reads 1.0, 2.0 and 3.0)");
  size_t length_width = major == 1 ? 2 : 4;
  size_t header_start = 8 + length_width;
  if (bytes.size() < header_start)
    fail(name, ": truncated .npy file: the ", bytes.size(), "-byte file ends inside the preamble");
  size_t header_length = read_little_endian(data + 8, length_width);
  if (bytes.size() - header_start < header_length)
    fail(name, ": truncated .npy header: expected ", header_length, " bytes of header, found ",
         bytes.size() - header_start);
  Header header = interpret_header(bytes.substr(header_start, header_length), name);

  DType dtype = header.descr.dtype;
  size_t element_size = dtype_size(dtype);
  if (!checked_numel(header.shape))
    fail(name, ": .npy shape ", shape_tuple(header.shape), " is too large (its element count overflows int64)");
  uint64_t expected = element_size;
  for (int64_t size : header.shape) {
    if (size != 0 && expected > std::numeric_limits<uint64_t>::max() / uint64_t(size))
      fail(name, ": .npy shape ", shape_tuple(header.shape), " is too large");
    expected *= uint64_t(size);
  }
  size_t data_start = header_start + header_length;
  size_t present = bytes.size() - data_start;
  if (present < expected)
    fail(name, ": truncated .npy data: shape ", shape_tuple(header.shape), " of ", descr_of(dtype), " needs ",
         expected, " bytes, found ", present);
  if (present > expected)
    fail(name, ": .npy file has ", present - expected, " bytes after the data of shape ",
         shape_tuple(header.shape), " (expected ", expected, " bytes of data)");

  Tensor tensor = Tensor::empty(header.shape, dtype);
  auto* out = static_cast<unsigned char*>(tensor.data_ptr());
  if (expected > 0) std::memcpy(out, data + data_start, expected);
  if (header.descr.byte_swapped) {
    for (size_t offset = 0; offset < expected; offset += element_size)
      for (size_t i = 0; i < element_size / 2; ++i) std::swap(out[offset + i], out[offset + element_size - 1 - i]);
  }
  if (dtype == DType::boolean) {
    for (size_t i = 0; i < expected; ++i) out[i] = out[i] != 0;  // any nonzero byte is True, as in numpy
  }
  return tensor;
}

std::string serialize_npy(const Tensor& tensor) {
  if (!tensor.defined()) fail("cannot write an undefined tensor as .npy");
  if (!tensor.device().is_cpu())
    fail("cannot write a ", tensor.device().to_string(), " tensor as .npy; copy it to the CPU first");
  Tensor source = tensor.dtype() == DType::bf16 ? tensor.to(DType::f32) : tensor.contiguous();

  std::string dict = "{'descr': '" + descr_of(source.dtype()) + "', 'fortran_order': False, 'shape': " +
                     shape_tuple(source.sizes()) + ", }";
  if (!source.sizes().empty()) {
    size_t digits = std::to_string(source.sizes()[0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // Version 1.0 has a 16-bit header length; 2.0 a 32-bit one. Pad with spaces and end with
  // '\n' so that preamble + header is a multiple of kAlignment.
  int major = 1;
  size_t preamble = kMagic.size() + 2 + 2;
  size_t padding = kAlignment - (preamble + dict.size() + 1) % kAlignment;
  if (dict.size() + padding + 1 > 0xffff) {
    major = 2;
    preamble = kMagic.size() + 2 + 4;
    padding = kAlignment - (preamble + dict.size() + 1) % kAlignment;
  }
  std::string header = dict + std::string(padding, ' ') + "\n";

  std::string bytes(kMagic);
  bytes += char(major);
  bytes += char(0);
  size_t length_width = major == 1 ? 2 : 4;
  for (size_t i = 0; i < length_width; ++i) bytes += char((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  bytes.append(static_cast<const char*>(source.data_ptr()), source.nbytes());
  return bytes;
}

Tensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

void write_npy(const std::string& path, const Tensor& tensor) {
  std::string bytes;
  try {
    bytes = serialize_npy(tensor);
  } catch (const Error& error) {
    fail(path, ": ", error.what());
  }
  write_file_atomically(path, bytes);
}

}  // namespace kiln
