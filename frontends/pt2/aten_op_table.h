// The table of ATen operators (and Python operators on sizes) that the .pt2 importer converts:
// one row per overload, keyed as torch.export writes targets without the "torch.ops." prefix
// ("aten.conv2d.default", "aten.add_.Tensor", "_operator.mul"). Each aten_ops_*.cpp file holds
// the converters of one op family and registers them, explicitly, from the table's
// construction (a static library cannot drop them).
//
// A converter reads its node through AtenNodeContext and sets every output the exported node
// names. In-place ATen ops arrive as Kiln's in-place ops (add_, relu_, copy_, ...; or the
// functional op followed by copy_ into self), and ATen views as Kiln views, so that Kiln's own
// functionalization (passes/functionalize) removes the mutations. What a converter cannot
// convert (an argument value, a data-dependent shape) is a kiln::Error naming the node.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/pt2/aten_node_context.h"

namespace kiln::frontends {

using AtenConverter = std::function<void(AtenNodeContext& context)>;

class AtenOpTable {
 public:
  static const AtenOpTable& global();

  // nullptr when the target is not in the table (`target` with or without "torch.ops.").
  const AtenConverter* find(std::string_view target) const;
  std::vector<std::string> targets() const;  // sorted

  void add(const std::string& target, AtenConverter converter);

 private:
  std::map<std::string, AtenConverter, std::less<>> converters_;
};

// The op families, one file each.
void register_aten_elementwise_ops(AtenOpTable& table);    // aten_ops_elementwise.cpp
void register_aten_math_ops(AtenOpTable& table);           // aten_ops_math.cpp
void register_aten_composite_ops(AtenOpTable& table);      // aten_ops_composite.cpp
void register_aten_backward_ops(AtenOpTable& table);       // aten_ops_backward.cpp
void register_aten_activation_ops(AtenOpTable& table);     // aten_ops_activation.cpp
void register_aten_reduction_ops(AtenOpTable& table);      // aten_ops_reduction.cpp
void register_aten_view_ops(AtenOpTable& table);           // aten_ops_view.cpp
void register_aten_tensor_ops(AtenOpTable& table);         // aten_ops_tensor.cpp
void register_aten_indexing_ops(AtenOpTable& table);       // aten_ops_indexing.cpp
void register_aten_creation_ops(AtenOpTable& table);       // aten_ops_creation.cpp
void register_aten_linalg_ops(AtenOpTable& table);         // aten_ops_linalg.cpp
void register_aten_conv_pool_ops(AtenOpTable& table);      // aten_ops_conv_pool.cpp
void register_aten_normalization_ops(AtenOpTable& table);  // aten_ops_normalization.cpp
void register_aten_attention_loss_ops(AtenOpTable& table);  // aten_ops_attention_loss.cpp
void register_aten_symbolic_ops(AtenOpTable& table);       // aten_ops_symbolic.cpp
void register_aten_recurrent_ops(AtenOpTable& table);      // aten_ops_recurrent.cpp

}  // namespace kiln::frontends
