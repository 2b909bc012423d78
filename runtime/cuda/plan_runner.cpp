// Running a launch plan on a device. See runtime/cuda/plan_runner.h.
#include "runtime/cuda/plan_runner.h"

#include <climits>
#include <map>

#include "kiln/error.h"

namespace kiln::cuda {

namespace {

// The module's fault flags (the generated code's contract) and what each one set means.
const std::pair<const char*, const char*> kFaultFlags[] = {
    {"kiln_fault_zero_division", "ZeroDivisionError: integer division by zero in the model's CUDA kernels"},
    {"kiln_fault_index", "IndexError: an index is out of range in the model's CUDA kernels"},
};

Sizes evaluate(const std::vector<SizeExpression>& shape, const std::vector<int64_t>& symbols) {
  Sizes sizes;
  for (const SizeExpression& size : shape) sizes.push_back(size.evaluate(symbols));
  return sizes;
}

// "f32[s0, 784]": the buffer's type as the plan states it.
std::string declared_type(const PlanBuffer& buffer) {
  std::string text = std::string(dtype_name(buffer.dtype)) + "[";
  for (size_t d = 0; d < buffer.shape.size(); ++d) text += (d ? ", " : "") + buffer.shape[d].text();
  return text + "]";
}

std::string name_of(const PlanBuffer& buffer) { return buffer.source.empty() ? buffer.name : buffer.source; }

// One run's state: the bound symbols, every buffer's device address, the memory to free.
struct RunState {
  const LaunchPlan& plan;
  PlanDevice& device;
  std::vector<int64_t> symbols;
  std::vector<CUdeviceptr> pointers;  // by buffer id
  std::vector<bool> placed;           // by buffer id: whether pointers[id] is set
  std::vector<CUdeviceptr> owned;     // freed at the end of the run
  std::vector<Tensor> staged;         // host memory of copies that may be in flight
  CUdeviceptr scratch = 0;

  RunState(const LaunchPlan& plan, PlanDevice& device) : plan(plan), device(device), pointers(plan.buffers.size(), 0), placed(plan.buffers.size(), false) {}
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;
  ~RunState() {
    try {
      device.synchronize();
      for (CUdeviceptr pointer : owned) device.free(pointer);
    } catch (...) {
      // The device failed: its memory is not safe to reuse (the failure is already reported).
    }
  }

  CUdeviceptr allocate(size_t bytes) {
    CUdeviceptr pointer = device.allocate(bytes);
    owned.push_back(pointer);
    return pointer;
  }
  int64_t value(const SizeExpression& size) const { return size.evaluate(symbols); }
  size_t element_size(int buffer) const { return dtype_size(plan.buffer(buffer).dtype); }
  int64_t elements(int buffer) const {
    int64_t count = 1;
    for (const SizeExpression& size : plan.buffer(buffer).shape) count *= value(size);
    return count;
  }
  size_t bytes(int buffer) const { return size_t(elements(buffer)) * element_size(buffer); }
  void place(int buffer, CUdeviceptr pointer) {
    pointers.at(size_t(buffer)) = pointer;
    placed[size_t(buffer)] = true;
  }
  CUdeviceptr pointer(int buffer) const {
    KILN_CHECK(placed.at(size_t(buffer)), "buffer ", plan.buffer(buffer).name, " has no device memory");
    return pointers[size_t(buffer)];
  }
  // The address of a view's first element (its offset counts elements of the buffer's dtype).
  CUdeviceptr address(const PlanView& view) const {
    return pointer(view.buffer) + CUdeviceptr(value(view.offset)) * element_size(view.buffer);
  }
  // A view of `whole`, a host copy of the view's buffer.
  Tensor host_view(const Tensor& whole, const PlanView& view) const {
    return whole.as_strided(evaluate(view.shape, symbols), evaluate(view.strides, symbols), value(view.offset));
  }
  // A host copy of a whole buffer (valid after the next synchronize).
  Tensor download(int buffer) {
    Tensor whole = Tensor::empty({elements(buffer)}, plan.buffer(buffer).dtype);
    device.download(whole.data_ptr(), pointer(buffer), whole.nbytes());
    return whole;
  }
};

// Parameters: uploaded at their first use, then kept in `cache` across runs.
CUdeviceptr parameter_pointer(RunState& run, size_t index, const Tensor& value, std::vector<CUdeviceptr>& cache) {
  const PlanBuffer& buffer = run.plan.buffer(run.plan.parameters[index]);
  Sizes shape = evaluate(buffer.shape, run.symbols);
  if (!value.defined() || value.dtype() != buffer.dtype || value.sizes() != shape || !value.is_contiguous())
    fail("parameter '", name_of(buffer), "' must be a contiguous ", dtype_name(buffer.dtype), sizes_to_string(shape),
         value.defined() ? ", got " + std::string(dtype_name(value.dtype())) + sizes_to_string(value.sizes()) : ", got none");
  if (cache[index] == 0) {
    CUdeviceptr pointer = run.device.allocate(value.nbytes());
    run.device.upload(pointer, value.data_ptr(), value.nbytes());
    run.staged.push_back(value);
    cache[index] = pointer;
  }
  return cache[index];
}

// Step 2 of the header: every buffer's device address.
void place_buffers(RunState& run, const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                   std::vector<CUdeviceptr>& cache) {
  const LaunchPlan& plan = run.plan;
  if (parameters.size() != plan.parameters.size())
    fail("the CUDA model takes ", plan.parameters.size(), " parameters, got ", parameters.size());
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    Tensor value = inputs[i].contiguous();
    CUdeviceptr pointer = run.allocate(value.nbytes());
    run.device.upload(pointer, value.data_ptr(), value.nbytes());
    run.staged.push_back(value);
    run.place(plan.inputs[i], pointer);
  }
  for (size_t i = 0; i < plan.parameters.size(); ++i)
    run.place(plan.parameters[i], parameter_pointer(run, i, parameters[i], cache));
  for (int output : plan.outputs) run.place(output, run.allocate(run.bytes(output)));
  CUdeviceptr workspace = run.allocate(size_t(run.value(plan.workspace_bytes)));
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    if (const std::optional<SizeExpression>& offset = plan.buffers[id].workspace_offset)
      run.place(int(id), workspace + CUdeviceptr(run.value(*offset)));
  }
  run.scratch = workspace + CUdeviceptr(run.value(plan.scratch_offset));
}

void launch_kernel(RunState& run, const PlanStep& step) {
  int64_t grid = run.value(step.grid);
  if (grid == 0) return;
  if (grid < 0 || grid > int64_t(INT32_MAX))
    fail("kernel ", step.name, " needs ", grid, " blocks, outside CUDA's grid limit (1 to 2^31 - 1)");
  KernelArguments arguments;
  for (const PlanArgument& argument : step.arguments) {
    switch (argument.kind) {
      case PlanArgument::Kind::Buffer: arguments.add(run.pointer(argument.index)); break;
      case PlanArgument::Kind::Symbol: arguments.add(int64_t(run.symbols.at(size_t(argument.index)))); break;
      case PlanArgument::Kind::Scratch: arguments.add(run.scratch); break;
    }
  }
  LaunchConfig config;
  config.grid = {unsigned(grid), 1, 1};
  config.block = {unsigned(step.block), 1, 1};
  config.shared_bytes = unsigned(step.shared_bytes);
  run.device.launch(step.name, config, arguments);
}

void run_gemm(RunState& run, const PlanStep& step) {
  const PlanView &a = step.inputs[0], &b = step.inputs[1], &out = step.outputs[0];
  StridedGemm views;
  views.out_shape = evaluate(out.shape, run.symbols);
  views.k = run.value(a.shape.back());
  views.a_strides = evaluate(a.strides, run.symbols);
  views.b_strides = evaluate(b.strides, run.symbols);
  views.out_strides = evaluate(out.strides, run.symbols);
  std::optional<GemmCalls> calls = plan_strided_gemm(views);
  if (!calls) fail("matrix product ", step.name, ": an operand has no cuBLAS layout (neither of its last two strides is 1)");
  const DType dtype = run.plan.buffer(out.buffer).dtype;
  const CUdeviceptr element = CUdeviceptr(dtype_size(dtype));
  // A fused epilogue's call writes the epilogue's output, laid out as the GEMM's.
  PlanView written = out;
  if (step.epilogue != GemmEpilogue::none) written.buffer = step.epilogue_output;
  const CUdeviceptr base_a = run.address(a), base_b = run.address(b), base_out = run.address(written);
  const CUdeviceptr bias = step.bias ? run.address(*step.bias) : 0;
  for (const auto& offset : calls->offsets) {
    run.device.gemm(calls->gemm, dtype, base_a + CUdeviceptr(offset[0]) * element, base_b + CUdeviceptr(offset[1]) * element,
                    base_out + CUdeviceptr(offset[2]) * element, step.epilogue, bias);
  }
}

// A fallback node on the host: the buffers it reads and writes copied to the host (once each),
// the handler on views of them, and the written buffers copied back.
void run_fallback(RunState& run, const PlanStep& step, const FallbackHandler& handler) {
  std::map<int, Tensor> host;
  for (const std::vector<PlanView>* views : {&step.inputs, &step.outputs})
    for (const PlanView& view : *views)
      if (!host.count(view.buffer)) host.emplace(view.buffer, run.download(view.buffer));
  run.device.synchronize();
  std::vector<Tensor> inputs, outputs;
  for (const PlanView& view : step.inputs) inputs.push_back(run.host_view(host.at(view.buffer), view));
  for (const PlanView& view : step.outputs) outputs.push_back(run.host_view(host.at(view.buffer), view));
  const std::string& node = run.plan.fallbacks.at(size_t(step.fallback));
  try {
    call_fallback_handler(handler, step.fallback, inputs, outputs);
  } catch (const Error& error) {
    fail("fallback '", node, "' (#", step.fallback, ") failed: ", error.what());
  }
  std::map<int, bool> uploaded;
  for (const PlanView& view : step.outputs) {
    if (uploaded[view.buffer]) continue;
    uploaded[view.buffer] = true;
    const Tensor& whole = host.at(view.buffer);
    run.device.upload(run.pointer(view.buffer), whole.data_ptr(), whole.nbytes());
    run.staged.push_back(whole);
  }
}

}  // namespace

PlanRunner::PlanRunner(const LaunchPlan& plan, PlanDevice& device)
    : plan_(plan), device_(device), parameters_(plan.parameters.size(), 0) {}

PlanRunner::~PlanRunner() {
  try {
    device_.synchronize();
    for (CUdeviceptr pointer : parameters_)
      if (pointer != 0) device_.free(pointer);
  } catch (...) {
    // As in RunState: a failed device's memory is left alone.
  }
}

void PlanRunner::parameter_changed(size_t index) {
  KILN_CHECK(index < parameters_.size(), "parameter #", index, " of a plan with ", parameters_.size());
  if (parameters_[index] == 0) return;
  device_.free(parameters_[index]);  // runs end synchronized: no step uses it now
  parameters_[index] = 0;
}

std::vector<int64_t> PlanRunner::bind(const std::vector<Tensor>& inputs) const { return bind_launch_plan(plan_, inputs); }

std::vector<int64_t> bind_launch_plan(const LaunchPlan& plan, const std::vector<Tensor>& inputs) {
  if (inputs.size() != plan.inputs.size()) fail("the CUDA model takes ", plan.inputs.size(), " inputs, got ", inputs.size());
  auto header = [&](size_t i) {
    const PlanBuffer& buffer = plan.buffer(plan.inputs[i]);
    return "input '" + name_of(buffer) + "': expected " + declared_type(buffer) + ", got " +
           std::string(dtype_name(inputs[i].dtype())) + sizes_to_string(inputs[i].sizes()) + ": ";
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PlanBuffer& buffer = plan.buffer(plan.inputs[i]);
    if (!inputs[i].defined()) fail("input '", name_of(buffer), "' is undefined");
    if (!inputs[i].device().is_cpu())
      fail("input '", name_of(buffer), "' is on ", inputs[i].device().to_string(), "; the CUDA model takes host tensors");
    if (inputs[i].dtype() != buffer.dtype)
      throw GuardError(header(i) + "dtype is " + std::string(dtype_name(inputs[i].dtype())) + ", expected " +
                       std::string(dtype_name(buffer.dtype)));
    if (size_t(inputs[i].dim()) != buffer.shape.size())
      throw GuardError(header(i) + "rank is " + std::to_string(inputs[i].dim()) + ", expected " +
                       std::to_string(buffer.shape.size()));
  }
  std::vector<int64_t> symbols;
  for (const PlanSymbol& symbol : plan.symbols) symbols.push_back(inputs[size_t(symbol.input)].size(symbol.dim));
  // Each symbol within its range (the graph signature's: torch.export's range constraints).
  for (size_t j = 0; j < plan.symbols.size(); ++j) {
    const PlanSymbol& symbol = plan.symbols[j];
    if (symbols[j] >= symbol.min && (!symbol.max || symbols[j] <= *symbol.max)) continue;
    throw GuardError("input '" + name_of(plan.buffer(plan.inputs[size_t(symbol.input)])) + "': dim " +
                     std::to_string(symbol.dim) + " is " + std::to_string(symbols[j]) + ", outside the range [" +
                     std::to_string(symbol.min) + ", " + (symbol.max ? std::to_string(*symbol.max) : std::string("int_oo")) +
                     "] of " + symbol.name + " that the model was compiled for");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PlanBuffer& buffer = plan.buffer(plan.inputs[i]);
    for (size_t d = 0; d < buffer.shape.size(); ++d) {
      int64_t expected = buffer.shape[d].evaluate(symbols), actual = inputs[i].size(int64_t(d));
      if (actual == expected) continue;
      throw GuardError(header(i) + "dim " + std::to_string(d) + " is " + std::to_string(actual) + ", expected " +
                       std::to_string(expected) + (buffer.shape[d].is_constant() ? "" : " (" + buffer.shape[d].text() + ")"));
    }
  }
  return symbols;
}

std::vector<Tensor> PlanRunner::run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                                    const FallbackHandler& fallback) {
  if (!plan_.fallbacks.empty() && !fallback)
    fail("the CUDA model runs ", plan_.fallbacks.size(), " node(s) on the host's reference kernels (first: '",
         plan_.fallbacks.front(), "') and needs a fallback handler");
  RunState run(plan_, device_);
  run.symbols = bind(inputs);
  place_buffers(run, inputs, parameters, parameters_);
  std::vector<CUdeviceptr> fault_flags;
  for (const auto& [name, message] : kFaultFlags) {
    auto [pointer, bytes] = device_.global(name);
    device_.memset(pointer, 0, bytes);
    fault_flags.push_back(pointer);
  }

  device_.mark_steps_start();
  for (const PlanStep& step : plan_.steps) {
    switch (step.kind) {
      case PlanStep::Kind::Kernel: launch_kernel(run, step); break;
      case PlanStep::Kind::Gemm: run_gemm(run, step); break;
      case PlanStep::Kind::Fallback: run_fallback(run, step, fallback); break;
    }
  }
  device_.mark_steps_end();

  std::vector<Tensor> outputs;
  for (int output : plan_.outputs) {
    outputs.push_back(Tensor::empty(evaluate(plan_.buffer(output).shape, run.symbols), plan_.buffer(output).dtype));
    device_.download(outputs.back().data_ptr(), run.pointer(output), outputs.back().nbytes());
  }
  std::vector<int32_t> faults(fault_flags.size(), 0);
  for (size_t i = 0; i < fault_flags.size(); ++i) device_.download(&faults[i], fault_flags[i], sizeof(int32_t));
  device_.synchronize();
  for (size_t i = 0; i < faults.size(); ++i)
    if (faults[i] != 0) fail(kFaultFlags[i].second);
  last_steps_milliseconds_ = device_.steps_milliseconds();
  return outputs;
}

}  // namespace kiln::cuda
