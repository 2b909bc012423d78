// EmulatedModel: a graph through the CUDA code generator, built with the host's C++ compiler
// against the CPU emulation (codegen/cuda/kiln_cuda_emulation.h) and run step by step as the
// CUDA runtime would run it on a GPU: kernels through their kiln_emulate_<name> entry points
// with cuLaunchKernel-style parameters, GEMMs by a plain host loop (cuBLAS's part; a GEMM step
// with a fused epilogue also adds the bias and applies the activation as cuBLASLt defines them,
// writing the epilogue's output), fallback nodes by their reference kernels, fault flags
// checked after every step. Header-only: the
// suite's only sources are its *_test.cpp files.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/lowering.h"
#include "codegen/schedule.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "passes/pass_manager.h"
#include "runtime/error.h"
#include "runtime/shared_library.h"
#include "runtime/tensor.h"

namespace kiln::codegen::cuda::testing {

namespace fs = std::filesystem;

// The graph after the default passes (what the backends compile).
inline ir::Graph simplified(const ir::Graph& graph) {
  ir::Graph g = graph.clone();
  passes::run_pipeline(g, "simplified", passes::RunOptions{});
  return g;
}

// Builds `source` with the host compiler into a shared object in the suite's cache (keyed by
// the source's hash; published by rename, so parallel test processes share entries safely).
inline fs::path build_emulation(const std::string& source) {
  fs::path dir = fs::path(KILN_BINARY_DIR) / "cuda-emulation-cache";
  fs::create_directories(dir);
  std::string key = std::to_string(std::hash<std::string>()(source));
  fs::path library = dir / ("kernels_" + key + ".so");
  if (fs::exists(library)) return library;
  std::string stem = "kernels_" + key + "_" + std::to_string(getpid());
  fs::path cpp = dir / (stem + ".cpp"), temporary = dir / (stem + ".so"), log = dir / (stem + ".log");
  std::ofstream(cpp) << source;
  const char* cxx = std::getenv("CXX");
  std::string command = std::string(cxx && *cxx ? cxx : "c++") +
                        " -O1 -std=c++17 -shared -fPIC -fno-strict-aliasing -w -o " + temporary.string() + " " +
                        cpp.string() + " > " + log.string() + " 2>&1";
  int status = std::system(command.c_str());
  if (status != 0) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fail("the emulated CUDA source ", cpp.string(), " does not compile:\n", text.substr(0, 4000));
  }
  fs::rename(temporary, library);
  fs::remove(cpp);
  fs::remove(log);
  return library;
}

class EmulatedModel {
 public:
  static EmulatedModel compile(const ir::Graph& graph, const CudaEmitOptions& options = {}) {
    EmulatedModel m;
    m.graph_ = simplified(graph);
    m.scheduled_ = std::make_unique<ScheduledProgram>(schedule(lower(m.graph_)));
    m.module_ = emit_cuda(*m.scheduled_, options);
    m.library_ = SharedLibrary::open(build_emulation(emulation_source(m.module_)));
    return m;
  }

  const CudaModule& module() const { return module_; }
  const ScheduledProgram& scheduled() const { return *scheduled_; }

  // Outputs in the graph's output order (mutated inputs' copy-back outputs included).
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) const {
    const LoopProgram& p = scheduled_->program;
    bindings_ = ir::bind_symbols(graph_, inputs);
    std::vector<Tensor> held;
    std::vector<void*> pointers(p.buffers.size(), nullptr);
    for (int id : p.inputs) {
      held.push_back(inputs.at(p.buffer(id).source).contiguous());
      pointers[size_t(id)] = held.back().data_ptr();
    }
    for (int id : p.parameters) {
      held.push_back(graph_.parameters().at(p.buffer(id).source).contiguous());
      pointers[size_t(id)] = held.back().data_ptr();
    }
    std::vector<Tensor> outputs;
    for (int id : p.outputs) {
      outputs.push_back(Tensor::empty(sizes_of(p.buffer(id).shape), p.buffer(id).dtype));
      pointers[size_t(id)] = outputs.back().data_ptr();
    }
    // A poisoned workspace: a read of something never written shows.
    std::vector<unsigned char> workspace(size_t(module_.workspace_bytes.evaluate(bindings_)) + 64, 0xcd);
    unsigned char* base = workspace.data() + (64 - reinterpret_cast<uintptr_t>(workspace.data()) % 64) % 64;
    for (const auto& [id, offset] : scheduled_->memory.offsets) pointers[size_t(id)] = base + offset.evaluate(bindings_);
    unsigned char* scratch = base + module_.scratch_offset.evaluate(bindings_);
    int* fault_index = static_cast<int*>(library_.symbol("kiln_fault_index"));
    int* fault_zero_division = static_cast<int*>(library_.symbol("kiln_fault_zero_division"));
    *fault_index = 0;
    *fault_zero_division = 0;
    for (const LaunchStep& step : module_.steps) {
      if (step.kind == LaunchStep::Kind::Kernel) {
        launch(step.launch, pointers, scratch);
      } else {
        call_library(p.nodes[size_t(step.loop_node)], step.epilogue, pointers);
      }
      const std::string& kernel = scheduled_->kernels[size_t(step.kernel)].name;
      if (*fault_zero_division) fail("ZeroDivisionError: integer division by zero in ", kernel);
      if (*fault_index) fail("IndexError: an index is out of range in ", kernel);
    }
    return outputs;
  }

 private:
  Sizes sizes_of(const SymShape& shape) const {
    Sizes sizes;
    for (const SymInt& d : shape) sizes.push_back(d.evaluate(bindings_));
    return sizes;
  }

  void launch(const KernelLaunch& launch, const std::vector<void*>& pointers, unsigned char* scratch) const {
    int64_t grid = launch.grid.evaluate(bindings_);
    if (grid == 0) return;
    std::vector<void*> values;
    std::vector<int64_t> ints;
    values.reserve(launch.arguments.size());
    ints.reserve(launch.arguments.size());
    std::vector<void*> params;
    for (const KernelArgument& argument : launch.arguments) {
      switch (argument.kind) {
        case KernelArgument::Kind::Buffer:
          values.push_back(pointers.at(size_t(argument.buffer)));
          params.push_back(&values.back());
          break;
        case KernelArgument::Kind::Scratch:
          values.push_back(scratch);
          params.push_back(&values.back());
          break;
        case KernelArgument::Kind::Symbol:
          ints.push_back(bindings_.at(argument.symbol));
          params.push_back(&ints.back());
          break;
      }
    }
    using Entry = int (*)(unsigned, unsigned, size_t, void**, char*, size_t);
    auto entry = library_.function<Entry>("kiln_emulate_" + launch.name);
    char error[1024] = {};
    if (entry(unsigned(grid), unsigned(launch.block), size_t(launch.shared_bytes), params.data(), error, sizeof error) != 0) {
      fail("the CUDA emulation stopped ", launch.name, ": ", error);
    }
  }

  Tensor view_of(const StridedView& view, const std::vector<void*>& pointers) const {
    DType dtype = scheduled_->program.buffer(view.buffer).dtype;
    Sizes sizes = sizes_of(view.shape), strides = sizes_of(view.strides);
    int64_t offset = view.offset.evaluate(bindings_);
    auto storage = std::make_shared<Storage>(pointers.at(size_t(view.buffer)), size_t(0), Device::cpu(), [](void*) {});
    return Tensor(std::move(storage), sizes, strides, offset, dtype);
  }

  void call_library(const LoopNode& node, const std::optional<FusedGemmEpilogue>& epilogue,
                    const std::vector<void*>& pointers) const {
    const ExternCall& call = node.extern_call;
    std::vector<Tensor> inputs, outputs;
    for (const StridedView& v : call.inputs) inputs.push_back(view_of(v, pointers));
    for (StridedView v : call.outputs) {
      if (epilogue) v.buffer = epilogue->output;  // the fused call writes the epilogue's output
      outputs.push_back(view_of(v, pointers));
    }
    if (call.kind == ExternKind::Gemm) {
      std::optional<Tensor> bias;
      if (epilogue && epilogue->bias) bias = view_of(*epilogue->bias, pointers);
      host_gemm(inputs.at(0), inputs.at(1), outputs.at(0), bias, epilogue ? epilogue->activation : GemmActivation::none);
      return;
    }
    const ir::Node* graph_node = graph_.find(call.graph_node);
    KILN_CHECK(graph_node != nullptr, "fallback node " + call.graph_node + " is not in the graph");
    ir::OpCall op = ir::OpCall::of(*graph_node);
    size_t next = 0;
    std::vector<std::vector<Tensor>> holder;
    holder.reserve(inputs.size());
    auto value_of = [&](const ir::Node*) -> const std::vector<Tensor>& {
      holder.push_back({inputs.at(next++)});
      return holder.back();
    };
    std::vector<Tensor> results = ir::run_reference_kernel(op, ir::tensor_arguments(op, value_of), bindings_);
    for (size_t i = 0; i < results.size(); ++i) outputs.at(i).copy_from(results[i]);
  }

  // cuBLASLt's epilogue activations: relu, and its GELU (the tanh approximation).
  static double activate(double x, GemmActivation activation) {
    switch (activation) {
      case GemmActivation::none: return x;
      case GemmActivation::relu: return x > 0 ? x : 0;
      case GemmActivation::gelu_tanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    }
    return x;
  }

  // out[b..., m, n] = act(sum_k a[b..., m, k] b[b..., k, n] + bias[n]), in double (what cuBLAS,
  // or cuBLASLt with an epilogue, does on a GPU).
  static void host_gemm(const Tensor& a, const Tensor& b, Tensor& out, const std::optional<Tensor>& bias,
                        GemmActivation activation) {
    const Sizes& shape = out.sizes();
    const size_t rank = shape.size();
    const int64_t k_size = a.sizes()[rank - 1];
    for (int64_t flat = 0; flat < out.numel(); ++flat) {
      std::vector<int64_t> index(rank);
      int64_t rest = flat;
      for (size_t d = rank; d-- > 0;) {
        index[d] = rest % shape[d];
        rest /= shape[d];
      }
      int64_t a_at = a.storage_offset(), b_at = b.storage_offset(), out_at = out.storage_offset();
      for (size_t d = 0; d + 2 < rank; ++d) {
        a_at += index[d] * a.strides()[d];
        b_at += index[d] * b.strides()[d];
      }
      for (size_t d = 0; d < rank; ++d) out_at += index[d] * out.strides()[d];
      a_at += index[rank - 2] * a.strides()[rank - 2];
      b_at += index[rank - 1] * b.strides()[rank - 1];
      double sum = 0;
      for (int64_t k = 0; k < k_size; ++k) {
        sum += element(a, a_at + k * a.strides()[rank - 1]) * element(b, b_at + k * b.strides()[rank - 2]);
      }
      if (bias) sum += element(*bias, bias->storage_offset() + index[rank - 1] * bias->strides()[0]);
      sum = activate(sum, activation);
      if (out.dtype() == DType::f64) {
        static_cast<double*>(out.storage()->data())[out_at] = sum;
      } else {
        static_cast<float*>(out.storage()->data())[out_at] = float(sum);
      }
    }
  }

  static double element(const Tensor& t, int64_t at) {
    if (t.dtype() == DType::f64) return static_cast<const double*>(t.storage()->data())[at];
    return static_cast<const float*>(t.storage()->data())[at];
  }

  ir::Graph graph_;
  std::unique_ptr<ScheduledProgram> scheduled_;
  CudaModule module_;
  SharedLibrary library_;
  mutable std::map<std::string, int64_t> bindings_;
};

}  // namespace kiln::codegen::cuda::testing
