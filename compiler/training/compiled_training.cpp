// CompiledTraining: the training pipeline per batch signature, and the step that runs it.
// See compiler/training/compiled_training.h.
#include "compiler/training/compiled_training.h"

#include <algorithm>
#include <set>
#include <utility>

#include "compiler/training_stages.h"
#include "frontends/module/trace_graph.h"
#include "kiln/trace.h"
#include "passes/partition.h"
#include "passes/pass_manager.h"
#include "kiln/error.h"
#include "runtime/log.h"

namespace kiln::training {

namespace {

// Placeholder names of the traced step: the module's inputs, then the loss's targets.
std::vector<std::string> placeholder_names(const std::string& prefix, size_t count) {
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

// "f32[16, 784] i64[16]": what decides whether a compiled program fits a batch.
std::string signature(const std::vector<Tensor>& tensors) {
  std::string text;
  for (const Tensor& tensor : tensors) {
    if (!tensor.defined()) fail("compile_training: a batch holds an undefined tensor");
    text += std::string(dtype_name(tensor.dtype())) + sizes_to_string(tensor.sizes()) + " ";
  }
  return text;
}

std::vector<ir::TensorMeta> example_types(const std::vector<Tensor>& tensors) {
  std::vector<ir::TensorMeta> types;
  for (const Tensor& tensor : tensors) types.push_back(example_meta(tensor));
  return types;
}

// Runs `body` with the module in `training` mode, restoring its mode afterwards.
template <typename Body>
auto in_mode(nn::Module& module, bool training, Body body) {
  const bool previous = module.is_training();
  module.train(training);
  struct Restore {
    nn::Module& module;
    bool mode;
    ~Restore() { module.train(mode); }
  } restore{module, previous};
  return body();
}

// The trainable parameters the graph reads, in the module's order.
std::vector<NamedTensor> parameters_read(const nn::Module& module, const ir::Graph& graph) {
  std::set<std::string> read;
  for (const ir::Node* node : graph.nodes())
    if (node->op() == ir::OpKind::get_attr) read.insert(node->target());
  std::vector<NamedTensor> parameters;
  for (auto& [name, value] : module.named_parameters())
    if (read.count(name)) parameters.push_back({name, value});
  return parameters;
}

// Compiles `graph` after pointing its trainable parameters at the arena's views.
compiler::CompiledModel compile_over_arena(ir::Graph& graph, const ParameterArena& arena,
                                      const CompileOptions& options) {
  for (const std::string& name : arena.names())
    if (graph.parameter(name)) graph.set_parameter(name, arena.parameter(name));
  return compiler::compile(graph, options);
}

}  // namespace

// One batch signature's compiled forward and backward.
struct CompiledTraining::StepProgram {
  // The forward returns the buffers it updates (BatchNorm's running statistics) as mutation
  // outputs of its graph signature, which its CompiledModel copies back into the module's buffers
  // (the graph shares their tensors) and leaves out of the outputs it returns.
  passes::Partition partition;
  std::unique_ptr<compiler::CompiledModel> forward;
  std::unique_ptr<compiler::CompiledModel> backward;
};

struct CompiledTraining::EvalProgram {
  std::unique_ptr<compiler::CompiledModel> model;
};

CompiledTraining::CompiledTraining(nn::Module& module, LossFunction loss, const TrainingOptions& options)
    : module_(&module), loss_(std::move(loss)), options_(options) {}
CompiledTraining::~CompiledTraining() = default;
CompiledTraining::CompiledTraining(CompiledTraining&&) noexcept = default;
CompiledTraining& CompiledTraining::operator=(CompiledTraining&&) noexcept = default;

// Trace (train mode) -> functional, decomposed, simplified -> joint graph of the loss against
// the trainable parameters -> simplified -> min-cut partition. Nothing is compiled here.
std::unique_ptr<CompiledTraining::StepProgram> CompiledTraining::build_program(const Batch& batch) const {
  if (batch.inputs.empty()) fail("compile_training: the batch has no inputs for the module");
  TraceOptions trace_options;
  trace_options.input_names = placeholder_names("input", batch.inputs.size());
  for (const std::string& name : placeholder_names("target", batch.targets.size()))
    trace_options.input_names.push_back(name);
  std::vector<ir::TensorMeta> types = example_types(batch.inputs);
  for (const ir::TensorMeta& type : example_types(batch.targets)) types.push_back(type);
  const size_t num_inputs = batch.inputs.size();
  nn::Module& module = *module_;
  const LossFunction& loss_fn = loss_;
  ir::Graph graph = in_mode(module, true, [&] {
    module.assign_paths();
    return trace_graph(
        [&](const std::vector<Var>& placeholders) {
          std::vector<Var> inputs(placeholders.begin(), placeholders.begin() + std::ptrdiff_t(num_inputs));
          std::vector<Var> targets(placeholders.begin() + std::ptrdiff_t(num_inputs), placeholders.end());
          Var loss = loss_fn(module(inputs), targets);
          if (!loss.defined()) fail("compile_training: the loss function returned an undefined Var");
          if (loss.dim() != 0 || !is_floating(loss.dtype()))
            fail("compile_training: the loss function returned ", loss.type_string(),
                 "; a loss must be a floating scalar (reduce it with mean() or sum())");
          return std::vector<Var>{loss};
        },
        types, trace_options);
  });
  passes::run_pipeline(graph, "simplified");

  auto program = std::make_unique<StepProgram>();
  for (const ir::OutputSpec& spec : graph.signature().outputs())
    KILN_CHECK(spec.kind != ir::OutputKind::user_input_mutation, "a traced step mutates only buffers, not its inputs");
  std::vector<std::string> wrt;
  if (arena_) {
    wrt = arena_->names();
  } else {
    for (const NamedTensor& parameter : parameters_read(module, graph)) wrt.push_back(parameter.name);
  }
  if (wrt.empty()) fail("compile_training: the loss reads none of ", module.describe(), "'s trainable parameters");
  // The traced loss is output 0; the pipeline finds nothing more to do on the simplified graph.
  const std::string loss_name = graph.output_names()[0];
  program->partition = passes::partition_joint_graph(compiler::training_joint_graph(graph, loss_name, wrt));
  return program;
}

CompiledTraining CompiledTraining::compile(nn::Module& module, LossFunction loss, const OptimizerOptions& optimizer,
                                           const Batch& example, const TrainingOptions& options) {
  CompiledTraining training(module, std::move(loss), options);
  std::unique_ptr<StepProgram> program = training.build_program(example);
  std::map<std::string, Tensor> module_parameters;
  for (auto& [name, value] : module.named_parameters()) module_parameters.emplace(name, value);
  std::vector<NamedTensor> parameters;
  for (const std::string& name : program->partition.wrt) parameters.push_back({name, module_parameters.at(name)});
  training.arena_ = std::make_unique<ParameterArena>(parameters);
  for (const NamedTensor& parameter : parameters)
    training.module_parameters_.emplace_back(parameter.value, training.arena_->parameter(parameter.name));
  FusedOptimizerOptions run{options.compile, options.num_threads};
  training.optimizer_ = std::make_unique<FusedOptimizer>(std::visit(
      [&](const auto& settings) {
        if constexpr (std::is_same_v<std::decay_t<decltype(settings)>, SgdOptions>) {
          return FusedOptimizer::sgd(*training.arena_, settings, run);
        } else {
          return FusedOptimizer::adam(*training.arena_, settings, run);
        }
      },
      optimizer));
  training.first_signature_ = signature(example.inputs) + "| " + signature(example.targets);
  training.programs_[training.first_signature_] = std::move(program);
  training.program_for(example);  // compiles the example's forward and backward
  return training;
}

CompiledTraining::StepProgram& CompiledTraining::program_for(const Batch& batch) {
  const std::string key = signature(batch.inputs) + "| " + signature(batch.targets);
  std::unique_ptr<StepProgram>& program = programs_[key];
  if (!program) {
    if (programs_.size() > 1)
      log("recompiles", "compile_training: a new batch signature " + key + " (the first was " + first_signature_ +
                            "): tracing and compiling its forward and backward");
    program = build_program(batch);
  }
  if (!program->forward) {
    program->forward = std::make_unique<compiler::CompiledModel>(
        compile_over_arena(program->partition.forward, *arena_, options_.compile));
    program->backward = std::make_unique<compiler::CompiledModel>(
        compile_over_arena(program->partition.backward, *arena_, options_.compile));
    model_compiles_ += 2;
  }
  return *program;
}

float CompiledTraining::accumulate(const Batch& batch, double grad_scale) {
  StepProgram& program = program_for(batch);
  const passes::Partition& partition = program.partition;
  std::map<std::string, Tensor> forward_inputs;
  std::vector<std::string> input_names = placeholder_names("input", batch.inputs.size());
  std::vector<std::string> target_names = placeholder_names("target", batch.targets.size());
  for (size_t i = 0; i < batch.inputs.size(); ++i) forward_inputs[input_names[i]] = batch.inputs[i];
  for (size_t i = 0; i < batch.targets.size(); ++i) forward_inputs[target_names[i]] = batch.targets[i];
  // The loss and the other forward outputs, then the saved values (the buffer updates are
  // copied back by the forward's CompiledModel and not returned).
  std::vector<Tensor> forward_outputs = program.forward->run(forward_inputs, options_.num_threads);

  std::map<std::string, Tensor> saved;
  const size_t first_saved = forward_outputs.size() - partition.saved.size();
  for (size_t i = 0; i < partition.saved.size(); ++i) saved[partition.saved[i].name] = forward_outputs[first_saved + i];
  std::vector<Tensor> gradients = program.backward->run(saved, options_.num_threads);
  KILN_CHECK(gradients.size() == partition.wrt.size(), "the backward returns one gradient per parameter");
  std::map<std::string, Tensor> by_name;
  for (size_t i = 0; i < gradients.size(); ++i) by_name[partition.wrt[i]] = gradients[i];
  arena_->accumulate_gradients(by_name, grad_scale);
  return float(forward_outputs.at(0).item());
}

void CompiledTraining::apply() {
  optimizer_->step();
  copy_parameters_to_module();
}

void CompiledTraining::zero_grad() { optimizer_->zero_grad(); }

float CompiledTraining::step(const Batch& batch) {
  zero_grad();
  float loss = accumulate(batch);
  apply();
  return loss;
}

void CompiledTraining::copy_parameters_to_module() const {
  for (const auto& [in_module, in_arena] : module_parameters_) in_module.copy_from(in_arena);
}

std::vector<Tensor> CompiledTraining::evaluate(const std::vector<Tensor>& inputs) {
  std::unique_ptr<EvalProgram>& program = eval_programs_[signature(inputs)];
  if (!program) {
    nn::Module& module = *module_;
    ir::Graph graph = in_mode(module, false, [&] { return trace_graph(module, inputs); });
    program = std::make_unique<EvalProgram>();
    program->model = std::make_unique<compiler::CompiledModel>(compile_over_arena(graph, *arena_, options_.compile));
    ++model_compiles_;
  }
  std::map<std::string, Tensor> named;
  std::vector<std::string> names = inputs.size() == 1 ? std::vector<std::string>{"x"} : placeholder_names("x", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) named[names[i]] = inputs[i];
  return program->model->run(named, options_.num_threads);
}

size_t CompiledTraining::compile_count() const { return model_compiles_ + optimizer_->compile_count(); }

const passes::Partition& CompiledTraining::partition() const { return programs_.at(first_signature_)->partition; }

}  // namespace kiln::training
