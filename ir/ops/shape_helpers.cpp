// Helpers shared by the shape rules (see shape_helpers.h).
#include "ir/ops/shape_helpers.h"
#include "runtime/strides.h"

#include <algorithm>

namespace kiln::ir {

NodeMeta single(TensorMeta meta) { return NodeMeta{{std::move(meta)}, false}; }

NodeMeta tuple_of(std::vector<TensorMeta> metas) { return NodeMeta{std::move(metas), true}; }

Device first_device(const OpCall& call) {
  for (const Argument& value : call.args()) {
    if (value.is_node() && value.node()->has_single_value()) return value.node()->meta.values[0].device;
    if (value.is_list())
      for (const Argument& item : value.list())
        if (item.is_node() && item.node()->has_single_value()) return item.node()->meta.values[0].device;
  }
  return Device::cpu();
}

int64_t wrap_dim(const OpCall& call, int64_t dim, int64_t rank, bool scalar_ok) {
  if (rank == 0 && !scalar_ok) call.fail("dimension specified as ", dim, " but tensor has no dimensions");
  if (std::optional<int64_t> wrapped = wrapped_dim(dim, rank)) return *wrapped;
  int64_t extent = std::max<int64_t>(rank, 1);
  call.fail("Dimension out of range (expected to be in range of [", -extent, ", ", extent - 1, "], but got ", dim, ")");
}

std::vector<int64_t> wrap_dims(const OpCall& call, const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> wrapped;
  for (int64_t dim : dims) {
    int64_t value = wrap_dim(call, dim, rank);
    if (std::find(wrapped.begin(), wrapped.end(), value) != wrapped.end())
      call.fail("dim ", value, " appears multiple times in the list of dims");
    wrapped.push_back(value);
  }
  return wrapped;
}

bool is_one(const SymInt& size) { return size.maybe_constant() == std::optional<int64_t>(1); }
bool is_zero(const SymInt& size) { return size.maybe_constant() == std::optional<int64_t>(0); }
bool known_equal(const SymInt& a, const SymInt& b) { return a == b; }

SymInt product(const SymShape& shape, size_t begin, size_t end) {
  SymInt result(1);
  for (size_t i = begin; i < std::min(end, shape.size()); ++i) result = result * shape[i];
  return result;
}

SymShape broadcast_shapes(const OpCall& call, const SymShape& a, const SymShape& b) {
  size_t rank = std::max(a.size(), b.size());
  SymShape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    size_t from_end = rank - 1 - i;
    SymInt size_a = from_end < a.size() ? a[a.size() - 1 - from_end] : SymInt(1);
    SymInt size_b = from_end < b.size() ? b[b.size() - 1 - from_end] : SymInt(1);
    if (size_a == size_b || is_one(size_b)) {
      result[i] = size_a;
    } else if (is_one(size_a)) {
      result[i] = size_b;
    } else {
      bool symbolic = !size_a.is_constant() || !size_b.is_constant();
      call.fail_unequal(size_a, size_b, "The size of tensor a (", size_a, ") must match the size of tensor b (", size_b,
                ") at non-singleton dimension ", i,
                symbolic ? " (symbolic sizes broadcast only when they are the same expression or one is 1)" : "");
    }
  }
  return result;
}

bool broadcasts_to(const SymShape& from, const SymShape& to) {
  if (from.size() > to.size()) return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (!(from[i] == to[offset + i]) && !is_one(from[i])) return false;
  return true;
}

DType scalar_dtype(const Argument& value) {
  if (value.is_bool()) return DType::boolean;
  if (value.is_float()) return kDefaultFloat;
  KILN_CHECK(value.is_int() || value.is_symint(), "scalar_dtype of ", value.to_string());
  return DType::i64;
}

PromotionOperand promotion_operand(const OpCall& call, size_t index) {
  if (call.is_tensor(index)) {
    const TensorMeta& meta = call.tensor(index);
    return PromotionOperand::tensor(meta.dtype, meta.rank());
  }
  return PromotionOperand::scalar(scalar_dtype(call.arg(index)));
}

std::string ints_string(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

std::string dtype_string(DType dtype) { return std::string(dtype_name(dtype)); }

void check_sizes_nonnegative(const OpCall& call, const SymShape& shape) {
  for (const SymInt& size : shape)
    if (size.is_constant() && size.constant() < 0)
      call.fail("Trying to create tensor with negative dimension ", size.constant(), ": ", shape_string(shape));
}

std::vector<int64_t> expand_param(const OpCall& call, const std::vector<int64_t>& values, size_t count,
                                  const char* what, const std::vector<int64_t>& fallback) {
  const std::vector<int64_t>& given = values.empty() && !fallback.empty() ? fallback : values;
  if (given.size() == 1) return std::vector<int64_t>(count, given[0]);
  if (given.size() != count)
    call.fail("expected ", what, " to have 1 or ", count, " values, one per spatial dimension, but got ",
              ints_string(given));
  return given;
}

}  // namespace kiln::ir
