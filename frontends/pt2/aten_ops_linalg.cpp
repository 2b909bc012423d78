// ATen matrix products: mm / bmm / matmul / linear / addmm (Kiln's own ops), baddbmm, mv,
// dot, outer, addmv, addr, einsum (lowered to permutes, sums and one batched matmul per pair
// of operands), the pairwise distances _cdist_forward / _pdist_forward; tensordot and inner
// (permutes and reshapes around one matmul), bilinear, linalg_vecdot, trace, and det /
// linalg_det (Kiln's det).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

void convert_mm(AtenNodeContext& c) { c.emit(0, "matmul", {c.tensor("self"), c.tensor(c.find("mat2") ? "mat2" : "other")}); }
void convert_bmm(AtenNodeContext& c) { c.emit(0, "bmm", {c.tensor("self"), c.tensor("mat2")}); }
void convert_matmul(AtenNodeContext& c) { c.emit(0, "matmul", {c.tensor("self"), c.tensor("other")}); }
void convert_mv(AtenNodeContext& c) { c.emit(0, "matmul", {c.tensor("self"), c.tensor("vec")}); }
void convert_dot(AtenNodeContext& c) { c.emit(0, "matmul", {c.tensor("self"), c.tensor(c.find("tensor") ? "tensor" : "other")}); }

void convert_linear(AtenNodeContext& c) {
  ir::Node* bias = c.optional_tensor("bias");
  c.emit(0, "linear", {c.tensor("input"), c.tensor("weight"), bias ? ir::Argument(bias) : ir::Argument()});
}

// beta * self + alpha * product, leaving out the factors that are 1 (and self when beta is 0,
// where PyTorch ignores even NaNs in self).
ir::Node* scaled_sum(AtenNodeContext& c, ir::Node* self, ir::Node* product) {
  ir::Argument beta = c.scalar("beta", int64_t(1)), alpha = c.scalar("alpha", int64_t(1));
  auto is_value = [](const ir::Argument& a, double v) { return a.is_number() && a.floating() == v; };
  if (!is_value(alpha, 1)) product = c.call("mul", {product, alpha});
  if (is_value(beta, 0)) return product;
  ir::Node* base = is_value(beta, 1) ? self : c.call("mul", {self, beta});
  return c.call("add", {base, product});
}

void convert_addmm(AtenNodeContext& c) {
  ir::Kwargs kwargs;
  if (c.given("beta")) kwargs.emplace_back("beta", c.scalar("beta"));
  if (c.given("alpha")) kwargs.emplace_back("alpha", c.scalar("alpha"));
  c.result("addmm", {c.tensor("self"), c.tensor("mat1"), c.tensor("mat2")}, std::move(kwargs));
}

void convert_baddbmm(AtenNodeContext& c) {
  c.result_node(scaled_sum(c, c.tensor("self"), c.call("bmm", {c.tensor("batch1"), c.tensor("batch2")})));
}

void convert_addmv(AtenNodeContext& c) {
  c.result_node(scaled_sum(c, c.tensor("self"), c.call("matmul", {c.tensor("mat"), c.tensor("vec")})));
}

ir::Node* outer_of(AtenNodeContext& c, ir::Node* a, ir::Node* b) {
  return c.call("mul", {c.call("unsqueeze", {a, int64_t(1)}), c.call("unsqueeze", {b, int64_t(0)})});
}

void convert_outer(AtenNodeContext& c) { c.set_output(0, outer_of(c, c.tensor("self"), c.tensor("vec2"))); }

void convert_addr(AtenNodeContext& c) {
  c.result_node(scaled_sum(c, c.tensor("self"), outer_of(c, c.tensor("vec1"), c.tensor("vec2"))));
}

// a and b contracted over dims_a with dims_b (in pairs), as ATen's tensordot: a's free dims
// moved first and b's last, each flattened to a matrix, one matmul, the free dims restored.
ir::Node* contracted(AtenNodeContext& c, ir::Node* a, ir::Node* b, std::vector<int64_t> dims_a, std::vector<int64_t> dims_b) {
  if (dims_a.size() != dims_b.size())
    c.fail("both dimension lists should have same length, got ", dims_a.size(), " and ", dims_b.size());
  dims_a = wrap_dims(c, dims_a, rank_of(a));
  dims_b = wrap_dims(c, dims_b, rank_of(b));
  SymInt inner = 1, free_a_size = 1, free_b_size = 1;
  for (size_t i = 0; i < dims_a.size(); ++i) {
    // A contracted dim of size 1 on one side broadcasts: the other side's dim is summed first.
    SymInt sa = shape_of(a)[size_t(dims_a[i])], sb = shape_of(b)[size_t(dims_b[i])];
    auto is_one = [](const SymInt& size) { return size.maybe_constant() == std::optional<int64_t>(1); };
    if (is_one(sb) && !is_one(sa)) {
      a = c.call("sum", {a, ir::Argument::ints({dims_a[i]}), true});
      sa = 1;
    } else if (is_one(sa) && !is_one(sb)) {
      b = c.call("sum", {b, ir::Argument::ints({dims_b[i]}), true});
      sb = 1;
    }
    if (!(sa == sb)) c.fail("contracted dimensions need to match, but first has size ", sa.to_string(), " in dim ", dims_a[i],
                            " and second has size ", sb.to_string(), " in dim ", dims_b[i]);
    inner = inner * sa;
  }
  std::vector<int64_t> order_a, order_b;
  std::vector<SymInt> result;
  for (int64_t d = 0; d < rank_of(a); ++d)
    if (std::find(dims_a.begin(), dims_a.end(), d) == dims_a.end()) {
      order_a.push_back(d);
      result.push_back(shape_of(a)[size_t(d)]);
      free_a_size = free_a_size * shape_of(a)[size_t(d)];
    }
  order_a.insert(order_a.end(), dims_a.begin(), dims_a.end());
  order_b = dims_b;
  for (int64_t d = 0; d < rank_of(b); ++d)
    if (std::find(dims_b.begin(), dims_b.end(), d) == dims_b.end()) {
      order_b.push_back(d);
      result.push_back(shape_of(b)[size_t(d)]);
      free_b_size = free_b_size * shape_of(b)[size_t(d)];
    }
  ir::Node* matrix_a = c.call("reshape", {c.call("permute", {a, ir::Argument::ints(order_a)}), ir::Argument::sym_ints({free_a_size, inner})});
  ir::Node* matrix_b = c.call("reshape", {c.call("permute", {b, ir::Argument::ints(order_b)}), ir::Argument::sym_ints({inner, free_b_size})});
  return c.call("reshape", {c.call("matmul", {matrix_a, matrix_b}), ir::Argument::sym_ints(result)});
}

void convert_tensordot(AtenNodeContext& c) {
  c.set_output(0, contracted(c, c.tensor("self"), c.tensor("other"), c.ints("dims_self"), c.ints("dims_other")));
}

// inner(a, b): a product with a 0-d operand, else the contraction of both last dims.
void convert_inner(AtenNodeContext& c) {
  ir::Node* a = c.tensor("self");
  ir::Node* b = c.tensor("other");
  if (rank_of(a) == 0 || rank_of(b) == 0) return void(c.set_output(0, c.call("mul", {a, b})));
  c.set_output(0, contracted(c, a, b, {-1}, {-1}));
}

// bilinear(x1 [..., in1], x2 [..., in2], weight [out, in1, in2], bias [out]):
// y[..., k] = x1 W_k x2 + b_k, as x1 times W laid out [in1, out * in2], then each out's row
// times x2 summed.
void convert_bilinear(AtenNodeContext& c) {
  ir::Node* x1 = c.tensor("input1");
  ir::Node* x2 = c.tensor("input2");
  ir::Node* weight = c.tensor("weight");
  ir::Node* bias = c.optional_tensor("bias");
  if (rank_of(weight) != 3 || rank_of(x1) == 0 || rank_of(x2) == 0)
    c.fail("bilinear expects a 3-d weight [out, in1, in2] and inputs of at least 1 dim, got ", weight->value().type_string(),
           ", ", x1->value().type_string(), " and ", x2->value().type_string());
  const ir::SymShape& w = shape_of(weight);
  if (!(shape_of(x1).back() == w[1]) || !(shape_of(x2).back() == w[2]))
    c.fail("bilinear: input1's last dim must be weight's dim 1 and input2's its dim 2, got ", x1->value().type_string(), ", ",
           x2->value().type_string(), " and weight ", weight->value().type_string());
  std::vector<SymInt> leading(shape_of(x1).begin(), shape_of(x1).end() - 1);
  ir::Node* rows1 = c.call("reshape", {x1, ir::Argument::sym_ints({SymInt(-1), w[1]})});
  ir::Node* rows2 = c.call("reshape", {x2, ir::Argument::sym_ints({SymInt(-1), SymInt(1), w[2]})});
  ir::Node* laid_out = c.call("reshape", {c.call("permute", {weight, ir::Argument::ints({1, 0, 2})}), ir::Argument::sym_ints({w[1], w[0] * w[2]})});
  ir::Node* projected = c.call("reshape", {c.call("matmul", {rows1, laid_out}), ir::Argument::sym_ints({SymInt(-1), w[0], w[2]})});
  ir::Node* y = c.call("sum", {c.call("mul", {projected, rows2}), ir::Argument::ints({-1}), false});
  if (bias) y = c.call("add", {y, bias});
  leading.push_back(w[0]);
  c.set_output(0, c.call("reshape", {y, ir::Argument::sym_ints(leading)}));
}

void convert_linalg_vecdot(AtenNodeContext& c) {
  ir::Node* x = c.tensor("x");
  ir::Node* y = c.tensor("y");
  c.set_output(0, c.call("sum", {c.call("mul", {x, y}), ir::Argument::ints({c.int_arg("dim", -1)}), false}));
}

// trace of a matrix: the sum of its flattened elements 0, n + 1, 2 (n + 1), ... (n columns).
void convert_trace(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (rank_of(x) != 2) c.fail("trace: expected a matrix, but got tensor with dim ", rank_of(x));
  const ir::SymShape& shape = shape_of(x);
  SymInt diagonal = min(shape[0], shape[1]);
  ir::Node* flat = c.call("reshape", {x, ir::Argument::ints({-1})});
  SymInt step = shape[1] + SymInt(1);
  ir::Node* picked = c.call("slice", {flat, int64_t(0), SymInt(0), diagonal * step, step});
  c.set_output(0, c.call("sum", {picked, ir::Argument(), false}));
}

// ---- einsum

struct Operand {
  ir::Node* node;
  std::string labels;  // one character per dim
};

// Sums the labels of `operand` that are not in `keep`.
Operand sum_out(AtenNodeContext& c, Operand operand, const std::set<char>& keep) {
  std::vector<int64_t> dims;
  std::string rest;
  for (size_t i = 0; i < operand.labels.size(); ++i) {
    if (keep.count(operand.labels[i])) rest += operand.labels[i];
    else dims.push_back(int64_t(i));
  }
  if (dims.empty()) return operand;
  return {c.call("sum", {operand.node, ir::Argument::ints(dims), false}), rest};
}

Operand permuted(AtenNodeContext& c, const Operand& operand, const std::string& order) {
  if (operand.labels == order) return operand;
  std::vector<int64_t> dims;
  for (char label : order) dims.push_back(int64_t(operand.labels.find(label)));
  return {c.call("permute", {operand.node, ir::Argument::ints(dims)}), order};
}

// a * b contracted over the labels not in `keep`: [batch, left, contracted] @ [batch, contracted, right].
Operand contract(AtenNodeContext& c, Operand a, Operand b, const std::set<char>& keep, std::map<char, SymInt>& sizes) {
  std::set<char> in_b(b.labels.begin(), b.labels.end()), in_a(a.labels.begin(), a.labels.end());
  std::set<char> keep_a = keep, keep_b = keep;
  keep_a.insert(b.labels.begin(), b.labels.end());
  keep_b.insert(a.labels.begin(), a.labels.end());
  a = sum_out(c, a, keep_a);
  b = sum_out(c, b, keep_b);
  std::string batch, left, right, contracted;
  for (char label : a.labels) {
    if (in_b.count(label)) (keep.count(label) ? batch : contracted) += label;
    else left += label;
  }
  for (char label : b.labels)
    if (!in_a.count(label)) right += label;
  auto product = [&](const std::string& labels) {
    SymInt total = 1;
    for (char label : labels) total = total * sizes.at(label);
    return total;
  };
  Operand pa = permuted(c, a, batch + left + contracted), pb = permuted(c, b, batch + contracted + right);
  ir::Node* ma = c.call("reshape", {pa.node, ir::Argument::sym_ints({product(batch), product(left), product(contracted)})});
  ir::Node* mb = c.call("reshape", {pb.node, ir::Argument::sym_ints({product(batch), product(contracted), product(right)})});
  ir::Node* mm = c.call("bmm", {ma, mb});
  std::vector<SymInt> shape;
  std::string labels = batch + left + right;
  for (char label : labels) shape.push_back(sizes.at(label));
  return {c.call("reshape", {mm, ir::Argument::sym_ints(shape)}), labels};
}

void convert_einsum(AtenNodeContext& c) {
  std::string equation = c.string_arg("equation");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  std::vector<ir::Node*> tensors = c.tensors("tensors");
  size_t arrow = equation.find("->");
  std::string inputs = equation.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char ch : inputs) {
    if (ch == ',') terms.emplace_back();
    else terms.back() += ch;
  }
  if (terms.size() != tensors.size()) c.fail("einsum(): '", equation, "' has ", terms.size(), " operands, got ", tensors.size(), " tensors");
  // Ellipses become labels of their own (upper-case letters not used by the equation).
  std::string spare;
  for (char ch = 'Z'; ch >= 'A' && spare.size() < 10; --ch)
    if (equation.find(ch) == std::string::npos) spare += ch;
  int64_t ellipsis_rank = 0;
  std::vector<Operand> operands;
  std::map<char, SymInt> sizes;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string term = terms[i];
    size_t dots = term.find("...");
    int64_t rank = rank_of(tensors[i]);
    if (dots != std::string::npos) {
      int64_t covered = rank - int64_t(term.size() - 3);
      if (covered < 0) c.fail("einsum(): operand ", i, " has too few dims for '", terms[i], "'");
      ellipsis_rank = std::max(ellipsis_rank, covered);
      term = term.substr(0, dots) + spare.substr(spare.size() - size_t(covered)) + term.substr(dots + 3);
    }
    if (int64_t(term.size()) != rank) c.fail("einsum(): the subscript of operand ", i, " has ", term.size(), " labels for ", rank, " dims");
    std::set<char> seen;
    for (size_t d = 0; d < term.size(); ++d) {
      if (!seen.insert(term[d]).second) c.fail("einsum(): a repeated label in one operand (a diagonal, '", terms[i], "') is not supported");
      const SymInt& size = shape_of(tensors[i])[d];
      auto [it, fresh] = sizes.emplace(term[d], size);
      if (!fresh && !(it->second == size)) {
        if (it->second.is_constant() && it->second.constant() == 1) it->second = size;  // broadcast
        else if (!(size.is_constant() && size.constant() == 1)) c.fail("einsum(): label '", term[d], "' has sizes ", it->second.to_string(), " and ", size.to_string());
      }
    }
    operands.push_back({tensors[i], term});
  }
  std::string output;
  std::string ellipsis_labels = spare.substr(spare.size() - size_t(ellipsis_rank));
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
    size_t dots = output.find("...");
    if (dots != std::string::npos) output = output.substr(0, dots) + ellipsis_labels + output.substr(dots + 3);
  } else {
    // Implicit output: the ellipsis dims, then the labels used once, in alphabetical order.
    std::map<char, int> counts;
    for (const Operand& operand : operands)
      for (char label : operand.labels) ++counts[label];
    output = ellipsis_labels;
    for (const auto& [label, count] : counts)
      if (count == 1 && ellipsis_labels.find(label) == std::string::npos) output += label;
  }
  // Broadcast size-1 dims of operands to the label's size.
  for (Operand& operand : operands) {
    std::vector<SymInt> target;
    bool broadcast = false;
    for (size_t d = 0; d < operand.labels.size(); ++d) {
      target.push_back(sizes.at(operand.labels[d]));
      broadcast |= !(shape_of(operand.node)[d] == target.back());
    }
    if (broadcast) operand.node = c.call("expand", {operand.node, ir::Argument::sym_ints(target)});
  }
  std::set<char> out_labels(output.begin(), output.end());
  Operand result = operands[0];
  for (size_t i = 1; i < operands.size(); ++i) {
    std::set<char> keep = out_labels;
    for (size_t j = i + 1; j < operands.size(); ++j) keep.insert(operands[j].labels.begin(), operands[j].labels.end());
    result = contract(c, result, operands[i], keep, sizes);
  }
  result = sum_out(c, result, out_labels);
  result = permuted(c, result, output);
  c.set_output(0, result.node == tensors[0] ? c.call("clone", {result.node}) : result.node);
}

// ---- distances

ir::Node* p_norm_last(AtenNodeContext& c, ir::Node* difference, double p) {
  ir::Node* a = c.call("abs", {difference});
  ir::Argument last = ir::Argument::ints({-1});
  if (std::isinf(p)) return c.call(p > 0 ? "amax" : "amin", {a, last, false});
  if (p == 0) return c.call("sum", {c.call("cast", {c.call("ne", {difference, 0.0}), dtype_of(difference)}), last, false});
  if (p == 1) return c.call("sum", {a, last, false});
  if (p == 2) return c.call("sqrt", {c.call("sum", {c.call("mul", {difference, difference}), last, false})});
  return c.call("pow", {c.call("sum", {c.call("pow", {a, p}), last, false}), 1.0 / p});
}

void convert_cdist(AtenNodeContext& c) {
  ir::Node* x1 = c.tensor("x1");
  ir::Node* x2 = c.tensor("x2");
  double p = c.float_arg("p", 2.0);
  ir::Node* difference = c.call("sub", {c.call("unsqueeze", {x1, int64_t(-2)}), c.call("unsqueeze", {x2, int64_t(-3)})});
  c.set_output(0, p_norm_last(c, difference, p));
}

// _pdist_forward(self [n, m], p): the distances of the pairs i < j, row by row.
void convert_pdist(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  double p = c.float_arg("p", 2.0);
  std::optional<int64_t> rows = shape_of(x)[0].maybe_constant();
  if (rank_of(x) != 2 || !rows) c.fail("pdist needs a 2-d input with a static number of rows");
  std::vector<int64_t> first, second;
  for (int64_t i = 0; i < *rows; ++i)
    for (int64_t j = i + 1; j < *rows; ++j) {
      first.push_back(i);
      second.push_back(j);
    }
  if (first.empty()) return void(c.set_output(0, c.call("full", {ir::Argument::ints({0}), 0.0}, {{"dtype", dtype_of(x)}})));
  ir::Node* a = c.call("index_select", {x, int64_t(0), c.constant(Tensor::from_vector({int64_t(first.size())}, first, DType::i64), "pairs")});
  ir::Node* b = c.call("index_select", {x, int64_t(0), c.constant(Tensor::from_vector({int64_t(second.size())}, second, DType::i64), "pairs")});
  c.set_output(0, p_norm_last(c, c.call("sub", {a, b}), p));
}

}  // namespace

void register_aten_linalg_ops(AtenOpTable& table) {
  add_op(table, "mm", "default", convert_mm);
  add_op(table, "bmm", "default", convert_bmm);
  add_op(table, "matmul", "default", convert_matmul);
  add_op(table, "mv", "default", convert_mv);
  add_op(table, "dot", "default", convert_dot);
  add_op(table, "vdot", "default", convert_dot);
  add_op(table, "linear", "default", convert_linear);
  add_op_and_inplace(table, "addmm", "default", convert_addmm);
  add_op_and_inplace(table, "baddbmm", "default", convert_baddbmm);
  add_op_and_inplace(table, "addmv", "default", convert_addmv);
  add_op(table, "outer", "default", convert_outer);
  add_op(table, "ger", "default", [](AtenNodeContext& c) { c.set_output(0, outer_of(c, c.tensor("self"), c.tensor("vec2"))); });
  add_op_and_inplace(table, "addr", "default", convert_addr);
  add_op(table, "einsum", "default", convert_einsum);
  add_op(table, "tensordot", "default", convert_tensordot);
  add_op(table, "inner", "default", convert_inner);
  add_op(table, "bilinear", "default", convert_bilinear);
  add_op(table, "linalg_vecdot", "default", convert_linalg_vecdot);
  add_op(table, "trace", "default", convert_trace);
  add_op(table, "det", "default", [](AtenNodeContext& c) { c.emit(0, "det", {c.tensor("self")}); });
  add_op(table, "linalg_det", "default", [](AtenNodeContext& c) { c.emit(0, "det", {c.tensor("A")}); });
  add_op(table, "_cdist_forward", "default", convert_cdist);
  add_op(table, "_pdist_forward", "default", convert_pdist);
}

}  // namespace kiln::frontends
