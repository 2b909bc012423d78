// The op registry: schema parsing, the built-in registry (declarations of op_schemas.cpp +
// shape rules of ir/ops/*.cpp + generated in-place variants), argument binding, OpCall and
// infer_meta.
#include "ir/op_registry.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>

#include "ir/op_schemas.h"
#include "ir/ops/shape_rules.h"
#include "ir/type_promotion.h"

namespace kiln::ir {

namespace {

// ---------------------------------------------------------------- text helpers

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

// Splits on `separator` outside brackets, parentheses and double quotes.
std::vector<std::string_view> split_top_level(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  int depth = 0;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '\\') ++i;
      else if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '(') {
      ++depth;
    } else if (c == ']' || c == ')') {
      --depth;
    } else if (c == separator && depth == 0) {
      parts.push_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string_view last = trim(text.substr(start));
  if (!last.empty() || !parts.empty()) parts.push_back(last);
  return parts;
}

// Levenshtein distance, case-insensitive, for did-you-mean suggestions.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "; did you mean 'x'?" for the closest candidate within a small distance, else "".
std::string did_you_mean(std::string_view wanted, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  size_t best_distance = std::max<size_t>(2, wanted.size() / 3) + 1;
  for (std::string_view candidate : candidates) {
    size_t distance = edit_distance(wanted, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best.empty() ? std::string() : "; did you mean '" + std::string(best) + "'?";
}

// ---------------------------------------------------------------- schema parsing

struct TypeName {
  std::string_view text;
  ParamType type;
};

constexpr TypeName kParamTypes[] = {
    {"Tensor", ParamType::tensor},
    {"Tensor(a!)", ParamType::tensor},
    {"Tensor?", ParamType::optional_tensor},
    {"Tensor[]", ParamType::tensor_list},
    {"Tensor?[]", ParamType::optional_tensor_list},
    {"Scalar|Tensor", ParamType::tensor_or_scalar},
    {"int", ParamType::int_},
    {"int?", ParamType::optional_int},
    {"int[]", ParamType::int_list},
    {"int[]?", ParamType::optional_int_list},
    {"SymInt", ParamType::symint},
    {"SymInt?", ParamType::optional_symint},
    {"SymInt[]", ParamType::symint_list},
    {"float", ParamType::float_},
    {"float?", ParamType::optional_float},
    {"float[]", ParamType::float_list},
    {"bool", ParamType::bool_},
    {"bool?", ParamType::optional_bool},
    {"str", ParamType::string},
    {"str?", ParamType::optional_string},
    {"Scalar", ParamType::scalar},
    {"Scalar?", ParamType::optional_scalar},
    {"ScalarType", ParamType::scalar_type},
    {"ScalarType?", ParamType::optional_scalar_type},
    {"Device?", ParamType::optional_device},
};

std::string kind_name(const Argument& value) {
  switch (value.kind()) {
    case Argument::Kind::none: return "None";
    case Argument::Kind::node: return "Tensor";
    case Argument::Kind::integer: return "int";
    case Argument::Kind::floating: return "float";
    case Argument::Kind::boolean: return "bool";
    case Argument::Kind::string: return "str";
    case Argument::Kind::symint: return "SymInt";
    case Argument::Kind::dtype: return "ScalarType";
    case Argument::Kind::device: return "Device";
    case Argument::Kind::list: return "list";
  }
  return "?";
}

bool is_int_like(const Argument& value) { return value.is_int() || value.is_symint(); }
bool is_scalar(const Argument& value) { return value.is_number() || value.is_symint(); }

// Checks `value` against the parameter's type and normalizes it (an int where a float is
// expected becomes a float; a dtype or device given by name is parsed). Returns a message
// fragment ("int[], not str (\"a\")") on a mismatch, empty on success.
std::string convert_argument(const Param& param, Argument& value) {
  auto mismatch = [&]() { return kind_name(value) + " (" + value.to_string() + ")"; };
  auto list_mismatch = [&](size_t index, const Argument& item) {
    return "list whose element " + std::to_string(index) + " is " + kind_name(item) + " (" +
           item.to_string() + ")";
  };
  bool optional = false;
  switch (param.type) {
    case ParamType::optional_tensor: optional = true; [[fallthrough]];
    case ParamType::tensor:
      if (value.is_node() || (optional && value.is_none())) return "";
      return mismatch();
    case ParamType::optional_tensor_list: optional = true; [[fallthrough]];
    case ParamType::tensor_list:
      if (value.is_node()) return "";  // a tuple-valued node
      if (!value.is_list()) return mismatch();
      for (size_t i = 0; i < value.list().size(); ++i) {
        const Argument& item = value.list()[i];
        if (!item.is_node() && !(optional && item.is_none())) return list_mismatch(i, item);
      }
      return "";
    case ParamType::tensor_or_scalar:
      if (value.is_node() || is_scalar(value)) return "";
      return mismatch();
    case ParamType::optional_int: optional = true; [[fallthrough]];
    case ParamType::int_:
      if (value.is_int() || (optional && value.is_none())) return "";
      return mismatch();
    case ParamType::optional_int_list: optional = true; [[fallthrough]];
    case ParamType::int_list:
      if (value.is_int() || (optional && value.is_none())) return "";
      if (!value.is_list()) return mismatch();
      for (size_t i = 0; i < value.list().size(); ++i)
        if (!value.list()[i].is_int()) return list_mismatch(i, value.list()[i]);
      return "";
    case ParamType::optional_symint: optional = true; [[fallthrough]];
    case ParamType::symint:
      if (is_int_like(value) || (optional && value.is_none())) return "";
      return mismatch();
    case ParamType::symint_list:
      if (is_int_like(value)) return "";
      if (!value.is_list()) return mismatch();
      for (size_t i = 0; i < value.list().size(); ++i)
        if (!is_int_like(value.list()[i])) return list_mismatch(i, value.list()[i]);
      return "";
    case ParamType::optional_float: optional = true; [[fallthrough]];
    case ParamType::float_:
      if (value.is_float() || (optional && value.is_none())) return "";
      if (value.is_int()) {
        value = Argument(value.floating());
        return "";
      }
      return mismatch();
    case ParamType::float_list: {
      if (value.is_int() || value.is_float()) value = Argument(std::vector<Argument>{value});
      if (!value.is_list()) return mismatch();
      std::vector<Argument> items;
      for (size_t i = 0; i < value.list().size(); ++i) {
        const Argument& item = value.list()[i];
        if (!item.is_int() && !item.is_float()) return list_mismatch(i, item);
        items.emplace_back(item.floating());
      }
      value = Argument(std::move(items));
      return "";
    }
    case ParamType::optional_bool: optional = true; [[fallthrough]];
    case ParamType::bool_:
      if (value.is_bool() || (optional && value.is_none())) return "";
      return mismatch();
    case ParamType::optional_string: optional = true; [[fallthrough]];
    case ParamType::string:
      if (value.is_string() || (optional && value.is_none())) return "";
      return mismatch();
    case ParamType::optional_scalar: optional = true; [[fallthrough]];
    case ParamType::scalar:
      if (is_scalar(value) || (optional && value.is_none())) return "";
      return mismatch();
    case ParamType::optional_scalar_type: optional = true; [[fallthrough]];
    case ParamType::scalar_type:
      if (value.is_dtype() || (optional && value.is_none())) return "";
      if (value.is_string()) {
        if (std::optional<DType> dtype = parse_dtype(value.string())) {
          value = Argument(*dtype);
          return "";
        }
        return "ScalarType, not an unknown dtype name " + value.to_string();
      }
      return mismatch();
    case ParamType::optional_device:
      if (value.is_device() || value.is_none()) return "";
      if (value.is_string()) {
        value = Argument(parse_device(value.string()));
        return "";
      }
      return mismatch();
  }
  return mismatch();
}

Argument parse_number(std::string_view text) {
  int64_t integer = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), integer);
  if (error == std::errc() && end == text.data() + text.size()) return Argument(integer);
  double floating = 0;
  auto [end2, error2] = std::from_chars(text.data(), text.data() + text.size(), floating);
  KILN_CHECK(error2 == std::errc() && end2 == text.data() + text.size(), "bad default value '", text, "'");
  return Argument(floating);
}

Argument parse_default(std::string_view text) {
  if (text == "None") return Argument();
  if (text == "True") return Argument(true);
  if (text == "False") return Argument(false);
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
    return Argument(std::string(text.substr(1, text.size() - 2)));
  if (!text.empty() && text.front() == '[') {
    KILN_CHECK(text.back() == ']', "bad list default '", text, "'");
    std::vector<Argument> items;
    for (std::string_view item : split_top_level(text.substr(1, text.size() - 2), ','))
      items.push_back(parse_number(item));
    return Argument(std::move(items));
  }
  if (std::optional<DType> dtype = parse_dtype(text)) return Argument(*dtype);
  return parse_number(text);
}

Param parse_param(std::string_view text, bool kwarg_only, std::string_view schema_text) {
  Param param;
  param.kwarg_only = kwarg_only;
  size_t space = text.find(' ');
  KILN_CHECK(space != std::string_view::npos, "malformed parameter '", text, "' in schema '", schema_text, "'");
  param.type_text = std::string(text.substr(0, space));
  const TypeName* type = std::find_if(std::begin(kParamTypes), std::end(kParamTypes),
                                      [&](const TypeName& known) { return known.text == param.type_text; });
  KILN_CHECK(type != std::end(kParamTypes), "unknown parameter type '", param.type_text, "' in schema '",
             schema_text, "'");
  param.type = type->type;
  param.mutated = param.type_text == "Tensor(a!)";
  std::string_view rest = trim(text.substr(space + 1));
  size_t equals = rest.find('=');
  param.name = std::string(trim(rest.substr(0, equals)));
  KILN_CHECK(!param.name.empty(), "parameter without a name in schema '", schema_text, "'");
  if (equals != std::string_view::npos) {
    Argument value = parse_default(trim(rest.substr(equals + 1)));
    std::string problem = convert_argument(param, value);
    KILN_CHECK(problem.empty(), "default of '", param.name, "' does not fit its type ", param.type_text,
               ": ", problem, " in schema '", schema_text, "'");
    param.default_value = std::move(value);
  }
  return param;
}

}  // namespace

const Param* OpSchema::find_param(std::string_view param_name) const {
  for (const Param& param : params)
    if (param.name == param_name) return &param;
  return nullptr;
}

OpSchema parse_schema(std::string_view text) {
  OpSchema schema;
  schema.text = std::string(text);
  size_t open = text.find('(');
  KILN_CHECK(open != std::string_view::npos, "malformed schema '", text, "': no '('");
  schema.name = std::string(trim(text.substr(0, open)));
  KILN_CHECK(!schema.name.empty(), "malformed schema '", text, "': no name");
  // The parameter list ends at the ')' matching `open` (defaults may hold brackets/quotes).
  size_t close = std::string_view::npos;
  int depth = 0;
  bool quoted = false;
  for (size_t i = open; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') quoted = false;
      continue;
    }
    if (c == '"') quoted = true;
    else if (c == '(' || c == '[') ++depth;
    else if ((c == ')' || c == ']') && --depth == 0) {
      close = i;
      break;
    }
  }
  KILN_CHECK(close != std::string_view::npos, "malformed schema '", text, "': unbalanced parentheses");

  bool kwarg_only = false;
  for (std::string_view part : split_top_level(text.substr(open + 1, close - open - 1), ',')) {
    KILN_CHECK(!part.empty(), "malformed schema '", text, "': empty parameter");
    if (part == "*") {
      kwarg_only = true;
      continue;
    }
    Param param = parse_param(part, kwarg_only, text);
    KILN_CHECK(!schema.find_param(param.name), "duplicate parameter '", param.name, "' in schema '", text, "'");
    KILN_CHECK(param.kwarg_only || param.default_value || schema.params.empty() ||
                   !schema.params.back().default_value || schema.params.back().kwarg_only,
               "required parameter '", param.name, "' after one with a default in schema '", text, "'");
    schema.params.push_back(std::move(param));
  }

  std::string_view rest = trim(text.substr(close + 1));
  KILN_CHECK(rest.substr(0, 2) == "->", "malformed schema '", text, "': no '->'");
  std::string_view returns = trim(rest.substr(2));
  if (returns == "Tensor") {
    schema.returns = OpSchema::Returns::tensor;
  } else if (returns == "Tensor[]") {
    schema.returns = OpSchema::Returns::tensor_list;
  } else {
    KILN_CHECK(returns.size() > 2 && returns.front() == '(' && returns.back() == ')', "malformed returns '",
               returns, "' in schema '", text, "'");
    std::vector<std::string_view> items = split_top_level(returns.substr(1, returns.size() - 2), ',');
    for (std::string_view item : items)
      KILN_CHECK(item == "Tensor", "unsupported return type '", item, "' in schema '", text, "'");
    schema.returns = OpSchema::Returns::tuple;
    schema.num_returns = int(items.size());
  }
  return schema;
}

// ---------------------------------------------------------------- binding

std::vector<Argument> bind_arguments(const OpSchema& schema, const std::vector<Argument>& args,
                                     const Kwargs& kwargs) {
  const std::vector<Param>& params = schema.params;
  size_t num_positional = size_t(std::count_if(params.begin(), params.end(),
                                                [](const Param& param) { return !param.kwarg_only; }));
  if (args.size() > num_positional) {
    std::string names;
    for (size_t i = 0; i < num_positional; ++i) names += (i ? ", " : "") + params[i].name;
    std::string message = "expected at most " + std::to_string(num_positional) + " positional argument" +
                          (num_positional == 1 ? "" : "s") + " (" + names + "), but got " +
                          std::to_string(args.size());
    if (num_positional < params.size())
      message += "; '" + params[num_positional].name + "' and later parameters are keyword-only";
    fail(message);
  }

  std::vector<std::optional<Argument>> bound(params.size());
  for (size_t i = 0; i < args.size(); ++i) bound[i] = args[i];
  for (const auto& [key, value] : kwargs) {
    auto found = std::find_if(params.begin(), params.end(), [&](const Param& param) { return param.name == key; });
    if (found == params.end()) {
      std::vector<std::string_view> names;
      for (const Param& param : params) names.push_back(param.name);
      fail("unknown keyword argument '", key, "'", did_you_mean(key, names));
    }
    size_t index = size_t(found - params.begin());
    if (bound[index]) {
      if (index < args.size())
        fail("argument '", key, "' given both positionally (position ", index + 1, ") and as a keyword");
      fail("keyword argument '", key, "' given twice");
    }
    bound[index] = value;
  }

  std::vector<Argument> result;
  result.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& param = params[i];
    if (!bound[i]) {
      if (!param.default_value) {
        if (param.kwarg_only) fail("missing required keyword argument '", param.name, "'");
        fail("missing required argument '", param.name, "' (position ", i + 1, ")");
      }
      result.push_back(*param.default_value);
      continue;
    }
    Argument value = *bound[i];
    std::string problem = convert_argument(param, value);
    if (!problem.empty()) {
      if (param.kwarg_only) fail("argument '", param.name, "' must be ", param.type_text, ", not ", problem);
      fail("argument '", param.name, "' (position ", i + 1, ") must be ", param.type_text, ", not ", problem);
    }
    result.push_back(std::move(value));
  }
  return result;
}

// ---------------------------------------------------------------- OpCall

OpCall::OpCall(const OpInfo& op, std::vector<Argument> args, const Node* node, std::string node_name)
    : op_(op), args_(std::move(args)), node_(node), node_name_(std::move(node_name)) {
  KILN_CHECK(args_.size() == op_.schema.params.size(), "OpCall of ", op_.name(), " with ", args_.size(),
             " arguments for ", op_.schema.params.size(), " parameters");
}

OpCall OpCall::of(const Node& node) {
  const OpInfo* op = OpRegistry::global().find(node.target());
  std::string prefix = "node %" + node.name() + " (" + node.target() + "): ";
  try {
    if (!op) OpRegistry::global().get(node.target());  // throws with a suggestion
    return OpCall(*op, bind_arguments(op->schema, node.args(), node.kwargs()), &node, node.name());
  } catch (const Error& error) {
    throw Error(prefix + error.what());
  }
}

namespace {

// -rest / slope where both are polynomials of other symbols and their ratio is one integer
// whatever those symbols are (64*n*s = 768*n: s = 12), checked at a few bindings of them.
std::optional<int64_t> constant_ratio(const SymInt& rest, const SymInt& slope) {
  std::set<std::string> names;
  for (const SymInt* part : {&rest, &slope})
    for (const std::string& name : part->free_symbols()) names.insert(name);
  std::optional<int64_t> ratio;
  for (int64_t base : {3, 7, 12}) {
    std::map<std::string, int64_t> bindings;
    int64_t value = base;
    for (const std::string& name : names) bindings[name] = value++;
    int64_t p = 0, q = 0;
    try {
      p = slope.evaluate(bindings);
      q = -rest.evaluate(bindings);
    } catch (const SymbolicError&) {
      return std::nullopt;
    }
    if (p == 0 || q % p != 0 || (ratio && *ratio != q / p)) return std::nullopt;
    ratio = q / p;
  }
  return ratio;
}

}  // namespace

std::optional<std::pair<std::string, SymInt>> equating_substitution(const SymInt& a, const SymInt& b) {
  SymInt difference = a - b;
  for (const std::string& name : difference.free_symbols()) {
    SymInt symbol = SymInt::symbol(name);
    // difference = slope * symbol + rest, with neither holding the symbol (else: not linear in it).
    SymInt rest = difference.substitute({{name, SymInt(0)}});
    SymInt slope = difference.substitute({{name, SymInt(1)}}) - rest;
    if (!(slope * symbol + rest == difference)) continue;
    std::optional<SymInt> value;
    if (slope == SymInt(1)) value = -rest;
    else if (slope == SymInt(-1)) value = rest;
    else if (std::optional<int64_t> ratio = constant_ratio(rest, slope)) value = SymInt(*ratio);
    if (!value) continue;
    if (std::optional<int64_t> constant = value->maybe_constant(); constant && *constant < 2) continue;
    return std::pair{name, *value};
  }
  return std::nullopt;
}

std::optional<std::pair<std::string, int64_t>> clamped_symbol(const SymInt& a, const SymInt& b) {
  for (const auto& [symbol, clamped] : {std::pair{a, b}, std::pair{b, a}}) {
    if (!symbol.is_symbol() || clamped.free_symbols() != symbol.free_symbols()) continue;
    const std::string name = symbol.free_symbols().front();
    int64_t bound = 0;
    try {
      bound = clamped.evaluate({{name, int64_t(1) << 40}});  // min(s, bound) at a size past any bound
    } catch (const SymbolicError&) {
      continue;
    }
    if (bound >= 1 && clamped == min(symbol, SymInt(bound))) return std::pair{name, bound};
  }
  return std::nullopt;
}

std::string OpCall::prefix() const {
  const std::string& name = node_ ? node_->name() : node_name_;
  if (name.empty()) return op_.name() + ": ";
  return "node %" + name + " (" + op_.name() + "): ";
}

const TensorMeta& OpCall::tensor(size_t index) const {
  const Node* input = args_.at(index).node();
  if (!input->has_single_value())
    fail("argument '", op_.schema.params.at(index).name, "' is %", input->name(),
         input->meta.is_tuple ? " of tuple type " + input->meta.type_string() + "; select an element with getitem"
                              : std::string(", which produces no tensor"));
  return input->meta.values[0];
}

std::vector<const TensorMeta*> OpCall::tensors(size_t index) const {
  const Argument& value = args_.at(index);
  std::vector<const TensorMeta*> metas;
  if (value.is_node()) {
    for (const TensorMeta& meta : value.node()->meta.values) metas.push_back(&meta);
    return metas;
  }
  for (const Argument& item : value.list()) {
    if (item.is_none()) {
      metas.push_back(nullptr);
      continue;
    }
    const Node* input = item.node();
    if (!input->has_single_value())
      fail("element ", metas.size(), " of argument '", op_.schema.params.at(index).name, "' is %", input->name(),
           ", which does not produce a single tensor (type ", input->meta.type_string(), ")");
    metas.push_back(&input->meta.values[0]);
  }
  return metas;
}

int64_t OpCall::int_arg(size_t index) const { return args_.at(index).integer(); }
std::vector<int64_t> OpCall::ints(size_t index) const { return args_.at(index).int_list(); }
SymInt OpCall::sym(size_t index) const { return args_.at(index).symint(); }
std::vector<SymInt> OpCall::syms(size_t index) const { return args_.at(index).symint_list(); }
double OpCall::float_arg(size_t index) const { return args_.at(index).floating(); }
bool OpCall::bool_arg(size_t index) const { return args_.at(index).boolean(); }
const std::string& OpCall::string_arg(size_t index) const { return args_.at(index).string(); }
DType OpCall::dtype_arg(size_t index) const { return args_.at(index).dtype(); }

// ---------------------------------------------------------------- the registry

const OpInfo* OpRegistry::find(std::string_view name) const {
  auto found = ops_.find(name);
  return found == ops_.end() ? nullptr : &found->second;
}

const OpInfo& OpRegistry::get(std::string_view name) const {
  if (const OpInfo* op = find(name)) return *op;
  std::vector<std::string_view> names;
  for (const auto& [known, info] : ops_) names.push_back(known);
  fail("unknown op '", name, "'", did_you_mean(name, names));
}

std::vector<const OpInfo*> OpRegistry::all() const {
  std::vector<const OpInfo*> result;
  result.reserve(ops_.size());
  for (const auto& [name, info] : ops_) result.push_back(&info);
  return result;
}

void OpRegistry::add(OpInfo info) {
  KILN_CHECK(!ops_.count(info.name()), "op '", info.name(), "' registered twice");
  KILN_CHECK(info.infer, "op '", info.name(), "' registered without a shape rule");
  std::string name = info.name();
  ops_.emplace(std::move(name), std::move(info));
}

namespace {

// The in-place variant's rule: the out-of-place result must fit self, which it returns.
// Like PyTorch, the result must broadcast to self's shape (self is never resized) and its
// dtype must be castable to self's (an integer tensor cannot take a float result in place).
ShapeRule inplace_rule(ShapeRule out_of_place) {
  return [out_of_place = std::move(out_of_place)](const OpCall& call) {
    NodeMeta result = out_of_place(call);
    KILN_CHECK(!result.is_tuple && result.values.size() == 1, "in-place variant of a multi-output op ",
               call.op().name());
    const TensorMeta& self = call.tensor(0);
    const TensorMeta& value = result.values[0];
    if (value.shape != self.shape)
      call.fail("output with shape ", shape_string(self.shape), " doesn't match the broadcast shape ",
                shape_string(value.shape));
    if (!can_cast(value.dtype, self.dtype))
      call.fail("result type ", dtype_name(value.dtype), " can't be cast to the desired output type ",
                dtype_name(self.dtype));
    return NodeMeta{{self}, false};
  };
}

// "add(Scalar|Tensor self, ...) -> Tensor" -> "add_(Tensor(a!) self, ...) -> Tensor".
std::string inplace_schema_text(std::string_view text, const OpSchema& schema) {
  size_t open = text.find('(');
  std::string_view params = text.substr(open + 1);
  size_t space = params.find(' ');
  KILN_CHECK(!schema.params.empty() && space != std::string_view::npos, "in-place variant of ", schema.name,
             " without a self parameter");
  return schema.name + "_(Tensor(a!)" + std::string(params.substr(space));
}

std::set<std::string> split_flags(std::string_view flags) {
  std::set<std::string> result;
  for (std::string_view flag : split_top_level(flags, ' '))
    if (!flag.empty()) result.insert(std::string(flag));
  return result;
}

OpRegistry build_builtin_registry() {
  ShapeRuleTable rules;
  attach_elementwise_shape_rules(rules);
  attach_creation_shape_rules(rules);
  attach_reduction_shape_rules(rules);
  attach_view_shape_rules(rules);
  attach_copy_shape_rules(rules);
  attach_linalg_shape_rules(rules);
  attach_conv_pool_shape_rules(rules);
  attach_sampling_shape_rules(rules);
  attach_composite_shape_rules(rules);

  static const std::set<std::string> known_flags = {
      "pointwise", "inplace", "float", "creation", "random", "reduction", "scan", "view", "copy",
      "matmul", "convolution", "pooling", "composite", "mutation"};

  std::set<std::string> declared;
  for (const OpDeclaration& declaration : op_declarations()) declared.insert(parse_schema(declaration.schema).name);

  OpRegistry registry;
  std::set<std::string> used_rules;
  for (const OpDeclaration& declaration : op_declarations()) {
    OpInfo info;
    info.schema = parse_schema(declaration.schema);
    std::set<std::string> flags = split_flags(declaration.flags);
    for (const std::string& flag : flags)
      KILN_CHECK(known_flags.count(flag), "unknown flag '", flag, "' on op ", info.name());
    info.composite = flags.count("composite") > 0;
    info.is_view = flags.count("view") > 0;
    info.summary = std::string(declaration.summary);
    bool has_inplace = flags.erase("inplace") > 0;
    info.tags = flags;
    // A declared mutation "foo_" whose "foo" exists is foo's in-place form (index_put_).
    const std::string& name = info.name();
    if (flags.count("mutation") && name.size() > 1 && name.back() == '_' &&
        declared.count(name.substr(0, name.size() - 1))) {
      info.inplace_of = name.substr(0, name.size() - 1);
      info.tags.insert("inplace");
    }
    auto rule = rules.find(name);
    KILN_CHECK(rule != rules.end(), "op '", name, "' is declared in op_schemas.cpp but has no shape rule in ir/ops/");
    info.infer = rule->second;
    used_rules.insert(name);

    if (has_inplace) {
      OpInfo inplace;
      inplace.schema = parse_schema(inplace_schema_text(declaration.schema, info.schema));
      inplace.composite = info.composite;
      inplace.is_view = false;
      inplace.inplace_of = name;
      inplace.tags = info.tags;
      inplace.tags.insert("inplace");
      inplace.tags.insert("mutation");
      inplace.summary = "in-place " + info.name() + ": " + info.summary;
      inplace.infer = inplace_rule(info.infer);
      KILN_CHECK(!declared.count(inplace.name()), "op ", inplace.name(), " is declared and also generated");
      registry.add(std::move(inplace));
    }
    registry.add(std::move(info));
  }
  for (const auto& [name, rule] : rules)
    KILN_CHECK(used_rules.count(name), "shape rule for '", name, "' names no declared op");
  return registry;
}

}  // namespace

const OpRegistry& OpRegistry::global() {
  static const OpRegistry registry = build_builtin_registry();
  return registry;
}

// ---------------------------------------------------------------- inference

namespace {

void collect_devices(const Argument& value, std::vector<std::pair<const Node*, Device>>& out) {
  if (value.is_node()) {
    const Node* input = value.node();
    if (!input->has_single_value()) return;
    const TensorMeta& meta = input->meta.values[0];
    // PyTorch lets a zero-dim CPU tensor take part in an op on any device.
    if (meta.rank() == 0 && meta.device.is_cpu()) return;
    out.emplace_back(input, meta.device);
  } else if (value.is_list()) {
    for (const Argument& item : value.list()) collect_devices(item, out);
  }
}

}  // namespace

NodeMeta infer_meta(const Node& node) {
  KILN_CHECK(node.op() == OpKind::call_function, "infer_meta of ", describe(node));
  OpCall call = OpCall::of(node);
  std::vector<std::pair<const Node*, Device>> devices;
  for (const Argument& value : call.args()) collect_devices(value, devices);
  for (const auto& [input, device] : devices)
    if (!(device == devices.front().second))
      call.fail("expected all tensors to be on the same device, but found at least two devices, ",
                devices.front().second.to_string(), " (%", devices.front().first->name(), ") and ",
                device.to_string(), " (%", input->name(), ")");
  try {
    return call.op().infer(call);
  } catch (const SymbolicError& error) {
    // Symbolic arithmetic failing inside a rule (an overflow, a division by zero).
    std::string message = error.what();
    if (message.rfind(call.prefix(), 0) == 0) throw;
    throw Error(call.prefix() + message);
  }
}

}  // namespace kiln::ir
