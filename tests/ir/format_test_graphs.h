// Graphs built with the Graph API for the format tests (printer/parser, JSON, model files,
// verifier): a small MLP with a parameter, and a graph that uses every argument kind the
// schemas allow (None, bools, ints, negative ints, floats incl. -inf and 1e-05, strings,
// dtypes, symbolic ints, int and node lists), symbolic shapes, tuples read through getitem,
// kwargs, strided and CUDA placeholders, and a get_attr target that needs quoting.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <unistd.h>

#include "ir/graph.h"
#include "kiln/error.h"
#include "tests/support/golden.h"
#include "tests/support/test_paths.h"

namespace kiln::ir::format_test {

inline SymInt s0() { return SymInt::symbol("s0"); }

// x : f32[s0, 16] -> matmul with fc1.weight^T -> (matmul, sum over dim 1 keeping it).
inline Graph mlp_graph() {
  Graph graph;
  std::vector<double> weights(8 * 16);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = double(i) * 0.5 - 3;
  graph.set_parameter("fc1.weight", Tensor::from_doubles({8, 16}, weights, DType::f32));
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {s0(), 16}));
  Node* weight = graph.create_get_attr("fc1.weight");
  Node* t = graph.create_call("transpose", {weight, 0, 1}, {}, "t");
  Node* mm = graph.create_call("matmul", {x, t});
  Node* total = graph.create_call("sum", {mm, Argument::ints({1})}, {{"keepdim", true}});
  graph.create_output({mm, total});
  return graph;
}

inline constexpr const char* kWeirdTarget = "layers[0] \"w\"";

inline Graph all_arguments_graph() {
  Graph graph;
  graph.set_parameter(kWeirdTarget, Tensor::from_vector<double>({4}, {1, 2, 3, 4}, DType::f32));
  Node* a = graph.create_placeholder("a", TensorMeta::contiguous(DType::f32, {s0(), 4}));
  Node* idx = graph.create_placeholder("idx", TensorMeta::contiguous(DType::i64, {s0()}));
  TensorMeta strided = TensorMeta::contiguous(DType::f32, {2, 3});
  strided.strides = {1, 2};  // column-major
  Node* p = graph.create_placeholder("p", strided);
  Node* g = graph.create_placeholder("g", TensorMeta::contiguous(DType::f32, {3}, Device::cuda(0)));
  Node* w = graph.create_get_attr(kWeirdTarget, "w");

  Node* add = graph.create_call("add", {a, 2.5}, {{"alpha", 2}});
  Node* div = graph.create_call("div", {add, a}, {{"rounding_mode", "floor"}});
  Node* cast = graph.create_call("cast", {div, DType::f16});
  Node* slice = graph.create_call("slice", {a, 1, Argument(), 3});
  Node* reshape = graph.create_call("reshape", {a, Argument::sym_ints({s0() * 2, 2})});
  Node* var_mean = graph.create_call("var_mean", {a, Argument::ints({1})}, {{"correction", 0}});
  Node* var = graph.create_call("getitem", {var_mean, 0});
  Node* mean = graph.create_call("getitem", {var_mean, 1});
  Node* split = graph.create_call("split", {a, Argument::ints({4}), 1});
  Node* part = graph.create_call("getitem", {split, 0});
  Node* cat = graph.create_call("cat", {Argument(std::vector<Argument>{a, a}), -1});
  Node* mul = graph.create_call("mul", {a, w});
  Node* norm = graph.create_call("layer_norm", {a, Argument::ints({4}), Argument(), Argument(), 1e-05});
  Node* full = graph.create_call("full", {Argument::sym_ints({s0(), 2}), -HUGE_VAL}, {{"dtype", DType::f32}});
  Node* sum = graph.create_call("sum", {a, Argument::ints({1}), true});
  Node* select = graph.create_call("select", {a, 0, s0() - 1});
  Node* transpose = graph.create_call("transpose", {p, -1, -2});
  Node* iota = graph.create_call("iota", {s0()});
  Node* add_1 = graph.create_call("add", {idx, iota});
  graph.create_output({cast, slice, reshape, var, mean, part, cat, mul, norm, full, sum, select, transpose, add_1, g});
  return graph;
}

// The message of the kiln::Error that `action` throws ("(no error)" when none).
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

inline std::string golden_path(const std::string& name) {
  return std::string(KILN_SOURCE_DIR) + "/tests/ir/golden/" + name;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compares `actual` with the golden file (tests/support/golden.h; KILN_UPDATE_GOLDENS=1 rewrites it).
inline void expect_golden(const std::string& name, const std::string& actual) {
  test_support::expect_matches_golden(actual, golden_path(name));
}

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("kiln_ir_format_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace kiln::ir::format_test
