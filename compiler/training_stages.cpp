// The training stages: choose the loss output, run the pipeline, differentiate, simplify.
#include "compiler/training_stages.h"

#include <vector>

#include "passes/autodiff.h"
#include "passes/pass_manager.h"
#include "kiln/error.h"

namespace kiln::compiler {

namespace {
bool is_floating_scalar(const ir::Node& node) {
  return node.has_single_value() && node.value().rank() == 0 && is_floating(node.value().dtype);
}

// "probs f32[s0, 10], loss f32[]"
std::string describe_outputs(const ir::Graph& model) {
  std::vector<ir::Node*> outputs = model.outputs();
  std::vector<std::string> names = model.output_names();
  std::string text;
  for (size_t i = 0; i < outputs.size(); ++i)
    text += (i ? ", " : "") + names[i] + " " + outputs[i]->meta.type_string();
  return text;
}
}  // namespace

bool is_training_stage(std::string_view stage) { return stage == "joint" || stage == "forward" || stage == "backward"; }

int64_t find_loss_output(const ir::Graph& model, const std::string& loss) {
  std::vector<ir::Node*> outputs = model.outputs();
  std::vector<std::string> names = model.output_names();
  if (!loss.empty()) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != loss) continue;
      if (!is_floating_scalar(*outputs[i]))
        fail("--loss ", loss, ": output '", loss, "' is ", outputs[i]->meta.type_string(),
             ", not a floating scalar (a loss must be one value)");
      return int64_t(i);
    }
    fail("--loss ", loss, ": the model has no output named '", loss, "' (outputs: ", describe_outputs(model), ")");
  }
  std::vector<int64_t> scalars;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (is_floating_scalar(*outputs[i])) scalars.push_back(int64_t(i));
  if (scalars.size() == 1) return scalars[0];
  fail(scalars.empty() ? "the model has no floating scalar output to differentiate"
                       : "the model has several floating scalar outputs",
       " (outputs: ", describe_outputs(model), "): name the loss with --loss NAME");
}

passes::JointGraph training_joint_graph(const ir::Graph& model, const std::string& loss,
                                        const std::vector<std::string>& wrt) {
  int64_t loss_output = find_loss_output(model, loss);
  ir::Graph graph = model.clone();
  passes::run_pipeline(graph, "simplified");
  passes::JointGraph joint = passes::build_joint_graph(graph, passes::AutodiffOptions::for_loss(loss_output, wrt));
  passes::run_passes(joint.graph, {"simplify"});
  return joint;
}

passes::Partition partition_training_graph(const passes::JointGraph& joint) { return passes::partition_joint_graph(joint); }

}  // namespace kiln::compiler
