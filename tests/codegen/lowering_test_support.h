// Helpers of the lowering tests: graphs from short text, tensors, and the differential check
// lower -> evaluate_loop_program versus the reference interpreter.
//
// Outputs compare exactly for integers and bools; floats with |a - e| <= atol + rtol * |e|,
// NaN equal to NaN and infinities exact, with rtol 1e-5 and atol 1e-6 for f32/f64 and one
// unit in the last place of the dtype's precision for f16 (1e-3) and bf16 (8e-3), whose
// results the interpreter rounds once from double while the loop program computes in f32.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/loop_evaluator.h"
#include "codegen/loop_printer.h"
#include "codegen/lowering.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln/error.h"
#include "tests/support/random_graph.h"

namespace kiln::codegen::testing {

using Inputs = std::map<std::string, Tensor>;

// A graph from placeholder declarations ("x: f32[3, 17]") and node lines in the IR's text
// form without the leading indentation ("%y = call_function[target=exp](args = (%x,), kwargs = {})");
// `outputs` is the inside of the return tuple ("y" or "y, z").
inline std::string graph_text(const std::vector<std::string>& placeholders, const std::vector<std::string>& lines,
                              const std::string& outputs) {
  std::ostringstream text;
  text << "graph():\n";
  for (const std::string& declaration : placeholders) {
    size_t colon = declaration.find(':');
    std::string name = declaration.substr(0, colon);
    text << "    %" << name << " :" << declaration.substr(colon + 1) << " = placeholder[target=" << name << "]\n";
  }
  for (const std::string& line : lines) text << "    " << line << "\n";
  text << "    return (" << outputs << (outputs.find(',') == std::string::npos ? "," : "") << ")\n";
  return text.str();
}

// One node line: `%name = call_function[target=op](args = (args), kwargs = {kwargs})`, with the
// trailing comma of a one-element tuple added.
inline std::string op_line(const std::string& name, const std::string& op, const std::string& args,
                           const std::string& kwargs = "") {
  int depth = 0;
  bool top_level_comma = false;
  for (char c : args) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) top_level_comma = true;
  }
  return "%" + name + " = call_function[target=" + op + "](args = (" + args + (top_level_comma ? "" : ",") +
         "), kwargs = {" + kwargs + "})";
}

inline ir::Graph parse(const std::string& text, const std::map<std::string, Tensor, std::less<>>& parameters = {}) {
  return ir::parse_graph(text, "test.kiln", parameters);
}

// A tensor of `sizes` with reproducible values: floats uniform in [low, high], integers
// uniform in [low, high] (rounded), bools fair coins.
inline Tensor random_tensor(const Sizes& sizes, DType dtype, uint64_t seed, double low = -2, double high = 2) {
  Tensor tensor = Tensor::empty(sizes, dtype);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  auto next = [&]() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return double((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  char* data = static_cast<char*>(tensor.data_ptr());
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    void* address = data + i * int64_t(tensor.element_size());
    double unit = next();
    if (is_floating(dtype)) store_double(dtype, address, low + (high - low) * unit);
    else if (dtype == DType::boolean) store_int(dtype, address, unit < 0.5);
    else store_int(dtype, address, int64_t(std::floor(low + (high - low + 1) * unit)));
  }
  return tensor;
}

inline Tensor tensor_of(const Sizes& sizes, const std::vector<double>& values, DType dtype) {
  return Tensor::from_doubles(sizes, values, dtype);
}

inline double tolerance_scale(DType dtype) {
  if (dtype == DType::f16) return 1e-3;
  if (dtype == DType::bf16) return 8e-3;
  return 1e-5;
}

// Empty when `actual` matches `expected`, else what differs.
inline std::string difference(const Tensor& expected, const Tensor& actual) {
  std::ostringstream out;
  if (expected.dtype() != actual.dtype())
    return "dtype " + std::string(dtype_name(actual.dtype())) + ", expected " + std::string(dtype_name(expected.dtype()));
  if (expected.sizes() != actual.sizes())
    return "shape " + sizes_to_string(actual.sizes()) + ", expected " + sizes_to_string(expected.sizes());
  bool floating = is_floating(expected.dtype());
  double rtol = tolerance_scale(expected.dtype()), atol = expected.dtype() == DType::f32 || expected.dtype() == DType::f64 ? 1e-6 : rtol;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    bool same;
    if (floating) {
      double e = expected.flat_double(i), a = actual.flat_double(i);
      if (std::isnan(e) || std::isnan(a)) same = std::isnan(e) && std::isnan(a);
      else if (std::isinf(e) || std::isinf(a)) same = e == a;
      else same = std::fabs(a - e) <= atol + rtol * std::fabs(e);
    } else {
      same = expected.flat_int(i) == actual.flat_int(i);
    }
    if (!same) {
      out.precision(9);
      out << "element " << i << " differs\n  expected " << expected.to_string(64) << "\n  actual   "
          << actual.to_string(64);
      return out.str();
    }
  }
  return "";
}

// Lowers `graph`, evaluates the loop program and the interpreter on `inputs`, and returns
// an empty string when every output matches, else a report with the graph and the program.
inline std::string check_lowering(const ir::Graph& graph, const Inputs& inputs, const LoweringOptions& options = {}) {
  std::vector<Tensor> expected = ir::Interpreter().run(graph, inputs);
  LoopProgram program;
  std::vector<Tensor> actual;
  std::string problem;
  try {
    program = lower(graph, options);
    actual = evaluate_loop_program(program, graph, inputs);
  } catch (const std::exception& error) {
    problem = std::string("lowering or evaluation threw: ") + error.what();
  }
  if (problem.empty() && actual.size() != expected.size())
    problem = std::to_string(actual.size()) + " outputs, expected " + std::to_string(expected.size());
  for (size_t i = 0; problem.empty() && i < expected.size(); ++i) {
    std::string differs = difference(expected[i], actual[i]);
    if (!differs.empty()) problem = "output " + std::to_string(i) + ": " + differs;
  }
  if (problem.empty()) return "";
  return problem + "\n--- graph:\n" + ir::print_graph(graph) + "--- loop program:\n" + print_loop_program(program);
}

// check_lowering on a graph given as text.
inline std::string check_lowering(const std::string& text, const Inputs& inputs, const LoweringOptions& options = {}) {
  return check_lowering(parse(text), inputs, options);
}

// The number of nodes of each kind ("Pointwise", "Reduction", "Gemm", "Convolution", "Fallback").
inline std::map<std::string, int> node_kinds(const LoopProgram& program) {
  std::map<std::string, int> counts;
  for (const LoopNode& node : program.nodes) {
    if (node.kind == NodeKind::Pointwise) ++counts["Pointwise"];
    else if (node.kind == NodeKind::Reduction) ++counts["Reduction"];
    else if (node.extern_call.kind == ExternKind::Gemm) ++counts["Gemm"];
    else if (node.extern_call.kind == ExternKind::Convolution) ++counts["Convolution"];
    else ++counts["Fallback"];
  }
  return counts;
}

}  // namespace kiln::codegen::testing
