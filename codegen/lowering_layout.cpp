// The Lowerer's channels-last layout (codegen/lowering_context.h): 4-d values [N, C, H, W]
// stored as [N, H, W, C], the layout a convolution library reads and writes
// (codegen/lowering_convolution.cpp). A channels-last value's accessor reads its buffer with
// the permuted index, so every consumer sees the graph's NCHW value; pointwise nodes and
// pooling windows whose inputs are channels-last iterate [N, H, W, C] and store channels-last
// too (Lowerer::define_pointwise, lowering_pooling.cpp), so that the layout flows from one
// convolution to the next without transposes.
#include "codegen/lowering_context.h"
#include "kiln/error.h"

namespace kiln::codegen::lowering {

namespace {

// The index of point (x0, x1, x2, x3) = (n, c, h, w) of a [N, C, H, W] value in its
// channels-last buffer [N, H, W, C]. A dim of size 1 contributes nothing (its variable is
// always 0; broadcast_index reads such dims at 0 too).
SymInt channels_last_index(const SymShape& logical) {
  const SymInt &channels = logical[1], &height = logical[2], &width = logical[3];
  auto var = [&](size_t d) { return logical[d] == SymInt(1) ? SymInt(0) : loop_var(d); };
  return ((var(0) * height + var(2)) * width + var(3)) * channels + var(1);
}

}  // namespace

SymShape Lowerer::channels_last_shape(const SymShape& logical) {
  KILN_CHECK(logical.size() == 4, "channels-last: a value of rank ", logical.size());
  return {logical[0], logical[2], logical[3], logical[1]};
}

Accessor Lowerer::channels_last(int buffer, const SymShape& logical) {
  KILN_CHECK(logical.size() == 4, "channels-last: a value of rank ", logical.size());
  channels_last_buffers_.insert(buffer);
  Accessor accessor;
  accessor.buffer = buffer;
  accessor.dtype = program_.buffer(buffer).dtype;
  accessor.shape = logical;
  accessor.index = channels_last_index(logical);
  return accessor;
}

bool Lowerer::is_channels_last(const Accessor& value) const {
  return value.buffer >= 0 && value.shape.size() == 4 && channels_last_buffers_.count(value.buffer) &&
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
  // Point (y0, y1, y2, y3) = (n, h, w, c) of the copy reads (n, c, h, w) of the value.
  Expr body = load(value, {loop_var(0), loop_var(3), loop_var(1), loop_var(2)});
  int buffer = emit_pointwise(name, value.dtype, physical, body);
  channels_last_buffers_.insert(buffer);
  return buffer;
}

bool Lowerer::reads_channels_last(const Expr& body, const SymShape& shape) const {
  if (shape.size() != 4 || channels_last_buffers_.empty()) return false;
  SymInt own_point = channels_last_index(shape);
  bool found = false;
  visit(body, [&](const ExprNode& node) {
    if (found || node.kind != ExprKind::Load || !node.indirect.empty()) return;
    if (channels_last_buffers_.count(node.buffer) && node.index == own_point) found = true;
  });
  return found;
}

Expr Lowerer::to_channels_last_vars(const Expr& expr) {
  // One simultaneous substitution: the old variables on the left, the new ones on the right.
  return substitute(expr, {{"x1", loop_var(3)}, {"x2", loop_var(1)}, {"x3", loop_var(2)}});
}

}  // namespace kiln::codegen::lowering
