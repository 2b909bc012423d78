// The graph signature: what each input and output of a Graph is to whoever runs it, as data
// on the graph (Graph::signature()), after torch.export's ExportGraphSignature and
// AOTAutograd's mutation metadata.
//
// Inputs. Every placeholder is a user input (USER_INPUT): the caller passes it by its
// target. Every get_attr target (a parameter of the graph, Graph::parameters()) is one of
//   PARAMETER        a weight (the default: what the ONNX importer's initializers are),
//   BUFFER           state the model keeps and may update (BatchNorm's running statistics),
//   CONSTANT_TENSOR  a value the compiler made or the model never changes (folded constants).
// Outputs, by position in the output node's arguments:
//   USER_OUTPUT          a value the caller asked for (the default),
//   LOSS_OUTPUT          the scalar loss a training graph differentiates,
//   USER_INPUT_MUTATION  the final value of a user input the graph writes into, which the
//                        caller copies back into the tensor it passed for placeholder
//                        target `target`,
//   PARAMETER_MUTATION / BUFFER_MUTATION  the same for the parameter / buffer `target`.
// Mutation outputs are what functionalization (passes/functionalize.h) adds; a runner copies
// them back and returns the other outputs. They are found by position, never by node name.
//
// Symbol ranges. A size symbol of the placeholders' shapes may carry the range of values the
// graph is valid for (torch.export's range constraints, Dim("b", min=1, max=1024)): whoever
// binds the symbols checks them (the interpreter's bind_symbols, the compiled code's guards).
//
// The data here knows nothing of nodes: attribute kinds are keyed by get_attr target and
// output specs by position. ir/signature_specs.h lists them against a graph (one spec per
// placeholder, get_attr target and returned value, as the text and JSON forms write them)
// and checks that every spec names something that exists; the verifier runs that check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::ir {

enum class InputKind : uint8_t { user_input, parameter, buffer, constant_tensor };
enum class OutputKind : uint8_t {
  user_output,
  loss_output,
  user_input_mutation,
  parameter_mutation,
  buffer_mutation,
};

// torch.export's spelling: "USER_INPUT", "PARAMETER", "BUFFER", "CONSTANT_TENSOR".
std::string_view input_kind_name(InputKind kind);
std::optional<InputKind> parse_input_kind(std::string_view name);
// "USER_OUTPUT", "LOSS_OUTPUT", "USER_INPUT_MUTATION", "PARAMETER_MUTATION", "BUFFER_MUTATION".
std::string_view output_kind_name(OutputKind kind);
std::optional<OutputKind> parse_output_kind(std::string_view name);

// True for the kinds whose output is copied back into an input, a parameter or a buffer.
bool is_mutation(OutputKind kind);
// The output kind that writes into an attribute of `kind` (PARAMETER -> PARAMETER_MUTATION,
// BUFFER -> BUFFER_MUTATION); nullopt for a constant or a user input.
std::optional<OutputKind> attribute_mutation_kind(InputKind kind);

struct OutputSpec {
  OutputKind kind = OutputKind::user_output;
  // For a mutation: the placeholder target (USER_INPUT_MUTATION) or the get_attr target the
  // output is copied back into. Empty for the other kinds.
  std::string target;

  bool is_mutation() const { return ir::is_mutation(kind); }
  friend bool operator==(const OutputSpec&, const OutputSpec&) = default;
};

// The values a size symbol may take: [min, max], max absent when unbounded.
struct SymbolRange {
  int64_t min = 0;
  std::optional<int64_t> max;

  bool contains(int64_t value) const { return value >= min && (!max || value <= *max); }
  std::string to_string() const;  // "[1, 1024]", "[2, int_oo]" (torch.export's spelling of unbounded)
  friend bool operator==(const SymbolRange&, const SymbolRange&) = default;
};

class GraphSignature {
 public:
  // The kind of get_attr target `target`: PARAMETER unless set otherwise.
  InputKind attribute_kind(std::string_view target) const;
  // Sets the kind of a get_attr target (PARAMETER, BUFFER or CONSTANT_TENSOR).
  void set_attribute_kind(const std::string& target, InputKind kind);
  void forget_attribute(std::string_view target);  // back to PARAMETER
  // The targets whose kind is not PARAMETER.
  const std::map<std::string, InputKind, std::less<>>& attribute_kinds() const { return attribute_kinds_; }

  // The spec of output `index`: USER_OUTPUT past the ones set.
  OutputSpec output(size_t index) const;
  // Sets output `index`'s spec (the outputs before it that have none become USER_OUTPUT).
  void set_output(size_t index, OutputSpec spec);
  // The specs set, by position; later outputs are USER_OUTPUT.
  const std::vector<OutputSpec>& outputs() const { return outputs_; }
  // The mutation outputs (the copy-backs): position and spec, in output order.
  std::vector<std::pair<size_t, OutputSpec>> mutations() const;

  // The range of size symbol `symbol`, when the graph has one.
  void set_symbol_range(const std::string& symbol, SymbolRange range);
  const std::map<std::string, SymbolRange, std::less<>>& symbol_ranges() const { return symbol_ranges_; }

  // Every output is a user output, every attribute a parameter, and no symbol has a range.
  bool is_default() const;
  friend bool operator==(const GraphSignature& a, const GraphSignature& b);

 private:
  std::map<std::string, InputKind, std::less<>> attribute_kinds_;
  std::vector<OutputSpec> outputs_;
  std::map<std::string, SymbolRange, std::less<>> symbol_ranges_;
};

}  // namespace kiln::ir
