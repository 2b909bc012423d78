// The target registry's rows. See compiler/target_registry.h.
#include "compiler/target_registry.h"

#include "compiler/compile_driver.h"
#include "compiler/eager_executor.h"
#include "compiler/package_writer.h"
#include "compiler/targets/cpu_target.h"
#include "compiler/targets/cuda_target.h"
#include "ir/interpreter.h"
#include "kiln/error.h"

namespace kiln::compiler {

PackageResult CodeTarget::write_package(const GeneratedCode&, const ir::Graph&, const PackageOptions&) const {
  fail("the ", code_stage(), " target writes no packages yet (compile for --target cpu, or without -o)");
}

namespace {

std::unique_ptr<Executable> compiled(const ir::Graph& graph, const CompileOptions& options) {
  return std::make_unique<CompiledModel>(compile(graph, options));
}

// The reference interpreter on (a copy of) the graph.
class Interpreted final : public Executable {
 public:
  explicit Interpreted(const ir::Graph& graph) : graph_(graph.clone()) {}
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, int) override {
    return ir::Interpreter().run(graph_, inputs);
  }

 private:
  ir::Graph graph_;
};

// Eager mode: one VM, made once, for every run.
class Eager final : public Executable {
 public:
  explicit Eager(const ir::Graph& graph) : graph_(graph.clone()) {}
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, int) override {
    return executor_.run(graph_, inputs);
  }

 private:
  ir::Graph graph_;
  EagerExecutor executor_;
};

std::unique_ptr<Executable> interpreted(const ir::Graph& graph, const CompileOptions&) {
  return std::make_unique<Interpreted>(graph);
}
std::unique_ptr<Executable> eager(const ir::Graph& graph, const CompileOptions&) { return std::make_unique<Eager>(graph); }

}  // namespace

const std::vector<TargetInfo>& targets() {
  static const std::vector<TargetInfo> rows = {
      {"cpu", "compiled C++ (OpenMP, AVX-512/AVX2) in a shared object", &cpu_target(), &compiled},
      {"cuda", "compiled CUDA (NVRTC) run on the GPU", &cuda_target(), &compiled},
      {"interp", "the reference interpreter", nullptr, &interpreted},
      {"eager", "the interpreter's kernels as instructions of the VM", nullptr, &eager},
  };
  return rows;
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const TargetInfo& target : targets()) names.emplace_back(target.name);
  return names;
}

std::string target_list() {
  std::string list;
  for (const TargetInfo& target : targets()) list += (list.empty() ? "" : ", ") + std::string(target.name);
  return list;
}

const TargetInfo& find_target(std::string_view name) {
  for (const TargetInfo& target : targets())
    if (target.name == name) return target;
  fail("unknown target '", name, "' (known: ", target_list(), ")");
}

const CodeTarget& find_code_target(std::string_view name) {
  const TargetInfo& target = find_target(name);
  if (target.code != nullptr) return *target.code;
  std::string code_targets;
  for (const TargetInfo& row : targets())
    if (row.code != nullptr) code_targets += (code_targets.empty() ? "" : ", ") + std::string(row.name);
  fail("target '", name, "' runs the graph and generates no code (the targets that compile: ", code_targets, ")");
}

std::unique_ptr<Executable> prepare(const ir::Graph& graph, const CompileOptions& options) {
  return find_target(options.target).prepare(graph, options);
}

}  // namespace kiln::compiler
