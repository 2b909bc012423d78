// launch_plan.json: parsing with field-by-field errors and cross-checks. See runtime/cuda/launch_plan.h.
#include "runtime/cuda/launch_plan.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <nlohmann/json.hpp>

#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "runtime/json_brief.h"
#include "runtime/json_fields.h"

namespace kiln::cuda {

namespace {

using nlohmann::json;

const std::pair<GemmEpilogue, const char*> kEpilogueNames[] = {
    {GemmEpilogue::none, "none"},      {GemmEpilogue::bias, "bias"},           {GemmEpilogue::relu, "relu"},
    {GemmEpilogue::bias_relu, "bias_relu"}, {GemmEpilogue::gelu, "gelu_tanh"}, {GemmEpilogue::bias_gelu, "bias_gelu_tanh"},
};

std::string at(const std::string& field, size_t index) { return field + "[" + std::to_string(index) + "]"; }

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return name != "max" && name != "min";
}

// Reads one plan, field by field, into `plan_`; the order of the members below is the order in
// which later fields may refer to earlier ones (symbols, then buffers, then steps).
class PlanReader : public JsonFields {
 public:
  using JsonFields::JsonFields;

  LaunchPlan read(const json& document) {
    read_header(document);
    read_symbol_names(document);
    read_buffers(document);
    plan_.inputs = buffer_list(document, "inputs", PlanBufferKind::Input);
    plan_.parameters = buffer_list(document, "parameters", PlanBufferKind::Parameter);
    plan_.outputs = buffer_list(document, "outputs", PlanBufferKind::Output);
    read_symbol_sources(document);
    plan_.fallbacks = strings(document, "", "fallbacks");
    plan_.workspace_bytes = size(document, "", "workspace_bytes");
    plan_.scratch_offset = size(document, "", "scratch_offset");
    const json& steps = array(document, "", "steps");
    for (size_t i = 0; i < steps.size(); ++i) plan_.steps.push_back(read_step(steps[i], at("steps", i)));
    return std::move(plan_);
  }

 private:
  void read_header(const json& document) {
    std::string format = string(document, "", "format");
    if (format != kLaunchPlanFormat)
      fail_at("not a Kiln CUDA launch plan (format is \"" + format + "\", expected \"" + kLaunchPlanFormat + "\")");
    int64_t version = integer(document, "", "version");
    if (version == 1)
      fail_at("launch plan version 1 (written by an older Kiln) lacks what the runtime needs to run it; recompile the model");
    if (version != kLaunchPlanVersion)
      fail_at("launch plan version " + std::to_string(version) + " is not the version this Kiln reads (" +
              std::to_string(kLaunchPlanVersion) + "); recompile the model");
    plan_.architecture = string(document, "", "architecture");
    plan_.nvrtc_options = strings(document, "", "nvrtc_options");
  }

  // The names first, so that every size expression can refer to them.
  void read_symbol_names(const json& document) {
    const json& symbols = array(document, "", "symbols");
    for (size_t i = 0; i < symbols.size(); ++i) {
      if (!symbols[i].is_object()) bad(at("symbols", i), "an object", symbols[i]);
      std::string name = string(symbols[i], at("symbols", i) + ".", "name");
      if (!is_identifier(name)) bad(at("symbols", i) + ".name", "a symbol name such as \"s0\"", symbols[i]["name"]);
      for (const std::string& seen : plan_.symbol_names)
        if (seen == name) fail_at("symbol '" + name + "' is listed twice");
      plan_.symbol_names.push_back(name);
    }
  }

  void read_symbol_sources(const json& document) {
    const json& symbols = array(document, "", "symbols");
    for (size_t i = 0; i < symbols.size(); ++i) {
      std::string prefix = at("symbols", i) + ".";
      PlanSymbol symbol;
      symbol.name = plan_.symbol_names[i];
      symbol.input = int(integer(symbols[i], prefix, "input"));
      symbol.dim = int(integer(symbols[i], prefix, "dim"));
      if (symbol.input < 0 || size_t(symbol.input) >= plan_.inputs.size())
        bad(prefix + "input", "the position of one of the " + std::to_string(plan_.inputs.size()) + " inputs", symbols[i]["input"]);
      const PlanBuffer& input = plan_.buffer(plan_.inputs[size_t(symbol.input)]);
      if (symbol.dim < 0 || size_t(symbol.dim) >= input.shape.size() || input.shape[size_t(symbol.dim)].text() != symbol.name)
        fail_at("symbol '" + symbol.name + "' is bound from dim " + std::to_string(symbol.dim) + " of input '" + input.name +
                "', which is not that symbol");
      if (symbols[i].contains("min")) symbol.min = integer(symbols[i], prefix, "min");
      if (symbols[i].contains("max")) symbol.max = integer(symbols[i], prefix, "max");
      if (symbol.min < 0 || (symbol.max && *symbol.max < symbol.min))
        fail_at("symbol '" + symbol.name + "' has the empty or negative range [" + std::to_string(symbol.min) + ", " +
                (symbol.max ? std::to_string(*symbol.max) : std::string("int_oo")) + "]");
      plan_.symbols.push_back(std::move(symbol));
    }
  }

  void read_buffers(const json& document) {
    const json& buffers = array(document, "", "buffers");
    for (size_t i = 0; i < buffers.size(); ++i) {
      std::string prefix = at("buffers", i) + ".";
      if (!buffers[i].is_object()) bad(at("buffers", i), "an object", buffers[i]);
      if (integer(buffers[i], prefix, "id") != int64_t(i)) bad(prefix + "id", std::to_string(i), buffers[i]["id"]);
      PlanBuffer buffer;
      buffer.name = string(buffers[i], prefix, "name");
      if (by_name_.count(buffer.name)) fail_at("buffer name '" + buffer.name + "' is used twice");
      buffer.kind = kind(buffers[i], prefix);
      buffer.dtype = dtype(buffers[i], prefix);
      buffer.shape = sizes(buffers[i], prefix, "shape");
      if (buffers[i].contains("source")) buffer.source = string(buffers[i], prefix, "source");
      if (buffers[i].contains("workspace_offset")) {
        if (buffer.kind != PlanBufferKind::Intermediate)
          fail_at("buffer '" + buffer.name + "' has a workspace_offset but is not an intermediate");
        buffer.workspace_offset = size(buffers[i], prefix, "workspace_offset");
      }
      by_name_[buffer.name] = int(i);
      plan_.buffers.push_back(std::move(buffer));
    }
  }

  PlanBufferKind kind(const json& object, const std::string& prefix) const {
    std::string name = string(object, prefix, "kind");
    if (name == "input") return PlanBufferKind::Input;
    if (name == "parameter") return PlanBufferKind::Parameter;
    if (name == "output") return PlanBufferKind::Output;
    if (name == "intermediate") return PlanBufferKind::Intermediate;
    bad(prefix + "kind", "input, parameter, output or intermediate", object["kind"]);
  }

  // The named buffers of one kind, in order: each buffer of that kind exactly once.
  std::vector<int> buffer_list(const json& document, const std::string& field, PlanBufferKind expected) {
    std::vector<int> ids;
    std::vector<std::string> names = strings(document, "", field);
    for (size_t i = 0; i < names.size(); ++i) {
      int id = buffer_id(names[i], at(field, i));
      if (plan_.buffer(id).kind != expected) fail_at(at(field, i) + " names buffer '" + names[i] + "' of another kind");
      for (int seen : ids)
        if (seen == id) fail_at(field + " lists buffer '" + names[i] + "' twice");
      ids.push_back(id);
    }
    for (size_t id = 0; id < plan_.buffers.size(); ++id)
      if (plan_.buffers[id].kind == expected && std::find(ids.begin(), ids.end(), int(id)) == ids.end())
        fail_at("buffer '" + plan_.buffers[id].name + "' is not listed in " + field);
    return ids;
  }

  int buffer_id(const std::string& name, const std::string& field) const {
    auto found = by_name_.find(name);
    if (found == by_name_.end()) fail_at(field + " names no buffer of the plan ('" + name + "')");
    return found->second;
  }

  // A buffer a step reads or writes: it must have memory in a run.
  int step_buffer(const std::string& name, const std::string& field) const {
    int id = buffer_id(name, field);
    const PlanBuffer& buffer = plan_.buffer(id);
    if (buffer.kind == PlanBufferKind::Intermediate && !buffer.workspace_offset)
      fail_at(field + " uses intermediate buffer '" + name + "', which has no workspace_offset");
    return id;
  }

  SizeExpression size(const json& object, const std::string& prefix, const std::string& name) const {
    const json& value = member(object, prefix, name);
    if (!value.is_string()) bad(prefix + name, "a size expression (a string)", value);
    return SizeExpression::parse(value.get<std::string>(), plan_.symbol_names, where() + ": field '" + prefix + name + "'");
  }

  std::vector<SizeExpression> sizes(const json& object, const std::string& prefix, const std::string& name) const {
    const json& values = array(object, prefix, name);
    std::vector<SizeExpression> result;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i].is_string()) bad(at(prefix + name, i), "a size expression (a string)", values[i]);
      result.push_back(SizeExpression::parse(values[i].get<std::string>(), plan_.symbol_names,
                                             where() + ": field '" + at(prefix + name, i) + "'"));
    }
    return result;
  }

  PlanView view(const json& value, const std::string& field) const {
    if (!value.is_object()) bad(field, "a view {buffer, shape, strides, offset}", value);
    std::string prefix = field + ".";
    PlanView view;
    view.buffer = step_buffer(string(value, prefix, "buffer"), prefix + "buffer");
    view.shape = sizes(value, prefix, "shape");
    view.strides = sizes(value, prefix, "strides");
    if (view.shape.size() != view.strides.size()) fail_at(field + " has " + std::to_string(view.shape.size()) +
                                                           " sizes but " + std::to_string(view.strides.size()) + " strides");
    view.offset = size(value, prefix, "offset");
    return view;
  }

  std::vector<PlanView> views(const json& step, const std::string& prefix, const std::string& name) const {
    const json& values = array(step, prefix, name);
    std::vector<PlanView> result;
    for (size_t i = 0; i < values.size(); ++i) result.push_back(view(values[i], at(prefix + name, i)));
    return result;
  }

  PlanStep read_step(const json& step, const std::string& field) const {
    if (!step.is_object()) bad(field, "an object", step);
    if (step.contains("kernel")) return kernel_step(step, field + ".");
    if (!step.contains("library")) fail_at(field + " is neither a kernel nor a library step");
    return library_step(step, field + ".");
  }

  PlanStep kernel_step(const json& step, const std::string& prefix) const {
    PlanStep result;
    result.kind = PlanStep::Kind::Kernel;
    result.name = string(step, prefix, "kernel");
    if (!is_identifier(result.name)) bad(prefix + "kernel", "a kernel name", step["kernel"]);
    result.grid = size(step, prefix, "grid");
    result.block = int(integer(step, prefix, "block"));
    if (result.block < 1 || result.block > 1024) bad(prefix + "block", "a thread count from 1 to 1024", step["block"]);
    result.shared_bytes = integer(step, prefix, "shared_bytes");
    if (result.shared_bytes < 0 || result.shared_bytes > (int64_t(1) << 31))
      bad(prefix + "shared_bytes", "a byte count from 0 to 2^31", step["shared_bytes"]);
    std::vector<std::string> arguments = strings(step, prefix, "arguments");
    for (size_t i = 0; i < arguments.size(); ++i) result.arguments.push_back(argument(arguments[i], at(prefix + "arguments", i)));
    return result;
  }

  PlanArgument argument(const std::string& text, const std::string& field) const {
    if (text == "scratch") return {PlanArgument::Kind::Scratch, -1};
    if (text.starts_with("buffer ")) return {PlanArgument::Kind::Buffer, step_buffer(text.substr(7), field)};
    if (text.starts_with("symbol ")) {
      std::string name = text.substr(7);
      for (size_t i = 0; i < plan_.symbol_names.size(); ++i)
        if (plan_.symbol_names[i] == name) return {PlanArgument::Kind::Symbol, int(i)};
      fail_at(field + " names no symbol of the plan ('" + name + "')");
    }
    bad(field, "\"buffer NAME\", \"symbol NAME\" or \"scratch\"", json(text));
  }

  PlanStep library_step(const json& step, const std::string& prefix) const {
    PlanStep result;
    std::string library = string(step, prefix, "library");
    result.name = string(step, prefix, "node");
    result.inputs = views(step, prefix, "inputs");
    result.outputs = views(step, prefix, "outputs");
    if (library == "fallback") {
      result.kind = PlanStep::Kind::Fallback;
      int64_t index = integer(step, prefix, "fallback");
      if (index < 0 || size_t(index) >= plan_.fallbacks.size())
        bad(prefix + "fallback", "the index of one of the " + std::to_string(plan_.fallbacks.size()) + " fallbacks", step["fallback"]);
      result.fallback = int(index);
      if (string(step, prefix, "graph_node") != plan_.fallbacks[size_t(index)])
        fail_at(prefix + "graph_node is not fallbacks[" + std::to_string(index) + "]");
      return result;
    }
    if (library != "gemm" && library != "gemm_lt") bad(prefix + "library", "gemm, gemm_lt or fallback", step["library"]);
    result.kind = PlanStep::Kind::Gemm;
    if (result.inputs.size() != 2 || result.outputs.size() != 1)
      fail_at(prefix + "inputs and outputs of a gemm must be two views and one");
    size_t rank = result.outputs[0].shape.size();
    if (rank < 2 || result.inputs[0].shape.size() != rank || result.inputs[1].shape.size() != rank)
      fail_at(prefix + "views of a gemm must all have one rank of at least 2");
    if (library == "gemm") return result;
    std::optional<GemmEpilogue> epilogue = parse_plan_epilogue(string(step, prefix, "epilogue"));
    if (!epilogue || *epilogue == GemmEpilogue::none)
      bad(prefix + "epilogue", "bias, relu, bias_relu, gelu_tanh or bias_gelu_tanh", step["epilogue"]);
    result.epilogue = *epilogue;
    bool has_bias = *epilogue == GemmEpilogue::bias || *epilogue == GemmEpilogue::bias_relu ||
                    *epilogue == GemmEpilogue::bias_gelu;
    if (has_bias) {
      const json& bias = object(step, prefix, "bias");
      PlanView view;
      view.buffer = step_buffer(string(bias, prefix + "bias.", "buffer"), prefix + "bias.buffer");
      view.offset = size(bias, prefix + "bias.", "offset");
      result.bias = std::move(view);
    }
    result.epilogue_output = step_buffer(string(step, prefix, "output"), prefix + "output");
    return result;
  }

  LaunchPlan plan_;
  std::map<std::string, int> by_name_;
};

}  // namespace

const char* plan_epilogue_name(GemmEpilogue epilogue) {
  for (const auto& [value, name] : kEpilogueNames)
    if (value == epilogue) return name;
  return "?";
}

std::optional<GemmEpilogue> parse_plan_epilogue(const std::string& name) {
  for (const auto& [value, spelled] : kEpilogueNames)
    if (name == spelled) return value;
  return std::nullopt;
}

LaunchPlan parse_launch_plan(const std::string& text, const std::string& where) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) fail(where, ": not valid JSON (truncated or damaged)");
  if (!document.is_object()) fail(where, ": expected a JSON object, got ", json_brief(document));
  return PlanReader(where).read(document);
}

LaunchPlan read_launch_plan(const std::filesystem::path& file) {
  std::error_code error;
  if (!std::filesystem::exists(file, error))
    fail("no CUDA artifact in ", file.parent_path().string(), ": ", file.filename().string(), " is missing");
  return parse_launch_plan(read_file(file.string()), file.string());
}

}  // namespace kiln::cuda
