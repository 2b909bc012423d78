// A compiled, loaded model run on tensors by name. See compiler/compiled_model.h.
#include "compiler/compiled_model.h"

#include "compiler/backend_common.h"
#include "ir/interpreter.h"
#include "kiln/error.h"

namespace kiln::compiler {

CompiledModel::CompiledModel(ir::Graph graph, std::unique_ptr<Artifact> artifact, CompileResult result)
    : graph_(std::move(graph)), placeholders_(graph_.placeholders()), artifact_(std::move(artifact)),
      result_(std::move(result)) {
  for (const ArtifactParameter& parameter : artifact_->parameters()) {
    auto it = graph_.parameters().find(parameter.name);
    if (it == graph_.parameters().end()) fail("the model has no parameter '", parameter.name, "'");
    Tensor value = it->second.contiguous();
    if (value.dtype() != parameter.dtype || value.sizes() != parameter.shape) {
      fail("parameter '", parameter.name, "' is ", dtype_name(value.dtype()), " with another shape than the compiled model's");
    }
    parameters_.push_back(value);
  }
  const std::vector<ArtifactParameter>& parameters = artifact_->parameters();
  for (const auto& [output, spec] : graph_.signature().mutations()) {
    WriteBack write_back;
    write_back.output = output;
    if (spec.kind == ir::OutputKind::user_input_mutation) {
      write_back.input = spec.target;
    } else {
      write_back.target = spec.target;
      for (size_t i = 0; i < parameters.size(); ++i)
        if (parameters[i].name == spec.target) write_back.parameter = int(i);
    }
    write_backs_.push_back(std::move(write_back));
  }
}

CompiledModel::~CompiledModel() = default;
CompiledModel::CompiledModel(CompiledModel&&) noexcept = default;
CompiledModel& CompiledModel::operator=(CompiledModel&&) noexcept = default;

std::vector<Tensor> CompiledModel::run(const std::map<std::string, Tensor>& inputs, int num_threads) {
  std::map<std::string, int64_t> bindings = ir::bind_symbols(graph_, placeholders_, inputs);
  std::vector<Tensor> ordered;
  for (const ArtifactTensor& input : artifact_->inputs()) {
    auto it = inputs.find(input.name);
    if (it == inputs.end()) fail("missing input '", input.name, "'");
    ordered.push_back(it->second.contiguous());
  }
  FallbackHandler fallback = [&](int index, const std::vector<Tensor>& args, std::vector<Tensor>& outputs) {
    const std::string& name = artifact_->fallbacks().at(size_t(index));
    std::vector<Tensor> results = run_fallback_node(graph_, name, args, bindings);
    KILN_CHECK(results.size() == outputs.size(), "fallback " + name + ": result count");
    for (size_t i = 0; i < results.size(); ++i) outputs[i].copy_from(results[i]);
  };
  std::vector<Tensor> outputs = artifact_->run(ordered, parameters_, fallback, num_threads);
  if (!write_backs_.empty()) write_back_mutations(inputs, outputs);
  return outputs;
}

void CompiledModel::write_back_mutations(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>& outputs) {
  write_back_mutation_outputs(graph_, inputs, outputs);
  for (const WriteBack& write_back : write_backs_) {
    if (write_back.parameter < 0) continue;
    // The same tensor unless it is strided.
    parameters_[size_t(write_back.parameter)] = graph_.parameters().at(write_back.target).contiguous();
    artifact_->parameter_changed(size_t(write_back.parameter));
  }
}

void write_back_mutation_outputs(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                                 std::vector<Tensor>& outputs) {
  std::vector<std::pair<size_t, ir::OutputSpec>> mutations = graph.signature().mutations();
  if (mutations.empty()) return;
  std::vector<bool> written(outputs.size(), false);
  for (const auto& [output, spec] : mutations) {
    const Tensor& value = outputs.at(output);
    if (spec.kind == ir::OutputKind::user_input_mutation) inputs.at(spec.target).copy_from(value);
    else graph.parameters().at(spec.target).copy_from(value);
    written[output] = true;
  }
  std::vector<Tensor> returned;
  returned.reserve(outputs.size() - mutations.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!written[i]) returned.push_back(std::move(outputs[i]));
  outputs = std::move(returned);
}

}  // namespace kiln::compiler
