// Graph and Node: ownership, use lists, insertion points, names, parameters, cloning.
// (Graph::create_call, which needs the op registry, is in ir/create_call.cpp: the registry
// depends on the graph, not the other way round.)
#include "ir/graph.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <sstream>

#include "kiln/error.h"
#include "runtime/strides.h"

namespace kiln::ir {

// ---------------------------------------------------------------- Argument

Argument::Argument(const SymInt& value) {
  if (std::optional<int64_t> constant = value.maybe_constant()) value_ = *constant;
  else value_ = value;
}

Argument Argument::ints(const std::vector<int64_t>& values) {
  std::vector<Argument> items(values.begin(), values.end());
  return Argument(std::move(items));
}

Argument Argument::sym_ints(const std::vector<SymInt>& values) {
  std::vector<Argument> items;
  items.reserve(values.size());
  for (const SymInt& value : values) items.emplace_back(value);
  return Argument(std::move(items));
}

Node* Argument::node() const {
  KILN_CHECK(is_node(), "argument ", to_string(), " is not a node");
  return std::get<Node*>(value_);
}
int64_t Argument::integer() const {
  if (is_bool()) return std::get<bool>(value_);
  KILN_CHECK(is_int(), "argument ", to_string(), " is not an int");
  return std::get<int64_t>(value_);
}
double Argument::floating() const {
  if (is_int()) return double(std::get<int64_t>(value_));
  if (is_bool()) return std::get<bool>(value_) ? 1.0 : 0.0;
  KILN_CHECK(is_float(), "argument ", to_string(), " is not a float");
  return std::get<double>(value_);
}
bool Argument::boolean() const {
  KILN_CHECK(is_bool(), "argument ", to_string(), " is not a bool");
  return std::get<bool>(value_);
}
const std::string& Argument::string() const {
  KILN_CHECK(is_string(), "argument ", to_string(), " is not a string");
  return std::get<std::string>(value_);
}
SymInt Argument::symint() const {
  if (is_int()) return SymInt(std::get<int64_t>(value_));
  KILN_CHECK(is_symint(), "argument ", to_string(), " is not a SymInt");
  return std::get<SymInt>(value_);
}
DType Argument::dtype() const {
  KILN_CHECK(is_dtype(), "argument ", to_string(), " is not a dtype");
  return std::get<DType>(value_);
}
Device Argument::device() const {
  KILN_CHECK(is_device(), "argument ", to_string(), " is not a device");
  return std::get<Device>(value_);
}
const std::vector<Argument>& Argument::list() const {
  KILN_CHECK(is_list(), "argument ", to_string(), " is not a list");
  return std::get<std::vector<Argument>>(value_);
}
std::vector<int64_t> Argument::int_list() const {
  if (is_int()) return {integer()};
  std::vector<int64_t> values;
  for (const Argument& item : list()) values.push_back(item.integer());
  return values;
}
std::vector<SymInt> Argument::symint_list() const {
  if (is_int() || is_symint()) return {symint()};
  std::vector<SymInt> values;
  for (const Argument& item : list()) values.push_back(item.symint());
  return values;
}

bool operator==(const Argument& a, const Argument& b) { return a.value_ == b.value_; }

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  KILN_CHECK(error == std::errc(), "to_chars failed");
  std::string text(buffer, end);
  // Python switches to exponent form below 1e-4 and at 1e16 and above.
  double magnitude = std::fabs(value);
  if (magnitude != 0 && (magnitude < 1e-4 || magnitude >= 1e16) && text.find('e') == std::string::npos) {
    auto [end2, error2] = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
    KILN_CHECK(error2 == std::errc(), "to_chars failed");
    text.assign(buffer, end2);
  } else if (magnitude >= 1e-4 && magnitude < 1e16 && text.find('e') != std::string::npos) {
    auto [end2, error2] = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
    KILN_CHECK(error2 == std::errc(), "to_chars failed");
    text.assign(buffer, end2);
  }
  size_t exponent = text.find('e');
  if (exponent != std::string::npos) {
    // Python writes e-05 / e+16: at least two exponent digits and an explicit sign.
    std::string mantissa = text.substr(0, exponent);
    std::string digits = text.substr(exponent + 1);
    char sign = '+';
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
      sign = digits[0];
      digits = digits.substr(1);
    }
    if (digits.size() < 2) digits = "0" + digits;
    return mantissa + "e" + sign + digits;
  }
  if (text.find('.') == std::string::npos) text += ".0";
  return text;
}

std::string Argument::to_string() const {
  switch (kind()) {
    case Kind::none: return "None";
    case Kind::node: return "%" + std::get<Node*>(value_)->name();
    case Kind::integer: return std::to_string(std::get<int64_t>(value_));
    case Kind::floating: return float_repr(std::get<double>(value_));
    case Kind::boolean: return std::get<bool>(value_) ? "True" : "False";
    case Kind::string: {
      std::string out = "\"";
      for (char c : std::get<std::string>(value_)) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') { out += "\\n"; continue; }
        out += c;
      }
      return out + "\"";
    }
    case Kind::symint: return std::get<SymInt>(value_).to_string();
    case Kind::dtype: return std::string(dtype_name(std::get<DType>(value_)));
    case Kind::device: return std::get<Device>(value_).to_string();
    case Kind::list: {
      std::string out = "[";
      const auto& items = std::get<std::vector<Argument>>(value_);
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += items[i].to_string();
      }
      return out + "]";
    }
  }
  KILN_CHECK(false, "bad argument kind");
}

// ---------------------------------------------------------------- metas

std::string shape_string(const SymShape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += shape[i].to_string();
  }
  return text + "]";
}

TensorMeta TensorMeta::contiguous(DType dtype, SymShape shape, Device device) {
  TensorMeta meta;
  meta.dtype = dtype;
  meta.strides = contiguous_strides(shape);
  meta.shape = std::move(shape);
  meta.device = device;
  return meta;
}

bool TensorMeta::is_static() const {
  return std::all_of(shape.begin(), shape.end(), [](const SymInt& dim) { return dim.is_constant(); });
}

std::optional<Sizes> TensorMeta::static_shape() const {
  if (!is_static()) return std::nullopt;
  Sizes sizes;
  for (const SymInt& dim : shape) sizes.push_back(dim.constant());
  return sizes;
}

Sizes TensorMeta::evaluate_shape(const std::map<std::string, int64_t>& bindings) const {
  Sizes sizes;
  for (const SymInt& dim : shape) sizes.push_back(dim.evaluate(bindings));
  return sizes;
}

bool TensorMeta::is_contiguous() const {
  SymShape expected = contiguous_strides(shape);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == SymInt(1)) continue;
    if (!(strides[i] == expected[i])) return false;
  }
  return true;
}

SymInt TensorMeta::numel() const {
  SymInt count(1);
  for (const SymInt& dim : shape) count = count * dim;
  return count;
}

std::string TensorMeta::type_string() const {
  return std::string(dtype_name(dtype)) + shape_string(shape);
}

std::string NodeMeta::type_string() const {
  if (!is_tuple) return values.empty() ? std::string() : values[0].type_string();
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) text += ", ";
    text += values[i].type_string();
  }
  if (values.size() == 1) text += ",";
  return text + ")";
}

std::string SourceInfo::to_string() const {
  std::string text;
  if (!file.empty()) text = line > 0 ? file + ":" + std::to_string(line) : file;
  auto add = [&text](const std::string& part) {
    if (part.empty()) return;
    if (!text.empty()) text += " ";
    text += part;
  };
  add(module_path);
  add(onnx_node);
  if (!onnx_op.empty()) add("(" + onnx_op + ")");
  return text;
}

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::placeholder: return "placeholder";
    case OpKind::get_attr: return "get_attr";
    case OpKind::call_function: return "call_function";
    case OpKind::output: return "output";
  }
  KILN_CHECK(false, "bad op kind");
}

std::string describe(const Node& node) {
  if (node.op() == OpKind::call_function) return "node %" + node.name() + " (" + node.target() + ")";
  return "node %" + node.name() + " (" + std::string(op_kind_name(node.op())) + ")";
}

// ---------------------------------------------------------------- Node

Node::Node(Graph* graph, OpKind op, std::string target, std::string name)
    : graph_(graph), op_(op), target_(std::move(target)), name_(std::move(name)) {}

namespace {
void collect_nodes(const Argument& argument, std::vector<Node*>& out) {
  if (argument.is_node()) {
    if (std::find(out.begin(), out.end(), argument.node()) == out.end()) out.push_back(argument.node());
  } else if (argument.is_list()) {
    for (const Argument& item : argument.list()) collect_nodes(item, out);
  }
}

// Rewrites every reference to `from` inside `argument` into `to`.
Argument replace_in(const Argument& argument, Node* from, Node* to) {
  if (argument.is_node()) return argument.node() == from ? Argument(to) : argument;
  if (argument.is_list()) {
    std::vector<Argument> items;
    items.reserve(argument.list().size());
    for (const Argument& item : argument.list()) items.push_back(replace_in(item, from, to));
    return Argument(std::move(items));
  }
  return argument;
}
}  // namespace

std::vector<Node*> Node::input_nodes() const {
  std::vector<Node*> inputs;
  for (const Argument& argument : args_) collect_nodes(argument, inputs);
  for (const auto& [key, argument] : kwargs_) collect_nodes(argument, inputs);
  return inputs;
}

void Node::add_uses() {
  for (Node* input : input_nodes()) {
    KILN_CHECK(&input->graph() == graph_, describe(*this), " uses ", describe(*input), " of another graph");
    if (std::find(input->users_.begin(), input->users_.end(), this) == input->users_.end())
      input->users_.push_back(this);
  }
}

void Node::remove_uses() {
  for (Node* input : input_nodes()) std::erase(input->users_, this);
}

const Argument* Node::kwarg(std::string_view key) const {
  for (const auto& [name, argument] : kwargs_)
    if (name == key) return &argument;
  return nullptr;
}

void Node::set_args(std::vector<Argument> args) {
  remove_uses();
  args_ = std::move(args);
  add_uses();
}

void Node::set_kwargs(Kwargs kwargs) {
  remove_uses();
  kwargs_ = std::move(kwargs);
  add_uses();
}

void Node::set_arg(size_t index, Argument value) {
  KILN_CHECK(index < args_.size(), "arg index ", index, " out of range for ", describe(*this));
  std::vector<Argument> args = args_;
  args[index] = std::move(value);
  set_args(std::move(args));
}

std::vector<Node*> Node::replace_all_uses_with(Node* replacement) {
  KILN_CHECK(replacement != this, "replace_all_uses_with itself: ", describe(*this));
  std::vector<Node*> users = users_;
  for (Node* user : users) user->replace_input_with(this, replacement);
  return users;
}

void Node::replace_input_with(Node* old_input, Node* new_input) {
  std::vector<Argument> args;
  args.reserve(args_.size());
  for (const Argument& argument : args_) args.push_back(replace_in(argument, old_input, new_input));
  Kwargs kwargs;
  for (const auto& [key, argument] : kwargs_) kwargs.emplace_back(key, replace_in(argument, old_input, new_input));
  remove_uses();
  args_ = std::move(args);
  kwargs_ = std::move(kwargs);
  add_uses();
}

Node* Node::prev() const {
  if (position_ == graph_->nodes_.begin()) return nullptr;
  return std::prev(position_)->get();
}

Node* Node::next() const {
  auto after = std::next(position_);
  return after == graph_->nodes_.end() ? nullptr : after->get();
}

const TensorMeta& Node::value() const {
  KILN_CHECK(has_single_value(), describe(*this), " does not produce a single tensor (type ",
             meta.type_string(), ")");
  return meta.values[0];
}

// ---------------------------------------------------------------- Graph

Graph::Graph() = default;
Graph::~Graph() {
  // Drop references first so destruction order does not matter.
  for (auto& node : nodes_) {
    node->args_.clear();
    node->kwargs_.clear();
    node->users_.clear();
  }
}
Graph::Graph(Graph&& other) noexcept { *this = std::move(other); }
Graph& Graph::operator=(Graph&& other) noexcept {
  if (this == &other) return *this;
  nodes_ = std::move(other.nodes_);
  by_name_ = std::move(other.by_name_);
  name_counters_ = std::move(other.name_counters_);
  parameters_ = std::move(other.parameters_);
  signature_ = std::move(other.signature_);
  insert_before_ = other.insert_before_;
  insert_point_set_ = other.insert_point_set_;
  output_ = other.output_;
  other.insert_before_ = nullptr;
  other.insert_point_set_ = false;
  other.output_ = nullptr;
  for (auto& node : nodes_) node->graph_ = this;
  return *this;
}

Graph Graph::clone() const {
  Graph copy;
  copy.parameters_ = parameters_;
  copy.signature_ = signature_;
  copy.name_counters_ = name_counters_;
  std::map<const Node*, Node*> mapping;
  std::function<Argument(const Argument&)> remap = [&](const Argument& argument) -> Argument {
    if (argument.is_node()) return Argument(mapping.at(argument.node()));
    if (argument.is_list()) {
      std::vector<Argument> items;
      for (const Argument& item : argument.list()) items.push_back(remap(item));
      return Argument(std::move(items));
    }
    return argument;
  };
  for (const auto& node : nodes_) {
    std::vector<Argument> args;
    for (const Argument& argument : node->args_) args.push_back(remap(argument));
    Kwargs kwargs;
    for (const auto& [key, argument] : node->kwargs_) kwargs.emplace_back(key, remap(argument));
    Node* made = copy.create_node(node->op_, node->target_, std::move(args), std::move(kwargs), node->name_, node->meta);
    made->source = node->source;
    mapping[node.get()] = made;
  }
  return copy;
}

std::vector<Node*> Graph::node_list() const {
  std::vector<Node*> list;
  list.reserve(nodes_.size());
  for (const auto& node : nodes_) list.push_back(node.get());
  return list;
}

Node* Graph::find(std::string_view name) const {
  auto found = by_name_.find(name);
  return found == by_name_.end() ? nullptr : found->second;
}

std::vector<Node*> Graph::placeholders() const {
  std::vector<Node*> result;
  for (const auto& node : nodes_)
    if (node->op() == OpKind::placeholder) result.push_back(node.get());
  return result;
}

Node* Graph::output_node() const { return output_; }

std::vector<Node*> Graph::outputs() const {
  std::vector<Node*> result;
  Node* output = output_node();
  if (!output) return result;
  for (const Argument& argument : output->args())
    if (argument.is_node()) result.push_back(argument.node());
  return result;
}

std::vector<std::string> Graph::output_names() const {
  std::vector<std::string> names;
  for (Node* node : outputs()) {
    std::string name = node->name();
    int suffix = 1;
    while (std::find(names.begin(), names.end(), name) != names.end())
      name = node->name() + "_" + std::to_string(suffix++);
    names.push_back(name);
  }
  return names;
}

std::string Graph::sanitized_name(std::string_view candidate) {
  std::string base;
  for (char c : candidate) base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (base.empty()) base = "_";
  if (std::isdigit(static_cast<unsigned char>(base[0]))) base = "_" + base;
  return base;
}

std::string Graph::unique_name(std::string_view candidate) {
  std::string base = sanitized_name(candidate);
  if (!by_name_.count(base)) return base;
  // FX: strip an existing numeric suffix ("add_1" -> "add") before counting.
  std::string stem = base;
  size_t underscore = stem.rfind('_');
  if (underscore != std::string::npos && underscore + 1 < stem.size() &&
      std::all_of(stem.begin() + long(underscore) + 1, stem.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    stem = stem.substr(0, underscore);
  int64_t& counter = name_counters_[stem];
  std::string name;
  do {
    name = stem + "_" + std::to_string(++counter);
  } while (by_name_.count(name));
  return name;
}

Node* Graph::insert(std::unique_ptr<Node> node) {
  KILN_CHECK(!by_name_.count(node->name_), "duplicate node name %", node->name_);
  std::list<std::unique_ptr<Node>>::iterator position;
  if (insert_point_set_) {
    position = insert_before_ ? insert_before_->position_ : nodes_.end();
  } else {
    Node* output = output_node();
    position = output ? output->position_ : nodes_.end();
  }
  Node* raw = node.get();
  raw->position_ = nodes_.insert(position, std::move(node));
  by_name_[raw->name_] = raw;
  if (raw->op() == OpKind::output) output_ = raw;
  raw->add_uses();
  return raw;
}

Node* Graph::create_node(OpKind op, std::string target, std::vector<Argument> args, Kwargs kwargs,
                         const std::string& name, NodeMeta meta) {
  std::string chosen = name.empty() ? unique_name(op == OpKind::output ? "output" : target) : name;
  if (by_name_.count(chosen)) fail("duplicate node name '%", chosen, "'");
  std::unique_ptr<Node> node(new Node(this, op, std::move(target), chosen));
  node->args_ = std::move(args);
  node->kwargs_ = std::move(kwargs);
  node->meta = std::move(meta);
  return insert(std::move(node));
}

Node* Graph::create_placeholder(const std::string& name, TensorMeta meta) {
  NodeMeta node_meta;
  if (meta.strides.size() != meta.shape.size()) meta.strides = contiguous_strides(meta.shape);
  node_meta.values.push_back(std::move(meta));
  std::string chosen = unique_name(name);
  return create_node(OpKind::placeholder, name, {}, {}, chosen, std::move(node_meta));
}

Node* Graph::create_get_attr(const std::string& target, const std::string& name) {
  const Tensor* value = parameter(target);
  if (!value) fail("get_attr: no parameter named '", target, "'");
  SymShape shape(value->sizes().begin(), value->sizes().end());
  NodeMeta meta;
  meta.values.push_back(TensorMeta::contiguous(value->dtype(), shape, value->device()));
  return create_node(OpKind::get_attr, target, {}, {}, name.empty() ? unique_name(target) : name, std::move(meta));
}

namespace {

// A returned value is a node, None, or a list of those (what every executor can return).
void check_returned_value(const Argument& value) {
  if (value.is_node() || value.is_none()) return;
  if (value.is_list()) {
    for (const Argument& item : value.list()) check_returned_value(item);
    return;
  }
  fail("return value ", value.to_string(), " is not a node: a graph returns nodes, None, or lists of them");
}

}  // namespace

Node* Graph::create_output(std::vector<Argument> values) {
  if (output_node()) fail("the graph already has an output node");
  for (const Argument& value : values) check_returned_value(value);
  insert_point_set_ = false;
  Node* output = create_node(OpKind::output, "output", std::move(values), {}, "", {});
  // The output node is always last.
  nodes_.splice(nodes_.end(), nodes_, output->position_);
  return output;
}

void Graph::erase(Node* node) {
  KILN_CHECK(&node->graph() == this, "erasing a node of another graph");
  KILN_CHECK(node->users_.empty(), "cannot erase ", describe(*node), ": it still has ", node->users_.size(), " users");
  if (insert_before_ == node) insert_before_ = node->next();
  node->remove_uses();
  by_name_.erase(node->name_);
  if (output_ == node) output_ = nullptr;
  nodes_.erase(node->position_);
}

void Graph::rename(Node* node, const std::string& name) {
  KILN_CHECK(&node->graph() == this, "renaming a node of another graph");
  if (node->name_ == name) return;
  if (name.empty()) fail("a node name cannot be empty");
  if (by_name_.count(name)) fail("duplicate node name '%", name, "'");
  by_name_.erase(node->name_);
  node->name_ = name;
  by_name_[name] = node;
}

void Graph::move_before(Node* node, Node* position) {
  KILN_CHECK(node != position, "move_before itself");
  nodes_.splice(position->position_, nodes_, node->position_);
}

Graph::InsertGuard::InsertGuard(Graph& graph, Node* before)
    : graph_(graph), saved_(graph.insert_before_), saved_set_(graph.insert_point_set_) {
  graph.insert_before_ = before;
  graph.insert_point_set_ = true;
}

Graph::InsertGuard::~InsertGuard() {
  graph_.insert_before_ = saved_;
  graph_.insert_point_set_ = saved_set_;
}

Graph::InsertGuard Graph::inserting_before(Node* position) { return InsertGuard(*this, position); }
Graph::InsertGuard Graph::inserting_after(Node* position) { return InsertGuard(*this, position->next()); }

void Graph::set_parameter(const std::string& name, Tensor value) {
  if (!value.defined()) fail("parameter '", name, "' is an undefined tensor");
  parameters_[name] = std::move(value);
}

const Tensor* Graph::parameter(std::string_view name) const {
  auto found = parameters_.find(name);
  return found == parameters_.end() ? nullptr : &found->second;
}

void Graph::remove_parameter(std::string_view name) {
  auto found = parameters_.find(name);
  if (found != parameters_.end()) parameters_.erase(found);
  signature_.forget_attribute(name);
}

}  // namespace kiln::ir
