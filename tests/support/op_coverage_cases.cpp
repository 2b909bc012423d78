// Graphs that cover every core op. See tests/support/op_coverage_cases.h.
#include "tests/support/op_coverage_cases.h"

#include <cmath>
#include <utility>

#include "tests/support/differential.h"

// GCC 12 reports -Wmaybe-uninitialized inside std::variant for braced Argument lists (a known
// false positive of its inliner).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace kiln::test_support {

namespace {

using ir::Graph;
using ir::Node;
using ir::SymInt;

ir::Argument ints(std::initializer_list<int64_t> values) {
  std::vector<ir::Argument> list;
  for (int64_t v : values) list.emplace_back(v);
  return ir::Argument(list);
}

Node* input(Graph& graph, const std::string& name, const std::vector<SymInt>& shape, DType dtype = DType::f32) {
  return graph.create_placeholder(name, ir::TensorMeta::contiguous(dtype, shape));
}

OpCoverageCase unary_ops() {
  OpCoverageCase c{"every_unary_op", Graph(), {}, 2e-6, 1e-6};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {17, 3});
  std::vector<ir::Argument> outputs;
  for (const char* op : {"neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
                         "tanh", "sigmoid", "erf", "erfinv", "relu", "floor", "ceil", "round", "sign", "logical_not",
                         "isnan"}) {
    outputs.push_back(graph.create_call(op, {x}));
  }
  // erfinv inside its domain too (on [-3, 3], x gives mostly NaN): x / 3.5 is within (-0.86, 0.86).
  outputs.push_back(graph.create_call("erfinv", {graph.create_call("div", {x, 3.5})}));
  outputs.push_back(graph.create_call("clamp", {x, -0.5, 0.75}));
  graph.create_output(outputs);
  c.input_sets = {{{"x", random_tensor({17, 3}, DType::f32, 1, -3, 3)}}};
  return c;
}

OpCoverageCase binary_ops() {
  OpCoverageCase c{"every_binary_op_broadcast", Graph(), {}, 2e-6, 1e-6};
  Graph& graph = c.graph;
  Node* a = input(graph, "a", {17, 1});
  Node* b = input(graph, "b", {1, 5});
  std::vector<ir::Argument> outputs;
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum", "fmod", "remainder", "eq", "ne", "lt", "le",
                         "gt", "ge", "logical_and", "logical_or", "logical_xor"}) {
    outputs.push_back(graph.create_call(op, {a, b}));
  }
  outputs.push_back(graph.create_call("pow", {graph.create_call("abs", {a}), b}));
  outputs.push_back(graph.create_call("add", {a, 2.5}));
  outputs.push_back(graph.create_call("where", {graph.create_call("gt", {a, b}), a, b}));
  graph.create_output(outputs);
  c.input_sets = {{{"a", random_tensor({17, 1}, DType::f32, 2)}, {"b", random_tensor({1, 5}, DType::f32, 3)}}};
  return c;
}

OpCoverageCase integer_ops() {
  OpCoverageCase c{"integer_and_bool_ops", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* a = input(graph, "a", {3, 17}, DType::i64);
  Node* b = input(graph, "b", {17}, DType::i64);
  Node* m = input(graph, "m", {3, 17}, DType::boolean);
  Node* nonzero = graph.create_call("add", {graph.create_call("abs", {b}), 1});
  graph.create_output({
      graph.create_call("add", {a, b}),
      graph.create_call("mul", {a, b}),
      graph.create_call("sub", {a, b}),
      graph.create_call("div", {a, nonzero}, {{"rounding_mode", std::string("floor")}}),
      graph.create_call("div", {a, nonzero}, {{"rounding_mode", std::string("trunc")}}),
      graph.create_call("remainder", {a, nonzero}),
      graph.create_call("fmod", {a, nonzero}),
      graph.create_call("maximum", {a, b}),
      graph.create_call("lt", {a, b}),
      graph.create_call("logical_and", {m, graph.create_call("gt", {a, 0})}),
      graph.create_call("where", {m, a, b}),
      graph.create_call("cast", {a, DType::f32}),
      graph.create_call("cast", {graph.create_call("div", {a, 2}), DType::i32}),
      graph.create_call("sum", {a, ints({1})}),
      graph.create_call("amax", {a, ints({0})}),
      graph.create_call("argmax", {a, 1}),
      graph.create_call("sum", {m, ints({0})}),
      graph.create_call("amax", {m, ints({1})}),
      graph.create_call("neg", {a}),
      graph.create_call("abs", {a}),
      graph.create_call("sign", {a}),
      graph.create_call("bitwise_and", {a, b}),
      graph.create_call("bitwise_or", {a, 6}),
      graph.create_call("bitwise_xor", {m, graph.create_call("gt", {a, 0})}),
      graph.create_call("bitwise_not", {a}),
      graph.create_call("bitwise_not", {m}),
      graph.create_call("bitwise_left_shift", {a, graph.create_call("abs", {b})}),
      graph.create_call("bitwise_right_shift", {a, graph.create_call("abs", {b})}),
      // u8 shifts past the width: 0 to the left, 0 to the right; i8 right: the sign.
      graph.create_call("bitwise_left_shift", {graph.create_call("cast", {a, DType::u8}), 9}),
      graph.create_call("bitwise_right_shift", {graph.create_call("cast", {a, DType::i8}), 3}),
  });
  c.input_sets = {{{"a", random_tensor({3, 17}, DType::i64, 4)},
                   {"b", random_tensor({17}, DType::i64, 5)},
                   {"m", random_tensor({3, 17}, DType::boolean, 6)}}};
  return c;
}

// i16 end to end: arithmetic that wraps (values near +-32767), integer division and remainder,
// bitwise ops and shifts past the width, promotion with u8, i8, i32, Python numbers and f32,
// reductions (sum and prod in i64, max, argmax, cumsum), casts to and from every kind, and
// copies (transpose, cat, gather, where).
OpCoverageCase int16_ops() {
  OpCoverageCase c{"int16_ops", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* a = input(graph, "a", {3, 17}, DType::i16);
  Node* b = input(graph, "b", {17}, DType::i16);
  Node* u = input(graph, "u", {17}, DType::u8);
  Node* x = input(graph, "x", {3, 17});
  Node* nonzero = graph.create_call("add", {graph.create_call("abs", {b}), 1});
  Node* shift = graph.create_call("remainder", {graph.create_call("abs", {b}), 20});
  graph.create_output({
      graph.create_call("add", {a, b}),
      graph.create_call("mul", {a, b}),
      graph.create_call("sub", {b, a}),
      graph.create_call("div", {a, nonzero}, {{"rounding_mode", std::string("floor")}}),
      graph.create_call("div", {a, nonzero}, {{"rounding_mode", std::string("trunc")}}),
      graph.create_call("div", {a, nonzero}),
      graph.create_call("remainder", {a, nonzero}),
      graph.create_call("fmod", {a, nonzero}),
      graph.create_call("maximum", {a, b}),
      graph.create_call("minimum", {a, b}),
      graph.create_call("le", {a, b}),
      graph.create_call("eq", {a, graph.create_call("neg", {a})}),
      graph.create_call("neg", {a}),
      graph.create_call("abs", {a}),
      graph.create_call("sign", {a}),
      graph.create_call("clamp", {a, -1000, 20000}),
      graph.create_call("bitwise_and", {a, b}),
      graph.create_call("bitwise_or", {a, 0x0f0f}),
      graph.create_call("bitwise_xor", {a, b}),
      graph.create_call("bitwise_not", {a}),
      graph.create_call("bitwise_left_shift", {a, shift}),
      graph.create_call("bitwise_right_shift", {a, shift}),
      graph.create_call("add", {a, u}),                                             // i16
      graph.create_call("add", {graph.create_call("cast", {u, DType::i8}), u}),     // i8 + u8: i16
      graph.create_call("mul", {a, graph.create_call("cast", {b, DType::i32})}),    // i32
      graph.create_call("add", {a, 30000}),                                         // i16, wraps
      graph.create_call("mul", {a, 0.5}),                                           // f32
      graph.create_call("add", {a, x}),                                             // f32
      graph.create_call("sum", {a, ints({1})}),
      graph.create_call("prod", {graph.create_call("sign", {a}), ints({0})}),
      graph.create_call("amax", {a, ints({0})}),
      graph.create_call("amin", {a, ints({1})}),
      graph.create_call("argmax", {a, 1}),
      graph.create_call("cumsum", {a, 1}),
      graph.create_call("cast", {a, DType::f32}),
      graph.create_call("cast", {a, DType::f16}),
      graph.create_call("cast", {a, DType::i8}),
      graph.create_call("cast", {a, DType::u8}),
      graph.create_call("cast", {a, DType::i64}),
      graph.create_call("cast", {a, DType::boolean}),
      graph.create_call("cast", {graph.create_call("mul", {x, 20000.0}), DType::i16}),  // wraps past 32767
      graph.create_call("cast", {graph.create_call("cast", {a, DType::bf16}), DType::i16}),
      graph.create_call("transpose", {a, 0, 1}),
      graph.create_call("cat", {std::vector<ir::Argument>{a, graph.create_call("unsqueeze", {b, 0})}, 0}),
      graph.create_call("where", {graph.create_call("gt", {a, 0}), a, b}),
  });
  c.input_sets = {{{"a", random_tensor({3, 17}, DType::f32, 50, -32768, 32767).to(DType::i16)},
                   {"b", random_tensor({17}, DType::f32, 51, -300, 300).to(DType::i16)},
                   {"u", random_tensor({17}, DType::f32, 52, 0, 255).to(DType::u8)},
                   {"x", random_tensor({3, 17}, DType::f32, 53, -3, 3)}}};
  return c;
}

// u16, u32 and u64 end to end: arithmetic that wraps, integer division and remainders, max/min,
// comparisons, bitwise ops and shifts past the width, Python numbers and f32 (the promotions
// PyTorch allows), sum in i64, max and argmax of u16/u32, casts both ways; u64 values from 2^63
// up (which int64 holds as negative bits) through the ops that order or divide them.
OpCoverageCase unsigned_ops() {
  OpCoverageCase c{"unsigned_ops", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* h = input(graph, "h", {3, 17}, DType::u16);
  Node* hb = input(graph, "hb", {17}, DType::u16);
  Node* w = input(graph, "w", {3, 17}, DType::u32);
  Node* wb = input(graph, "wb", {17}, DType::u32);
  Node* q = input(graph, "q", {3, 17}, DType::u64);
  Node* qb = input(graph, "qb", {17}, DType::u64);
  Node* x = input(graph, "x", {3, 17});
  std::vector<ir::Argument> outputs;
  const std::pair<Node*, Node*> pairs[] = {{h, hb}, {w, wb}, {q, qb}};
  for (const auto& [a, b] : pairs) {
    Node* nonzero = graph.create_call("add", {graph.create_call("remainder", {b, 1000}), 1});
    Node* shift = graph.create_call("remainder", {b, 70});
    for (const char* op : {"add", "sub", "mul", "maximum", "minimum", "lt", "ge", "eq", "bitwise_and", "bitwise_or",
                           "bitwise_xor"})
      outputs.push_back(graph.create_call(op, {a, b}));
    for (const char* mode : {"floor", "trunc"})
      outputs.push_back(graph.create_call("div", {a, nonzero}, {{"rounding_mode", std::string(mode)}}));
    outputs.push_back(graph.create_call("div", {a, b}));  // true division: f32
    outputs.push_back(graph.create_call("remainder", {a, nonzero}));
    outputs.push_back(graph.create_call("fmod", {a, nonzero}));
    outputs.push_back(graph.create_call("bitwise_left_shift", {a, shift}));
    outputs.push_back(graph.create_call("bitwise_right_shift", {a, shift}));
    outputs.push_back(graph.create_call("bitwise_not", {a}));
    outputs.push_back(graph.create_call("neg", {a}));
    for (const char* op : {"abs", "sign", "relu"}) outputs.push_back(graph.create_call(op, {a}));
    outputs.push_back(graph.create_call("add", {a, 40000}));  // wraps
    outputs.push_back(graph.create_call("mul", {a, 0.5}));    // f32
    outputs.push_back(graph.create_call("add", {a, x}));      // f32
    outputs.push_back(graph.create_call("gt", {a, 30000}));
    outputs.push_back(graph.create_call("sum", {a, ints({1})}));
    outputs.push_back(graph.create_call("cast", {a, DType::f64}));
    outputs.push_back(graph.create_call("cast", {a, DType::f32}));
    outputs.push_back(graph.create_call("cast", {a, DType::i64}));
    outputs.push_back(graph.create_call("cast", {a, DType::i16}));
    outputs.push_back(graph.create_call("cast", {a, DType::boolean}));
    outputs.push_back(graph.create_call("cast", {graph.create_call("mul", {x, 1e19}), a->value().dtype}));
    outputs.push_back(graph.create_call("where", {graph.create_call("gt", {a, b}), a, b}));
    outputs.push_back(graph.create_call("transpose", {a, 0, 1}));
    if (a != q) {  // the interpreter's reductions order u64 values as int64
      outputs.push_back(graph.create_call("amax", {a, ints({0})}));
      outputs.push_back(graph.create_call("argmax", {a, 1}));
    }
  }
  graph.create_output(outputs);
  // u64 values over the whole range: doubles up to 1.8e19, stored as u64 saturates them.
  Tensor big = random_tensor({3, 17}, DType::f64, 66, 0, 1.8e19).to(DType::u64);
  c.input_sets = {{{"h", random_tensor({3, 17}, DType::f32, 60, 0, 65535).to(DType::u16)},
                   {"hb", random_tensor({17}, DType::f32, 61, 0, 65535).to(DType::u16)},
                   {"w", random_tensor({3, 17}, DType::f64, 62, 0, 4294967295.0).to(DType::u32)},
                   {"wb", random_tensor({17}, DType::f64, 63, 0, 4294967295.0).to(DType::u32)},
                   {"q", big},
                   {"qb", random_tensor({17}, DType::f64, 64, 0, 1.8e19).to(DType::u64)},
                   {"x", random_tensor({3, 17}, DType::f32, 65, -3, 3)}}};
  return c;
}

OpCoverageCase copies_creation_random_fallbacks() {
  OpCoverageCase c{"copies_creation_random_fallbacks", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {5, 7});
  Node* y = input(graph, "y", {5, 3});
  Node* idx = input(graph, "idx", {5, 4}, DType::i64);
  Node* rows = input(graph, "rows", {6}, DType::i64);
  graph.create_output({
      graph.create_call("cat", {std::vector<ir::Argument>{x, y}, 1}),
      graph.create_call("pad", {x, ints({1, 2, 0, 1}), "constant", 0.5}),
      graph.create_call("pad", {x, ints({2, 1}), "reflect"}),
      graph.create_call("pad", {x, ints({1, 3}), "replicate"}),
      graph.create_call("gather", {x, 1, idx}),
      graph.create_call("index_select", {x, 0, rows}),
      graph.create_call("full", {ints({3, 4}), 2.5}),
      graph.create_call("arange", {0, 10, 3}),
      graph.create_call("iota", {9}, {{"start", 2}, {"step", 3}}),
      graph.create_call("rand", {ints({4, 33})}, {{"seed", 7}, {"offset", 3}}),
      graph.create_call("randn", {ints({17})}, {{"seed", 9}}),
      graph.create_call("cumsum", {x, 1}),
      graph.create_call("scatter", {x, 1, graph.create_call("slice", {idx, 1, 0, 3}), y}),
      graph.create_call("prod", {x, ints({1})}),
      graph.create_call("amin", {x, ints({0, 1})}),
      graph.create_call("var", {x, ints({1})}),
      graph.create_call("adaptive_avg_pool", {graph.create_call("unsqueeze", {x, 0}), ints({3, 2})}),
      graph.create_call("adaptive_max_pool", {graph.create_call("unsqueeze", {x, 0}), ints({2, 4})}),
      graph.create_call("bmm", {graph.create_call("unsqueeze", {x, 0}),
                                graph.create_call("unsqueeze", {graph.create_call("transpose", {x, 0, 1}), 0})}),
      graph.create_call("cast", {x, DType::f16}),
      graph.create_call("cast", {graph.create_call("mul", {graph.create_call("cast", {x, DType::bf16}), 3.0}), DType::f32}),
      graph.create_call("cast", {graph.create_call("mul", {x, 10.0}), DType::i8}),
  });
  Tensor index = Tensor::from_doubles({5, 4}, std::vector<double>{0, 6, 3, 3, 1, 2, 5, 0, 4, 4, 4, 1, 6, 5, 2, 0, 3, 1, 0, 2},
                                      DType::i64);
  Tensor row_index = Tensor::from_doubles({6}, std::vector<double>{4, 0, 0, 3, 1, 2}, DType::i64);
  c.input_sets = {{{"x", random_tensor({5, 7}, DType::f32, 30)},
                   {"y", random_tensor({5, 3}, DType::f32, 31)},
                   {"idx", index},
                   {"rows", row_index}}};
  return c;
}

OpCoverageCase saturating_casts() {
  OpCoverageCase c{"saturating_casts", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {8});
  graph.create_output({graph.create_call("cast", {x, DType::i64}), graph.create_call("cast", {x, DType::i32}),
                       graph.create_call("cast", {x, DType::u8}), graph.create_call("cast", {x, DType::boolean})});
  c.input_sets = {{{"x", Tensor::from_doubles({8}, std::vector<double>{NAN, INFINITY, -INFINITY, 3e20, -3e20, 300.7, -2.5, 0.0},
                                              DType::f32)}}};
  return c;
}

OpCoverageCase whole_tensor_reductions() {
  OpCoverageCase c{"whole_tensor_reductions", Graph(), {}, 1e-4, 1e-3};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {300007});
  graph.create_output({graph.create_call("sum", {x}), graph.create_call("amax", {x}), graph.create_call("amin", {x}),
                       graph.create_call("mean", {x}), graph.create_call("argmax", {x}), graph.create_call("var", {x})});
  Tensor values = random_tensor({300007}, DType::f32, 40);
  Tensor with_nan = values.clone();
  with_nan.data<float>()[123457] = NAN;
  c.input_sets = {{{"x", values}}, {{"x", with_nan}}};
  return c;
}

OpCoverageCase rows_of(int64_t n) {
  OpCoverageCase c{"chain_softmax_layer_norm_reductions_" + std::to_string(n), Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {3, n});
  Node* w = input(graph, "w", {n});
  Node* chain = graph.create_call(
      "mul", {graph.create_call("tanh", {graph.create_call("add", {graph.create_call("mul", {x, w}), 1.0})}),
              graph.create_call("sigmoid", {x})});
  graph.create_output({chain, graph.create_call("softmax", {x, -1}),
                       graph.create_call("layer_norm", {x, ints({n}), w, ir::Argument()}),
                       graph.create_call("sum", {x, ints({1})}), graph.create_call("amax", {x, ints({1}), true}),
                       graph.create_call("argmin", {x, 1}), graph.create_call("mean", {x, ints({0})}),
                       graph.create_call("sum", {x})});
  c.input_sets = {{{"x", random_tensor({3, n}, DType::f32, 7)}, {"w", random_tensor({n}, DType::f32, 8)}}};
  return c;
}

OpCoverageCase views() {
  OpCoverageCase c{"views_fold_into_indexing", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {4, 6, 5});
  Node* p = graph.create_call("permute", {x, ints({2, 0, 1})});
  Node* s = graph.create_call("slice", {p, 1, 1, 4, 2});
  Node* sel = graph.create_call("select", {x, 2, 3});
  Node* r = graph.create_call("reshape", {x, ints({24, 5})});
  Node* t = graph.create_call("transpose", {r, 0, 1});
  Node* e = graph.create_call("expand", {graph.create_call("unsqueeze", {sel, 0}), ints({3, 4, 6})});
  graph.create_output({graph.create_call("mul", {s, 2.0}), graph.create_call("add", {t, 1.0}),
                       graph.create_call("neg", {e}), graph.create_call("clone", {t})});
  c.input_sets = {{{"x", random_tensor({4, 6, 5}, DType::f32, 10)}}};
  return c;
}

OpCoverageCase transposes() {
  OpCoverageCase c{"transposes", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {3, 31, 67});
  graph.create_output({graph.create_call("add", {graph.create_call("transpose", {x, 1, 2}), 1.0})});
  c.input_sets = {{{"x", random_tensor({3, 31, 67}, DType::f32, 31)}}};
  return c;
}

OpCoverageCase symbolic_batch() {
  OpCoverageCase c{"symbolic_batch", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {SymInt::symbol("s0"), 33});
  Node* y = graph.create_call("softmax", {graph.create_call("mul", {x, 0.5}), 1});
  graph.create_output({y, graph.create_call("sum", {x, ints({0})})});
  for (int64_t batch : {1, 2, 65}) c.input_sets.push_back({{"x", random_tensor({batch, 33}, DType::f32, uint64_t(batch))}});
  return c;
}

OpCoverageCase matmuls() {
  OpCoverageCase c{"matmul_batched_and_broadcast", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* a = input(graph, "a", {2, 3, 17, 5});
  Node* b = input(graph, "b", {5, 4});
  Node* cc = input(graph, "c", {3, 4, 7});
  Node* mm = graph.create_call("matmul", {a, b});
  Node* bmm = graph.create_call("matmul", {mm, cc});
  Node* v = graph.create_call("matmul", {input(graph, "v", {5}), b});
  Node* gelu = graph.create_call("gelu", {graph.create_call("add", {mm, 0.25})});
  graph.create_output({mm, bmm, v, gelu});
  c.input_sets = {{{"a", random_tensor({2, 3, 17, 5}, DType::f32, 11)},
                   {"b", random_tensor({5, 4}, DType::f32, 12)},
                   {"c", random_tensor({3, 4, 7}, DType::f32, 13)},
                   {"v", random_tensor({5}, DType::f32, 14)}}};
  return c;
}

OpCoverageCase convolution_and_pooling() {
  OpCoverageCase c{"convolution_and_pooling", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {2, 4, 9, 11});
  Node* w = input(graph, "w", {6, 2, 3, 3});
  Node* bias = input(graph, "bias", {6});
  Node* conv = graph.create_call("convolution", {x, w, bias, ints({2, 1}), ints({1, 2}), ints({1, 2}), false,
                                                 ints({0, 0}), 2});
  Node* pool = graph.create_call("max_pool", {graph.create_call("relu", {conv}), ints({2, 2}), ints({2, 2}), ints({1, 1})});
  Node* avg = graph.create_call("avg_pool", {x, ints({3, 3}), ints({2, 2}), ints({1, 1})});
  graph.create_output({conv, pool, avg});
  c.input_sets = {{{"x", random_tensor({2, 4, 9, 11}, DType::f32, 15)},
                   {"w", random_tensor({6, 2, 3, 3}, DType::f32, 16)},
                   {"bias", random_tensor({6}, DType::f32, 17)}}};
  return c;
}

// Ops the backends run as fallbacks (their reference kernels): topk's two outputs, det, the
// sampling ops and deform_conv2d.
OpCoverageCase selection_and_sampling_fallbacks() {
  OpCoverageCase c{"selection_and_sampling_fallbacks", Graph(), {}, 1e-4, 1e-5};
  Graph& graph = c.graph;
  Node* x = input(graph, "x", {5, 7});
  Node* image = input(graph, "image", {2, 3, 5, 6});
  Node* grid = input(graph, "grid", {2, 4, 3, 2});
  Node* boxes = input(graph, "boxes", {3, 4});
  Node* box_images = input(graph, "box_images", {3}, DType::i64);
  Node* kernel = input(graph, "kernel", {4, 3, 2, 2});
  Node* offsets = input(graph, "offsets", {2, 8, 6, 5});
  Node* mask = input(graph, "mask", {2, 4, 6, 5});
  Node* top = graph.create_call("topk", {x, 3, 1});
  graph.create_output({
      graph.create_call("getitem", {top, 0}),
      graph.create_call("getitem", {top, 1}),
      graph.create_call("det", {graph.create_call("reshape", {graph.create_call("slice", {x, 1, 0, 4}), ints({5, 2, 2})})}),
      graph.create_call("grid_sample", {image, grid}),
      graph.create_call("grid_sample", {image, grid}, {{"mode", "bicubic"}, {"padding_mode", "reflection"}}),
      graph.create_call("roi_align", {image, boxes, box_images, 2, 3, 2, 0.5}),
      graph.create_call("deform_conv2d", {image, kernel, offsets, mask}, {{"padding", ints({1, 0})}}),
  });
  Tensor box_values = Tensor::from_doubles({3, 4}, std::vector<double>{0, 0, 8, 6, 2, 1, 10, 9, 1, 3, 5, 7}, DType::f32);
  Tensor box_image_values = Tensor::from_doubles({3}, std::vector<double>{1, 0, 1}, DType::i64);
  c.input_sets = {{{"x", random_tensor({5, 7}, DType::f32, 40)},
                   {"image", random_tensor({2, 3, 5, 6}, DType::f32, 41)},
                   {"grid", random_tensor({2, 4, 3, 2}, DType::f32, 42)},
                   {"boxes", box_values},
                   {"box_images", box_image_values},
                   {"kernel", random_tensor({4, 3, 2, 2}, DType::f32, 43)},
                   {"offsets", random_tensor({2, 8, 6, 5}, DType::f32, 44)},
                   {"mask", random_tensor({2, 4, 6, 5}, DType::f32, 45, 0.0, 1.0)}}};
  return c;
}

}  // namespace

std::vector<OpCoverageCase> op_coverage_cases() {
  std::vector<OpCoverageCase> cases;
  cases.push_back(unary_ops());
  cases.push_back(binary_ops());
  cases.push_back(integer_ops());
  cases.push_back(int16_ops());
  cases.push_back(unsigned_ops());
  cases.push_back(copies_creation_random_fallbacks());
  cases.push_back(selection_and_sampling_fallbacks());
  cases.push_back(saturating_casts());
  cases.push_back(whole_tensor_reductions());
  for (int64_t n : {1, 3, 17, 1023, 4097}) cases.push_back(rows_of(n));
  cases.push_back(views());
  cases.push_back(transposes());
  cases.push_back(symbolic_batch());
  cases.push_back(matmuls());
  cases.push_back(convolution_and_pooling());
  return cases;
}

}  // namespace kiln::test_support
