// Backward stages at gradient bucket boundaries. See compiler/distributed/backward_stages.h.
#include "compiler/distributed/backward_stages.h"

#include <algorithm>
#include <map>

#include "kiln/error.h"

namespace kiln::compiler {

BackwardStages stage_backward(const ir::Graph& backward, const std::vector<std::string>& wrt,
                              const std::vector<GradientBucket>& buckets) {
  const std::vector<ir::Node*> outputs = backward.outputs();
  KILN_CHECK(outputs.size() == wrt.size(), "the backward returns one gradient per parameter");
  std::map<const ir::Node*, size_t> position;
  for (const ir::Node* node : backward.nodes()) position.emplace(node, position.size());
  std::map<std::string, size_t> output_of;
  for (size_t i = 0; i < wrt.size(); ++i) output_of.emplace(wrt[i], i);

  // Each bucket's last gradient in node order; those computed by call_function nodes end stages.
  std::vector<const ir::Node*> ends;
  for (const GradientBucket& bucket : buckets) {
    const ir::Node* last = nullptr;
    for (const std::string& name : bucket.parameters) {
      const ir::Node* node = outputs.at(output_of.at(name));
      if (last == nullptr || position.at(node) > position.at(last)) last = node;
    }
    if (last != nullptr && last->op() == ir::OpKind::call_function) ends.push_back(last);
  }
  std::sort(ends.begin(), ends.end(), [&](const ir::Node* a, const ir::Node* b) { return position.at(a) < position.at(b); });
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());

  BackwardStages result;
  result.staged = split_in_stages(backward, ends);
  const size_t count = result.staged.stages.size();
  result.buckets_done.resize(count);
  result.gradients.resize(count);
  for (size_t i = 0; i < wrt.size(); ++i)
    result.gradients[result.staged.output_stage[i]].emplace_back(wrt[i], outputs[i]->name());
  for (size_t b = 0; b < buckets.size(); ++b) {
    size_t done = 0;
    for (const std::string& name : buckets[b].parameters)
      done = std::max(done, result.staged.output_stage.at(output_of.at(name)));
    result.buckets_done[done].push_back(b);
  }
  return result;
}

}  // namespace kiln::compiler
