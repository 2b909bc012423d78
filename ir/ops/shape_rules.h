// The shape/dtype rules of every declared op, grouped by op family (one .cpp per family in
// ir/ops/). Each attach_* function adds its family's rules to the table by op name; the
// registry (ir/op_registry.cpp) attaches them to the declarations of ir/op_schemas.cpp and
// refuses to build when a declared op has no rule or a rule names no declared op.
// In-place variants ("add_") get their rule from the out-of-place op's rule (the registry
// wraps it); only the mutation ops declared on their own (copy_, fill_, index_put_) have rules
// here.
#pragma once

#include <map>
#include <string>

#include "ir/op_registry.h"

namespace kiln::ir {

using ShapeRuleTable = std::map<std::string, ShapeRule, std::less<>>;

void attach_elementwise_shape_rules(ShapeRuleTable& rules);  // unary, binary, where, cast
void attach_creation_shape_rules(ShapeRuleTable& rules);     // full, arange, rand, ...
void attach_reduction_shape_rules(ShapeRuleTable& rules);    // sum, amax, var_mean, cumsum, topk, ...
void attach_view_shape_rules(ShapeRuleTable& rules);         // reshape, permute, slice, ...
void attach_copy_shape_rules(ShapeRuleTable& rules);         // cat, pad, gather, index_put, copy_, ...
void attach_linalg_shape_rules(ShapeRuleTable& rules);       // matmul, bmm, det
void attach_conv_pool_shape_rules(ShapeRuleTable& rules);    // convolution, pooling
void attach_sampling_shape_rules(ShapeRuleTable& rules);     // grid_sample, roi_align
void attach_composite_shape_rules(ShapeRuleTable& rules);    // linear, softmax, norms, losses, ...

}  // namespace kiln::ir
