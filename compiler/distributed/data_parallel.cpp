// Data-parallel training. See compiler/distributed/data_parallel.h.
#include "compiler/distributed/data_parallel.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "kiln/error.h"

namespace kiln::compiler {

namespace {

// "lr 0.001\n" with every bit of the value (%.17g).
std::string option_line(const char* name, double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%s %.17g\n", name, value);
  return text;
}

std::string option_line(const char* name, bool value) { return std::string(name) + (value ? " true\n" : " false\n"); }

}  // namespace

DataParallel::DataParallel(std::shared_ptr<distributed::ProcessGroup> group, training::ParameterArena& arena,
                           const std::vector<std::string>& gradient_order, int64_t bucket_bytes)
    : group_(std::move(group)), arena_(&arena), buckets_(plan_gradient_buckets(arena, gradient_order, bucket_bytes)) {}

void DataParallel::start(const std::vector<RankDescription>& descriptions, const std::vector<Tensor>& buffers) {
  check_ranks_agree(*group_, descriptions, "compile_training (data_parallel)");
  for (const training::ParameterArena::Group& dtype_group : arena_->groups())
    group_->broadcast(dtype_group.parameters, 0);
  buffers_ = buffers;
  for (const Tensor& buffer : buffers) group_->broadcast(buffer, 0);
}

void DataParallel::broadcast_buffers() {
  if (group_->world_size() == 1 || buffers_.empty()) return;
  // One packed broadcast per dtype, the dtypes in a fixed order so that every rank makes the
  // same collectives.
  std::map<DType, std::vector<const Tensor*>> by_dtype;
  for (const Tensor& buffer : buffers_) by_dtype[buffer.dtype()].push_back(&buffer);
  for (const auto& [dtype, members] : by_dtype) {
    if (members.size() == 1) {
      group_->broadcast(*members[0], 0);
      continue;
    }
    int64_t total = 0;
    for (const Tensor* buffer : members) total += buffer->numel();
    const Tensor packed = Tensor::empty({total}, dtype);
    int64_t offset = 0;
    const bool root = group_->rank() == 0;
    for (const Tensor* buffer : members) {
      if (root) packed.slice(0, offset, offset + buffer->numel()).view(buffer->sizes()).copy_from(*buffer);
      offset += buffer->numel();
    }
    group_->broadcast(packed, 0);
    if (root) continue;
    offset = 0;
    for (const Tensor* buffer : members) {
      buffer->copy_from(packed.slice(0, offset, offset + buffer->numel()).view(buffer->sizes()));
      offset += buffer->numel();
    }
  }
}

void DataParallel::average_gradients() {
  for (size_t i = 0; i < buckets_.size(); ++i) average_bucket(i);
}

void DataParallel::average_bucket(size_t index) {
  const GradientBucket& bucket = buckets_.at(index);
  if (group_->world_size() == 1) return;  // the average over one rank is its own gradients
  const Tensor& flat = arena_->groups()[bucket.group].gradients;
  if (bucket.arena_range) {
    const auto [first, count] = *bucket.arena_range;
    group_->all_reduce(flat.slice(0, first, first + count), distributed::ReduceOp::average);
    return;
  }
  // Parameters scattered through the arena: reduced through one packed copy.
  std::vector<std::pair<Tensor, int64_t>> pieces;  // gradient view, offset in the packed copy
  int64_t total = 0;
  for (const std::string& name : bucket.parameters) {
    const Tensor gradient = arena_->gradient(name);
    pieces.emplace_back(gradient, total);
    total += gradient.numel();
  }
  const Tensor packed = Tensor::empty({total}, flat.dtype());
  for (const auto& [gradient, offset] : pieces)
    packed.slice(0, offset, offset + gradient.numel()).view(gradient.sizes()).copy_from(gradient);
  group_->all_reduce(packed, distributed::ReduceOp::average);
  for (const auto& [gradient, offset] : pieces)
    gradient.copy_from(packed.slice(0, offset, offset + gradient.numel()).view(gradient.sizes()));
}

std::vector<std::string> gradient_production_order(const ir::Graph& backward, const std::vector<std::string>& wrt) {
  std::map<const ir::Node*, size_t> position;
  for (const ir::Node* node : backward.nodes()) position.emplace(node, position.size());
  const std::vector<ir::Node*> outputs = backward.outputs();
  KILN_CHECK(outputs.size() == wrt.size(), "the backward returns one gradient per parameter");
  std::vector<size_t> order(wrt.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return position.at(outputs[a]) < position.at(outputs[b]); });
  std::vector<std::string> names;
  for (size_t i : order) names.push_back(wrt[i]);
  return names;
}

std::string describe_optimizer(const training::OptimizerOptions& optimizer) {
  if (const auto* sgd = std::get_if<training::SgdOptions>(&optimizer)) {
    return "sgd\n" + option_line("lr", sgd->lr) + option_line("momentum", sgd->momentum) +
           option_line("dampening", sgd->dampening) + option_line("weight_decay", sgd->weight_decay) +
           option_line("nesterov", sgd->nesterov) + option_line("maximize", sgd->maximize);
  }
  const auto& adam = std::get<training::AdamOptions>(optimizer);
  return "adam\n" + option_line("lr", adam.lr) + option_line("beta1", adam.beta1) + option_line("beta2", adam.beta2) +
         option_line("eps", adam.eps) + option_line("weight_decay", adam.weight_decay) +
         option_line("amsgrad", adam.amsgrad) + option_line("maximize", adam.maximize) +
         option_line("decoupled_weight_decay", adam.decoupled_weight_decay);
}

}  // namespace kiln::compiler
