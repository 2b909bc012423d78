// ONNX's TfIdfVectorizer on integer tokens, written with Kiln's core ops: the n-gram pool is
// known at import time, so each pool n-gram's count in a row is a sum, over the skip distances
// ONNX allows (unigrams once, longer n-grams at every distance 1 .. max_skip_count + 1) and the
// start positions that fit, of the elementwise match of its tokens (slices compared with the
// constant tokens); the counts become TF, IDF or TF-IDF weights as the op's reference does.
// String tokens are not supported (Kiln has no string tensors).
#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

struct Ngram {
  std::vector<int64_t> tokens;
  int64_t output = 0;  // its output column
};

// The pool's n-grams of lengths min_gram_length..max_gram_length, in pool order, with their
// columns (ngram_indexes numbers every n-gram of the pool, in order).
std::vector<Ngram> pool_ngrams(const OnnxNodeContext& context, int64_t min_length, int64_t max_length) {
  std::vector<int64_t> pool = context.ints_attribute("pool_int64s");
  if (pool.empty()) context.fail("only integer pools (pool_int64s) are supported; Kiln has no string tensors");
  std::vector<int64_t> counts = context.ints_attribute("ngram_counts"), indexes = context.ints_attribute("ngram_indexes");
  std::vector<Ngram> ngrams;
  size_t next_id = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int64_t length = int64_t(i) + 1;
    int64_t start = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : int64_t(pool.size());
    if (start < 0 || end < start || end > int64_t(pool.size()) || (end - start) % length != 0)
      context.fail("ngram_counts does not split pool_int64s into n-grams of lengths 1, 2, ...");
    for (int64_t at = start; at < end; at += length, ++next_id) {
      if (next_id >= indexes.size()) context.fail("ngram_indexes has fewer entries than the pool has n-grams");
      if (length < min_length || length > max_length) continue;
      ngrams.push_back({std::vector<int64_t>(pool.begin() + at, pool.begin() + at + length), indexes[next_id]});
    }
  }
  return ngrams;
}

void convert_tfidf_vectorizer(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  if (!is_integral(x->value().dtype)) context.fail("only integer tokens are supported; Kiln has no string tensors");
  int64_t rank = x->value().rank();
  if (rank < 1 || rank > 2) context.fail("the input must be [C] or [N, C]");
  if (!x->value().shape.back().is_constant()) context.fail("the row length must be static");
  int64_t length = x->value().shape.back().constant();
  int64_t min_length = context.int_attribute("min_gram_length", 1), max_length = context.int_attribute("max_gram_length", 1);
  int64_t max_skip = context.int_attribute("max_skip_count", 0);
  std::string mode = context.string_attribute("mode", "TF");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") context.fail("mode '", mode, "' is not TF, IDF or TFIDF");
  std::vector<int64_t> indexes = context.ints_attribute("ngram_indexes");
  int64_t outputs = 0;
  for (int64_t index : indexes) outputs = std::max(outputs, index + 1);
  std::vector<float> weights;
  if (const auto* attribute = context.attribute("weights")) weights.assign(attribute->floats().begin(), attribute->floats().end());

  std::vector<ir::Node*> columns(size_t(outputs), nullptr);
  for (const Ngram& ngram : pool_ngrams(context, min_length, max_length)) {
    int64_t n = int64_t(ngram.tokens.size());
    int64_t last_distance = n == 1 ? 1 : max_skip + 1;
    for (int64_t distance = 1; distance <= last_distance; ++distance) {
      int64_t starts = length - (n - 1) * distance;  // start positions that fit
      if (starts <= 0) continue;
      ir::Node* match = nullptr;
      for (int64_t j = 0; j < n; ++j) {
        ir::Node* tokens = context.call("slice", {x, int64_t(-1), j * distance, j * distance + starts});
        ir::Node* equal = context.call("eq", {tokens, ngram.tokens[size_t(j)]});
        match = match ? context.call("logical_and", {match, equal}) : equal;
      }
      ir::Node* count = context.call("sum", {context.call("cast", {match, DType::f32}), ir::Argument::ints({-1})});
      ir::Node*& column = columns[size_t(ngram.output)];
      column = column ? context.call("add", {column, count}) : count;
    }
  }
  ir::SymShape row_shape(x->value().shape.begin(), x->value().shape.end() - 1);
  std::vector<ir::Argument> parts;
  for (int64_t k = 0; k < outputs; ++k) {
    ir::Node* column = columns[size_t(k)];
    if (!column) column = context.call("full", {ir::Argument::sym_ints(row_shape), 0.0}, {{"dtype", DType::f32}});
    if (mode == "IDF") {
      double weight = weights.empty() ? 1.0 : double(weights.at(size_t(k)));
      column = context.call("where", {context.call("gt", {column, 0.0}), weight, 0.0});
    } else if (mode == "TFIDF" && !weights.empty()) {
      column = context.call("mul", {column, double(weights.at(size_t(k)))});
    }
    parts.emplace_back(context.call("unsqueeze", {column, int64_t(-1)}));
  }
  ir::Node* result = context.call("cat", {ir::Argument(parts), int64_t(-1)});
  if (result->value().dtype != DType::f32) result = context.call("cast", {result, DType::f32});
  context.set_output(0, result);
}

}  // namespace

void register_onnx_text_ops(OnnxOpTable& table) { table.add("TfIdfVectorizer", convert_tfidf_vectorizer); }

}  // namespace kiln::frontends
