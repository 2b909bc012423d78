// The .pt2 importer's driver: archive and schema, unsupported-target report, signature
// (inputs, parameters, buffers, constants), node conversion with the metadata self-check,
// outputs and mutations.
#include "frontends/pt2/pt2_importer.h"

#include <filesystem>
#include <set>

#include "frontends/pt2/aten_op_table.h"
#include "frontends/pt2/pt2_archive.h"
#include "frontends/pt2/pt2_dtypes.h"
#include "frontends/pt2/pt2_symbols.h"
#include "frontends/pt2/pt2_weights.h"
#include "frontends/pt2/torch_save_reader.h"
#include "ir/verifier.h"

namespace kiln::frontends {

namespace {

using nlohmann::json;

// Why some targets cannot be in the table, added to the unsupported-op report.
std::string unsupported_reason(const std::string& target) {
  static const std::set<std::string> data_dependent = {"aten._local_scalar_dense.default", "aten.item.default",
                                                       "aten.nonzero.default", "aten.masked_select.default",
                                                       "aten.unique.default", "aten._unique2.default"};
  if (data_dependent.count(target)) return " [data-dependent: its result's size or value depends on tensor values]";
  if (target.rfind("higher_order.", 0) == 0) return " [control flow or a higher-order op]";
  return "";
}

void report_unsupported_targets(const ExportProgram& program, const std::string& file_label) {
  std::map<std::string, std::vector<std::string>> unsupported;  // target -> node names
  for (const ExportNode& node : program.nodes) {
    if (AtenOpTable::global().find(node.target)) continue;
    std::string name = node.name;
    if (name.empty() && !node.outputs.empty() && node.outputs[0].value.is_object())
      name = node.outputs[0].value.value("name", node.outputs[0].value.value("as_name", ""));
    unsupported[short_target(node.target)].push_back(name.empty() ? "#" + std::to_string(node.index) : "'" + name + "'");
  }
  if (unsupported.empty()) return;
  size_t node_count = 0;
  std::string list;
  for (const auto& [target, names] : unsupported) {
    node_count += names.size();
    list += list.empty() ? "" : "; ";
    list += target + " (" + std::to_string(names.size()) + (names.size() == 1 ? " node: " : " nodes: ");
    for (size_t i = 0; i < names.size() && i < 5; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 5) list += ", and " + std::to_string(names.size() - 5) + " more";
    list += ")" + unsupported_reason(target);
  }
  fail(file_label, " uses ", unsupported.size(), " operator", unsupported.size() == 1 ? "" : "s",
       " that Kiln does not support, in ", node_count, " node", node_count == 1 ? "" : "s", ": ", list);
}

// Every value name some node reads or the graph returns.
void collect_names(const json& value, std::set<std::string>& names) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if ((it.key() == "name" || it.key() == "as_name") && it->is_string()) names.insert(it->get<std::string>());
      else collect_names(*it, names);
    }
  } else if (value.is_array()) {
    for (const json& item : value) collect_names(item, names);
  }
}

std::set<std::string> used_names(const ExportProgram& program) {
  std::set<std::string> names;
  for (const ExportNode& node : program.nodes)
    for (const ExportNamedArgument& input : node.inputs) collect_names(input.arg.value, names);
  for (const ExportArgument& output : program.outputs) collect_names(output.value, names);
  return names;
}

class Importer {
 public:
  explicit Importer(const std::string& path) : archive_(path) {
    label_ = "'" + path + "'";
    program_ = parse_export_program(archive_.zip().read(archive_.model_json_entry()), label_ + ": " + archive_.model_json_entry());
    state_.file_label = label_;
    state_.source_file = std::filesystem::path(path).filename().string();
    state_.program = &program_;
  }

  ir::Graph run() {
    report_unsupported_targets(program_, label_);
    state_.used_names = used_names(program_);
    weights_ = read_payloads(archive_, archive_.weights_config_entry(), archive_.weights_folder(), "weight");
    constants_ = read_payloads(archive_, archive_.constants_config_entry(), archive_.constants_folder(), "constant");
    add_inputs();
    add_symbol_ranges();
    for (const ExportNode& node : program_.nodes) convert(node);
    add_outputs();
    ir::verify(state_.graph);
    return std::move(state_.graph);
  }

 private:
  // ---- metadata

  const ExportTensorMeta& meta_of(const std::string& name, const std::string& what) const {
    auto found = program_.tensor_values.find(name);
    if (found == program_.tensor_values.end()) fail(label_, ": ", what, " '", name, "' has no tensor metadata");
    return found->second;
  }

  ir::SymShape shape_of_meta(const ExportTensorMeta& meta, const std::string& where) const {
    ir::SymShape shape;
    for (size_t d = 0; d < meta.sizes.size(); ++d) {
      const ExportSymInt& size = meta.sizes[d];
      shape.push_back(size.constant ? ir::SymInt(*size.constant)
                                    : parse_sympy_size(size.expression, where + " dim " + std::to_string(d)));
    }
    return shape;
  }

  DType dtype_of_meta(const ExportTensorMeta& meta, const std::string& where) const {
    std::optional<DType> dtype = dtype_from_scalar_type(meta.dtype);
    if (!dtype) fail(where, " has dtype ", scalar_type_name(meta.dtype), ", which Kiln does not support");
    return *dtype;
  }

  // ---- inputs

  void add_inputs() {
    if (program_.input_specs.size() != program_.inputs.size())
      fail(label_, ": the graph has ", program_.inputs.size(), " inputs but its signature describes ", program_.input_specs.size());
    for (const ExportInputSpec& spec : program_.input_specs) {
      switch (spec.kind) {
        case InputKind::user_input: add_user_input(spec); break;
        case InputKind::parameter:
        case InputKind::buffer:
        case InputKind::tensor_constant: add_stored_tensor(spec); break;
        case InputKind::constant_input: add_constant_input(spec); break;
        default:
          fail(label_, ": input '", spec.name, "' is a ", input_kind_name(spec.kind), ", which Kiln does not support");
      }
    }
  }

  void add_user_input(const ExportInputSpec& spec) {
    const ExportArgument& arg = spec.argument;
    if (arg.kind == "as_tensor") {
      std::string where = label_ + ": input '" + spec.name + "'";
      const ExportTensorMeta& meta = meta_of(spec.name, "input");
      ir::TensorMeta tensor = ir::TensorMeta::contiguous(dtype_of_meta(meta, where), shape_of_meta(meta, where));
      ir::Node* node = state_.graph.create_placeholder(state_.graph.unique_name(spec.name), tensor);
      node->source.file = state_.source_file;
      state_.values[spec.name] = Pt2Value::of_node(node);
      return;
    }
    if (arg.kind == "as_sym_int") {
      fail(label_, ": input '", spec.name, "' is a symbolic int; Kiln takes tensor inputs (pass sizes as tensor shapes)");
    }
    // Constant user inputs (ints, floats, None) were specialized by torch.export: nothing to read.
    if (arg.kind == "as_int" && !spec.name.empty()) state_.values[spec.name] = Pt2Value::of_sym_int(arg.value.get<int64_t>());
  }

  // The range constraints of the symbols that size the inputs, as the graph signature's
  // symbol ranges (checked where the symbols are bound: the interpreter, the compiled guards).
  void add_symbol_ranges() {
    std::set<std::string> bound;
    for (ir::Node* placeholder : state_.graph.placeholders())
      for (const ir::SymInt& size : placeholder->value().shape)
        if (size.is_symbol()) bound.insert(size.to_string());
    for (const auto& [symbol, range] : program_.range_constraints) {
      if (!bound.count(symbol)) continue;
      state_.graph.signature().set_symbol_range(symbol, ir::SymbolRange{range.min.value_or(0), range.max});
    }
  }

  void add_constant_input(const ExportInputSpec& spec) {
    if (spec.argument.kind == "as_int") state_.values[spec.name] = Pt2Value::of_sym_int(spec.argument.value.get<int64_t>());
  }

  void add_stored_tensor(const ExportInputSpec& spec) {
    std::string what = input_kind_name(spec.kind) + " '" + spec.target + "'";
    std::string where = label_ + ": " + what;
    // Parameters and persistent buffers are weights, lifted constants and non-persistent
    // buffers constants; look in the other place too.
    bool weight_first = spec.kind != InputKind::tensor_constant;
    const std::map<std::string, Tensor>& first = weight_first ? weights_ : constants_;
    const std::map<std::string, Tensor>& second = weight_first ? constants_ : weights_;
    const Tensor* stored = nullptr;
    if (auto found = first.find(spec.target); found != first.end()) stored = &found->second;
    else if (auto other = second.find(spec.target); other != second.end()) stored = &other->second;
    if (!stored) fail(where, " (graph input '", spec.name, "') is stored in neither the archive's weights nor its constants");
    const Tensor& value = *stored;
    const ExportTensorMeta& meta = meta_of(spec.name, input_kind_name(spec.kind));
    DType dtype = dtype_of_meta(meta, where);
    ir::SymShape shape = shape_of_meta(meta, where);
    Sizes sizes;
    for (const ir::SymInt& size : shape) sizes.push_back(size.is_constant() ? size.constant() : -1);
    if (value.dtype() != dtype || value.sizes() != sizes)
      fail(where, " is stored as ", dtype_name(value.dtype()), sizes_to_string(value.sizes()), ", but the graph reads it as ",
           dtype_name(dtype), ir::shape_string(shape));
    if (!state_.graph.parameter(spec.target)) state_.graph.set_parameter(spec.target, value);
    // The graph signature: parameters are the default kind; buffers (persistent or not) and
    // lifted constants are marked.
    if (spec.kind == InputKind::buffer) state_.graph.signature().set_attribute_kind(spec.target, ir::InputKind::buffer);
    if (spec.kind == InputKind::tensor_constant)
      state_.graph.signature().set_attribute_kind(spec.target, ir::InputKind::constant_tensor);
    ir::Node* node = state_.graph.create_get_attr(spec.target, state_.graph.unique_name(spec.name));
    node->source.file = state_.source_file;
    state_.values[spec.name] = Pt2Value::of_node(node);
  }

  // ---- nodes

  void convert(const ExportNode& node) {
    const AtenConverter* converter = AtenOpTable::global().find(node.target);
    KILN_CHECK(converter, "unsupported targets are reported before conversion");
    AtenNodeContext context(state_, node);
    (*converter)(context);
    check_outputs(context);
  }

  // Each tensor output the program reads must be set, with torch.export's dtype and sizes.
  void check_outputs(const AtenNodeContext& context) {
    const ExportNode& node = context.node();
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const ExportArgument& out = node.outputs[i];
      std::vector<std::string> names;
      if (out.kind == "as_tensor") names.push_back(out.value.value("name", ""));
      if (out.kind == "as_tensors")
        for (const json& item : out.value) names.push_back(item.value("name", ""));
      for (const std::string& name : names) {
        auto value = state_.values.find(name);
        if (value == state_.values.end()) {
          if (state_.used_names.count(name))
            throw InternalError(context.where() + ": the converter did not set output '" + name + "'");
          continue;
        }
        if (value->second.kind != Pt2Value::Kind::tensor) continue;
        check_meta(context, name, value->second.node);
      }
    }
  }

  void check_meta(const AtenNodeContext& context, const std::string& name, const ir::Node* node) {
    auto found = program_.tensor_values.find(name);
    if (found == program_.tensor_values.end()) return;
    const ExportTensorMeta& meta = found->second;
    const ir::TensorMeta& kiln = node->value();
    std::optional<DType> dtype = dtype_from_scalar_type(meta.dtype);
    std::string problem;
    if (dtype && *dtype != kiln.dtype) problem = "dtype " + std::string(dtype_name(kiln.dtype)) + " where torch.export has " + std::string(dtype_name(*dtype));
    else if (meta.sizes.size() != kiln.shape.size()) problem = "rank " + std::to_string(kiln.rank()) + " where torch.export has " + std::to_string(meta.sizes.size());
    for (size_t d = 0; problem.empty() && d < meta.sizes.size(); ++d) {
      const ExportSymInt& size = meta.sizes[d];
      const ir::SymInt& ours = kiln.shape[d];
      if (size.constant && ours.is_constant() && *size.constant != ours.constant())
        problem = "size " + std::to_string(ours.constant()) + " at dim " + std::to_string(d) + " where torch.export has " + std::to_string(*size.constant);
      if (!size.constant && size.hint) {
        std::map<std::string, int64_t> hints = symbol_hints();
        bool bound = true;
        for (const std::string& symbol : ours.free_symbols()) bound &= hints.count(symbol) > 0;
        if (bound && ours.evaluate(hints) != *size.hint)
          problem = "size " + ours.to_string() + " at dim " + std::to_string(d) + " where torch.export has " + size.expression;
      }
    }
    if (!problem.empty())
      throw InternalError(context.where() + ": the importer produced " + problem + " for '" + name + "' (" +
                          kiln.type_string() + ")");
  }

  // The example value of each symbol, from the hints torch.export recorded on the inputs.
  std::map<std::string, int64_t> symbol_hints() {
    if (!hints_) {
      hints_.emplace();
      for (const ExportInputSpec& spec : program_.input_specs) {
        if (spec.kind != InputKind::user_input || spec.argument.kind != "as_tensor") continue;
        const ExportTensorMeta& meta = meta_of(spec.name, "input");
        for (const ExportSymInt& size : meta.sizes) {
          if (size.constant || !size.hint) continue;
          ir::SymInt symbolic = parse_sympy_size(size.expression, label_);
          if (symbolic.is_symbol()) (*hints_)[symbolic.to_string()] = *size.hint;
        }
      }
    }
    return *hints_;
  }

  // ---- outputs

  ir::Node* output_node_of(const ExportArgument& arg, const std::string& where) {
    if (arg.kind == "as_tensor") {
      auto found = state_.values.find(arg.value.value("name", ""));
      if (found == state_.values.end() || found->second.kind != Pt2Value::Kind::tensor)
        fail(where, " returns '", arg.value.value("name", ""), "', which no node computes");
      return found->second.node;
    }
    if (arg.kind == "as_sym_int") {
      ir::SymInt value;
      if (arg.value.contains("as_int")) {
        value = arg.value["as_int"].get<int64_t>();
      } else {
        auto found = state_.values.find(arg.value.value("as_name", ""));
        if (found == state_.values.end() || found->second.kind != Pt2Value::Kind::sym_int)
          fail(where, " returns the int '", arg.value.value("as_name", ""), "', which no node computes");
        value = found->second.sym_int;
      }
      return int_tensor(value);
    }
    if (arg.kind == "as_int") return int_tensor(arg.value.get<int64_t>());
    fail(where, " is ", arg.kind, "; Kiln returns tensors (and ints as 0-d tensors)");
  }

  ir::Node* int_tensor(const ir::SymInt& value) {
    ExportNode none;
    none.target = "output";
    AtenNodeContext context(state_, none);
    return context.sym_int_tensor(value);
  }

  void add_outputs() {
    if (program_.output_specs.size() != program_.outputs.size())
      fail(label_, ": the graph has ", program_.outputs.size(), " outputs but its signature describes ", program_.output_specs.size());
    std::vector<ir::Argument> results;
    std::vector<size_t> losses;                            // positions of loss outputs
    std::vector<std::pair<ir::Node*, ir::Node*>> writes;  // (mutated input, new value)
    for (size_t i = 0; i < program_.output_specs.size(); ++i) {
      const ExportOutputSpec& spec = program_.output_specs[i];
      std::string where = label_ + ": output " + std::to_string(i) + " (" + output_kind_name(spec.kind) + ")";
      switch (spec.kind) {
        case OutputKind::user_output: results.emplace_back(output_node_of(program_.outputs[i], where)); break;
        case OutputKind::loss_output:
          losses.push_back(results.size());
          results.emplace_back(output_node_of(program_.outputs[i], where));
          break;
        case OutputKind::buffer_mutation:
        case OutputKind::parameter_mutation:
        case OutputKind::user_input_mutation: writes.emplace_back(mutated_input(spec, where), output_node_of(program_.outputs[i], where)); break;
        default: fail(where, " is not supported (Kiln imports inference and training-step programs without gradients or tokens)");
      }
    }
    for (auto [target, value] : writes) {
      ir::Node* write = state_.graph.create_call("copy_", {target, value});
      write->source.file = state_.source_file;
    }
    if (results.empty()) fail(label_, " returns no tensors");
    state_.graph.create_output(results);
    for (size_t position : losses) state_.graph.signature().set_output(position, {ir::OutputKind::loss_output, ""});
  }

  // The placeholder or get_attr a mutation output writes into.
  ir::Node* mutated_input(const ExportOutputSpec& spec, const std::string& where) {
    for (const ExportInputSpec& input : program_.input_specs) {
      bool matches = spec.kind == OutputKind::user_input_mutation ? input.kind == InputKind::user_input && input.name == spec.target
                                                                  : input.target == spec.target;
      if (!matches) continue;
      auto found = state_.values.find(input.name);
      if (found != state_.values.end() && found->second.kind == Pt2Value::Kind::tensor) return found->second.node;
    }
    fail(where, " writes into '", spec.target, "', which is not an input of the program");
  }

  Pt2Archive archive_;
  std::string label_;
  ExportProgram program_;
  Pt2ImportState state_;
  std::map<std::string, Tensor> weights_, constants_;
  std::optional<std::map<std::string, int64_t>> hints_;
};

}  // namespace

ir::Graph import_pt2(const std::string& path) { return Importer(path).run(); }

std::map<std::string, Tensor> read_pt2_sample_inputs(const std::string& path) {
  Pt2Archive archive(path);
  std::string label = "'" + path + "'";
  ExportProgram program = parse_export_program(archive.zip().read(archive.model_json_entry()), label + ": " + archive.model_json_entry());
  std::string entry = archive.sample_inputs_entry();
  if (!archive.zip().has(entry)) fail(label, " holds no sample inputs (no '", entry, "')");
  TorchValue samples = read_torch_save(archive.zip().read(entry), label + ": " + entry);
  std::vector<const TorchValue*> leaves;
  samples.flatten_into(leaves);
  std::vector<const ExportInputSpec*> user_inputs;
  for (const ExportInputSpec& spec : program.input_specs)
    if (spec.kind == InputKind::user_input && spec.argument.kind != "as_none") user_inputs.push_back(&spec);
  if (leaves.size() != user_inputs.size())
    fail(label, ": the sample inputs hold ", leaves.size(), " values, but the program takes ", user_inputs.size(), " user inputs");
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const ExportInputSpec& spec = *user_inputs[i];
    if (spec.argument.kind != "as_tensor") continue;
    if (leaves[i]->kind != TorchValue::Kind::tensor)
      fail(label, ": sample input ", i, " is a ", leaves[i]->kind_name(), " where the program takes the tensor '", spec.name, "'");
    inputs[spec.name] = leaves[i]->tensor;
  }
  return inputs;
}

std::map<std::string, int> pt2_program_targets(const std::string& path) {
  Pt2Archive archive(path);
  ExportProgram program = parse_export_program(archive.zip().read(archive.model_json_entry()), "'" + path + "': " + archive.model_json_entry());
  std::map<std::string, int> targets;
  for (const ExportNode& node : program.nodes) ++targets[short_target(node.target)];
  return targets;
}

std::vector<std::string> supported_aten_targets() { return AtenOpTable::global().targets(); }

}  // namespace kiln::frontends
