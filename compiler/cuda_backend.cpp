// The CUDA backend driver. See compiler/cuda_backend.h.
#include "compiler/cuda_backend.h"

#include <chrono>
#include <fstream>

#include <nlohmann/json.hpp>

#include "codegen/lowering.h"
#include "compiler/backend_common.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "passes/pass_manager.h"
#include "runtime/compile_cache.h"
#include "runtime/cuda/cublas.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/cuda_stream.h"
#include "runtime/cuda/device_code_cache.h"
#include "runtime/cuda/driver_memory_backend.h"
#include "runtime/cuda/library_search.h"
#include "runtime/error.h"

namespace kiln::compiler {

namespace {

using Clock = std::chrono::steady_clock;
namespace cg = codegen::cuda;
using cuda::CUdeviceptr;
using cuda::CUfunction;

// The module's fault flags (codegen/cuda/cuda_emitter.h) and what each one set means.
const std::pair<const char*, const char*> kFaultFlags[] = {
    {"kiln_fault_zero_division", "ZeroDivisionError: integer division by zero in the model's CUDA kernels"},
    {"kiln_fault_index", "IndexError: an index is out of range in the model's CUDA kernels"},
};

int target_sm(const CudaCompileOptions& options) {
  if (options.sm) return *options.sm;
  if (!cuda::cuda_unavailable_reason()) return cuda::cuda_driver().device_info(0).sm();
  return 80;
}

std::vector<std::string> nvrtc_options(const cg::CudaModule& module) {
  std::vector<std::string> options = module.nvrtc_options;
  if (module.uses_half) {
    std::optional<std::string> include = cuda::toolkit_include_directory();
    if (!include) fail("the model computes in f16/bf16, and the CUDA toolkit's cuda_fp16.h was not found (set $CUDA_HOME)");
    options.push_back("-I" + *include);
  }
  return options;
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) fail("cannot write ", path.string());
}

void write_output_dir(const std::filesystem::path& dir, bool overwrite, const cg::CudaModule& module,
                      const std::string& plan, const cuda::DeviceCode& code) {
  namespace fs = std::filesystem;
  if (fs::exists(dir) && !fs::is_directory(dir)) fail("output directory ", dir.string(), " is a file");
  if (fs::exists(dir) && !fs::is_empty(dir) && !overwrite) {
    fail("output directory ", dir.string(), " exists and is not empty (pass --force to overwrite it)");
  }
  fs::create_directories(dir);
  write_file(dir / "kernels.cu", module.source);
  write_file(dir / "launch_plan.json", plan);
  write_file(dir / (code.is_cubin ? "device.cubin" : "device.ptx"), code.image);
}

const char* buffer_kind_name(codegen::BufferKind kind) {
  switch (kind) {
    case codegen::BufferKind::Input: return "input";
    case codegen::BufferKind::Parameter: return "parameter";
    case codegen::BufferKind::Output: return "output";
    case codegen::BufferKind::Intermediate: return "intermediate";
  }
  return "?";
}

size_t buffer_bytes(const codegen::Buffer& buffer, const std::map<std::string, int64_t>& bindings) {
  int64_t elements = 1;
  for (const ir::SymInt& d : buffer.shape) elements *= d.evaluate(bindings);
  return size_t(elements) * dtype_size(buffer.dtype);
}

Sizes evaluate_shape(const ir::SymShape& shape, const std::map<std::string, int64_t>& bindings) {
  Sizes sizes;
  for (const ir::SymInt& d : shape) sizes.push_back(d.evaluate(bindings));
  return sizes;
}

// The cuBLASLt epilogue of a fused GEMM step (codegen/cuda/gemm_epilogue.h).
cuda::GemmEpilogue lt_epilogue(const cg::FusedGemmEpilogue& fused) {
  const bool bias = fused.bias.has_value();
  switch (fused.activation) {
    case cg::GemmActivation::none: return bias ? cuda::GemmEpilogue::bias : cuda::GemmEpilogue::none;
    case cg::GemmActivation::relu: return bias ? cuda::GemmEpilogue::bias_relu : cuda::GemmEpilogue::relu;
    case cg::GemmActivation::gelu_tanh: return bias ? cuda::GemmEpilogue::bias_gelu : cuda::GemmEpilogue::gelu;
  }
  KILN_CHECK(false, "unknown GEMM activation");
}

}  // namespace

std::string launch_plan_json(const codegen::ScheduledProgram& scheduled, const cg::CudaModule& module,
                             const std::string& architecture) {
  const codegen::LoopProgram& p = scheduled.program;
  nlohmann::json buffers = nlohmann::json::array();
  for (const codegen::Buffer& b : p.buffers) {
    nlohmann::json shape = nlohmann::json::array();
    for (const ir::SymInt& d : b.shape) shape.push_back(d.to_string());
    nlohmann::json entry = {{"id", b.id}, {"name", b.name}, {"kind", buffer_kind_name(b.kind)},
                            {"dtype", dtype_name(b.dtype)}, {"shape", shape}};
    if (!b.source.empty()) entry["source"] = b.source;
    if (auto it = scheduled.memory.offsets.find(b.id); it != scheduled.memory.offsets.end()) {
      entry["workspace_offset"] = it->second.to_string();
    }
    buffers.push_back(entry);
  }
  nlohmann::json steps = nlohmann::json::array();
  for (const cg::LaunchStep& step : module.steps) {
    if (step.kind == cg::LaunchStep::Kind::Library) {
      const codegen::LoopNode& node = p.nodes.at(size_t(step.loop_node));
      bool gemm = node.extern_call.kind == codegen::ExternKind::Gemm;
      nlohmann::json entry = {{"library", gemm ? "gemm" : "fallback"}, {"node", node.name},
                              {"graph_node", gemm ? node.name : node.extern_call.graph_node}};
      if (const std::optional<cg::FusedGemmEpilogue>& epilogue = step.epilogue) {
        entry["library"] = "gemm_lt";
        entry["epilogue"] = cg::epilogue_name(*epilogue);
        if (epilogue->bias) {
          entry["bias"] = {{"buffer", p.buffer(epilogue->bias->buffer).name}, {"offset", epilogue->bias->offset.to_string()}};
        }
        entry["output"] = p.buffer(epilogue->output).name;
      }
      steps.push_back(entry);
      continue;
    }
    nlohmann::json arguments = nlohmann::json::array();
    for (const cg::KernelArgument& argument : step.launch.arguments) {
      switch (argument.kind) {
        case cg::KernelArgument::Kind::Buffer: arguments.push_back("buffer " + p.buffer(argument.buffer).name); break;
        case cg::KernelArgument::Kind::Symbol: arguments.push_back("symbol " + argument.symbol); break;
        case cg::KernelArgument::Kind::Scratch: arguments.push_back("scratch"); break;
      }
    }
    steps.push_back({{"kernel", step.launch.name}, {"grid", step.launch.grid.to_string()}, {"block", step.launch.block},
                     {"shared_bytes", step.launch.shared_bytes}, {"arguments", arguments}});
  }
  nlohmann::json plan = {{"format", "kiln-cuda-launch-plan"}, {"version", 1}, {"architecture", architecture},
                         {"nvrtc_options", module.nvrtc_options}, {"workspace_bytes", module.workspace_bytes.to_string()},
                         {"scratch_offset", module.scratch_offset.to_string()}, {"buffers", buffers}, {"steps", steps}};
  return plan.dump(2) + "\n";
}

// ---------------------------------------------------------------- the device side of a model

struct CudaModel::Device {
  cuda::CudaContext context;
  cuda::CudaStream stream;
  cuda::CachingDeviceAllocator allocator;
  cuda::CudaModule module;
  std::unique_ptr<cuda::Cublas> cublas;        // made at the first GEMM
  std::map<std::string, CUfunction> functions;
  std::map<int, CUdeviceptr> parameters;       // buffer id -> its device copy (uploaded once)

  explicit Device(const cuda::DeviceCode& code)
      : context(0), stream(context), allocator(std::make_shared<cuda::DriverMemoryBackend>(context)),
        module(context, code.image, "the model's kernels") {}

  cuda::StreamId stream_id() const { return cuda::StreamId(stream.handle()); }
  CUfunction function(const std::string& name) {
    auto it = functions.find(name);
    if (it == functions.end()) it = functions.emplace(name, module.function(name)).first;
    return it->second;
  }
};

CudaModel::~CudaModel() = default;
CudaModel::CudaModel(CudaModel&&) noexcept = default;
CudaModel& CudaModel::operator=(CudaModel&&) noexcept = default;

CudaModel CudaModel::compile(const ir::Graph& graph, const CudaCompileOptions& options) {
  Clock::time_point start = Clock::now();
  auto done = [&](const std::string& stage) {
    Clock::time_point now = Clock::now();
    if (options.on_stage) options.on_stage(stage, std::chrono::duration<double, std::milli>(now - start).count());
    start = now;
  };
  CudaModel model;
  model.graph_ = simplified_graph(graph, options.freeze);
  done("passes");
  codegen::LoopProgram loops = codegen::lower(model.graph_);
  done("lower");
  codegen::ScheduleOptions schedule_options;
  schedule_options.fuse = options.fuse;
  model.scheduled_ = codegen::schedule(std::move(loops), schedule_options);
  done("schedule");
  cg::CudaEmitOptions emit_options;
  emit_options.title = "a graph of " + std::to_string(model.graph_.size()) + " nodes";
  model.module_ = cg::emit_cuda(model.scheduled_, emit_options);
  done("codegen");

  const cuda::Nvrtc& compiler = cuda::nvrtc();
  int sm = target_sm(options);
  std::optional<CompileCache> cache;
  if (options.use_cache) cache.emplace(options.cache_dir);
  cuda::CachedDeviceCode code = cuda::compile_device_code(compiler, cache ? &*cache : nullptr, model.module_.source,
                                                          "kernels.cu", sm, nvrtc_options(model.module_));
  done(code.cache_hit ? "cache hit" : "nvrtc");
  model.device_code_ = std::move(code.code);
  model.result_.key = code.key;
  model.result_.cache_hit = code.cache_hit;
  model.result_.architecture = model.device_code_.architecture;
  for (const cg::LaunchStep& step : model.module_.steps) {
    if (step.kind == cg::LaunchStep::Kind::Kernel) ++model.result_.kernel_count;
  }
  if (options.output_dir) {
    write_output_dir(*options.output_dir, options.overwrite, model.module_,
                     launch_plan_json(model.scheduled_, model.module_, model.result_.architecture), model.device_code_);
    model.result_.output_dir = *options.output_dir;
  }
  return model;
}

std::vector<Tensor> CudaModel::run(const std::map<std::string, Tensor>& inputs) {
  if (!device_) device_ = std::make_unique<Device>(device_code_);  // throws "no CUDA device: ..."
  Device& device = *device_;
  device.context.make_current();
  const codegen::LoopProgram& p = scheduled_.program;
  std::map<std::string, int64_t> bindings = ir::bind_symbols(graph_, inputs);

  // Device memory of this run, freed however it ends (the stream is synchronized first).
  std::vector<CUdeviceptr> owned;
  struct Release {
    Device& device;
    std::vector<CUdeviceptr>& owned;
    ~Release() {
      try {
        device.stream.synchronize();
      } catch (const Error&) {
        return;  // the device failed: its memory is not safe to reuse
      }
      for (CUdeviceptr pointer : owned) device.allocator.free(pointer);
    }
  } release{device, owned};
  auto allocate = [&](size_t bytes) {
    CUdeviceptr pointer = device.allocator.allocate(bytes, device.stream_id());
    owned.push_back(pointer);
    return pointer;
  };

  CUdeviceptr workspace = allocate(size_t(module_.workspace_bytes.evaluate(bindings)));
  std::map<int, CUdeviceptr> pointers;
  std::vector<Tensor> staged;  // host tensors whose copies are in flight
  for (const codegen::Buffer& buffer : p.buffers) {
    size_t bytes = buffer_bytes(buffer, bindings);
    switch (buffer.kind) {
      case codegen::BufferKind::Input: {
        auto it = inputs.find(buffer.source);
        if (it == inputs.end()) fail("missing input '", buffer.source, "'");
        Tensor value = it->second.contiguous();
        if (value.dtype() != buffer.dtype) {
          fail("input '", buffer.source, "' is ", dtype_name(value.dtype()), ", the model takes ", dtype_name(buffer.dtype));
        }
        pointers[buffer.id] = allocate(bytes);
        device.stream.upload(pointers[buffer.id], value.data_ptr(), bytes);
        staged.push_back(value);
        break;
      }
      case codegen::BufferKind::Parameter: {
        auto cached = device.parameters.find(buffer.id);
        if (cached == device.parameters.end()) {
          Tensor value = graph_.parameters().at(buffer.source).contiguous();
          CUdeviceptr pointer = device.allocator.allocate(bytes, device.stream_id());
          device.stream.upload(pointer, value.data_ptr(), bytes);
          staged.push_back(value);
          cached = device.parameters.emplace(buffer.id, pointer).first;
        }
        pointers[buffer.id] = cached->second;
        break;
      }
      case codegen::BufferKind::Output: pointers[buffer.id] = allocate(bytes); break;
      case codegen::BufferKind::Intermediate:
        if (auto it = scheduled_.memory.offsets.find(buffer.id); it != scheduled_.memory.offsets.end()) {
          pointers[buffer.id] = workspace + CUdeviceptr(it->second.evaluate(bindings));
        }
        break;
    }
  }
  std::vector<CUdeviceptr> fault_flags;
  for (const auto& [name, message] : kFaultFlags) {
    auto [pointer, bytes] = device.module.global(name);
    device.stream.memset(pointer, 0, bytes);
    fault_flags.push_back(pointer);
  }
  CUdeviceptr scratch = workspace + CUdeviceptr(module_.scratch_offset.evaluate(bindings));
  auto pointer_of = [&](int buffer) {
    auto it = pointers.find(buffer);
    KILN_CHECK(it != pointers.end(), "buffer ", p.buffer(buffer).name, " has no device memory");
    return it->second;
  };

  cuda::CudaEvent steps_start(device.context, /*timing=*/true), steps_end(device.context, /*timing=*/true);
  steps_start.record(device.stream);
  for (const cg::LaunchStep& step : module_.steps) {
    if (step.kind == cg::LaunchStep::Kind::Kernel) {
      const cg::KernelLaunch& launch = step.launch;
      int64_t grid = launch.grid.evaluate(bindings);
      if (grid == 0) continue;
      if (grid > int64_t(INT32_MAX)) fail("kernel ", launch.name, " needs ", grid, " blocks, past CUDA's grid limit");
      cuda::KernelArguments arguments;
      for (const cg::KernelArgument& argument : launch.arguments) {
        switch (argument.kind) {
          case cg::KernelArgument::Kind::Buffer: arguments.add(pointer_of(argument.buffer)); break;
          case cg::KernelArgument::Kind::Symbol: arguments.add(int64_t(bindings.at(argument.symbol))); break;
          case cg::KernelArgument::Kind::Scratch: arguments.add(scratch); break;
        }
      }
      cuda::LaunchConfig config;
      config.grid = {unsigned(grid), 1, 1};
      config.block = {unsigned(launch.block), 1, 1};
      config.shared_bytes = unsigned(launch.shared_bytes);
      device.stream.launch(device.function(launch.name), config, arguments);
      continue;
    }
    const codegen::LoopNode& node = p.nodes.at(size_t(step.loop_node));
    const codegen::ExternCall& call = node.extern_call;
    if (call.kind == codegen::ExternKind::Gemm) {
      const codegen::StridedView &a = call.inputs.at(0), &b = call.inputs.at(1), &out = call.outputs.at(0);
      cuda::StridedGemm views;
      views.out_shape = evaluate_shape(out.shape, bindings);
      views.k = a.shape.back().evaluate(bindings);
      views.a_strides = evaluate_shape(a.strides, bindings);
      views.b_strides = evaluate_shape(b.strides, bindings);
      views.out_strides = evaluate_shape(out.strides, bindings);
      std::optional<cuda::GemmCalls> calls = cuda::plan_strided_gemm(views);
      if (!calls) fail("matrix product ", node.name, ": an operand has no cuBLAS layout (neither of its last two strides is 1)");
      DType dtype = p.buffer(out.buffer).dtype;
      size_t element = dtype_size(dtype);
      if (!device.cublas) device.cublas = std::make_unique<cuda::Cublas>(device.context);
      CUdeviceptr base_a = pointer_of(a.buffer) + CUdeviceptr(a.offset.evaluate(bindings)) * element;
      CUdeviceptr base_b = pointer_of(b.buffer) + CUdeviceptr(b.offset.evaluate(bindings)) * element;
      // A fused epilogue's call writes the epilogue's output, laid out as the GEMM's.
      const int written = step.epilogue ? step.epilogue->output : out.buffer;
      CUdeviceptr base_out = pointer_of(written) + CUdeviceptr(out.offset.evaluate(bindings)) * element;
      CUdeviceptr bias = 0;
      if (step.epilogue && step.epilogue->bias) {
        const codegen::StridedView& view = *step.epilogue->bias;
        bias = pointer_of(view.buffer) + CUdeviceptr(view.offset.evaluate(bindings)) * element;
      }
      for (const auto& offset : calls->offsets) {
        CUdeviceptr call_a = base_a + CUdeviceptr(offset[0]) * element, call_b = base_b + CUdeviceptr(offset[1]) * element;
        CUdeviceptr call_out = base_out + CUdeviceptr(offset[2]) * element;
        if (step.epilogue) {
          device.cublas->gemm_with_epilogue(device.stream, calls->gemm, dtype, call_a, call_b, call_out,
                                            lt_epilogue(*step.epilogue), bias);
        } else {
          device.cublas->gemm(device.stream, calls->gemm, dtype, call_a, call_b, call_out);
        }
      }
      continue;
    }
    // A fallback node: its reference kernel on the host, on copies of the buffers it reads and writes.
    device.stream.synchronize();
    auto host_copy = [&](int buffer) {
      const codegen::Buffer& b = p.buffer(buffer);
      Tensor whole = Tensor::empty({int64_t(buffer_bytes(b, bindings) / dtype_size(b.dtype))}, b.dtype);
      device.stream.download(whole.data_ptr(), pointer_of(buffer), whole.nbytes());
      return whole;
    };
    auto view_of = [&](const Tensor& whole, const codegen::StridedView& view) {
      return whole.as_strided(evaluate_shape(view.shape, bindings), evaluate_shape(view.strides, bindings),
                              view.offset.evaluate(bindings));
    };
    std::vector<Tensor> arguments;
    for (const codegen::StridedView& view : call.inputs) arguments.push_back(view_of(host_copy(view.buffer), view));
    device.stream.synchronize();
    std::vector<Tensor> results = run_fallback_node(graph_, call.graph_node, arguments, bindings);
    KILN_CHECK(results.size() == call.outputs.size(), "fallback ", call.graph_node, ": result count");
    for (size_t i = 0; i < results.size(); ++i) {
      const codegen::StridedView& view = call.outputs[i];
      Tensor whole = host_copy(view.buffer);
      device.stream.synchronize();
      view_of(whole, view).copy_from(results[i]);
      device.stream.upload(pointer_of(view.buffer), whole.data_ptr(), whole.nbytes());
      staged.push_back(whole);
    }
  }

  steps_end.record(device.stream);

  std::vector<std::pair<int, Tensor>> by_position;
  for (const codegen::Buffer& buffer : p.buffers) {
    if (buffer.kind != codegen::BufferKind::Output) continue;
    Tensor value = Tensor::empty(evaluate_shape(buffer.shape, bindings), buffer.dtype);
    device.stream.download(value.data_ptr(), pointer_of(buffer.id), value.nbytes());
    by_position.emplace_back(buffer.position, value);
  }
  std::vector<int32_t> faults(fault_flags.size(), 0);
  for (size_t i = 0; i < fault_flags.size(); ++i) device.stream.download(&faults[i], fault_flags[i], sizeof(int32_t));
  device.stream.synchronize();
  for (size_t i = 0; i < faults.size(); ++i) {
    if (faults[i] != 0) fail(kFaultFlags[i].second);
  }
  last_device_milliseconds_ = steps_end.elapsed_milliseconds_since(steps_start);
  std::sort(by_position.begin(), by_position.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Tensor> outputs;
  for (auto& [position, value] : by_position) outputs.push_back(value);

  // Mutated inputs and parameters (the mutation outputs of the graph signature), as
  // CpuModel::run does.
  std::vector<Tensor> returned;
  for (size_t i = 0; i < outputs.size(); ++i) {
    ir::OutputSpec spec = graph_.signature().output(i);
    if (!spec.is_mutation()) {
      returned.push_back(outputs[i]);
    } else if (spec.kind == ir::OutputKind::user_input_mutation) {
      inputs.at(spec.target).copy_from(outputs[i]);
    } else {
      graph_.parameters().at(spec.target).copy_from(outputs[i]);
      for (const codegen::Buffer& buffer : p.buffers) {  // its device copy is stale now
        if (buffer.kind == codegen::BufferKind::Parameter && buffer.source == spec.target) {
          if (auto it = device.parameters.find(buffer.id); it != device.parameters.end()) {
            owned.push_back(it->second);  // freed with this run's memory
            device.parameters.erase(it);
          }
        }
      }
    }
  }
  return returned;
}

}  // namespace kiln::compiler
