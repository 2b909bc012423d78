// ParameterArena. See compiler/training/parameter_arena.h.
#include "compiler/training/parameter_arena.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "runtime/allocator.h"
#include "kiln/error.h"
#include "runtime/half.h"
#include "runtime/strides.h"

namespace kiln::training {

namespace {

int64_t round_up_to_cache_line(int64_t elements, DType dtype) {
  const int64_t per_line = int64_t(kCpuAlignment / dtype_size(dtype));
  return (elements + per_line - 1) / per_line * per_line;
}

// dst[i] += scale * src[i] over `count` contiguous elements, computed in the dtype's opmath
// type (f32 for f16/bf16), as PyTorch's grad.add_(g, alpha=scale) does.
void add_scaled(DType dtype, void* dst, const void* src, int64_t count, double scale) {
  switch (dtype) {
    case DType::f32: {
      float* d = static_cast<float*>(dst);
      const float* s = static_cast<const float*>(src);
      const float alpha = float(scale);
      for (int64_t i = 0; i < count; ++i) d[i] += alpha * s[i];
      return;
    }
    case DType::f64: {
      double* d = static_cast<double*>(dst);
      const double* s = static_cast<const double*>(src);
      for (int64_t i = 0; i < count; ++i) d[i] += scale * s[i];
      return;
    }
    case DType::f16:
    case DType::bf16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      const uint16_t* s = static_cast<const uint16_t*>(src);
      const bool half = dtype == DType::f16;
      const float alpha = float(scale);
      for (int64_t i = 0; i < count; ++i) {
        float sum = (half ? f16_to_float(d[i]) : bf16_to_float(d[i])) +
                    alpha * (half ? f16_to_float(s[i]) : bf16_to_float(s[i]));
        d[i] = half ? float_to_f16(sum) : float_to_bf16(sum);
      }
      return;
    }
    default:
      KILN_CHECK(false, "the arena holds only floating dtypes, got ", dtype_name(dtype));
  }
}

}  // namespace

ParameterArena::ParameterArena(const std::vector<NamedTensor>& parameters) {
  if (parameters.empty()) fail("optimizer got an empty parameter list");
  std::set<std::string, std::less<>> seen;
  std::vector<int64_t> group_lengths;
  for (const NamedTensor& parameter : parameters) {
    const std::string& name = parameter.name;
    const Tensor& value = parameter.value;
    if (!seen.insert(name).second) fail("parameter '", name, "' is given twice: parameter names must be unique");
    if (!value.defined()) fail("parameter '", name, "' is an undefined tensor");
    if (!value.device().is_cpu()) fail("parameter '", name, "' is on ", value.device().to_string(), "; the optimizer runs on cpu");
    if (!is_floating(value.dtype())) {
      fail("parameter '", name, "' is ", dtype_name(value.dtype()),
           ": only floating parameters (f32, f64, f16, bf16) can be trained");
    }
    auto group = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.dtype == value.dtype(); });
    if (group == groups_.end()) {
      groups_.push_back(Group{value.dtype(), {}, {}, {}});
      group_lengths.push_back(0);
      group = groups_.end() - 1;
    }
    const size_t group_index = size_t(group - groups_.begin());
    group->members.push_back(names_.size());
    slots_.push_back(Slot{group_index, group_lengths[group_index], value.sizes()});
    group_lengths[group_index] += round_up_to_cache_line(value.numel(), value.dtype());
    names_.push_back(name);
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].parameters = Tensor::zeros({group_lengths[g]}, groups_[g].dtype);
    groups_[g].gradients = Tensor::zeros({group_lengths[g]}, groups_[g].dtype);
  }
  for (size_t i = 0; i < parameters.size(); ++i) parameter(names_[i]).copy_from(parameters[i].value);
}

bool ParameterArena::contains(std::string_view name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

const ParameterArena::Slot& ParameterArena::slot(std::string_view name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) fail("the optimizer has no parameter '", name, "'");
  return slots_[size_t(it - names_.begin())];
}

Tensor ParameterArena::view_at(const Slot& s, const Tensor& flat) const {
  return flat.as_strided(s.sizes, contiguous_strides(s.sizes), flat.storage_offset() + s.offset);
}

Tensor ParameterArena::parameter(std::string_view name) const {
  const Slot& s = slot(name);
  return view_at(s, groups_[s.group].parameters);
}

Tensor ParameterArena::gradient(std::string_view name) const {
  const Slot& s = slot(name);
  return view_at(s, groups_[s.group].gradients);
}

Tensor ParameterArena::view_of(std::string_view name, const Tensor& flat) const {
  const Slot& s = slot(name);
  KILN_CHECK(flat.dim() == 1 && flat.numel() == groups_[s.group].parameters.numel() && flat.is_contiguous(),
             "a flat tensor laid out like the arena of group ", s.group);
  return view_at(s, flat);
}

size_t ParameterArena::group_of(std::string_view name) const { return slot(name).group; }

void ParameterArena::zero_grad() {
  for (Group& group : groups_) std::memset(group.gradients.data_ptr(), 0, group.gradients.nbytes());
}

void ParameterArena::accumulate_gradients(const std::map<std::string, Tensor>& gradients, double scale) {
  for (const auto& [name, gradient] : gradients) {
    if (!contains(name)) fail("accumulate_gradients: the optimizer has no parameter '", name, "'");
    const Tensor target = this->gradient(name);
    if (!gradient.defined()) fail("accumulate_gradients: the gradient of parameter '", name, "' is undefined");
    if (gradient.dtype() != target.dtype() || gradient.sizes() != target.sizes()) {
      fail("accumulate_gradients: the gradient of parameter '", name, "' is ", dtype_name(gradient.dtype()),
           sizes_to_string(gradient.sizes()), ", the parameter is ", dtype_name(target.dtype()),
           sizes_to_string(target.sizes()));
    }
    if (!gradient.device().is_cpu()) fail("accumulate_gradients: the gradient of parameter '", name, "' is not on cpu");
  }
  for (const auto& [name, gradient] : gradients) {
    const Tensor target = this->gradient(name);
    const Tensor source = gradient.contiguous();
    add_scaled(target.dtype(), target.data_ptr(), source.data_ptr(), target.numel(), scale);
  }
}

}  // namespace kiln::training
