// The host code of a CUDA package. See codegen/package/cuda_package_sources.h.
#include "codegen/package/cuda_package_sources.h"

#include <algorithm>
#include <set>

#include "codegen/c_like/c_printer.h"
#include "codegen/c_like/c_source_writer.h"
#include "codegen/cpp/cpp_emitter.h"
#include "codegen/package/package_texts.h"
#include "kiln/error.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln::codegen {

namespace {

// The part of a runtime header between `namespace kiln::cuda {` and its closing comment: its
// declarations, to paste into the package's own namespace.
std::string runtime_namespace_body(std::string_view header, const char* what) {
  const std::string_view open = "namespace kiln::cuda {\n", close = "}  // namespace kiln::cuda";
  size_t begin = header.find(open), end = header.rfind(close);
  KILN_CHECK(begin != std::string_view::npos && end != std::string_view::npos && begin < end, what,
             ": the namespace block was not found");
  return std::string(header.substr(begin + open.size(), end - begin - open.size()));
}

// Index and size expressions as C over the renamed symbols (CPrinter::index_text).
class CudaPackageSizePrinter final : public CPrinter {
 public:
  explicit CudaPackageSizePrinter(const ScheduledProgram& scheduled) : CPrinter(scheduled, cpp_dialect()) {}
  ~CudaPackageSizePrinter() override = default;
};

const char* package_epilogue_spelling(const cuda::FusedGemmEpilogue& epilogue) {
  bool bias = epilogue.bias.has_value();
  switch (epilogue.activation) {
    case cuda::GemmActivation::none: return bias ? "GemmEpilogue::bias" : "GemmEpilogue::none";
    case cuda::GemmActivation::relu: return bias ? "GemmEpilogue::bias_relu" : "GemmEpilogue::relu";
    case cuda::GemmActivation::gelu_tanh: return bias ? "GemmEpilogue::bias_gelu" : "GemmEpilogue::gelu";
  }
  return "GemmEpilogue::none";
}

// Prints run_steps: the launch plan, straight-line.
class CudaPackageStepsPrinter {
 public:
  CudaPackageStepsPrinter(const ScheduledProgram& scheduled, const cuda::CudaModule& module)
      : s_(scheduled), p_(scheduled.program), module_(module), sizes_(scheduled), kernels_(cuda_package_kernels(module)) {}

  std::string run() {
    w_.line("// The launch plan, straight-line: " + std::to_string(module_.steps.size()) + " steps.");
    w_.open("bool run_steps(PackageRun& run, const KilnRunArgs* args)");
    w_.line("const int64_t* sym = args->symbols;");
    w_.line("(void)sym;");
    for (size_t i = 0; i < p_.symbols.size(); ++i) {
      std::string name = CPrinter::symbol_variable(p_.symbols[i]);
      w_.line("const int64_t " + name + " = sym[" + std::to_string(i) + "];");
      w_.line("(void)" + name + ";");
    }
    const size_t inputs = p_.inputs.size(), outputs = p_.outputs.size();
    w_.line("CUdeviceptr b[" + std::to_string(std::max<size_t>(p_.buffers.size(), 1)) + "] = {};");
    w_.line("if (!run.start(" + std::to_string(inputs + outputs + 1) + ")) return false;");
    for (size_t i = 0; i < inputs; ++i) {
      int id = p_.inputs[i];
      w_.line("if (!run.input(" + std::to_string(i) + ", args->inputs[" + std::to_string(i) + "].data, " + bytes(id) + ", &b[" +
              std::to_string(id) + "])) return false;  // input '" + p_.buffer(id).source + "'");
    }
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      int id = p_.parameters[i];
      w_.line("b[" + std::to_string(id) + "] = run.parameter(" + std::to_string(i) + ");  // " + p_.buffer(id).source);
    }
    for (size_t i = 0; i < outputs; ++i) {
      int id = p_.outputs[i];
      w_.line("if (!run.reserve(" + std::to_string(inputs + i) + ", " + bytes(id) + ", &b[" + std::to_string(id) +
              "])) return false;  // output '" + p_.buffer(id).source + "'");
    }
    w_.line("CUdeviceptr workspace = 0;");
    w_.line("if (!run.reserve(" + std::to_string(inputs + outputs) + ", " + sizes_.index_text(module_.workspace_bytes) +
            ", &workspace)) return false;");
    for (const auto& [id, offset] : s_.memory.offsets)
      w_.line("b[" + std::to_string(id) + "] = workspace + CUdeviceptr(" + sizes_.index_text(offset) + ");  // " + p_.buffer(id).name);
    w_.line("const CUdeviceptr scratch = workspace + CUdeviceptr(" + sizes_.index_text(module_.scratch_offset) + ");");
    w_.line("(void)scratch;");
    for (size_t i = 0; i < module_.steps.size(); ++i) {
      const cuda::LaunchStep& step = module_.steps[i];
      if (step.kind == cuda::LaunchStep::Kind::Kernel) {
        kernel_step(i, step.launch);
      } else {
        library_step(i, step);
      }
    }
    std::string pointers, byte_counts;
    for (int id : p_.outputs) {
      pointers += (pointers.empty() ? "" : ", ") + std::string("b[") + std::to_string(id) + "]";
      byte_counts += (byte_counts.empty() ? "" : ", ") + bytes(id);
    }
    if (outputs == 0) pointers = byte_counts = "0";
    w_.line("const CUdeviceptr output_pointers[] = {" + pointers + "};");
    w_.line("const int64_t output_bytes[] = {" + byte_counts + "};");
    w_.line("return run.finish(args->outputs, output_pointers, output_bytes, " + std::to_string(outputs) + ");");
    w_.close();
    return w_.str();
  }

 private:
  // The bytes of buffer `id` as a C expression.
  std::string bytes(int id) const {
    SymInt count = int64_t(dtype_size(p_.buffer(id).dtype));
    for (const SymInt& d : p_.buffer(id).shape) count = count * d;
    return sizes_.index_text(count);
  }

  // The address of a view's first element.
  std::string address(const StridedView& view) const {
    return "b[" + std::to_string(view.buffer) + "] + CUdeviceptr(" + sizes_.index_text(view.offset) + ") * " +
           std::to_string(dtype_size(p_.buffer(view.buffer).dtype));
  }

  std::string list(const SymShape& values) const {
    std::string text;
    for (const SymInt& v : values) text += (text.empty() ? "" : ", ") + sizes_.index_text(v);
    return "{" + text + "}";
  }

  void kernel_step(size_t index, const cuda::KernelLaunch& launch) {
    int kernel = int(std::find(kernels_.begin(), kernels_.end(), launch.name) - kernels_.begin());
    w_.open("");
    w_.line("// step " + std::to_string(index) + ": " + launch.name + "<<<" + launch.grid.to_string() + ", " +
            std::to_string(launch.block) + ", " + std::to_string(launch.shared_bytes) + ">>>");
    std::string parameters;
    for (size_t a = 0; a < launch.arguments.size(); ++a) {
      const cuda::KernelArgument& argument = launch.arguments[a];
      std::string name = "a" + std::to_string(a);
      switch (argument.kind) {
        case cuda::KernelArgument::Kind::Buffer:
          w_.line("CUdeviceptr " + name + " = b[" + std::to_string(argument.buffer) + "];  // " + p_.buffer(argument.buffer).name);
          break;
        case cuda::KernelArgument::Kind::Symbol:
          w_.line("int64_t " + name + " = " + CPrinter::symbol_variable(argument.symbol) + ";");
          break;
        case cuda::KernelArgument::Kind::Scratch: w_.line("CUdeviceptr " + name + " = scratch;"); break;
      }
      parameters += (parameters.empty() ? "&" : ", &") + name;
    }
    w_.line("void* parameters[] = {" + (parameters.empty() ? std::string("nullptr") : parameters) + "};");
    w_.line("if (!run.launch(" + std::to_string(kernel) + ", " + quoted(launch.name) + ", " + sizes_.index_text(launch.grid) + ", " +
            std::to_string(launch.block) + ", " + std::to_string(launch.shared_bytes) + ", parameters)) return false;");
    w_.close();
  }

  // A fallback node on the host: the buffers it touches copied to host staging, the package's
  // fallback handler (args->fallback: the portable kernels NAME.cpp carries) on views of them,
  // the buffers it writes copied back; the stream drained before the handler and after the copies.
  void fallback_step(size_t index, const LoopNode& node) {
    const ExternCall& call = node.extern_call;
    int fallback = fallbacks_seen_++;
    KILN_CHECK(size_t(fallback) < module_.fallbacks.size() && module_.fallbacks[size_t(fallback)] == call.graph_node,
               "fallback step ", node.name, " is not the module's fallback ", fallback);
    w_.open("");
    w_.line("// step " + std::to_string(index) + ": fallback node " + call.graph_node + " (" + node.name +
            ") on the host: its buffers copied in and out");
    std::vector<int> buffers;
    for (const std::vector<StridedView>* views : {&call.inputs, &call.outputs})
      for (const StridedView& v : *views)
        if (std::find(buffers.begin(), buffers.end(), v.buffer) == buffers.end()) buffers.push_back(v.buffer);
    for (size_t i = 0; i < buffers.size(); ++i) {
      int id = buffers[i];
      w_.line("unsigned char* h" + std::to_string(id) + " = nullptr;");
      w_.line("if (!run.to_host(" + std::to_string(i) + ", b[" + std::to_string(id) + "], " + bytes(id) + ", &h" +
              std::to_string(id) + ")) return false;  // " + p_.buffer(id).name);
    }
    w_.line("if (!run.wait()) return false;");
    describe(call.inputs, "in");
    describe(call.outputs, "out");
    w_.open("if (args->fallback == nullptr)");
    w_.line("return run.host_failure(\"node " + call.graph_node + " runs on the host's kernels, and no fallback handler was given\");");
    w_.close();
    w_.line("if (args->fallback(args->fallback_state, " + std::to_string(fallback) + ", in, " + std::to_string(call.inputs.size()) +
            ", out, " + std::to_string(call.outputs.size()) + ", args->error, args->error_capacity) != 0)");
    w_.line("  return run.host_failure(args->error);");
    std::vector<int> written;
    for (const StridedView& v : call.outputs)
      if (std::find(written.begin(), written.end(), v.buffer) == written.end()) written.push_back(v.buffer);
    for (int id : written)
      w_.line("if (!run.to_device(b[" + std::to_string(id) + "], h" + std::to_string(id) + ", " + bytes(id) + ")) return false;");
    w_.line("if (!run.wait()) return false;");
    w_.close();
  }

  // KilnTensorDesc NAME[] over the host copies of `views`' buffers.
  void describe(const std::vector<StridedView>& views, const std::string& name) {
    w_.line("KilnTensorDesc " + name + "[" + std::to_string(std::max<size_t>(views.size(), 1)) + "] = {};");
    for (size_t i = 0; i < views.size(); ++i) {
      const StridedView& v = views[i];
      std::string sizes = name + "_sizes" + std::to_string(i), strides = name + "_strides" + std::to_string(i);
      size_t n = std::max<size_t>(v.shape.size(), 1);
      std::string size_list = v.shape.empty() ? "{0}" : list(v.shape), stride_list = v.strides.empty() ? "{0}" : list(v.strides);
      w_.line("const int64_t " + sizes + "[" + std::to_string(n) + "] = " + size_list + ";");
      w_.line("const int64_t " + strides + "[" + std::to_string(n) + "] = " + stride_list + ";");
      DType dtype = p_.buffer(v.buffer).dtype;
      w_.line(name + "[" + std::to_string(i) + "] = {h" + std::to_string(v.buffer) + " + (" + sizes_.index_text(v.offset) + ") * " +
              std::to_string(dtype_size(dtype)) + ", " + sizes + ", " + strides + ", " + std::to_string(int(dtype)) + ", " +
              std::to_string(v.shape.size()) + "};");
    }
  }

  void library_step(size_t index, const cuda::LaunchStep& step) {
    const LoopNode& node = p_.nodes.at(size_t(step.loop_node));
    const ExternCall& call = node.extern_call;
    if (call.kind == ExternKind::Fallback) {
      fallback_step(index, node);
      return;
    }
    KILN_CHECK(call.kind == ExternKind::Gemm, "library step ", node.name, " is neither a matrix product nor a fallback");
    const StridedView &a = call.inputs.at(0), &b = call.inputs.at(1), &out = call.outputs.at(0);
    const DType dtype = p_.buffer(out.buffer).dtype;
    w_.open("");
    StridedView written = out;
    std::string epilogue = "GemmEpilogue::none", bias = "0";
    if (step.epilogue) {
      written.buffer = step.epilogue->output;
      epilogue = package_epilogue_spelling(*step.epilogue);
      if (step.epilogue->bias) bias = address(*step.epilogue->bias);
    }
    w_.line("// step " + std::to_string(index) + ": matrix product " + node.name +
            (step.epilogue ? " (cuBLASLt, epilogue " + cuda::epilogue_name(*step.epilogue) + ")" : " (cuBLAS)"));
    w_.line("StridedGemm views;");
    w_.line("views.out_shape = " + list(out.shape) + ";");
    w_.line("views.k = " + sizes_.index_text(a.shape.back()) + ";");
    w_.line("views.a_strides = " + list(a.strides) + ";");
    w_.line("views.b_strides = " + list(b.strides) + ";");
    w_.line("views.out_strides = " + list(out.strides) + ";");
    w_.line("if (!run.gemm(" + quoted(node.name) + ", views, " + std::to_string(int(dtype)) + ", " +
            std::to_string(dtype_size(dtype)) + ", " + address(a) + ", " + address(b) + ", " + address(written) + ", " + epilogue +
            ", " + bias + ")) return false;");
    w_.close();
  }

  const ScheduledProgram& s_;
  const LoopProgram& p_;
  const cuda::CudaModule& module_;
  CudaPackageSizePrinter sizes_;
  std::vector<std::string> kernels_;
  CSourceWriter w_;
  int fallbacks_seen_ = 0;
};

}  // namespace

std::vector<std::string> cuda_package_kernels(const cuda::CudaModule& module) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const cuda::LaunchStep& step : module.steps)
    if (step.kind == cuda::LaunchStep::Kind::Kernel && seen.insert(step.launch.name).second) names.push_back(step.launch.name);
  return names;
}

std::string cuda_package_host_source(const PackageSpec& spec, const ScheduledProgram& scheduled, const cuda::CudaModule& module) {
  check_package_name(spec.name);
  KILN_CHECK(!spec.device_image_file.empty(), "a CUDA package needs its device code's file");
  const std::string& n = spec.name;
  const std::string steps = CudaPackageStepsPrinter(scheduled, module).run();
  std::string text =
      "// " + n + "_cuda.cpp: the host side of package " + n + "'s CUDA kernels (" + n + "_kernels.cu, built into " +
      spec.device_image_file + "), compiled by Kiln " + KILN_VERSION +
      ". Generated: do not edit.\n"
      "// The guards and output sizes as the C++ backend prints them, the CUDA side of Kiln's runtime\n"
      "// (runtime/cuda/package_cuda.inc: the driver and cuBLAS loaded with dlopen), and the launch plan\n"
      "// as straight-line code; " + n + ".cpp calls it through " + n + "_cuda_open, _run_on and _close.\n";
  for (const char* point : {"kiln_abi_version", "kiln_bind", "kiln_output_sizes"})
    text += "#define " + std::string(point) + " " + n + "_cuda_" + point + "\n";
  text +=
      "#include <dlfcn.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
      "#include <array>\n#include <climits>\n#include <cmath>\n#include <cstddef>\n#include <cstdint>\n#include <memory>\n#include <new>\n"
      "#include <optional>\n#include <string>\n#include <utility>\n#include <vector>\n\n";
  text += compiled_abi_text() + "\n";
  text += emit_cpp_guard_entry_points(scheduled) + "\n";
  std::string image = n + "_device_code";
  text += "// The device code, in the library.\n"
          "extern \"C\" const unsigned char " + image + "[];\n"
          "__asm__(\".section .rodata\\n.balign 64\\n.globl " + image + "\\n.hidden " + image + "\\n" + image +
          ":\\n.incbin \\\"" + spec.device_image_file + "\\\"\\n.byte 0\\n.previous\\n\");\n\n";
  text += "namespace {\n\n";
  text += "// ---- runtime/cuda/driver_api.h\n" + runtime_namespace_body(cuda_driver_api_text(), "driver_api.h");
  text += "// ---- runtime/cuda/cublas_api.h\n" + runtime_namespace_body(cublas_api_text(), "cublas_api.h");
  text += "// ---- runtime/cuda/gemm_layout.inc\n" + std::string(gemm_layout_text()) + "\n";
  text += "// ---- runtime/cuda/cublas_calls.inc\n" + std::string(cublas_calls_text()) + "\n";
  text += "#ifdef KILN_PACKAGE_DEVICE_HEADER\n#include KILN_PACKAGE_DEVICE_HEADER\n#endif\n";
  text += "// ---- runtime/cuda/package_cuda.inc\n" + std::string(package_cuda_text()) + "\n";
  text += "// ---- the package's kernels and launch plan\n";
  std::vector<std::string> kernels = cuda_package_kernels(module);
  text += "const char* const kKernels[] = {";
  for (const std::string& kernel : kernels) text += quoted(kernel) + ", ";
  text += "nullptr};\n";
  text += "constexpr int kKernelCount = " + std::to_string(kernels.size()) + ";\n";
  text += std::string("constexpr bool kUsesBlas = ") + (spec.uses_blas ? "true" : "false") + ";\n\n";
  text += steps;
  text += "\n}  // namespace\n\n";
  text += "// The host keeps no workspace: the device's is in the model's PackageRun.\n";
  text += "extern \"C\" int64_t " + n + "_cuda_kiln_workspace_bytes(const int64_t*) { return 0; }\n\n";
  text += "extern \"C\" void* " + n +
          "_cuda_open(void* const* parameters, const int64_t* parameter_bytes, int64_t count, char* error, int64_t capacity) {\n"
          "  try {\n"
          "    std::unique_ptr<PackageRun> run(new PackageRun());\n"
          "    if (run->open(" + image + ", kKernels, kKernelCount, kUsesBlas, parameters, parameter_bytes, count)) return run.release();\n"
          "    snprintf(error, size_t(capacity), \"%s\", run->error.c_str());\n"
          "  } catch (const std::bad_alloc&) {\n"
          "    snprintf(error, size_t(capacity), \"out of memory\");\n"
          "  }\n"
          "  return nullptr;\n"
          "}\n\n";
  text += "extern \"C\" void " + n + "_cuda_close(void* device) { delete static_cast<PackageRun*>(device); }\n\n";
  text += "// A run on the caller's device memory (PackageRun::begin_device_io): the outputs' pointers go to `outputs`.\n"
          "extern \"C\" int32_t " + n + "_cuda_run_device(void* device, const KilnRunArgs* args, void* stream, void** outputs) {\n"
          "  PackageRun& run = *static_cast<PackageRun*>(device);\n"
          "  int32_t status = 1;\n"
          "  try {\n"
          "    if (run.begin_device_io(stream, outputs) && run_steps(run, args)) status = 0;\n"
          "    else snprintf(args->error, size_t(args->error_capacity), \"%s\", run.error.c_str());\n"
          "  } catch (const std::bad_alloc&) {\n"
          "    snprintf(args->error, size_t(args->error_capacity), \"out of memory\");\n"
          "  }\n"
          "  run.end_device_io();\n"
          "  return status;\n"
          "}\n\n";
  text += "// A copy between two places of device memory (an input's new value, on a run on device memory).\n"
          "extern \"C\" int32_t " + n + "_cuda_copy_device(void* device, void* to, const void* from, int64_t bytes, char* error, int64_t capacity) {\n"
          "  PackageRun& run = *static_cast<PackageRun*>(device);\n"
          "  if (run.copy(to, from, bytes)) return 0;\n"
          "  snprintf(error, size_t(capacity), \"%s\", run.error.c_str());\n"
          "  return 1;\n"
          "}\n\n";
  text += "extern \"C\" int32_t " + n + "_cuda_run_on(void* device, const KilnRunArgs* args) {\n"
          "  PackageRun& run = *static_cast<PackageRun*>(device);\n"
          "  try {\n"
          "    if (run_steps(run, args)) return 0;\n"
          "    snprintf(args->error, size_t(args->error_capacity), \"%s\", run.error.c_str());\n"
          "  } catch (const std::bad_alloc&) {\n"
          "    snprintf(args->error, size_t(args->error_capacity), \"out of memory\");\n"
          "  }\n"
          "  return 1;\n"
          "}\n";
  return text;
}

}  // namespace kiln::codegen
