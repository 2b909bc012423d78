// ParameterArena: the trainable parameters of a model, and their gradients, laid out in flat
// buffers ("arenas") so that an optimizer step is one pointwise kernel over all of them
// (compiler/training/fused_optimizer.h), as PyTorch's fused and foreach optimizers do.
//
// Layout. Parameters are grouped by dtype (in the order each dtype first appears); a group
// owns one contiguous parameter arena and one gradient arena of the same length. Each
// parameter is a view into its group's arena at an offset rounded up to 64 bytes (so every
// parameter starts on a cache line and a vector boundary); the padding between them is zero in
// both arenas, and stays zero through every update Kiln's optimizers make (a zero parameter
// with a zero gradient and zero state stays zero). Parameters keep their order within a group.
//
// Ownership. The constructor copies the given values in: the arena's views, parameter(name)
// and gradient(name), are the tensors to train with from then on (a caller that traced a model
// over other tensors rebinds the model's parameters to these views). The views stay valid as
// long as any copy of them lives; the arena never reallocates.
//
// Gradients follow PyTorch's zero_grad(set_to_none=False): they start at zero, zero_grad()
// zeroes them, and accumulate_gradients() adds a micro-batch's gradients into them (scaled by
// a factor the caller chooses: 1/micro_batches for a mean), so several micro-batches
// accumulate before one optimizer step. The training step may also write the gradient views
// directly.
//
// Every parameter must be a defined CPU tensor of a floating dtype (f32, f64, f16, bf16) with a
// unique name; anything else is refused with a kiln::Error naming the parameter.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::training {

struct NamedTensor {
  std::string name;
  Tensor value;
};

class ParameterArena {
 public:
  // One dtype's parameters: flat arenas of `numel` elements (padding included).
  struct Group {
    DType dtype;
    Tensor parameters;            // 1-d, contiguous
    Tensor gradients;             // 1-d, contiguous, same length
    std::vector<size_t> members;  // indices into names(), in arena order
  };

  explicit ParameterArena(const std::vector<NamedTensor>& parameters);

  // Parameter names in the order given.
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<Group>& groups() const { return groups_; }
  bool contains(std::string_view name) const;

  // Views into the arenas, with the parameter's shape (contiguous).
  Tensor parameter(std::string_view name) const;
  Tensor gradient(std::string_view name) const;
  // The view of parameter `name` inside a flat tensor laid out like its group's arena (an
  // optimizer state arena, say).
  Tensor view_of(std::string_view name, const Tensor& flat) const;
  // The group that holds parameter `name`.
  size_t group_of(std::string_view name) const;

  // Sets every gradient to zero (the padding too): one memset per group.
  void zero_grad();
  // Adds scale * gradient into the gradient of each named parameter. Every name must be a
  // parameter, and each gradient must have its parameter's shape and dtype (any strides);
  // all are checked before any is added.
  void accumulate_gradients(const std::map<std::string, Tensor>& gradients, double scale = 1.0);

 private:
  struct Slot {
    size_t group;
    int64_t offset;  // elements into the group's arenas
    Sizes sizes;
  };
  const Slot& slot(std::string_view name) const;
  Tensor view_at(const Slot& slot, const Tensor& flat) const;

  std::vector<std::string> names_;
  std::vector<Slot> slots_;  // by index into names_
  std::vector<Group> groups_;
};

}  // namespace kiln::training
