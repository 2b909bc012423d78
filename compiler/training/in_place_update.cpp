// InPlaceUpdate. See compiler/training/in_place_update.h.
#include "compiler/training/in_place_update.h"

#include "runtime/cpu/cpu_artifact.h"
#include "kiln/error.h"

namespace kiln::training {

namespace {

constexpr int64_t kErrorCapacity = 1024;

KilnTensorDesc describe(const Tensor& tensor) {
  return KilnTensorDesc{tensor.data_ptr(), tensor.sizes().data(), tensor.strides().data(), int32_t(tensor.dtype()),
                        int32_t(tensor.dim())};
}

}  // namespace

bool InPlaceUpdate::supports(const compiler::CompiledModel& model) {
  return model.artifact_as<CpuArtifact>() != nullptr && model.result().kernel_count == 1 &&
         model.artifact().fallbacks().empty() && model.artifact().parameters().empty();
}

InPlaceUpdate::InPlaceUpdate(const compiler::CompiledModel& model)
    : model_(&model) {
  KILN_CHECK(supports(model), "an in-place update needs a cpu artifact of one kernel, no fallbacks and no parameters");
  library_ = SharedLibrary::open(model.artifact().directory() / model.artifact_as<CpuArtifact>()->manifest().library);
  workspace_bytes_ = library_.function<int64_t (*)(const int64_t*)>("kiln_workspace_bytes");
  run_ = library_.function<int32_t (*)(const KilnRunArgs*)>("kiln_run");
}

void InPlaceUpdate::run(const std::map<std::string, Tensor>& inputs, const std::vector<Tensor>& outputs, int num_threads) {
  const CpuArtifact& artifact = *model_->artifact_as<CpuArtifact>();
  std::vector<Tensor> ordered;
  for (const ArtifactTensor& input : artifact.inputs()) {
    auto it = inputs.find(input.name);
    KILN_CHECK(it != inputs.end() && it->second.is_contiguous(), "update input '", input.name, "' given, contiguous");
    ordered.push_back(it->second);
  }
  std::vector<int64_t> symbols = artifact.bind(ordered);  // the module's guards
  symbols.push_back(0);                                   // never an empty array
  std::vector<KilnTensorDesc> input_descs;
  for (const Tensor& input : ordered) input_descs.push_back(describe(input));

  const std::vector<ir::Node*> graph_outputs = model_->graph().outputs();
  KILN_CHECK(outputs.size() == graph_outputs.size(), "one buffer per update output");
  std::vector<void*> output_data;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::TensorMeta& meta = graph_outputs[i]->value();
    KILN_CHECK(outputs[i].is_contiguous() && outputs[i].dtype() == meta.dtype && outputs[i].sizes() == meta.static_shape(),
               "update output ", i, " is a contiguous ", meta.type_string());
    output_data.push_back(outputs[i].data_ptr());
  }

  std::string error(size_t(kErrorCapacity), '\0');
  KilnRunArgs args{};
  args.inputs = input_descs.data();
  args.outputs = output_data.data();
  args.parameters = nullptr;
  args.symbols = symbols.data();
  args.fallback = nullptr;
  args.fallback_state = nullptr;
  args.error = error.data();
  args.error_capacity = kErrorCapacity;
  args.num_threads = num_threads;
  args.workspace = workspace_.reserve(size_t(workspace_bytes_(symbols.data())));
  if (run_(&args) != 0) fail("the compiled optimizer update in ", artifact.directory().string(), " failed: ", error.c_str());
}

}  // namespace kiln::training
