// The graph IR (FX-like): a Graph owns an ordered list of Nodes in topological order.
// A node has an op kind (placeholder, get_attr, call_function, output), a target (an op
// name from the registry, an input name, or a parameter name), positional args and named
// kwargs (Arguments), a unique readable name, its users (kept up to date whenever args
// change), and meta: the dtype/shape/strides/device of each value it produces and where it
// came from. Parameters and constants live in the graph by name (get_attr targets). The
// graph signature (ir/graph_signature.h) says what each input and output is to the caller:
// which get_attr targets are buffers or constants, which outputs are mutated inputs to copy
// back or the loss.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ir/graph_signature.h"
#include "ir/symbolic.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::ir {

class Node;
class Graph;

using SymShape = std::vector<SymInt>;

// One argument of a node: None, a node reference, a scalar, a string, a symbolic int, a
// dtype, a device, or a (possibly nested) list of these.
class Argument {
 public:
  enum class Kind : uint8_t { none, node, integer, floating, boolean, string, symint, dtype, device, list };

  Argument() = default;  // None
  Argument(std::nullopt_t) {}
  Argument(Node* node) : value_(node) {}
  Argument(int value) : value_(int64_t(value)) {}
  Argument(int64_t value) : value_(value) {}
  Argument(double value) : value_(value) {}
  Argument(bool value) : value_(value) {}
  Argument(const char* value) : value_(std::string(value)) {}
  Argument(std::string value) : value_(std::move(value)) {}
  Argument(const SymInt& value);  // a constant becomes an integer
  Argument(DType value) : value_(value) {}
  Argument(Device value) : value_(value) {}
  Argument(std::vector<Argument> values) : value_(std::move(values)) {}
  static Argument ints(const std::vector<int64_t>& values);
  static Argument sym_ints(const std::vector<SymInt>& values);

  Kind kind() const { return Kind(value_.index()); }
  bool is_none() const { return kind() == Kind::none; }
  bool is_node() const { return kind() == Kind::node; }
  bool is_int() const { return kind() == Kind::integer; }
  bool is_float() const { return kind() == Kind::floating; }
  bool is_bool() const { return kind() == Kind::boolean; }
  bool is_string() const { return kind() == Kind::string; }
  bool is_symint() const { return kind() == Kind::symint; }
  bool is_dtype() const { return kind() == Kind::dtype; }
  bool is_device() const { return kind() == Kind::device; }
  bool is_list() const { return kind() == Kind::list; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }

  // Accessors throw kiln::InternalError on the wrong kind (binding against the schema checks
  // kinds first, so user input never reaches them with the wrong kind).
  Node* node() const;
  int64_t integer() const;
  double floating() const;  // an integer or bool converts
  bool boolean() const;
  const std::string& string() const;
  SymInt symint() const;  // an integer converts
  DType dtype() const;
  Device device() const;
  const std::vector<Argument>& list() const;
  std::vector<int64_t> int_list() const;
  std::vector<SymInt> symint_list() const;

  friend bool operator==(const Argument& a, const Argument& b);
  // Python-like text: %x, 3, 1.5, True, None, "s", s0 + 1, f32, cpu, [1, 2].
  std::string to_string() const;

 private:
  std::variant<std::monostate, Node*, int64_t, double, bool, std::string, SymInt, DType, Device,
               std::vector<Argument>>
      value_;
};

using Kwargs = std::vector<std::pair<std::string, Argument>>;

// Formats a double the way Python's repr does: shortest round-trip text with a '.' or an
// exponent ("1.0", "1e-05", "0.1", "inf", "-inf", "nan").
std::string float_repr(double value);

struct TensorMeta {
  DType dtype = DType::f32;
  SymShape shape;
  SymShape strides;  // same rank as shape; contiguous unless a view says otherwise
  Device device = Device::cpu();

  // A contiguous tensor of this dtype and shape.
  static TensorMeta contiguous(DType dtype, SymShape shape, Device device = Device::cpu());
  int64_t rank() const { return int64_t(shape.size()); }
  bool is_static() const;                     // every dim a constant
  std::optional<Sizes> static_shape() const;  // when is_static()
  Sizes evaluate_shape(const std::map<std::string, int64_t>& bindings) const;
  bool is_contiguous() const;
  SymInt numel() const;
  // "f32[s0, 784]"; a 0-d tensor prints "f32[]".
  std::string type_string() const;
  friend bool operator==(const TensorMeta&, const TensorMeta&) = default;
};

std::string shape_string(const SymShape& shape);  // "[s0, 784]"

// The values a node produces: one tensor, or a tuple of tensors (read with getitem).
struct NodeMeta {
  std::vector<TensorMeta> values;
  bool is_tuple = false;
  // "f32[2, 3]" or "(f32[2], i64[2])".
  std::string type_string() const;
};

// Where a node came from.
struct SourceInfo {
  std::string file;         // C++ or model file
  int line = 0;
  std::string module_path;  // "encoder.layers.0.fc1"
  std::string onnx_node;    // ONNX node name
  std::string onnx_op;      // ONNX op type
  bool empty() const { return file.empty() && module_path.empty() && onnx_node.empty() && onnx_op.empty(); }
  std::string to_string() const;  // "model.onnx:12 fc1 (Gemm)"
};

enum class OpKind : uint8_t { placeholder, get_attr, call_function, output };
std::string_view op_kind_name(OpKind kind);

class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  OpKind op() const { return op_; }
  const std::string& target() const { return target_; }
  const std::string& name() const { return name_; }
  Graph& graph() const { return *graph_; }

  const std::vector<Argument>& args() const { return args_; }
  const Kwargs& kwargs() const { return kwargs_; }
  const Argument* kwarg(std::string_view key) const;  // nullptr when absent
  void set_args(std::vector<Argument> args);
  void set_kwargs(Kwargs kwargs);
  void set_arg(size_t index, Argument value);
  void set_target(std::string target) { target_ = std::move(target); }

  // Nodes that use this one, each once, in the order they started using it.
  const std::vector<Node*>& users() const { return users_; }
  // Nodes this one reads, each once, in order of appearance in args then kwargs.
  std::vector<Node*> input_nodes() const;
  // Every user now reads `replacement` instead of this node. Returns the users changed.
  std::vector<Node*> replace_all_uses_with(Node* replacement);
  void replace_input_with(Node* old_input, Node* new_input);

  Node* prev() const;  // nullptr at the ends
  Node* next() const;

  NodeMeta meta;
  SourceInfo source;

  // The single tensor this node produces (throws InternalError for tuples and outputs).
  const TensorMeta& value() const;
  bool has_single_value() const { return !meta.is_tuple && meta.values.size() == 1; }

 private:
  friend class Graph;
  Node(Graph* graph, OpKind op, std::string target, std::string name);
  void add_uses();
  void remove_uses();

  Graph* graph_;
  OpKind op_;
  std::string target_;
  std::string name_;
  std::vector<Argument> args_;
  Kwargs kwargs_;
  std::vector<Node*> users_;
  std::list<std::unique_ptr<Node>>::iterator position_;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // A deep copy of the nodes and the signature; parameter tensors are shared (they are
  // immutable in the IR).
  Graph clone() const;

  // Iteration in topological order. node_list() copies, so the graph may change meanwhile.
  class Iterator {
   public:
    using Base = std::list<std::unique_ptr<Node>>::const_iterator;
    explicit Iterator(Base base) : base_(base) {}
    Node* operator*() const { return base_->get(); }
    Iterator& operator++() { ++base_; return *this; }
    bool operator!=(const Iterator& other) const { return base_ != other.base_; }
   private:
    Base base_;
  };
  struct Range {
    Iterator b, e;
    Iterator begin() const { return b; }
    Iterator end() const { return e; }
  };
  Range nodes() const { return {Iterator(nodes_.begin()), Iterator(nodes_.end())}; }
  std::vector<Node*> node_list() const;
  size_t size() const { return nodes_.size(); }
  Node* find(std::string_view name) const;  // nullptr when absent
  std::vector<Node*> placeholders() const;
  Node* output_node() const;  // nullptr when there is none yet
  // Names of the graph's outputs: the returned nodes' names, made unique with a "_N" suffix.
  std::vector<std::string> output_names() const;
  std::vector<Node*> outputs() const;  // the returned nodes

  // Creation. New nodes go at the insertion point: by default the end of the graph, or
  // just before the output node when there is one.
  Node* create_placeholder(const std::string& name, TensorMeta meta);
  // A parameter read; the parameter must already exist (set_parameter).
  Node* create_get_attr(const std::string& target, const std::string& name = "");
  // A call of a registered op: binds args to the schema, infers meta; on a user error throws
  // kiln::Error naming the node and op.
  Node* create_call(const std::string& target, std::vector<Argument> args, Kwargs kwargs = {},
                    const std::string& name = "");
  Node* create_output(std::vector<Argument> values);
  // A node exactly as given, with no inference (for parsers and passes that set meta).
  Node* create_node(OpKind op, std::string target, std::vector<Argument> args, Kwargs kwargs,
                    const std::string& name, NodeMeta meta);
  // Removes a node that has no users (throws InternalError otherwise).
  void erase(Node* node);
  // Moves `node` to just before `position`.
  void move_before(Node* node, Node* position);
  // Gives `node` the name `name` (exactly; fails when another node has it). Names are labels:
  // nothing refers to a node by its name but dumps and output_names().
  void rename(Node* node, const std::string& name);

  // Scoped insertion point: while the guard lives, new nodes go just before `position`
  // (or just after it, for inserting_after).
  class InsertGuard {
   public:
    ~InsertGuard();
    InsertGuard(InsertGuard&&) = delete;
   private:
    friend class Graph;
    InsertGuard(Graph& graph, Node* before);
    Graph& graph_;
    Node* saved_;
    bool saved_set_;
  };
  [[nodiscard]] InsertGuard inserting_before(Node* position);
  [[nodiscard]] InsertGuard inserting_after(Node* position);

  // Names: FX's scheme. "add" if free, else "add_1", "add_2", ...; characters other than
  // [A-Za-z0-9_] become '_'; a leading digit gets a '_' prefix (sanitized_name).
  std::string unique_name(std::string_view candidate);
  static std::string sanitized_name(std::string_view candidate);

  // Parameters and constants, by get_attr target ("fc1.weight"). A parameter's kind
  // (PARAMETER, BUFFER, CONSTANT_TENSOR) is in the signature; removing it forgets the kind.
  void set_parameter(const std::string& name, Tensor value);
  const Tensor* parameter(std::string_view name) const;  // nullptr when absent
  const std::map<std::string, Tensor, std::less<>>& parameters() const { return parameters_; }
  void remove_parameter(std::string_view name);

  // What each input and output is to the caller (ir/graph_signature.h); clone() copies it.
  const GraphSignature& signature() const { return signature_; }
  GraphSignature& signature() { return signature_; }

 private:
  friend class Node;
  Node* insert(std::unique_ptr<Node> node);

  std::list<std::unique_ptr<Node>> nodes_;
  std::map<std::string, Node*, std::less<>> by_name_;
  std::map<std::string, int64_t, std::less<>> name_counters_;
  std::map<std::string, Tensor, std::less<>> parameters_;
  GraphSignature signature_;
  Node* insert_before_ = nullptr;  // nullptr: default position
  bool insert_point_set_ = false;
  // The output node, kept as nodes are inserted and erased: every insert asks where it is (new
  // nodes go before it), and a scan for it cost O(nodes) per insert while a graph without one
  // yet was built (an unrolled recurrent model's import, clone and passes: O(nodes^2)).
  Node* output_ = nullptr;
};

// Node reference in messages: "node %add_1 (add)".
std::string describe(const Node& node);

}  // namespace kiln::ir
