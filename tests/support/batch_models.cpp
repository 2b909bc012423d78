// Small models for the batch split's tests. See batch_models.h.
#include "tests/support/batch_models.h"

#include <map>
#include <string>

#include "ir/parser.h"
#include "tests/support/differential.h"

namespace kiln::test_support {

ir::Graph sequence_first_attention() {
  std::map<std::string, Tensor, std::less<>> parameters = {{"w", random_tensor({8, 8}, DType::f32, 8)}};
  return ir::parse_graph(
      "graph():\n"
      "    %x : f32[5, 4, 8] = placeholder[target=x]\n"
      "    %w : f32[8, 8] = get_attr[target=w]\n"
      "    %heads = call_function[target=reshape](args = (%x, [5, 8, 4]), kwargs = {})\n"
      "    %q = call_function[target=transpose](args = (%heads, 0, 1), kwargs = {})\n"
      "    %kt = call_function[target=permute](args = (%heads, [1, 2, 0]), kwargs = {})\n"
      "    %scores = call_function[target=bmm](args = (%q, %kt), kwargs = {})\n"
      "    %max = call_function[target=amax](args = (%scores, [2], True), kwargs = {})\n"
      "    %shifted = call_function[target=sub](args = (%scores, %max), kwargs = {})\n"
      "    %e = call_function[target=exp](args = (%shifted,), kwargs = {})\n"
      "    %total = call_function[target=sum](args = (%e, [2], True), kwargs = {})\n"
      "    %p = call_function[target=div](args = (%e, %total), kwargs = {})\n"
      "    %mixed = call_function[target=bmm](args = (%p, %q), kwargs = {})\n"
      "    %back = call_function[target=transpose](args = (%mixed, 0, 1), kwargs = {})\n"
      "    %rows = call_function[target=reshape](args = (%back, [20, 8]), kwargs = {})\n"
      "    %projected = call_function[target=matmul](args = (%rows, %w), kwargs = {})\n"
      "    %y = call_function[target=reshape](args = (%projected, [5, 4, 8]), kwargs = {})\n"
      "    %out = call_function[target=add](args = (%y, %x), kwargs = {})\n"
      "    return (out, projected)\n",
      "sequence_first.kiln", parameters);
}

}  // namespace kiln::test_support
