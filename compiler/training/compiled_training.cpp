// CompiledTraining: the training pipeline per step variant (guarded, dynamic dims), and the step that runs it.
// See compiler/training/compiled_training.h.
#include "compiler/training/compiled_training.h"

#include <algorithm>
#include <sched.h>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>
#include <utility>

#include "compiler/distributed/backward_stages.h"
#include "compiler/subgraphs.h"
#include "compiler/target_registry.h"
#include "compiler/training_stages.h"
#include "frontends/module/trace_graph.h"
#include "ir/printer.h"
#include "kiln/trace.h"
#include "passes/partition.h"
#include "passes/pass_manager.h"
#include "kiln/error.h"
#include "runtime/log.h"
#include "runtime/vm/virtual_machine.h"

namespace kiln::training {

namespace {

// Placeholder names of the traced step: the module's inputs, then the loss's targets.
std::vector<std::string> placeholder_names(const std::string& prefix, size_t count) {
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

// "f32[16, 784] i64[16]": a batch's tensors, for messages.
std::string signature(const std::vector<Tensor>& tensors) {
  std::string text;
  for (const Tensor& tensor : tensors) {
    if (!text.empty()) text += " ";
    text += std::string(dtype_name(tensor.dtype())) + sizes_to_string(tensor.sizes());
  }
  return text;
}

// The batch's inputs then its targets: the step's placeholders.
std::vector<Tensor> batch_tensors(const Batch& batch) {
  std::vector<Tensor> tensors = batch.inputs;
  tensors.insert(tensors.end(), batch.targets.begin(), batch.targets.end());
  for (const Tensor& tensor : tensors)
    if (!tensor.defined()) fail("compile_training: a batch holds an undefined tensor");
  return tensors;
}

std::vector<std::string> eval_names(size_t count) {
  return count == 1 ? std::vector<std::string>{"x"} : placeholder_names("x", count);
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

// Compiles `graph` for options.target (or readies it for the interpreter) after pointing its
// trainable parameters at the arena's views.
std::unique_ptr<compiler::Executable> compile_over_arena(ir::Graph& graph, const ParameterArena& arena,
                                                         const CompileOptions& options) {
  for (const std::string& name : arena.names())
    if (graph.parameter(name)) graph.set_parameter(name, arena.parameter(name));
  // A training step's graphs keep their batch whole: the step already overlaps its stages on
  // threads of its own (and a batch split was measured on inference only).
  CompileOptions whole = options;
  whole.batch_chunks = 1;
  return compiler::prepare(graph, whole);
}

}  // namespace

// One step variant's compiled (or interpreted) forward and backward.
struct CompiledTraining::StepProgram {
  // The forward returns the buffers it updates (BatchNorm's running statistics) as mutation
  // outputs of its graph signature, which its CompiledModel copies back into the module's buffers
  // (the graph shares their tensors) and leaves out of the outputs it returns; interpreted (past
  // the recompile limit), the step does that itself.
  passes::Partition partition;
  std::unique_ptr<compiler::Executable> forward;
  std::unique_ptr<compiler::Executable> backward;
  bool interpreted = false;
  CompileOptions options;  // what forward and backward were compiled with
  // Data-parallel step(): the backward in stages that end where gradient buckets are complete,
  // each compiled (made at the first step(); none when the buckets leave one stage).
  std::optional<compiler::BackwardStages> stages;
  std::vector<std::unique_ptr<compiler::Executable>> stage_programs;
  bool logged_averaging = false;  // KILN_LOG=distributed said that this variant averages after its backward
};

struct CompiledTraining::EvalProgram {
  std::unique_ptr<compiler::Executable> model;
};

CompiledTraining::CompiledTraining(nn::Module& module, LossFunction loss, const TrainingOptions& options)
    : module_(&module), loss_(std::move(loss)), options_(options) {}
CompiledTraining::~CompiledTraining() = default;
CompiledTraining::CompiledTraining(CompiledTraining&&) noexcept = default;
CompiledTraining& CompiledTraining::operator=(CompiledTraining&&) noexcept = default;

// Trace (train mode) on placeholders of these types (the module's inputs, then the loss's
// targets) -> functional, decomposed, simplified -> joint graph of the loss against the
// trainable parameters -> simplified -> min-cut partition. Nothing is compiled here.
std::unique_ptr<CompiledTraining::StepProgram> CompiledTraining::build_program(const std::vector<ir::TensorMeta>& types,
                                                                               size_t num_inputs) const {
  if (num_inputs == 0) fail("compile_training: the batch has no inputs for the module");
  TraceOptions trace_options;
  trace_options.input_names = steps_.names;
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

void CompiledTraining::compile_step(StepProgram& program, const CompileOptions& options) {
  program.options = options;
  program.forward = compile_over_arena(program.partition.forward, *arena_, options);
  program.backward = compile_over_arena(program.partition.backward, *arena_, options);
  program.interpreted = options.target == "interp";
  if (!program.interpreted) model_compiles_ += 2;
}

CompiledTraining CompiledTraining::compile(nn::Module& module, LossFunction loss, const OptimizerOptions& optimizer,
                                           const Batch& example, const TrainingOptions& options) {
  if (options.recompile_limit < 1)
    fail("compile_training: recompile_limit is ", options.recompile_limit, "; it must be at least 1");
  if (options.data_parallel && options.gradient_bucket_bytes <= 0)
    fail("compile_training: gradient_bucket_bytes is ", options.gradient_bucket_bytes, "; it must be positive");
  CompiledTraining training(module, std::move(loss), options);
  training.batch_inputs_ = example.inputs.size();
  training.batch_targets_ = example.targets.size();
  training.steps_.names = placeholder_names("input", example.inputs.size());
  for (const std::string& name : placeholder_names("target", example.targets.size()))
    training.steps_.names.push_back(name);
  // The first variant is traced before the arena exists: the parameters its loss reads make the
  // arena, and the optimizer is built over it; then it compiles.
  StepProgram& first = training.program_for(example);
  std::map<std::string, Tensor> module_parameters;
  for (auto& [name, value] : module.named_parameters()) module_parameters.emplace(name, value);
  std::vector<NamedTensor> parameters;
  for (const std::string& name : first.partition.wrt) parameters.push_back({name, module_parameters.at(name)});
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
  training.compile_step(first, options.compile);
  if (options.data_parallel) training.start_data_parallel(first, optimizer);
  return training;
}

// The data-parallel set-up: the ranks' agreement (what each built, described as text), then rank
// 0's parameters and buffers on every rank (compiler/distributed/data_parallel.h).
void CompiledTraining::start_data_parallel(const StepProgram& first, const OptimizerOptions& optimizer) {
  const passes::Partition& partition = first.partition;
  data_parallel_ = std::make_unique<compiler::DataParallel>(
      options_.data_parallel, *arena_, compiler::gradient_production_order(partition.backward, partition.wrt),
      options_.gradient_bucket_bytes);
  std::string parameters, buffers;
  for (const std::string& name : arena_->names()) {
    const Tensor value = arena_->parameter(name);
    parameters += name + " " + std::string(dtype_name(value.dtype())) + sizes_to_string(value.sizes()) + "\n";
  }
  std::vector<Tensor> buffer_tensors;
  for (const auto& [name, value] : module_->named_buffers()) {
    buffers += name + " " + std::string(dtype_name(value.dtype())) + sizes_to_string(value.sizes()) + "\n";
    buffer_tensors.push_back(value);
  }
  data_parallel_->start({{"the parameters (names, dtypes, shapes)", parameters},
                         {"the module's buffers (names, dtypes, shapes)", buffers},
                         {"the optimizer's options", compiler::describe_optimizer(optimizer)},
                         {"the traced training step (its forward and backward graphs; trace every rank with an "
                          "example batch of the same shapes)",
                          ir::print_graph(partition.forward) + ir::print_graph(partition.backward)}},
                        buffer_tensors);
  copy_parameters_to_module();
}

// The variant of `variants` whose guards accept `tensors`; else, below the recompile limit, a new
// one: traced by make(types, compile_options) on placeholder types with the dynamic dims as
// symbols (static when a symbolic trace fails) and guarded by make_guards; past the limit, one
// made for these tensors' static types and run interpreted. `what` names the callable.
template <typename Program, typename Make>
Program& CompiledTraining::variant_for(Variants<Program>& variants, const std::vector<Tensor>& tensors,
                                       const std::string& what, Make make) {
  std::string failure;
  for (auto& [guards, program] : variants.compiled) {
    int failing = compiler::first_failing_guard(guards, tensors, {});
    if (failing < 0) return *program;
    failure = compiler::describe_guard(guards[size_t(failing)], variants.names) + " failed: " +
              compiler::describe_actual(guards[size_t(failing)], tensors, {});
  }
  const DynamicShapes policy = options_.dynamic;
  if (policy == DynamicShapes::automatic)
    for (const std::string& note : variants.dims.note_sizes(tensors, variants.names))
      log("dynamic", "compile_training: " + what + ": " + note);
  compiler::SymbolRanges ranges;
  std::vector<std::string> notes;
  if (int(variants.compiled.size()) >= options_.recompile_limit) {
    if (!variants.warned_limit) {
      variants.warned_limit = true;
      std::cerr << "kiln: warning: compile_training: " << what << " reached its recompile limit ("
                << options_.recompile_limit << " variants); the guard that kept failing: " << failure
                << "; batches that no variant accepts now run in the interpreter (raise "
                   "TrainingOptions::recompile_limit, or set TrainingOptions::dynamic)\n";
    }
    CompileOptions interpreted = options_.compile;
    interpreted.target = "interp";
    variants.interpreted = make(variants.dims.input_types(tensors, variants.names, policy, false, ranges, notes),
                                interpreted);
    return *variants.interpreted;
  }
  if (!variants.compiled.empty())
    log("recompiles", "compile_training: " + what + ": recompiling (variant " +
                          std::to_string(variants.compiled.size()) + "): " + failure);
  std::vector<ir::TensorMeta> types =
      variants.dims.input_types(tensors, variants.names, policy, policy != DynamicShapes::never, ranges, notes);
  bool symbolic = std::any_of(types.begin(), types.end(), [](const ir::TensorMeta& type) { return !type.is_static(); });
  std::unique_ptr<Program> program;
  try {
    program = make(types, options_.compile);
  } catch (const Error& error) {
    if (!symbolic) throw;
    // The module needs a static size somewhere (Var::size() of a symbolic dim, a reshape to
    // constants): this variant is static.
    notes.push_back(std::string("every dim static: tracing with symbolic sizes failed: ") + error.what());
    ranges.clear();
    types = variants.dims.input_types(tensors, variants.names, policy, false, ranges, notes);
    program = make(types, options_.compile);
  }
  for (const std::string& note : notes) log("dynamic", "compile_training: " + what + ": " + note);
  std::vector<compiler::Guard> guards = compiler::make_guards(types, ranges, {}, nullptr);
  if (log_enabled("guards")) {
    std::string text = "compile_training: " + what + ": variant " + std::to_string(variants.compiled.size()) + " guards:";
    for (const compiler::Guard& guard : guards) text += "\n  " + compiler::describe_guard(guard, variants.names);
    log("guards", text);
  }
  variants.compiled.emplace_back(std::move(guards), std::move(program));
  return *variants.compiled.back().second;
}

CompiledTraining::StepProgram& CompiledTraining::program_for(const Batch& batch) {
  if (batch.inputs.size() != batch_inputs_ || batch.targets.size() != batch_targets_)
    fail("compile_training: the batch has ", batch.inputs.size(), " inputs and ", batch.targets.size(),
         " targets; the example batch had ", batch_inputs_, " and ", batch_targets_);
  std::vector<Tensor> tensors = batch_tensors(batch);
  return variant_for(steps_, tensors, "the step (batch " + signature(tensors) + ")",
                     [&](const std::vector<ir::TensorMeta>& types, const CompileOptions& options) {
                       std::unique_ptr<StepProgram> program = build_program(types, batch.inputs.size());
                       if (arena_) compile_step(*program, options);  // the first waits for the arena
                       return program;
                     });
}

// Runs the forward of `batch`: returns the loss, and the values the backward reads in `saved`.
float CompiledTraining::run_forward(StepProgram& program, const Batch& batch, std::map<std::string, Tensor>& saved) {
  const passes::Partition& partition = program.partition;
  if (data_parallel_ && options_.broadcast_buffers) data_parallel_->broadcast_buffers();
  std::map<std::string, Tensor> forward_inputs;
  std::vector<std::string> input_names = placeholder_names("input", batch.inputs.size());
  std::vector<std::string> target_names = placeholder_names("target", batch.targets.size());
  for (size_t i = 0; i < batch.inputs.size(); ++i) forward_inputs[input_names[i]] = batch.inputs[i];
  for (size_t i = 0; i < batch.targets.size(); ++i) forward_inputs[target_names[i]] = batch.targets[i];
  // The loss and the other forward outputs, then the saved values (the buffer updates are
  // copied back by the forward's CompiledModel and not returned).
  std::vector<Tensor> forward_outputs = program.forward->run(forward_inputs, options_.num_threads);
  if (program.interpreted) compiler::write_back_mutation_outputs(partition.forward, forward_inputs, forward_outputs);
  const size_t first_saved = forward_outputs.size() - partition.saved.size();
  for (size_t i = 0; i < partition.saved.size(); ++i) saved[partition.saved[i].name] = forward_outputs[first_saved + i];
  return float(forward_outputs.at(0).item());
}

float CompiledTraining::accumulate(const Batch& batch, double grad_scale) {
  StepProgram& program = program_for(batch);
  const passes::Partition& partition = program.partition;
  std::map<std::string, Tensor> saved;
  const float loss = run_forward(program, batch, saved);
  std::vector<Tensor> gradients = program.backward->run(saved, options_.num_threads);
  KILN_CHECK(gradients.size() == partition.wrt.size(), "the backward returns one gradient per parameter");
  std::map<std::string, Tensor> by_name;
  for (size_t i = 0; i < gradients.size(); ++i) by_name[partition.wrt[i]] = gradients[i];
  arena_->accumulate_gradients(by_name, grad_scale);
  gradients_averaged_ = false;
  return loss;
}

void CompiledTraining::apply() {
  if (data_parallel_ && !gradients_averaged_) data_parallel_->average_gradients();
  gradients_averaged_ = false;
  optimizer_->step();
  copy_parameters_to_module();
}

// Whether step() averages buckets on a communication thread during the backward: never for one
// rank (nothing to average) or a group whose collectives must stay on this thread; else as
// TrainingOptions::overlap_communication says, automatic where the process may run on more cores
// than the backward's threads (sched_getaffinity), so that the thread has a core of its own.
bool CompiledTraining::overlaps_communication() const {
  const distributed::ProcessGroup& group = data_parallel_->group();
  if (group.world_size() == 1 || !group.collectives_on_any_thread()) return false;
  switch (options_.overlap_communication) {
    case TrainingOptions::Overlap::always:
      return true;
    case TrainingOptions::Overlap::never:
      return false;
    case TrainingOptions::Overlap::automatic:
      break;
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) return false;
  // The backward's threads: num_threads, else OpenMP's default (OMP_NUM_THREADS, else every core).
  int threads = options_.num_threads;
  if (threads <= 0) {
    const char* variable = std::getenv("OMP_NUM_THREADS");
    threads = variable != nullptr ? std::atoi(variable) : 0;
  }
  return threads > 0 && CPU_COUNT(&cpus) > threads;
}

// The backward cut where gradient buckets are complete, each stage compiled as the backward was
// (none when the buckets leave one stage: nothing to overlap).
void CompiledTraining::stage_backward(StepProgram& program) {
  const passes::Partition& partition = program.partition;
  program.stages = compiler::stage_backward(partition.backward, partition.wrt, data_parallel_->buckets());
  const compiler::BackwardStages& stages = *program.stages;
  if (log_enabled("distributed")) {
    std::string text = "compile_training: the backward runs in " + std::to_string(stages.staged.stages.size()) +
                       " stage(s) for " + std::to_string(data_parallel_->buckets().size()) + " gradient bucket(s), " +
                       (stages.staged.stages.size() > 1 ? "each bucket averaged on the communication stream once its stage has run"
                                                        : "averaged after it") + ":";
    for (size_t k = 0; k < stages.buckets_done.size(); ++k) {
      text += "\n  stage " + std::to_string(k) + ": " + std::to_string(stages.gradients[k].size()) + " gradient(s), then bucket(s)";
      for (size_t bucket : stages.buckets_done[k]) text += " " + std::to_string(bucket);
    }
    log("distributed", text);
  }
  if (stages.staged.stages.size() < 2) return;
  for (const compiler::GraphStage& stage : stages.staged.stages) {
    ir::Graph graph = stage.graph.clone();
    program.stage_programs.push_back(compile_over_arena(graph, *arena_, program.options));
    if (!program.interpreted) ++model_compiles_;
  }
}

// The backward of a data-parallel step, each gradient bucket averaged across the ranks as soon as
// the stage that completes it has run: the stages on the VM's compute stream, the averages on its
// communication stream, ordered by one buffer per stage that the stage writes and the averages
// of its buckets read.
void CompiledTraining::overlapped_backward(StepProgram& program, const std::map<std::string, Tensor>& saved) {
  // No overlap (overlaps_communication), or one stage: the backward, then every bucket.
  const bool overlap = overlaps_communication();
  if (!overlap && !program.logged_averaging) {
    program.logged_averaging = true;
    log("distributed", "compile_training: the backward runs whole, its " + std::to_string(data_parallel_->buckets().size()) +
                           " gradient bucket(s) averaged after it (no core to spare for a communication thread, one "
                           "rank, or TrainingOptions::overlap_communication)");
  }
  if (overlap && !program.stages) stage_backward(program);
  if (!overlap || program.stage_programs.empty()) {
    std::vector<Tensor> gradients = program.backward->run(saved, options_.num_threads);
    std::map<std::string, Tensor> by_name;
    for (size_t i = 0; i < gradients.size(); ++i) by_name[program.partition.wrt[i]] = gradients[i];
    arena_->accumulate_gradients(by_name, 1.0);
    data_parallel_->average_gradients();
    return;
  }
  if (!vm_) {
    vm::VmOptions options;
    options.streams = {vm::StreamSpec{"compute"}, vm::StreamSpec{"communication"}};
    // No spinning: a rank often has one core (mpirun --bind-to core), which a spinning scheduler or
    // worker would take from the backward's stages and the collectives' own polling.
    options.scheduler_spin = std::chrono::microseconds(0);
    options.worker_spin = std::chrono::microseconds(0);
    vm_ = std::make_unique<vm::VirtualMachine>(options);
  }
  const compiler::BackwardStages& stages = *program.stages;
  const size_t count = stages.staged.stages.size();
  std::map<std::string, Tensor> values = saved;  // the saved values, then what each stage returns
  std::vector<vm::BufferPtr> done;
  for (size_t k = 0; k < count; ++k) done.push_back(vm_->new_buffer(8));
  vm_->physical_run([&](vm::InstructionsBuilder& b) {
    for (size_t k = 0; k < count; ++k) {
      b.run_graph(vm_->stream("compute"), "backward stage " + std::to_string(k), {}, {done[k]}, {},
                  [this, &program, &stages, &values, k](vm::CallContext&) {
                    const compiler::GraphStage& stage = stages.staged.stages[k];
                    std::map<std::string, Tensor> fed = compiler::inputs_of(stage.graph, values);
                    for (const auto& [placeholder, source] : stage.carried) fed[placeholder] = values.at(source);
                    std::vector<Tensor> outputs = program.stage_programs[k]->run(fed, options_.num_threads);
                    KILN_CHECK(outputs.size() == stage.returns.size(), "a backward stage returns what it was cut to");
                    for (size_t i = 0; i < outputs.size(); ++i) values[stage.returns[i]] = outputs[i];
                    std::map<std::string, Tensor> gradients;
                    for (const auto& [parameter, value] : stages.gradients[k]) gradients[parameter] = values.at(value);
                    arena_->accumulate_gradients(gradients, 1.0);
                  });
      for (size_t bucket : stages.buckets_done[k])
        b.kernel(vm_->stream("communication"), "average bucket " + std::to_string(bucket), {done[k]}, {},
                 [this, bucket](vm::CallContext&) { data_parallel_->average_bucket(bucket); });
    }
  });
  vm_->sync();
}

float CompiledTraining::step(const Batch& batch) {
  zero_grad();
  if (!data_parallel_) {
    float loss = accumulate(batch);
    apply();
    return loss;
  }
  StepProgram& program = program_for(batch);
  std::map<std::string, Tensor> saved;
  const float loss = run_forward(program, batch, saved);
  overlapped_backward(program, saved);
  gradients_averaged_ = true;
  apply();
  return loss;
}

void CompiledTraining::zero_grad() { optimizer_->zero_grad(); }

void CompiledTraining::copy_parameters_to_module() const {
  for (const auto& [in_module, in_arena] : module_parameters_) in_module.copy_from(in_arena);
}

CompiledTraining::EvalProgram& CompiledTraining::eval_program_for(const std::vector<Tensor>& inputs) {
  if (inputs.size() != batch_inputs_)
    fail("compile_training: evaluate takes the module's ", batch_inputs_, " inputs; got ", inputs.size());
  for (const Tensor& input : inputs)
    if (!input.defined()) fail("compile_training: evaluate's inputs hold an undefined tensor");
  if (evals_.names.empty()) evals_.names = eval_names(inputs.size());
  return variant_for(evals_, inputs, "evaluate (inputs " + signature(inputs) + ")",
                     [&](const std::vector<ir::TensorMeta>& types, const CompileOptions& options) {
                       nn::Module& module = *module_;
                       TraceOptions trace_options;
                       trace_options.input_names = evals_.names;
                       ir::Graph graph = in_mode(module, false, [&] {
                         module.assign_paths();
                         return trace_graph([&](const std::vector<Var>& vars) { return module(vars); }, types,
                                            trace_options);
                       });
                       auto program = std::make_unique<EvalProgram>();
                       program->model = compile_over_arena(graph, *arena_, options);
                       if (options.target != "interp") ++model_compiles_;
                       return program;
                     });
}

std::vector<Tensor> CompiledTraining::evaluate(const std::vector<Tensor>& inputs) {
  EvalProgram& program = eval_program_for(inputs);
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < inputs.size(); ++i) named[evals_.names[i]] = inputs[i];
  return program.model->run(named, options_.num_threads);
}

size_t CompiledTraining::compile_count() const { return model_compiles_ + optimizer_->compile_count(); }

const passes::Partition& CompiledTraining::partition() const { return steps_.compiled.front().second->partition; }

}  // namespace kiln::training
