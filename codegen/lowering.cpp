// The lowering driver (codegen/lowering.h) and the Lowerer's shared machinery
// (codegen/lowering_context.h): symbols and their sources, inputs and parameters, the node
// loop with its dispatch to the per-op rules, accessors, loads, new buffers and nodes,
// contiguous copies, the Fallback extern, and the graph outputs.
#include "codegen/lowering.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "codegen/index_analysis.h"
#include "codegen/lowering_context.h"
#include "ir/type_promotion.h"
#include "kiln/error.h"
#include "runtime/strides.h"

namespace kiln::codegen {

namespace lowering {

// ---------------------------------------------------------------- dtype helpers

DType compute_dtype(DType dtype) {
  return dtype == DType::f16 || dtype == DType::bf16 ? DType::f32 : dtype;
}

Expr upcast(Expr value) { return cast(value, compute_dtype(value->dtype)); }

DType number_dtype(const ir::Argument& value) {
  if (value.is_bool()) return DType::boolean;
  if (value.is_int() || value.is_symint()) return DType::i64;
  return ir::kDefaultFloat;
}

Expr number(const ir::Argument& value, DType dtype) {
  // A size expression (mul(x, s0)): its value at run time, an i64 converted as a number is.
  if (value.is_symint()) return cast(cast(index_value(value.symint(), DType::i64), dtype), compute_dtype(dtype));
  // Through a 0-d tensor of `dtype`, exactly as the interpreter converts numbers.
  Tensor scalar = Tensor::empty({}, dtype);
  if (value.is_float()) {
    scalar.set_double({}, value.floating());
  } else {
    scalar.set_int({}, value.is_bool() ? int64_t(value.boolean()) : value.integer());
  }
  DType compute = compute_dtype(dtype);
  if (is_floating(dtype)) return constant(scalar.item_double({}), compute);
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::Constant;
  node->dtype = compute;
  node->int_value = scalar.item_int({});
  return node;
}

DType promoted_dtype(const ir::OpCall& call, const std::vector<size_t>& indices) {
  std::vector<ir::PromotionOperand> operands;
  for (size_t index : indices) {
    const ir::Argument& argument = call.arg(index);
    if (argument.is_node()) {
      const ir::TensorMeta& meta = call.tensor(index);
      operands.push_back(ir::PromotionOperand::tensor(meta.dtype, meta.rank()));
    } else if (argument.is_number() || argument.is_symint()) {
      operands.push_back(ir::PromotionOperand::scalar(number_dtype(argument)));
    }
  }
  KILN_CHECK(!operands.empty(), "promoted_dtype: no operands");
  return ir::result_type(operands);
}

// ---------------------------------------------------------------- index helpers

std::vector<SymInt> vars_of(const SymShape& shape) { return loop_vars(shape.size()); }

std::vector<SymInt> broadcast_index(const SymShape& shape, const SymShape& out_shape) {
  KILN_CHECK(shape.size() <= out_shape.size(), "broadcast_index: rank ", shape.size(), " into ", out_shape.size());
  size_t lead = out_shape.size() - shape.size();
  std::vector<SymInt> index;
  for (size_t d = 0; d < shape.size(); ++d)
    index.push_back(shape[d] == SymInt(1) ? SymInt(0) : loop_var(d + lead));
  return index;
}

bool provably_le(const SymInt& a, const SymInt& b) { return max(a, b) == b; }

Expr index_within(const SymInt& position, const SymInt& size) {
  Expr below_end = binary(LoopOp::lt, index_value(position, DType::i64), index_value(size, DType::i64));
  if (provably_le(SymInt(0), position)) return below_end;
  return binary(LoopOp::logical_and, binary(LoopOp::ge, index_value(position, DType::i64), constant(0, DType::i64)),
                below_end);
}

namespace {

bool is_reserved_symbol(const std::string& name) {
  if (name.size() < 2 || (name[0] != 'x' && name[0] != 'r')) return false;
  return std::all_of(name.begin() + 1, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

void collect_symbols(const SymInt& value, std::vector<std::string>& out) {
  for (const std::string& symbol : value.free_symbols())
    if (std::find(out.begin(), out.end(), symbol) == out.end()) out.push_back(symbol);
}

void collect_symbols(const ir::Argument& argument, std::vector<std::string>& out) {
  if (argument.is_symint()) collect_symbols(argument.symint(), out);
  if (argument.is_list())
    for (const ir::Argument& item : argument.list()) collect_symbols(item, out);
}

// The node that first uses `symbol`, for messages.
const ir::Node* first_user_of(const ir::Graph& graph, const std::string& symbol) {
  for (const ir::Node* node : graph.nodes()) {
    std::vector<std::string> found;
    for (const ir::TensorMeta& meta : node->meta.values)
      for (const SymInt& size : meta.shape) collect_symbols(size, found);
    for (const ir::Argument& argument : node->args()) collect_symbols(argument, found);
    for (const auto& [key, argument] : node->kwargs()) collect_symbols(argument, found);
    if (std::find(found.begin(), found.end(), symbol) != found.end()) return node;
  }
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------- the Lowerer

Lowerer::Lowerer(const ir::Graph& graph, const LoweringOptions& options) : graph_(graph), options_(options) {
  register_view_lowerings(rules_);
  register_pointwise_lowerings(rules_);
  register_creation_lowerings(rules_);
  register_reduction_lowerings(rules_);
  register_copy_lowerings(rules_);
  register_linear_algebra_lowerings(rules_);
  register_pooling_lowerings(rules_);
  register_convolution_lowerings(rules_);
}

const passes::ValueBounds& Lowerer::value_bounds() {
  if (!value_bounds_) {
    value_bounds_.emplace(graph_, options_.frozen_parameters);
    small_input_bounds_.emplace(value_bounds_->for_inputs_within(passes::kSmallInput));
  }
  return *value_bounds_;
}

const passes::ValueBounds& Lowerer::small_input_bounds() {
  value_bounds();
  return *small_input_bounds_;
}

void Lowerer::note_bound(int buffer, const ir::Node& node) {
  if (!value_bounds_) return;
  Buffer& b = program_.buffers[size_t(buffer)];
  b.bound = value_bounds_->of(node);
  b.small_input_bound = small_input_bounds_->of(node);
}

LoopProgram Lowerer::run() {
  bind_symbols();
  const ir::Node* output = nullptr;
  for (const ir::Node* node : graph_.nodes()) {
    if (node->op() == ir::OpKind::output) {
      output = node;
      break;
    }
    lower_node(*node);
  }
  if (!output) fail("lowering: the graph has no output node");
  lower_outputs(*output);
  return std::move(program_);
}

void Lowerer::bind_symbols() {
  std::vector<std::string> symbols;
  for (const ir::Node* node : graph_.nodes()) {
    for (const ir::TensorMeta& meta : node->meta.values)
      for (const SymInt& size : meta.shape) collect_symbols(size, symbols);
    for (const ir::Argument& argument : node->args()) collect_symbols(argument, symbols);
    for (const auto& [key, argument] : node->kwargs()) collect_symbols(argument, symbols);
  }
  for (const std::string& symbol : symbols)
    if (is_reserved_symbol(symbol)) {
      const ir::Node* user = first_user_of(graph_, symbol);
      fail("lowering: the graph symbol '", symbol, "' (used by ", user ? ir::describe(*user) : "the graph",
           ") is named like a loop variable; rename it (x<digits> and r<digits> are reserved)");
    }
  program_.symbols = symbols;
  program_.library_matmul = options_.library_matmul;

  std::vector<ir::Node*> placeholders = graph_.placeholders();
  for (size_t i = 0; i < placeholders.size(); ++i) {
    const ir::Node& placeholder = *placeholders[i];
    const ir::TensorMeta& meta = placeholder.value();
    Buffer buffer;
    buffer.name = unique_buffer_name(placeholder.name());
    buffer.kind = BufferKind::Input;
    buffer.dtype = meta.dtype;
    buffer.shape = meta.shape;
    buffer.source = placeholder.target();
    buffer.position = int(i);
    int id = program_.add_buffer(std::move(buffer));
    program_.inputs.push_back(id);
    define(placeholder, whole(id));
    for (size_t d = 0; d < meta.shape.size(); ++d) {
      if (!meta.shape[d].is_symbol()) continue;
      std::string symbol = meta.shape[d].free_symbols().front();
      bool bound = std::any_of(program_.symbol_sources.begin(), program_.symbol_sources.end(),
                               [&](const LoopProgram::SymbolSource& source) { return source.symbol == symbol; });
      if (!bound) program_.symbol_sources.push_back({symbol, int(i), int(d)});
    }
  }
  for (const std::string& symbol : symbols) {
    bool bound = std::any_of(program_.symbol_sources.begin(), program_.symbol_sources.end(),
                             [&](const LoopProgram::SymbolSource& source) { return source.symbol == symbol; });
    if (!bound) {
      const ir::Node* user = first_user_of(graph_, symbol);
      fail("lowering: the symbol '", symbol, "' (used by ", user ? ir::describe(*user) : "the graph",
           ") is not bound by any input: no input has a dim whose size is exactly ", symbol);
    }
  }
  for (const auto& [symbol, range] : graph_.signature().symbol_ranges())
    if (std::find(symbols.begin(), symbols.end(), symbol) != symbols.end())
      program_.symbol_ranges.push_back({symbol, range.min, range.max});
}

void Lowerer::lower_node(const ir::Node& node) {
  current_ = &node;
  pending_origins_.clear();
  switch (node.op()) {
    case ir::OpKind::placeholder:
    case ir::OpKind::output:
      return;
    case ir::OpKind::get_attr: {
      const ir::TensorMeta& meta = node.value();
      Accessor accessor;
      accessor.parameter = node.target();
      parameter_names_.emplace(node.target(), node.name());
      accessor.dtype = meta.dtype;
      accessor.shape = meta.shape;
      accessor.index = flat_index(vars_of(meta.shape), meta.shape);
      define(node, std::move(accessor));
      return;
    }
    case ir::OpKind::call_function:
      break;
  }
  const ir::OpInfo& op = ir::OpRegistry::global().get(node.target());
  if (op.is_inplace() || op.has_tag("mutation"))
    fail("lowering: ", ir::describe(node), " mutates its input; lowering needs a functional graph (run the default "
         "pipeline first: kiln dump --stage simplified)");
  ir::OpCall call = ir::OpCall::of(node);
  bool view = op.is_view || op.name() == "getitem";
  auto rule = rules_.find(node.target());
  if (rule == rules_.end() || (!view && options_.force_fallback_ops.count(node.target()))) {
    lower_fallback(node, call);
    return;
  }
  rule->second(*this, node, call);
}

const Accessor& Lowerer::value(const ir::Node* node, size_t element) const {
  auto found = values_.find(node);
  KILN_CHECK(found != values_.end(), "lowering: no value for ", ir::describe(*node));
  KILN_CHECK(element < found->second.size(), "lowering: ", ir::describe(*node), " has no value ", element);
  return found->second[element];
}

const Accessor& Lowerer::tensor(const ir::OpCall& call, size_t index) const {
  KILN_CHECK(call.arg(index).is_node(), call.prefix(), "argument ", index, " is not a tensor");
  return value(call.arg(index).node());
}

void Lowerer::define(const ir::Node& node, Accessor value) { values_[&node] = {std::move(value)}; }

void Lowerer::define(const ir::Node& node, std::vector<Accessor> values) { values_[&node] = std::move(values); }

int Lowerer::resolve(const Accessor& value) {
  if (value.buffer >= 0) return value.buffer;
  auto found = parameter_buffers_.find(value.parameter);
  if (found != parameter_buffers_.end()) return found->second;
  const Tensor* tensor = graph_.parameter(value.parameter);
  if (!tensor) fail("lowering: no parameter named '", value.parameter, "' in the graph");
  Buffer buffer;
  auto named = parameter_names_.find(value.parameter);
  buffer.name = unique_buffer_name(named != parameter_names_.end() ? named->second : value.parameter);
  buffer.kind = BufferKind::Parameter;
  buffer.dtype = tensor->dtype();
  for (int64_t size : tensor->sizes()) buffer.shape.push_back(size);
  buffer.source = value.parameter;
  int id = program_.add_buffer(std::move(buffer));
  program_.parameters.push_back(id);
  parameter_buffers_[value.parameter] = id;
  return id;
}

Expr Lowerer::load(const Accessor& value, const std::vector<SymInt>& index) {
  KILN_CHECK(index.size() == value.shape.size(), "load: index of rank ", index.size(), " for a value of rank ",
             value.shape.size());
  std::map<std::string, SymInt> replacements;
  for (size_t d = 0; d < index.size(); ++d) replacements["x" + std::to_string(d)] = index[d];
  for (const std::string& view : value.views)
    if (std::find(pending_origins_.begin(), pending_origins_.end(), view) == pending_origins_.end())
      pending_origins_.push_back(view);
  return codegen::load(resolve(value), value.dtype, value.index.substitute(replacements));
}

Expr Lowerer::load_masked(const Accessor& value, const std::vector<SymInt>& index, Expr mask, double other) {
  auto node = std::make_shared<ExprNode>(*load(value, index));
  node->mask = std::move(mask);
  node->other = constant(other, value.dtype);
  return node;
}

Expr Lowerer::load_broadcast(const Accessor& value, const SymShape& out_shape) {
  return load(value, broadcast_index(value.shape, out_shape));
}

Expr Lowerer::load_indirect(const Accessor& value, std::vector<SymInt> index, size_t dim, Expr position) {
  Accessor source = value;
  SymInt var = loop_var(dim);
  std::optional<AffineIndex> form = affine_form(source.index, {var});
  bool usable = form.has_value();
  if (usable)
    for (const std::string& symbol : form->coefficients[0].free_symbols())
      if (is_reserved_symbol(symbol)) usable = false;
  if (!usable) {
    source = contiguous(value, current().name() + "_source");
    form = affine_form(source.index, {var});
    KILN_CHECK(form, "load_indirect: a contiguous accessor is not affine");
  }
  index[dim] = SymInt(0);
  auto node = std::make_shared<ExprNode>(*load(source, index));
  std::map<std::string, SymInt> replacements;
  for (size_t d = 0; d < index.size(); ++d) replacements["x" + std::to_string(d)] = index[d];
  const bool in_range = constant_within(position, source.shape[dim]);
  node->indirect.push_back(IndirectTerm{std::move(position), source.shape[dim],
                                        form->coefficients[0].substitute(replacements), in_range});
  return node;
}

// Index tables of up to this many elements are read through at compile time (constant_within).
constexpr int64_t kMaxScannedIndexTable = int64_t(1) << 20;

bool Lowerer::constant_within(const Expr& position, const SymInt& size) const {
  std::optional<int64_t> extent = size.maybe_constant();
  if (!extent || !position) return false;
  const ExprNode* at = position.get();
  if (at->kind == ExprKind::Cast && !at->args.empty()) at = at->args[0].get();
  if (at->kind != ExprKind::Load || !at->indirect.empty() || at->mask || at->buffer < 0 ||
      at->buffer >= int(program_.buffers.size()))
    return false;
  const Buffer& table = program_.buffer(at->buffer);
  if (table.kind != BufferKind::Parameter) return false;
  // A parameter is a constant where the compile freezes them, or where it is one (an importer's).
  if (!options_.frozen_parameters &&
      graph_.signature().attribute_kind(table.source) != ir::InputKind::constant_tensor)
    return false;
  const Tensor* values = graph_.parameter(table.source);
  if (!values || !values->is_contiguous() || values->numel() > kMaxScannedIndexTable) return false;
  if (values->dtype() != DType::i64 && values->dtype() != DType::i32) return false;
  for (int64_t i = 0; i < values->numel(); ++i) {
    const int64_t v = values->dtype() == DType::i64 ? values->data<int64_t>()[i] : int64_t(values->data<int32_t>()[i]);
    if (v < 0 || v >= *extent) return false;
  }
  return true;
}

std::optional<StridedView> Lowerer::strided_view(const Accessor& value) {
  std::vector<SymInt> vars = vars_of(value.shape);
  std::optional<AffineIndex> form = affine_form(value.index, vars);
  if (!form) {
    // A view that splits a dim and merges it again reads through divisions its constant sizes
    // decide: a head split of x[s, b, 3 * 256] viewed [b, h, s, 64] reads x at
    // 768 b + (64 h + d) // 256 * 768 + (64 h + d) % 256, which is 768 b + 64 h + d for h < 4, d < 64
    // (a GEMM then reads attention's q and k where they are, not a copy of each).
    std::map<std::string, int64_t> bounds;
    for (size_t d = 0; d < vars.size(); ++d)
      if (std::optional<int64_t> size = value.shape[d].maybe_constant()) bounds[vars[d].to_string()] = *size;
    if (!bounds.empty()) form = affine_form(value.index.fold_with_bounds(bounds), vars);
  }
  if (!form) return std::nullopt;
  StridedView view;
  view.buffer = resolve(value);
  view.offset = form->offset;
  view.shape = value.shape;
  view.strides = form->coefficients;
  for (const std::string& view_node : value.views)
    if (std::find(pending_origins_.begin(), pending_origins_.end(), view_node) == pending_origins_.end())
      pending_origins_.push_back(view_node);
  return view;
}

bool Lowerer::is_contiguous(const Accessor& value) {
  return value.index == flat_index(vars_of(value.shape), value.shape);
}

Accessor Lowerer::contiguous(const Accessor& value, const std::string& name) {
  if (is_contiguous(value)) return value;
  std::string key = value.parameter + " " + std::string(dtype_name(value.dtype)) + " " + value.index.to_string();
  for (const SymInt& size : value.shape) key += " " + size.to_string();
  std::map<std::string, int>& copies = contiguous_copies_[value.buffer];
  if (auto copied = copies.find(key); copied != copies.end()) return whole(copied->second);
  int buffer = emit_pointwise(name, value.dtype, value.shape, load(value, vars_of(value.shape)));
  contiguous_copies_[value.buffer][key] = buffer;
  return whole(buffer);
}

Accessor Lowerer::whole(int buffer, std::optional<SymShape> shape) const {
  const Buffer& target = program_.buffer(buffer);
  Accessor accessor;
  accessor.buffer = buffer;
  accessor.dtype = target.dtype;
  accessor.shape = shape ? *shape : target.shape;
  accessor.index = flat_index(vars_of(accessor.shape), accessor.shape);
  return accessor;
}

std::string Lowerer::unique_buffer_name(const std::string& name) {
  std::string candidate = name;
  for (int suffix = 1; buffer_names_.count(candidate); ++suffix) candidate = name + "_" + std::to_string(suffix);
  buffer_names_.insert(candidate);
  return candidate;
}

int Lowerer::new_buffer(const std::string& name, DType dtype, SymShape shape) {
  Buffer buffer;
  buffer.name = unique_buffer_name(name);
  buffer.kind = BufferKind::Intermediate;
  buffer.dtype = dtype;
  buffer.shape = std::move(shape);
  return program_.add_buffer(std::move(buffer));
}

int Lowerer::add_node(LoopNode node) {
  KILN_CHECK(current_ != nullptr, "add_node outside of a graph node");
  if (node.name.empty()) node.name = current_->name();
  node.origins = pending_origins_;
  if (std::find(node.origins.begin(), node.origins.end(), current_->name()) == node.origins.end())
    node.origins.push_back(current_->name());
  pending_origins_.clear();
  // A buffer written again (a scatter into a copy of its base) has new elements: its copies are
  // stale, and a copy written into is no longer one.
  for (int output : node.outputs) {
    contiguous_copies_.erase(output);
    for (auto& [source, copies] : contiguous_copies_)
      std::erase_if(copies, [&](const auto& entry) { return entry.second == output; });
  }
  return program_.add_node(std::move(node));
}

int Lowerer::emit_pointwise(const std::string& name, DType dtype, const SymShape& ranges, Expr body) {
  int buffer = new_buffer(name, dtype, ranges);
  LoopNode node;
  node.kind = NodeKind::Pointwise;
  node.name = name;
  node.ranges = ranges;
  node.outputs = {buffer};
  node.body = cast(std::move(body), dtype);
  add_node(std::move(node));
  return buffer;
}

void Lowerer::define_pointwise(const ir::Node& node, Expr body) {
  const ir::TensorMeta& meta = node.value();
  if (reads_channels_last(body, meta.shape)) {  // keep the layout of the channels-last inputs
    int buffer = emit_pointwise(node.name(), meta.dtype, channels_last_shape(meta.shape),
                                to_channels_last_vars(body, meta.shape.size()));
    note_bound(buffer, node);
    define(node, channels_last(buffer, meta.shape));
    return;
  }
  int buffer = emit_pointwise(node.name(), meta.dtype, meta.shape, std::move(body));
  note_bound(buffer, node);
  define(node, whole(buffer));
}

// ---------------------------------------------------------------- fallback

void Lowerer::lower_fallback(const ir::Node& node, const ir::OpCall& call) {
  ExternCall extern_call;
  extern_call.kind = ExternKind::Fallback;
  extern_call.graph_node = node.name();
  // The tensor arguments in the order ir::tensor_arguments walks them.
  auto add_input = [&](const Accessor& accessor) {
    std::optional<StridedView> view = strided_view(accessor);
    if (!view) view = strided_view(contiguous(accessor, node.name() + "_input"));
    extern_call.inputs.push_back(*view);
  };
  auto add_node_values = [&](const ir::Node* input) {
    auto found = values_.find(input);
    KILN_CHECK(found != values_.end(), "lowering: no value for ", ir::describe(*input));
    for (const Accessor& accessor : found->second) add_input(accessor);
  };
  const std::vector<ir::Param>& params = call.op().schema.params;
  for (size_t i = 0; i < params.size(); ++i) {
    const ir::Argument& argument = call.arg(i);
    switch (params[i].type) {
      case ir::ParamType::tensor:
      case ir::ParamType::optional_tensor:
      case ir::ParamType::tensor_or_scalar:
        if (argument.is_node()) add_input(value(argument.node()));
        break;
      case ir::ParamType::tensor_list:
      case ir::ParamType::optional_tensor_list:
        if (argument.is_node()) {
          add_node_values(argument.node());
        } else if (argument.is_list()) {
          for (const ir::Argument& item : argument.list())
            if (item.is_node()) add_input(value(item.node()));
        }
        break;
      default:
        break;
    }
  }
  std::vector<Accessor> results;
  LoopNode loop_node;
  loop_node.kind = NodeKind::Extern;
  for (size_t i = 0; i < node.meta.values.size(); ++i) {
    const ir::TensorMeta& meta = node.meta.values[i];
    std::string name = node.meta.is_tuple ? node.name() + "_" + std::to_string(i) : node.name();
    int buffer = new_buffer(name, meta.dtype, meta.shape);
    loop_node.outputs.push_back(buffer);
    extern_call.outputs.push_back(StridedView{buffer, SymInt(0), meta.shape, contiguous_strides(meta.shape)});
    results.push_back(whole(buffer));
  }
  if (!node.meta.is_tuple && !results.empty()) loop_node.ranges = node.value().shape;
  extern_call.native = native_fallback(node, call);
  if (extern_call.native.kind != NativeFallback::Kind::none) {
    // Its tensor inputs contiguous (as the order of lower_fallback's views: the tensor arguments).
    std::vector<const ir::Node*> tensors;
    for (size_t i = 0; i < call.op().schema.params.size(); ++i)
      if (call.arg(i).is_node()) tensors.push_back(call.arg(i).node());
    for (size_t i = 0; i < tensors.size() && i < extern_call.inputs.size(); ++i)
      if (!(extern_call.inputs[i].strides == contiguous_strides(extern_call.inputs[i].shape)))
        extern_call.inputs[i] = *strided_view(contiguous(value(tensors[i]), node.name() + "_input"));
  }
  loop_node.extern_call = std::move(extern_call);
  add_node(std::move(loop_node));
  define(node, std::move(results));
}

// cumsum and cumprod of floating values (f32, f64: their dtype kept) or of integers and bools
// (summed as i64, PyTorch's default), topk of f32, f64, i64 and i32 values with k no more than
// the dim's size, scatters (native_scatter) and 2-d grid_samples (native_grid_sample), which the
// C++ backend computes itself (NativeFallback); none for others.
NativeFallback Lowerer::native_fallback(const ir::Node& node, const ir::OpCall& call) {
  using Kind = NativeFallback::Kind;
  NativeFallback native;
  const std::string& op = node.target();
  if (op == "grid_sample") return native_grid_sample(call);
  if (op != "cumsum" && op != "cumprod" && op != "topk" && op != "scatter") return native;
  if (!call.arg(0).is_node()) return native;
  const ir::TensorMeta& input = call.tensor(0);
  if (input.rank() == 0) return native;
  const DType in = input.dtype, out = node.meta.values.at(0).dtype;
  const int64_t rank = input.rank();
  const int64_t dim_arg = op == "topk" ? (call.arg(2).is_none() ? -1 : call.int_arg(2)) : call.int_arg(1);
  if (dim_arg < -rank || dim_arg >= rank) return native;  // the reference kernel says why
  const size_t dim = size_t(dim_arg < 0 ? dim_arg + rank : dim_arg);
  if (op == "scatter") return native_scatter(call, input, int64_t(dim));
  for (size_t d = 0; d < input.shape.size(); ++d) {
    if (d < dim) native.outer = native.outer * input.shape[d];
    if (d > dim) native.inner = native.inner * input.shape[d];
  }
  native.length = input.shape[dim];
  if (op == "topk") {
    const bool typed = in == DType::f32 || in == DType::f64 || in == DType::i64 || in == DType::i32;
    const int64_t k = call.int_arg(1);
    std::optional<int64_t> length = native.length.maybe_constant();
    if (!typed || !length || k < 0 || k > *length) return NativeFallback{};
    native.kind = Kind::top_k;
    native.k = k;
    native.largest = call.arg(3).is_none() || call.bool_arg(3);
    return native;
  }
  const bool floating = (out == DType::f32 || out == DType::f64) && in == out;
  const bool integral = out == DType::i64 && (in == DType::i64 || in == DType::i32 || in == DType::i16 ||
                                              in == DType::i8 || in == DType::u8 || in == DType::boolean);
  if (!floating && !integral) return NativeFallback{};
  native.kind = op == "cumsum" ? Kind::cumulative_sum : Kind::cumulative_product;
  return native;
}

// grid_sample of a 2-d f32 or f64 input ([n, c, h, w]) at an f32 or f64 grid [n, out_h, out_w, 2],
// bilinear or nearest, any padding.
NativeFallback Lowerer::native_grid_sample(const ir::OpCall& call) {
  NativeFallback native;
  if (!call.arg(0).is_node() || !call.arg(1).is_node()) return native;
  const ir::TensorMeta &input = call.tensor(0), &grid = call.tensor(1);
  auto floating = [](DType dtype) { return dtype == DType::f32 || dtype == DType::f64; };
  if (input.rank() != 4 || grid.rank() != 4 || !floating(input.dtype) || !floating(grid.dtype)) return native;
  if (!(grid.shape[3] == SymInt(2)) || !(grid.shape[0] == input.shape[0])) return native;
  const std::string mode = call.string_arg(2), padding = call.string_arg(3);
  if (mode != "bilinear" && mode != "nearest") return native;
  if (padding != "zeros" && padding != "border" && padding != "reflection") return native;
  native.kind = NativeFallback::Kind::grid_sample;
  native.nearest = mode == "nearest";
  native.padding = padding == "zeros" ? 0 : padding == "border" ? 1 : 2;
  native.align_corners = call.bool_arg(4);
  return native;
}

// scatter written or summed ("sum") of f32, f64, i64 or i32 values from a src tensor of self's
// dtype, whose index has src's shape and self's but along the dim (a message passing's
// scatter_add: [edges, features] into [nodes, features]).
NativeFallback Lowerer::native_scatter(const ir::OpCall& call, const ir::TensorMeta& self, int64_t dim_arg) {
  using Kind = NativeFallback::Kind;
  NativeFallback native;
  const std::string reduce = call.arg(4).is_none() ? "" : call.string_arg(4);
  if ((reduce != "" && reduce != "sum") || !call.arg(2).is_node() || !call.arg(3).is_node()) return native;
  const ir::TensorMeta &index = call.tensor(2), &src = call.tensor(3);
  const DType dtype = self.dtype;
  if (dtype != DType::f32 && dtype != DType::f64 && dtype != DType::i64 && dtype != DType::i32) return native;
  if (src.dtype != dtype || index.dtype != DType::i64 || index.rank() != self.rank() || !(src.shape == index.shape))
    return native;
  const size_t dim = size_t(dim_arg);
  for (size_t d = 0; d < self.shape.size(); ++d) {
    if (d != dim && !(index.shape[d] == self.shape[d])) return NativeFallback{};
    if (d < dim) native.outer = native.outer * self.shape[d];
    if (d > dim) native.inner = native.inner * self.shape[d];
  }
  native.length = self.shape[dim];
  native.index_length = index.shape[dim];
  native.kind = reduce.empty() ? Kind::scatter : Kind::scatter_add;
  return native;
}

// ---------------------------------------------------------------- outputs

void Lowerer::lower_outputs(const ir::Node& output) {
  current_ = &output;
  pending_origins_.clear();
  std::vector<std::string> names = graph_.output_names();
  size_t named = 0;
  int position = 0;
  for (const ir::Argument& argument : output.args()) {
    if (!argument.is_node())
      fail("lowering: graph output ", position, " is ", argument.to_string(), ", not a tensor");
    const ir::Node* node = argument.node();
    std::string name = named < names.size() ? names[named] : node->name();
    ++named;
    auto found = values_.find(node);
    KILN_CHECK(found != values_.end(), "lowering: no value for output ", ir::describe(*node));
    const std::vector<Accessor>& values = found->second;
    for (size_t i = 0; i < values.size(); ++i)
      add_output(*node, values[i], values.size() > 1 ? name + "_" + std::to_string(i) : name, position++);
  }
}

void Lowerer::add_output(const ir::Node& source, const Accessor& value, const std::string& name, int position) {
  bool whole_buffer = value.buffer >= 0 && is_contiguous(value);
  if (whole_buffer) {
    Buffer& buffer = program_.buffers[size_t(value.buffer)];
    whole_buffer = buffer.kind == BufferKind::Intermediate && buffer.dtype == value.dtype &&
                   numel(buffer.shape) == numel(value.shape);
  }
  int id;
  if (whole_buffer) {
    id = value.buffer;
    program_.buffers[size_t(id)].shape = value.shape;
  } else {
    LoopNode copy;
    copy.kind = NodeKind::Pointwise;
    copy.ranges = value.shape;
    copy.body = load(value, vars_of(value.shape));
    id = new_buffer(name + "_output", value.dtype, value.shape);
    copy.name = program_.buffer(id).name;
    copy.outputs = {id};
    // The copy computes the output value: its origins are the views it reads and the value's node.
    copy.origins = pending_origins_;
    if (std::find(copy.origins.begin(), copy.origins.end(), source.name()) == copy.origins.end())
      copy.origins.push_back(source.name());
    pending_origins_.clear();
    program_.add_node(std::move(copy));
  }
  Buffer& buffer = program_.buffers[size_t(id)];
  buffer.kind = BufferKind::Output;
  buffer.source = name;
  buffer.position = position;
  program_.outputs.push_back(id);
}

}  // namespace lowering

LoopProgram lower(const ir::Graph& graph, const LoweringOptions& options) {
  return lowering::Lowerer(graph, options).run();
}

}  // namespace kiln::codegen
