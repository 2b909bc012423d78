// CompiledModel: a graph compiled for a code target (compiler/compile_driver.h) and loaded by that
// target's runtime loader (runtime/artifact.h), run like a function on tensors by name. It keeps
// the final graph for what the generated code hands back to the host: fallback nodes (run by
// their reference kernels) and the mutation outputs of the graph's signature (ir/graph_signature.h),
// whose values it copies back into their inputs, parameters and buffers, as PyTorch's in-place
// semantics require.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compile_options.h"
#include "compiler/executable.h"
#include "ir/graph.h"
#include "runtime/artifact.h"

namespace kiln::compiler {

class CompiledModel final : public Executable {
 public:
  // `graph`: the final graph the artifact was generated from (parameters and fallback nodes come
  // from it). Throws kiln::Error when the graph lacks a parameter the artifact takes or holds
  // one of another dtype or shape.
  CompiledModel(ir::Graph graph, std::unique_ptr<Artifact> artifact, CompileResult result);
  ~CompiledModel() override;
  CompiledModel(CompiledModel&&) noexcept;
  CompiledModel& operator=(CompiledModel&&) noexcept;

  // Runs on inputs by placeholder name; returns outputs in the graph's output order, less the
  // mutation outputs, which it copies back. Non-contiguous inputs are copied contiguous first
  // (the compiled code assumes contiguity).
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, int num_threads = 0) override;

  const CompileResult& result() const { return result_; }
  const CompileResult* compile_result() const override { return &result_; }
  double last_device_milliseconds() const override { return artifact_->last_device_milliseconds(); }
  const ir::Graph& graph() const { return graph_; }
  const Artifact& artifact() const { return *artifact_; }
  // The artifact as its loader's own type (runtime/cpu/cpu_artifact.h, runtime/cuda/cuda_artifact.h),
  // or nullptr when it is another target's.
  template <typename LoaderType>
  const LoaderType* artifact_as() const {
    return dynamic_cast<const LoaderType*>(artifact_.get());
  }

 private:
  // One mutation output of the signature: where its value is copied back.
  struct WriteBack {
    size_t output = 0;     // its position among the artifact's outputs
    std::string input;     // a user input's name, or empty
    std::string target;    // else a parameter's or buffer's get_attr target
    int parameter = -1;    // and that parameter's index among the artifact's, or -1
  };
  // Copies the mutation outputs back into `inputs` and the graph's parameters and buffers
  // (telling the artifact which parameter changed), and drops them from `outputs`.
  void write_back_mutations(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>& outputs);

  ir::Graph graph_;
  // graph_'s placeholders, found once: each run binds the symbols from them and checks the
  // inputs (walking the graph's nodes took 0.2 ms a call of an unrolled BiGRU's 8000).
  std::vector<ir::Node*> placeholders_;
  std::unique_ptr<Artifact> artifact_;
  CompileResult result_;
  std::vector<Tensor> parameters_;  // in the artifact's order, contiguous
  std::vector<WriteBack> write_backs_;  // in output order
};

// What CompiledModel::run does with a graph's mutation outputs, for a graph run another way (the
// interpreter): copies each into what it mutates (the caller's input by name, or the graph's
// parameter or buffer) and drops it from `outputs`, which held every output of `graph`.
void write_back_mutation_outputs(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                                 std::vector<Tensor>& outputs);

}  // namespace kiln::compiler
