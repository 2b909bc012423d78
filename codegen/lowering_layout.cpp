// The Lowerer's channels-last layout (codegen/lowering_context.h): 3-d, 4-d and 5-d values
// [N, C, L], [N, C, H, W] and [N, C, D, H, W] stored as [N, L, C], [N, H, W, C] and
// [N, D, H, W, C], the layout a convolution
// library reads and writes (codegen/lowering_convolution.cpp). A channels-last value's accessor
// reads its buffer with the permuted index, so every consumer sees the graph's channels-first
// value; pointwise nodes and pooling windows whose inputs are channels-last iterate [N, H, W, C]
// and store channels-last too (Lowerer::define_pointwise, lowering_pooling.cpp), so that the
// layout flows from one convolution to the next without transposes.
#include "codegen/lowering_context.h"
#include "kiln/error.h"

namespace kiln::codegen::lowering {

namespace {

bool has_channels_last_rank(const SymShape& shape) { return shape.size() >= 3 && shape.size() <= 5; }

// The index of point (x0, x1, x2, ...) = (n, c, h, ...) of a [N, C, H, ...] value in its
// channels-last buffer [N, H, ..., C]. A dim of size 1 contributes nothing (its variable is
// always 0; broadcast_index reads such dims at 0 too).
SymInt channels_last_index(const SymShape& logical) {
  auto var = [&](size_t d) { return logical[d] == SymInt(1) ? SymInt(0) : loop_var(d); };
  SymInt index = var(0);
  for (size_t d = 2; d < logical.size(); ++d) index = index * logical[d] + var(d);
  return index * logical[1] + var(1);
}

}  // namespace

SymShape Lowerer::channels_last_shape(const SymShape& logical) {
  KILN_CHECK(has_channels_last_rank(logical), "channels-last: a value of rank ", logical.size());
  SymShape physical = {logical[0]};
  physical.insert(physical.end(), logical.begin() + 2, logical.end());
  physical.push_back(logical[1]);
  return physical;
}

Accessor Lowerer::channels_last(int buffer, const SymShape& logical) {
  KILN_CHECK(has_channels_last_rank(logical), "channels-last: a value of rank ", logical.size());
  channels_last_buffers_.insert(buffer);
  Accessor accessor;
  accessor.buffer = buffer;
  accessor.dtype = program_.buffer(buffer).dtype;
  accessor.shape = logical;
  accessor.index = channels_last_index(logical);
  return accessor;
}

bool Lowerer::is_channels_last(const Accessor& value) const {
  return value.buffer >= 0 && has_channels_last_rank(value.shape) && channels_last_buffers_.count(value.buffer) &&
         value.index == channels_last_index(value.shape);
}

int Lowerer::channels_last_buffer(const Accessor& value, const std::string& name) {
  if (is_channels_last(value)) return value.buffer;
  // A buffer read at the very index the channels-last layout gives (one channel, as a grayscale
  // image or a spectrogram, or a 1x1 image) already is that layout: no copy.
  if (value.buffer >= 0 && value.index == channels_last_index(value.shape)) {
    channels_last_buffers_.insert(value.buffer);
    return value.buffer;
  }
  SymShape physical = channels_last_shape(value.shape);
  // Point (y0, y1, ..., yr) = (n, h, ..., c) of the copy reads (n, c, h, ...) of the value.
  std::vector<SymInt> index = {loop_var(0), loop_var(value.shape.size() - 1)};
  for (size_t d = 1; d + 1 < value.shape.size(); ++d) index.push_back(loop_var(d));
  Expr body = load(value, index);
  int buffer = emit_pointwise(name, value.dtype, physical, body);
  channels_last_buffers_.insert(buffer);
  return buffer;
}

bool Lowerer::reads_channels_last(const Expr& body, const SymShape& shape) const {
  if (!has_channels_last_rank(shape) || channels_last_buffers_.empty()) return false;
  SymInt own_point = channels_last_index(shape);
  bool found = false;
  visit(body, [&](const ExprNode& node) {
    if (found || node.kind != ExprKind::Load || !node.indirect.empty()) return;
    if (channels_last_buffers_.count(node.buffer) && node.index == own_point) found = true;
  });
  return found;
}

Expr Lowerer::to_channels_last_vars(const Expr& expr, size_t rank) {
  // One simultaneous substitution: the old variables on the left, the new ones on the right.
  std::map<std::string, SymInt> renamed = {{"x1", loop_var(rank - 1)}};
  for (size_t d = 2; d < rank; ++d) renamed.emplace("x" + std::to_string(d), loop_var(d - 1));
  return substitute(expr, renamed);
}

}  // namespace kiln::codegen::lowering
