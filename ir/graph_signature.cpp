// The graph signature's data: kind names, attribute kinds by target, output specs by position.
#include "ir/graph_signature.h"

#include <algorithm>
#include <array>
#include <utility>

#include "kiln/error.h"

namespace kiln::ir {

namespace {

constexpr std::array<std::pair<InputKind, std::string_view>, 4> kInputKinds = {{
    {InputKind::user_input, "USER_INPUT"},
    {InputKind::parameter, "PARAMETER"},
    {InputKind::buffer, "BUFFER"},
    {InputKind::constant_tensor, "CONSTANT_TENSOR"},
}};

constexpr std::array<std::pair<OutputKind, std::string_view>, 5> kOutputKinds = {{
    {OutputKind::user_output, "USER_OUTPUT"},
    {OutputKind::loss_output, "LOSS_OUTPUT"},
    {OutputKind::user_input_mutation, "USER_INPUT_MUTATION"},
    {OutputKind::parameter_mutation, "PARAMETER_MUTATION"},
    {OutputKind::buffer_mutation, "BUFFER_MUTATION"},
}};

// The outputs with trailing USER_OUTPUT specs dropped: what two equal signatures share.
std::vector<OutputSpec> trimmed(std::vector<OutputSpec> outputs) {
  while (!outputs.empty() && outputs.back() == OutputSpec{}) outputs.pop_back();
  return outputs;
}

}  // namespace

std::string_view input_kind_name(InputKind kind) {
  for (const auto& [value, name] : kInputKinds)
    if (value == kind) return name;
  KILN_CHECK(false, "bad input kind");
}

std::optional<InputKind> parse_input_kind(std::string_view name) {
  for (const auto& [value, spelling] : kInputKinds)
    if (spelling == name) return value;
  return std::nullopt;
}

std::string_view output_kind_name(OutputKind kind) {
  for (const auto& [value, name] : kOutputKinds)
    if (value == kind) return name;
  KILN_CHECK(false, "bad output kind");
}

std::optional<OutputKind> parse_output_kind(std::string_view name) {
  for (const auto& [value, spelling] : kOutputKinds)
    if (spelling == name) return value;
  return std::nullopt;
}

bool is_mutation(OutputKind kind) {
  return kind == OutputKind::user_input_mutation || kind == OutputKind::parameter_mutation ||
         kind == OutputKind::buffer_mutation;
}

std::optional<OutputKind> attribute_mutation_kind(InputKind kind) {
  if (kind == InputKind::parameter) return OutputKind::parameter_mutation;
  if (kind == InputKind::buffer) return OutputKind::buffer_mutation;
  return std::nullopt;
}

InputKind GraphSignature::attribute_kind(std::string_view target) const {
  auto found = attribute_kinds_.find(target);
  return found == attribute_kinds_.end() ? InputKind::parameter : found->second;
}

void GraphSignature::set_attribute_kind(const std::string& target, InputKind kind) {
  KILN_CHECK(kind != InputKind::user_input, "get_attr target '", target, "' cannot be a USER_INPUT");
  if (kind == InputKind::parameter) attribute_kinds_.erase(target);
  else attribute_kinds_[target] = kind;
}

void GraphSignature::forget_attribute(std::string_view target) {
  auto found = attribute_kinds_.find(target);
  if (found != attribute_kinds_.end()) attribute_kinds_.erase(found);
}

OutputSpec GraphSignature::output(size_t index) const {
  return index < outputs_.size() ? outputs_[index] : OutputSpec{};
}

void GraphSignature::set_output(size_t index, OutputSpec spec) {
  KILN_CHECK(spec.is_mutation() != spec.target.empty(), "output spec ", output_kind_name(spec.kind),
             spec.target.empty() ? " needs a target" : " takes no target");
  if (outputs_.size() <= index) outputs_.resize(index + 1);
  outputs_[index] = std::move(spec);
}

std::vector<std::pair<size_t, OutputSpec>> GraphSignature::mutations() const {
  std::vector<std::pair<size_t, OutputSpec>> result;
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i].is_mutation()) result.emplace_back(i, outputs_[i]);
  return result;
}

std::string SymbolRange::to_string() const {
  return "[" + std::to_string(min) + ", " + (max ? std::to_string(*max) : std::string("int_oo")) + "]";
}

void GraphSignature::set_symbol_range(const std::string& symbol, SymbolRange range) { symbol_ranges_[symbol] = range; }

bool GraphSignature::is_default() const {
  return attribute_kinds_.empty() && trimmed(outputs_).empty() && symbol_ranges_.empty();
}

bool operator==(const GraphSignature& a, const GraphSignature& b) {
  return a.attribute_kinds_ == b.attribute_kinds_ && trimmed(a.outputs_) == trimmed(b.outputs_) &&
         a.symbol_ranges_ == b.symbol_ranges_;
}

}  // namespace kiln::ir
