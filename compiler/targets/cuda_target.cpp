// The cuda target: emitter, launch plan, build step (NVRTC) and loader. See
// compiler/targets/cuda_target.h.
#include "compiler/targets/cuda_target.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compiler/targets/cuda_package.h"
#include "runtime/atomic_file.h"
#include "runtime/checksum.h"
#include "runtime/cuda/cuda_artifact.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/device_code_cache.h"
#include "runtime/cuda/launch_plan.h"
#include "runtime/cuda/library_search.h"
#include "runtime/cuda/nvrtc.h"
#include "kiln/error.h"

namespace kiln::compiler {

namespace {

namespace cg = codegen::cuda;
using nlohmann::json;

constexpr const char* kSourceFile = "kernels.cu";

struct CudaCode final : GeneratedCode {
  cg::CudaModule module;
  json plan;  // launch_plan_json with "architecture" left empty (the build fills it in)
  std::shared_ptr<const codegen::ScheduledProgram> scheduled;  // for packages (their host code)
  int sm = 80;                                                 // the architecture of the compile
};

int target_sm(const CompileOptions& options) {
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

// Every line of `text` behind "// ".
std::string as_comments(const std::string& text) {
  std::istringstream lines(text);
  std::string out, line;
  while (std::getline(lines, line)) out += "// " + line + "\n";
  return out;
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

json sizes_json(const ir::SymShape& shape) {
  json sizes = json::array();
  for (const ir::SymInt& d : shape) sizes.push_back(d.to_string());
  return sizes;
}

json view_json(const codegen::LoopProgram& p, const codegen::StridedView& view) {
  return {{"buffer", p.buffer(view.buffer).name}, {"shape", sizes_json(view.shape)}, {"strides", sizes_json(view.strides)},
          {"offset", view.offset.to_string()}};
}

json buffers_json(const codegen::ScheduledProgram& scheduled) {
  const codegen::LoopProgram& p = scheduled.program;
  json buffers = json::array();
  for (const codegen::Buffer& b : p.buffers) {
    json entry = {{"id", b.id}, {"name", b.name}, {"kind", buffer_kind_name(b.kind)}, {"dtype", dtype_name(b.dtype)},
                  {"shape", sizes_json(b.shape)}};
    if (!b.source.empty()) entry["source"] = b.source;
    if (auto it = scheduled.memory.offsets.find(b.id); it != scheduled.memory.offsets.end()) {
      entry["workspace_offset"] = it->second.to_string();
    }
    buffers.push_back(entry);
  }
  return buffers;
}

json library_step_json(const codegen::LoopProgram& p, const cg::CudaModule& module, const cg::LaunchStep& step) {
  const codegen::LoopNode& node = p.nodes.at(size_t(step.loop_node));
  const codegen::ExternCall& call = node.extern_call;
  bool gemm = call.kind == codegen::ExternKind::Gemm;
  json entry = {{"library", gemm ? "gemm" : "fallback"}, {"node", node.name}, {"graph_node", gemm ? node.name : call.graph_node}};
  json inputs = json::array(), outputs = json::array();
  for (const codegen::StridedView& view : call.inputs) inputs.push_back(view_json(p, view));
  for (const codegen::StridedView& view : call.outputs) outputs.push_back(view_json(p, view));
  entry["inputs"] = inputs;
  entry["outputs"] = outputs;
  if (!gemm) {
    auto found = std::find(module.fallbacks.begin(), module.fallbacks.end(), call.graph_node);
    KILN_CHECK(found != module.fallbacks.end(), "fallback ", call.graph_node, " is not in the module's list");
    entry["fallback"] = found - module.fallbacks.begin();
  }
  if (const std::optional<cg::FusedGemmEpilogue>& epilogue = step.epilogue) {
    entry["library"] = "gemm_lt";
    entry["epilogue"] = cg::epilogue_name(*epilogue);
    if (epilogue->bias) {
      entry["bias"] = {{"buffer", p.buffer(epilogue->bias->buffer).name}, {"offset", epilogue->bias->offset.to_string()}};
    }
    entry["output"] = p.buffer(epilogue->output).name;
  }
  return entry;
}

json kernel_step_json(const codegen::LoopProgram& p, const cg::KernelLaunch& launch) {
  json arguments = json::array();
  for (const cg::KernelArgument& argument : launch.arguments) {
    switch (argument.kind) {
      case cg::KernelArgument::Kind::Buffer: arguments.push_back("buffer " + p.buffer(argument.buffer).name); break;
      case cg::KernelArgument::Kind::Symbol: arguments.push_back("symbol " + argument.symbol); break;
      case cg::KernelArgument::Kind::Scratch: arguments.push_back("scratch"); break;
    }
  }
  return {{"kernel", launch.name}, {"grid", launch.grid.to_string()}, {"block", launch.block},
          {"shared_bytes", launch.shared_bytes}, {"arguments", arguments}};
}

json launch_plan(const codegen::ScheduledProgram& scheduled, const cg::CudaModule& module, const std::string& architecture) {
  const codegen::LoopProgram& p = scheduled.program;
  json symbols = json::array();
  for (const std::string& symbol : p.symbols) {
    auto source = std::find_if(p.symbol_sources.begin(), p.symbol_sources.end(),
                               [&](const codegen::LoopProgram::SymbolSource& s) { return s.symbol == symbol; });
    KILN_CHECK(source != p.symbol_sources.end(), "symbol ", symbol, " is bound from no input dim");
    json entry = {{"name", symbol}, {"input", source->input}, {"dim", source->dim}};
    for (const codegen::LoopProgram::SymbolRange& range : p.symbol_ranges) {
      if (range.symbol != symbol) continue;
      entry["min"] = range.min;
      if (range.max) entry["max"] = *range.max;
    }
    symbols.push_back(entry);
  }
  auto names = [&](const std::vector<int>& ids) {
    json list = json::array();
    for (int id : ids) list.push_back(p.buffer(id).name);
    return list;
  };
  json steps = json::array();
  for (const cg::LaunchStep& step : module.steps) {
    steps.push_back(step.kind == cg::LaunchStep::Kind::Library ? library_step_json(p, module, step)
                                                               : kernel_step_json(p, step.launch));
  }
  return {{"format", cuda::kLaunchPlanFormat},
          {"version", cuda::kLaunchPlanVersion},
          {"architecture", architecture},
          {"nvrtc_options", module.nvrtc_options},
          {"symbols", symbols},
          {"inputs", names(p.inputs)},
          {"parameters", names(p.parameters)},
          {"outputs", names(p.outputs)},
          {"fallbacks", module.fallbacks},
          {"workspace_bytes", module.workspace_bytes.to_string()},
          {"scratch_offset", module.scratch_offset.to_string()},
          {"buffers", buffers_json(scheduled)},
          {"steps", steps}};
}

std::string plan_text(json plan, const std::string& architecture) {
  plan["architecture"] = architecture;
  return plan.dump(2) + "\n";
}

class CudaTarget final : public CodeTarget {
 public:
  std::string_view code_stage() const override { return "cuda"; }
  std::string_view code_stage_summary() const override {
    return "the CUDA launch plan (as comments) and the generated kernels";
  }

  std::unique_ptr<GeneratedCode> emit(const codegen::ScheduledProgram& scheduled,
                                      const std::optional<std::string>& title,
                                      const CompileOptions& options) const override {
    cg::CudaEmitOptions emit_options;
    if (title) emit_options.title = *title;
    auto code = std::make_unique<CudaCode>();
    code->module = cg::emit_cuda(scheduled, emit_options);
    code->source = code->module.source;
    for (const cg::LaunchStep& step : code->module.steps)
      if (step.kind == cg::LaunchStep::Kind::Kernel) ++code->kernel_count;
    code->plan = launch_plan(scheduled, code->module, "");
    code->scheduled = std::make_shared<const codegen::ScheduledProgram>(scheduled);
    code->sm = target_sm(options);
    return code;
  }

  std::string dump(const GeneratedCode& generated) const override {
    const cg::CudaModule& module = static_cast<const CudaCode&>(generated).module;
    return "// launch plan\n" + as_comments(cg::launch_plan_text(module)) + "\n" + cg::kernels_text(module);
  }

  std::string cache_key(const GeneratedCode& generated, const CompileOptions& options) const override {
    const CudaCode& code = static_cast<const CudaCode&>(generated);
    const cuda::Nvrtc& nvrtc = cuda::nvrtc();
    int sm = target_sm(options);
    std::string content = cuda::device_code_key_text(nvrtc, code.source, sm, nvrtc_options(code.module)) +
                          "\nlaunch plan\n" + plan_text(code.plan, nvrtc.target_architecture(sm));
    Checksum64 a(0), b(0x9E3779B97F4A7C15ULL);
    a.update(content.data(), content.size());
    b.update(content.data(), content.size());
    return checksum_hex(a.digest()) + checksum_hex(b.digest());
  }

  void build(const GeneratedCode& generated, const std::string&, const CompileOptions& options,
             const std::filesystem::path& directory) const override {
    const CudaCode& code = static_cast<const CudaCode&>(generated);
    cuda::DeviceCode device_code =
        cuda::nvrtc().compile(code.source, kSourceFile, target_sm(options), nvrtc_options(code.module));
    write_file_atomically((directory / kSourceFile).string(), code.source);
    write_file_atomically((directory / cuda::kLaunchPlanFile).string(), plan_text(code.plan, device_code.architecture));
    cuda::write_device_code(directory, device_code);
  }
  std::string_view build_stage() const override { return "nvrtc"; }
  std::vector<std::string> artifact_files() const override {
    return {kSourceFile, cuda::kLaunchPlanFile, cuda::kCubinFile, cuda::kPtxFile};
  }

  PackageResult write_package(const GeneratedCode& generated, const ir::Graph& graph,
                              const PackageOptions& options) const override {
    const CudaCode& code = static_cast<const CudaCode&>(generated);
    return write_cuda_package({code.scheduled.get(), &code.module, code.sm, code.kernel_count}, graph, options);
  }

  std::unique_ptr<Artifact> load(const std::filesystem::path& directory) const override {
    return cuda::CudaArtifact::load(directory);
  }
  std::string describe(const GeneratedCode& generated, const Artifact& artifact) const override {
    const CudaCode& code = static_cast<const CudaCode&>(generated);
    size_t library_calls = code.module.steps.size() - code.kernel_count;
    return std::to_string(library_calls) + (library_calls == 1 ? " library call, " : " library calls, ") +
           static_cast<const cuda::CudaArtifact&>(artifact).plan().architecture;
  }
};

}  // namespace

std::string launch_plan_json(const codegen::ScheduledProgram& scheduled, const cg::CudaModule& module,
                             const std::string& architecture) {
  return launch_plan(scheduled, module, architecture).dump(2) + "\n";
}

const CodeTarget& cuda_target() {
  static const CudaTarget target;
  return target;
}

}  // namespace kiln::compiler
