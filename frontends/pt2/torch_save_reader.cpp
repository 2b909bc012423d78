// A restricted unpickler for torch.save files: a stack machine over the pickle opcodes that
// protocols 2-4 use for plain data, with GLOBAL limited to the tensor-rebuilding functions
// and storage classes, and persistent ids resolved to the storages in the zip.
#include "frontends/pt2/torch_save_reader.h"

#include <cstring>
#include <map>
#include <optional>

#include "frontends/pt2/pt2_dtypes.h"
#include "frontends/pt2/zip_reader.h"
#include "kiln/error.h"

namespace kiln::frontends {

void TorchValue::flatten_into(std::vector<const TorchValue*>& leaves) const {
  switch (kind) {
    case Kind::none: return;
    case Kind::tuple:
    case Kind::list:
      for (const TorchValue& item : items) item.flatten_into(leaves);
      return;
    case Kind::dict:
      for (const TorchDictEntry& entry : entries) entry.value.flatten_into(leaves);
      return;
    default: leaves.push_back(this);
  }
}

std::string TorchValue::kind_name() const {
  switch (kind) {
    case Kind::none: return "None";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return "str";
    case Kind::tuple: return "tuple";
    case Kind::list: return "list";
    case Kind::dict: return "dict";
    case Kind::tensor: return "tensor";
    case Kind::global: return "global";
  }
  return "value";
}

namespace {

// A value on the unpickler's stack, or the mark.
struct StackValue {
  enum class Kind { value, mark } kind = Kind::value;
  TorchValue value;
};

class Unpickler {
 public:
  Unpickler(const ZipReader& zip, std::string root, std::string label)
      : zip_(zip), root_(std::move(root)), label_(std::move(label)) {}

  TorchValue run(const std::string& program) {
    data_ = &program;
    while (true) {
      uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;              // PROTO
        case 0x95: bytes(8); break;            // FRAME
        case '(': push_mark(); break;          // MARK
        case '.': {                            // STOP
          StackValue top = pop();
          if (top.kind != StackValue::Kind::value) error("the pickle ends on a mark");
          return std::move(top.value);
        }
        case 'N': push(TorchValue{}); break;   // NONE
        case 0x88: push(boolean(true)); break;   // NEWTRUE
        case 0x89: push(boolean(false)); break;  // NEWFALSE
        case 'J': push(integer(int32_t(little_endian(4)))); break;  // BININT
        case 'K': push(integer(int64_t(little_endian(1)))); break;  // BININT1
        case 'M': push(integer(int64_t(little_endian(2)))); break;  // BININT2
        case 0x8a: push(integer(long_integer(byte()))); break;      // LONG1
        case 0x8b: push(integer(long_integer(little_endian(4)))); break;  // LONG4
        case 'G': push(floating(big_endian_double())); break;       // BINFLOAT
        case 'X': push(string(bytes(little_endian(4)))); break;     // BINUNICODE
        case 0x8c: push(string(bytes(byte()))); break;              // SHORT_BINUNICODE
        case 0x8d: push(string(bytes(little_endian(8)))); break;    // BINUNICODE8
        case 'T': push(string(bytes(little_endian(4)))); break;     // BINSTRING
        case 'U': push(string(bytes(byte()))); break;               // SHORT_BINSTRING
        case ')': push(sequence(TorchValue::Kind::tuple, {})); break;  // EMPTY_TUPLE
        case 0x85: case 0x86: case 0x87: {                          // TUPLE1-3
          size_t n = size_t(op - 0x84);
          std::vector<TorchValue> items(n);
          for (size_t i = n; i-- > 0;) items[i] = pop_value("a tuple item");
          push(sequence(TorchValue::Kind::tuple, std::move(items)));
          break;
        }
        case 't': push(sequence(TorchValue::Kind::tuple, pop_to_mark())); break;  // TUPLE
        case ']': push(sequence(TorchValue::Kind::list, {})); break;             // EMPTY_LIST
        case 'l': push(sequence(TorchValue::Kind::list, pop_to_mark())); break;  // LIST
        case 'a': {                                                               // APPEND
          TorchValue item = pop_value("a list item");
          top_value(TorchValue::Kind::list, "APPEND").items.push_back(std::move(item));
          break;
        }
        case 'e': {                                                               // APPENDS
          std::vector<TorchValue> items = pop_to_mark();
          TorchValue& list = top_value(TorchValue::Kind::list, "APPENDS");
          for (TorchValue& item : items) list.items.push_back(std::move(item));
          break;
        }
        case '}': push(dict()); break;  // EMPTY_DICT
        case 'd': {                      // DICT
          std::vector<TorchValue> items = pop_to_mark();
          push(dict());
          set_items(items);
          break;
        }
        case 's': {  // SETITEM
          TorchValue value = pop_value("a dict value");
          TorchValue key = pop_value("a dict key");
          set_items({std::move(key), std::move(value)});
          break;
        }
        case 'u': set_items(pop_to_mark()); break;  // SETITEMS
        case 'c': {                                 // GLOBAL
          std::string module = line();
          std::string name = line();
          push(global(module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          TorchValue name = pop_value("a global's name");
          TorchValue module = pop_value("a global's module");
          push(global(module.string + "." + name.string));
          break;
        }
        case 'q': memo_[little_endian(1)] = peek(); break;  // BINPUT
        case 'r': memo_[little_endian(4)] = peek(); break;  // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = peek(); break;     // MEMOIZE
        case 'h': stack_.push_back(memo(little_endian(1))); break;  // BINGET
        case 'j': stack_.push_back(memo(little_endian(4))); break;  // LONG_BINGET
        case 'Q': push(persistent_load(pop_value("a persistent id"))); break;  // BINPERSID
        case 'R': reduce(); break;                                                        // REDUCE
        case 'b': {  // BUILD: state for an object; plain data and tensors take none that matters
          pop();
          break;
        }
        default: error("unsupported pickle opcode 0x" + hex(op));
      }
    }
  }

 private:
  [[noreturn]] void error(const std::string& what) const { fail(label_, ": ", what); }

  static std::string hex(uint8_t value) {
    const char* digits = "0123456789abcdef";
    return {digits[value >> 4], digits[value & 15]};
  }
  uint8_t byte() {
    if (position_ >= data_->size()) error("the pickle ends early");
    return uint8_t((*data_)[position_++]);
  }
  std::string bytes(uint64_t count) {
    if (count > data_->size() - position_) error("the pickle ends early");
    std::string result = data_->substr(position_, size_t(count));
    position_ += size_t(count);
    return result;
  }
  uint64_t little_endian(int count) {
    uint64_t value = 0;
    for (int i = 0; i < count; ++i) value |= uint64_t(byte()) << (8 * i);
    return value;
  }
  int64_t long_integer(uint64_t count) {
    if (count > 8) error("an integer wider than 64 bits");
    std::string raw = bytes(count);
    uint64_t value = 0;
    for (size_t i = 0; i < raw.size(); ++i) value |= uint64_t(uint8_t(raw[i])) << (8 * i);
    if (count > 0 && count < 8 && (uint8_t(raw.back()) & 0x80)) value |= ~uint64_t(0) << (8 * count);
    return int64_t(value);
  }
  double big_endian_double() {
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | byte();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  std::string line() {
    size_t end = data_->find('\n', position_);
    if (end == std::string::npos) error("the pickle ends early");
    std::string result = data_->substr(position_, end - position_);
    position_ = end + 1;
    return result;
  }

  static TorchValue boolean(bool value) {
    TorchValue v;
    v.kind = TorchValue::Kind::boolean;
    v.boolean = value;
    return v;
  }
  static TorchValue integer(int64_t value) {
    TorchValue v;
    v.kind = TorchValue::Kind::integer;
    v.integer = value;
    return v;
  }
  static TorchValue floating(double value) {
    TorchValue v;
    v.kind = TorchValue::Kind::floating;
    v.floating = value;
    return v;
  }
  static TorchValue string(std::string value) {
    TorchValue v;
    v.kind = TorchValue::Kind::string;
    v.string = std::move(value);
    return v;
  }
  static TorchValue sequence(TorchValue::Kind kind, std::vector<TorchValue> items) {
    TorchValue v;
    v.kind = kind;
    v.items = std::move(items);
    return v;
  }
  static TorchValue global(std::string name) {
    TorchValue v;
    v.kind = TorchValue::Kind::global;
    v.string = std::move(name);
    return v;
  }
  static TorchValue dict() {
    TorchValue v;
    v.kind = TorchValue::Kind::dict;
    return v;
  }

  void push(TorchValue value) {
    StackValue entry;
    entry.value = std::move(value);
    stack_.push_back(std::move(entry));
  }
  void push_mark() {
    StackValue mark;
    mark.kind = StackValue::Kind::mark;
    stack_.push_back(std::move(mark));
  }
  StackValue pop() {
    if (stack_.empty()) error("the pickle pops an empty stack");
    StackValue top = std::move(stack_.back());
    stack_.pop_back();
    return top;
  }
  const StackValue& peek() const {
    if (stack_.empty()) error("the pickle memoizes an empty stack");
    return stack_.back();
  }
  TorchValue pop_value(const char* what) {
    StackValue top = pop();
    if (top.kind != StackValue::Kind::value) error(std::string("expected ") + what + ", found a mark");
    return std::move(top.value);
  }
  TorchValue& top_value(TorchValue::Kind kind, const char* op) {
    if (stack_.empty() || stack_.back().kind != StackValue::Kind::value || stack_.back().value.kind != kind)
      error(std::string(op) + " on something that is not a " + (kind == TorchValue::Kind::list ? "list" : "dict"));
    return stack_.back().value;
  }
  std::vector<TorchValue> pop_to_mark() {
    std::vector<TorchValue> items;
    while (true) {
      StackValue top = pop();
      if (top.kind == StackValue::Kind::mark) break;
      items.push_back(std::move(top.value));
    }
    return {std::make_move_iterator(items.rbegin()), std::make_move_iterator(items.rend())};
  }
  void set_items(std::vector<TorchValue> items) {
    if (items.size() % 2) error("a dict with a key but no value");
    TorchValue& target = top_value(TorchValue::Kind::dict, "SETITEMS");
    for (size_t i = 0; i < items.size(); i += 2) target.entries.push_back({std::move(items[i]), std::move(items[i + 1])});
  }
  StackValue memo(uint64_t key) const {
    auto found = memo_.find(key);
    if (found == memo_.end()) error("the pickle reads memo entry " + std::to_string(key) + ", which it never wrote");
    return found->second;
  }

  // ('storage', <storage class>, key, location, numel): the storage data/<key>, as a 1-d tensor.
  TorchValue persistent_load(const TorchValue& id) {
    if (id.kind != TorchValue::Kind::tuple || id.items.size() < 5 || id.items[0].string != "storage" ||
        id.items[1].kind != TorchValue::Kind::global || id.items[2].kind != TorchValue::Kind::string ||
        id.items[4].kind != TorchValue::Kind::integer)
      error("a persistent id that is not a storage");
    const std::string& key = id.items[2].string;
    auto cached = storages_.find(key);
    if (cached != storages_.end()) return cached->second;
    std::string type = id.items[1].string.substr(id.items[1].string.rfind('.') + 1);
    std::optional<DType> dtype = dtype_from_storage_class(type);
    if (!dtype) error("storage '" + key + "' holds " + type + ", a type Kiln has no dtype for");
    int64_t numel = id.items[4].integer;
    if (numel < 0) error("storage '" + key + "' has a negative size");
    std::string entry = root_ + "/data/" + key;
    if (!zip_.has(entry)) error("storage '" + key + "' is missing (no entry '" + entry + "')");
    TorchValue storage;
    storage.kind = TorchValue::Kind::tensor;
    storage.tensor = Tensor::empty({numel}, *dtype);
    zip_.read_into(entry, storage.tensor.data_ptr(), uint64_t(numel) * dtype_size(*dtype));
    storages_[key] = storage;
    return storage;
  }

  void reduce() {
    TorchValue args = pop_value("the arguments of a call");
    TorchValue callable = pop_value("a function to call");
    if (callable.kind != TorchValue::Kind::global) error("a call of something that is not a function");
    const std::string& name = callable.string;
    if (name == "collections.OrderedDict") {
      push(dict());
      return;
    }
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      push(rebuild_tensor(args));
      return;
    }
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (args.items.empty() || args.items[0].kind != TorchValue::Kind::tensor) error("a parameter without a tensor");
      push(std::move(args.items[0]));
      return;
    }
    error("the object '" + name + "' is not one Kiln reads from torch.save files (tensors and plain data only)");
  }

  TorchValue rebuild_tensor(const TorchValue& args) {
    if (args.kind != TorchValue::Kind::tuple || args.items.size() < 4 || args.items[0].kind != TorchValue::Kind::tensor)
      error("a tensor with malformed arguments");
    const Tensor& storage = args.items[0].tensor;
    int64_t offset = args.items[1].integer;
    Sizes sizes, strides;
    for (const TorchValue& v : args.items[2].items) sizes.push_back(v.integer);
    for (const TorchValue& v : args.items[3].items) strides.push_back(v.integer);
    if (sizes.size() != strides.size()) error("a tensor with " + std::to_string(sizes.size()) + " sizes and " + std::to_string(strides.size()) + " strides");
    int64_t last = offset;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 0 || strides[d] < 0) error("a tensor with a negative size or stride");
      if (sizes[d] == 0) last = -1;
      if (last >= 0) last += (sizes[d] - 1) * strides[d];
    }
    if (offset < 0 || last >= storage.numel()) error("a tensor that reaches past the end of its storage");
    TorchValue value;
    value.kind = TorchValue::Kind::tensor;
    value.tensor = storage.as_strided(sizes, strides, offset).contiguous();
    if (value.tensor.shares_storage_with(storage)) value.tensor = value.tensor.clone();  // own its memory
    return value;
  }

 private:
  const ZipReader& zip_;
  std::string root_;
  std::string label_;
  const std::string* data_ = nullptr;
  size_t position_ = 0;
  std::vector<StackValue> stack_;
  std::map<uint64_t, StackValue> memo_;
  std::map<std::string, TorchValue> storages_;
};

}  // namespace

TorchValue read_torch_save(std::string bytes, const std::string& label) {
  ZipReader zip = ZipReader::open_buffer(std::move(bytes), label);
  std::string pickle_entry;
  for (const std::string& name : zip.names()) {
    size_t slash = name.find('/');
    if (slash != std::string::npos && name.substr(slash) == "/data.pkl") pickle_entry = name;
  }
  if (pickle_entry.empty()) fail(label, " is not a torch.save file (no <root>/data.pkl)");
  std::string root = pickle_entry.substr(0, pickle_entry.find('/'));
  Unpickler unpickler(zip, root, label);
  return unpickler.run(zip.read(pickle_entry));
}

}  // namespace kiln::frontends
