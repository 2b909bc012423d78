// torch.nn.Embedding over kiln::Var (embedding.h).
#include "kiln/nn/embedding.h"

#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/error.h"

namespace kiln::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx)
    : Module("Embedding") {
  Tensor weight = Tensor::empty({num_embeddings, embedding_dim}, DType::f32);
  init::normal_(weight);
  if (padding_idx) {
    if (*padding_idx < -num_embeddings || *padding_idx >= num_embeddings) {
      fail("Embedding: padding_idx ", *padding_idx, " is outside the table of ", num_embeddings, " embeddings");
    }
    padding_idx_ = *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
    init::zeros_(weight.select(0, padding_idx_));
  }
  register_parameter("weight", weight);
}

Var Embedding::forward(const Var& indices) {
  SourceLocation loc = SourceLocation::current();
  if (is_floating(indices.dtype()) || indices.dtype() == DType::boolean) {
    fail_in_forward("expected integer indices, got " + indices.type_string(), loc);
  }
  return functional::embedding(indices, attribute("weight"), padding_idx_);
}

}  // namespace kiln::nn
