// ONNX Einsum as Kiln ops: the equation's labels ("...": broadcast dims, aligned right) are
// tracked per dim; a label only one operand has and the output lacks is summed away first;
// operands are then contracted left to right, each pair as one batched matmul (batch labels,
// then the first operand's free labels, the contracted labels, the second's free labels,
// reshaped to [batch..., L, K] @ [batch..., K, R]); the result is permuted to the output's
// order. Without "->", the output is the ellipsis dims then the labels used once, sorted.
// A label repeated within one operand ("ii->i", "...ii->...i") first takes that operand's
// diagonal over the two dims, as torch.diagonal does (a strided view, the diagonal dim last).
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"
#include "runtime/strides.h"

namespace kiln::frontends {

namespace {

using Labels = std::vector<int>;  // a letter's code, or kEllipsis + i for the i-th broadcast dim
constexpr int kEllipsis = 256;

struct Operand {
  ir::Node* node;
  Labels labels;
};

// One term ("ab", "...ij") of an operand of `rank` dims, or of the output (rank < 0: the
// ellipsis stands for all `ellipsis_dims`).
Labels parse_term(const OnnxNodeContext& context, const std::string& term, int64_t rank, int64_t ellipsis_dims) {
  Labels labels;
  size_t dots = term.find("...");
  size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
  for (size_t i = 0; i < term.size(); ++i) {
    if (i == dots) {
      int64_t count = rank < 0 ? ellipsis_dims : rank - int64_t(letters);
      if (count < 0) context.fail("term '", term, "' has more labels than its operand has dims (", rank, ")");
      for (int64_t k = ellipsis_dims - count; k < ellipsis_dims; ++k) labels.push_back(kEllipsis + int(k));
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(term[i]))) context.fail("equation label '", term[i], "' is not a letter");
    labels.push_back(term[i]);
  }
  if (rank >= 0 && dots == std::string::npos && int64_t(labels.size()) != rank)
    context.fail("term '", term, "' has ", labels.size(), " labels for an operand of rank ", rank);
  return labels;
}

// `operand` summed over the labels for which `keep` is false.
Operand sum_away(OnnxNodeContext& context, Operand operand, const std::function<bool(int)>& keep) {
  std::vector<int64_t> dims;
  Labels kept;
  for (size_t d = 0; d < operand.labels.size(); ++d) {
    if (keep(operand.labels[d])) kept.push_back(operand.labels[d]);
    else dims.push_back(int64_t(d));
  }
  if (dims.empty()) return operand;
  return {context.call("sum", {operand.node, ir::Argument::ints(dims), false}), kept};
}

Operand permuted(OnnxNodeContext& context, const Operand& operand, const Labels& order) {
  std::vector<int64_t> dims;
  for (int label : order)
    dims.push_back(int64_t(std::find(operand.labels.begin(), operand.labels.end(), label) - operand.labels.begin()));
  bool identity = true;
  for (size_t i = 0; i < dims.size(); ++i) identity = identity && dims[i] == int64_t(i);
  if (identity) return {operand.node, order};
  return {context.call("permute", {operand.node, ir::Argument::ints(dims)}), order};
}

bool contains(const Labels& labels, int label) { return std::find(labels.begin(), labels.end(), label) != labels.end(); }

ir::SymInt product(const ir::SymShape& shape, size_t begin, size_t end) {
  ir::SymInt total = 1;
  for (size_t i = begin; i < end; ++i) total *= shape[i];
  return total;
}

// a ⊗ b contracted over the labels both have that `needed` lacks.
Operand contract(OnnxNodeContext& context, Operand a, Operand b, const std::set<int>& needed) {
  auto keep_a = [&](int label) { return needed.count(label) || contains(b.labels, label); };
  auto keep_b = [&](int label) { return needed.count(label) || contains(a.labels, label); };
  a = sum_away(context, a, keep_a);
  b = sum_away(context, b, keep_b);
  Labels batch, left, inner, right;
  for (int label : a.labels) {
    if (!contains(b.labels, label)) left.push_back(label);
    else if (needed.count(label)) batch.push_back(label);
    else inner.push_back(label);
  }
  for (int label : b.labels)
    if (!contains(a.labels, label)) right.push_back(label);
  Labels a_order = batch, b_order = batch;
  a_order.insert(a_order.end(), left.begin(), left.end());
  a_order.insert(a_order.end(), inner.begin(), inner.end());
  b_order.insert(b_order.end(), inner.begin(), inner.end());
  b_order.insert(b_order.end(), right.begin(), right.end());
  a = permuted(context, a, a_order);
  b = permuted(context, b, b_order);
  ir::SymShape a_shape = a.node->value().shape, b_shape = b.node->value().shape;
  size_t nb = batch.size();
  ir::SymShape a_matrix(a_shape.begin(), a_shape.begin() + long(nb)), b_matrix(b_shape.begin(), b_shape.begin() + long(nb));
  a_matrix.push_back(product(a_shape, nb, nb + left.size()));
  a_matrix.push_back(product(a_shape, nb + left.size(), a_shape.size()));
  b_matrix.push_back(product(b_shape, nb, nb + inner.size()));
  b_matrix.push_back(product(b_shape, nb + inner.size(), b_shape.size()));
  ir::Node* a_node = context.call("reshape", {a.node, ir::Argument::sym_ints(a_matrix)});
  ir::Node* b_node = context.call("reshape", {b.node, ir::Argument::sym_ints(b_matrix)});
  ir::Node* product_node = context.call("matmul", {a_node, b_node});
  ir::SymShape result_shape(product_node->value().shape.begin(), product_node->value().shape.begin() + long(nb));
  result_shape.insert(result_shape.end(), a_shape.begin() + long(nb), a_shape.begin() + long(nb + left.size()));
  result_shape.insert(result_shape.end(), b_shape.begin() + long(nb + inner.size()), b_shape.end());
  Labels labels = batch;
  labels.insert(labels.end(), left.begin(), left.end());
  labels.insert(labels.end(), right.begin(), right.end());
  return {context.call("reshape", {product_node, ir::Argument::sym_ints(result_shape)}), labels};
}

// `operand` with each label it repeats taken along the diagonal of those two dims, until every
// label appears once: the two dims become one, last (torch.diagonal's layout).
Operand without_repeated_labels(OnnxNodeContext& context, const std::string& term, Operand operand) {
  for (;;) {
    Labels& labels = operand.labels;
    size_t first = labels.size(), second = labels.size();
    for (size_t i = 0; i < labels.size() && first == labels.size(); ++i)
      for (size_t j = i + 1; j < labels.size(); ++j)
        if (labels[i] == labels[j]) {
          first = i;
          second = j;
          break;
        }
    if (first == labels.size()) return operand;
    ir::Node* x = operand.node->value().is_contiguous() ? operand.node : context.call("clone", {operand.node});
    const ir::SymShape& shape = x->value().shape;
    ir::SymShape strides = contiguous_strides(shape);
    ir::SymInt length = shape[first];
    if (shape[first].is_constant() && shape[second].is_constant()) {
      if (shape[first].constant() != shape[second].constant())
        context.fail("term '", term, "' repeats label '", char(labels[first]), "' over dims of sizes ", shape[first].constant(),
                     " and ", shape[second].constant(), " (a diagonal needs equal sizes)");
    } else if (!(shape[first] == shape[second])) {
      context.fail("term '", term, "' repeats label '", char(labels[first]), "' over dims of sizes ", shape[first].to_string(),
                   " and ", shape[second].to_string(), ", which are not known to be equal");
    }
    std::vector<ir::SymInt> sizes, diagonal_strides;
    Labels remaining;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (d == first || d == second) continue;
      sizes.push_back(shape[d]);
      diagonal_strides.push_back(strides[d]);
      remaining.push_back(labels[d]);
    }
    sizes.push_back(length);
    diagonal_strides.push_back(strides[first] + strides[second]);
    remaining.push_back(labels[first]);
    operand.node = context.call("as_strided", {x, ir::Argument::sym_ints(sizes), ir::Argument::sym_ints(diagonal_strides), ir::SymInt(0)});
    operand.labels = remaining;
  }
}

void convert_einsum(OnnxNodeContext& context) {
  std::string equation;
  for (char c : context.string_attribute("equation", "")) if (c != ' ') equation += c;
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != context.input_count())
    context.fail("equation '", equation, "' has ", terms.size(), " operands, but the node has ", context.input_count(), " inputs");
  int64_t ellipsis_dims = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    size_t letters = terms[k].size() - (terms[k].find("...") == std::string::npos ? 0 : 3);
    if (terms[k].find("...") != std::string::npos) ellipsis_dims = std::max(ellipsis_dims, context.rank(k) - int64_t(letters));
  }
  std::vector<Operand> operands;
  std::map<int, int> uses;
  for (size_t k = 0; k < terms.size(); ++k) {
    Labels labels = parse_term(context, terms[k], context.rank(k), ellipsis_dims);
    for (int label : labels) ++uses[label];  // "ii" uses i twice: without "->", a trace
    operands.push_back(without_repeated_labels(context, terms[k], {context.tensor(k), labels}));
  }
  Labels output;
  if (arrow != std::string::npos) {
    output = parse_term(context, equation.substr(arrow + 2), -1, ellipsis_dims);
    for (int label : output)
      if (!uses.count(label)) context.fail("output label '", char(label), "' is not in any operand");
  } else {
    for (int64_t k = 0; k < ellipsis_dims; ++k) output.push_back(kEllipsis + int(k));
    for (const auto& [label, count] : uses)
      if (label < kEllipsis && count == 1) output.push_back(label);
  }
  // Labels still needed after operand k: the output's and those of later operands.
  auto needed_after = [&](size_t k) {
    std::set<int> needed(output.begin(), output.end());
    for (size_t j = k + 1; j < operands.size(); ++j) needed.insert(operands[j].labels.begin(), operands[j].labels.end());
    return needed;
  };
  std::set<int> first_needed = needed_after(0);
  Operand result = sum_away(context, operands[0], [&](int label) { return first_needed.count(label) > 0; });
  for (size_t k = 1; k < operands.size(); ++k) result = contract(context, result, operands[k], needed_after(k));
  result = sum_away(context, result, [&](int label) { return contains(output, label); });
  result = permuted(context, result, output);
  if (result.node == context.input(0).node && operands.size() == 1) return context.set_output(0, context.input(0));
  context.set_output(0, result.node);
}

}  // namespace

void register_onnx_einsum_ops(OnnxOpTable& table) { table.add("Einsum", convert_einsum); }

}  // namespace kiln::frontends
