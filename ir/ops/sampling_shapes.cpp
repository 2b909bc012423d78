// Shape/dtype rules of the sampling ops: grid_sample (input [N, C, D1..Dr] sampled at a grid
// [N, O1..Or, r] of normalized coordinates, as torch.nn.functional.grid_sample and ONNX's
// GridSample) and roi_align (input [N, C, H, W], boxes [R, 4] and their batch indices [R],
// as torchvision.ops.roi_align and ONNX's RoiAlign), and deform_conv2d (torchvision's, ONNX's
// DeformConv in 2-d).
#include "ir/ops/shape_helpers.h"
#include "ir/ops/shape_rules.h"

namespace kiln::ir {

namespace {

void require_one_of(const OpCall& call, const std::string& value, std::initializer_list<const char*> allowed,
                    const char* what) {
  std::string listed;
  for (const char* name : allowed) {
    if (value == name) return;
    listed += (listed.empty() ? "" : ", ") + std::string(name);
  }
  call.fail(what, " '", value, "' is not one of ", listed);
}

NodeMeta grid_sample_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  const TensorMeta& grid = call.tensor(1);
  if (!is_floating(input.dtype) || !is_floating(grid.dtype))
    call.fail("grid_sample expects floating-point input and grid, but got ", dtype_name(input.dtype), " and ",
              dtype_name(grid.dtype));
  int64_t spatial = input.rank() - 2;
  if (spatial < 1 || spatial > 3) call.fail("grid_sample expects an input of rank 3 to 5, but got ", input.type_string());
  if (grid.rank() != input.rank())
    call.fail("grid_sample expects a grid of the input's rank ", input.rank(), ", but got ", grid.type_string());
  if (!known_equal(grid.shape[0], input.shape[0]))
    call.fail("grid_sample: the grid's batch size ", grid.shape[0], " is not the input's ", input.shape[0]);
  if (!known_equal(grid.shape.back(), SymInt(spatial)))
    call.fail("grid_sample: the grid's last dim must be ", spatial, " (one coordinate per spatial dim), but it is ",
              grid.shape.back());
  require_one_of(call, call.string_arg(2), {"bilinear", "nearest", "bicubic"}, "mode");
  require_one_of(call, call.string_arg(3), {"zeros", "border", "reflection"}, "padding_mode");
  SymShape shape = {input.shape[0], input.shape[1]};
  shape.insert(shape.end(), grid.shape.begin() + 1, grid.shape.end() - 1);
  return single(TensorMeta::contiguous(input.dtype, std::move(shape), input.device));
}

NodeMeta roi_align_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  const TensorMeta& rois = call.tensor(1);
  const TensorMeta& batch_indices = call.tensor(2);
  if (!is_floating(input.dtype)) call.fail("roi_align expects a floating-point input, but got ", dtype_name(input.dtype));
  if (input.rank() != 4) call.fail("roi_align expects an input [N, C, H, W], but got ", input.type_string());
  if (rois.rank() != 2 || !known_equal(rois.shape[1], SymInt(4)) || rois.dtype != input.dtype)
    call.fail("roi_align expects rois [R, 4] of the input's dtype, but got ", rois.type_string());
  if (batch_indices.rank() != 1 || !is_integral(batch_indices.dtype) || !known_equal(batch_indices.shape[0], rois.shape[0]))
    call.fail("roi_align expects integer batch_indices [", rois.shape[0], "], but got ", batch_indices.type_string());
  int64_t height = call.int_arg(3), width = call.int_arg(4);
  if (height < 1 || width < 1) call.fail("roi_align: the output size ", height, "x", width, " must be positive");
  if (call.int_arg(5) < 0) call.fail("roi_align: sampling_ratio ", call.int_arg(5), " must be 0 (adaptive) or positive");
  require_one_of(call, call.string_arg(7), {"avg", "max"}, "mode");
  return single(TensorMeta::contiguous(input.dtype, {rois.shape[0], input.shape[1], SymInt(height), SymInt(width)},
                                       input.device));
}

// deform_conv2d: input [N, C, H, W], weight [OC, C / groups, KH, KW], offset [N, 2 * offset_groups
// * KH * KW, OH, OW] (the output's size), mask [N, offset_groups * KH * KW, OH, OW].
NodeMeta deform_conv2d_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  const TensorMeta& weight = call.tensor(1);
  const TensorMeta& offset = call.tensor(2);
  if (!is_floating(input.dtype) || weight.dtype != input.dtype || offset.dtype != input.dtype)
    call.fail("deform_conv2d expects floating input, weight and offset of one dtype");
  if (input.rank() != 4 || weight.rank() != 4 || offset.rank() != 4)
    call.fail("deform_conv2d expects 4-d input, weight and offset, but got ", input.type_string(), ", ",
              weight.type_string(), " and ", offset.type_string());
  int64_t groups = call.int_arg(8), offset_groups = call.int_arg(9);
  if (groups < 1 || offset_groups < 1) call.fail("groups and offset_groups must be positive");
  std::optional<Sizes> w = weight.static_shape();
  if (!w) call.fail("deform_conv2d needs a weight of static shape");
  if (!known_equal(input.shape[1], SymInt((*w)[1] * groups)) || (*w)[0] % groups != 0)
    call.fail("deform_conv2d: input channels ", input.shape[1], " do not match weight ", weight.type_string(), " and groups ", groups);
  if (!known_equal(offset.shape[0], input.shape[0]) || !known_equal(offset.shape[1], SymInt(2 * offset_groups * (*w)[2] * (*w)[3])))
    call.fail("deform_conv2d: offset must be [N, 2 * offset_groups * KH * KW, OH, OW], but it is ", offset.type_string());
  if (!call.is_none(3)) {
    const TensorMeta& mask = call.tensor(3);
    if (mask.rank() != 4 || !known_equal(mask.shape[1], SymInt(offset_groups * (*w)[2] * (*w)[3])))
      call.fail("deform_conv2d: mask must be [N, offset_groups * KH * KW, OH, OW], but it is ", mask.type_string());
  }
  for (size_t index : {5, 6, 7})
    if (call.ints(index).size() != 2) call.fail("deform_conv2d: stride, padding and dilation need two values each");
  return single(TensorMeta::contiguous(input.dtype, {input.shape[0], SymInt((*w)[0]), offset.shape[2], offset.shape[3]}, input.device));
}

}  // namespace

void attach_sampling_shape_rules(ShapeRuleTable& rules) {
  rules["deform_conv2d"] = deform_conv2d_rule;
  rules["grid_sample"] = grid_sample_rule;
  rules["roi_align"] = roi_align_rule;
}

}  // namespace kiln::ir
