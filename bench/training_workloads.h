// The two models the training benchmarks time (bench/training_step_bench.cpp,
// bench/ddp_step_bench.cpp), written with kiln::nn; bench/compare_training.py and
// bench/compare_ddp.py build the same modules in PyTorch (same parameter names):
//   Mlp             784-128-10 (fc1, ReLU, fc2): the parity MLP
//   AttentionBlock  samples/models/attention.kiln's pre-LayerNorm causal attention block
//                   ([batch, 8, 32], 2 heads, GELU MLP of 64)
#pragma once

#include <kiln/kiln.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace kiln::bench {

namespace F = nn::functional;

class Mlp : public nn::Module {
 public:
  Mlp() : Module("Mlp") {
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(784, 128));
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(128, 10));
  }
  Var forward(const Var& x) override { return (*fc2_)(F::relu((*fc1_)(x))); }

 private:
  std::shared_ptr<nn::Linear> fc1_, fc2_;
};

// samples/models/attention.kiln written with kiln::nn (scripts/make_sample_goldens.py's block).
class AttentionBlock : public nn::Module {
 public:
  static constexpr int64_t kDim = 32, kHeads = 2, kHidden = 64;
  AttentionBlock() : Module("AttentionBlock") {
    ln1_ = register_module("ln1", std::make_shared<nn::LayerNorm>(std::vector<int64_t>{kDim}));
    qkv_ = register_module("qkv", std::make_shared<nn::Linear>(kDim, 3 * kDim));
    proj_ = register_module("proj", std::make_shared<nn::Linear>(kDim, kDim));
    ln2_ = register_module("ln2", std::make_shared<nn::LayerNorm>(std::vector<int64_t>{kDim}));
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(kDim, kHidden));
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(kHidden, kDim));
  }
  Var forward(const Var& x) override {
    const int64_t batch = x.size(0), length = x.size(1), head_dim = kDim / kHeads;
    Var qkv = (*qkv_)((*ln1_)(x)).reshape({batch, length, 3, kHeads, head_dim}).permute({2, 0, 3, 1, 4});
    Var q = qkv.select(0, 0), k = qkv.select(0, 1), v = qkv.select(0, 2);
    Var attention = F::scaled_dot_product_attention(q, k, v, {}, 0, /*is_causal=*/true);
    Var h = x + (*proj_)(attention.permute({0, 2, 1, 3}).reshape({batch, length, kDim}));
    return h + (*fc2_)(F::gelu((*fc1_)((*ln2_)(h))));
  }

 private:
  std::shared_ptr<nn::LayerNorm> ln1_, ln2_;
  std::shared_ptr<nn::Linear> qkv_, proj_, fc1_, fc2_;
};

}  // namespace kiln::bench
