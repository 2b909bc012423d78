// kiln::Package: a package loaded through its own C API. See include/kiln/package.h.
#include "kiln/package.h"

#include <cstring>

#include "kiln/error.h"
#include "runtime/cpu/openblas_core_type.h"
#include "runtime/cpu/openmp_wait_policy.h"
#include "runtime/package_abi.h"
#include "runtime/package_manifest.h"
#include "runtime/shared_library.h"

namespace kiln {

struct Package::State {
  PackageManifest manifest;
  SharedLibrary library;
  void* model = nullptr;
  KilnStatus (*create)(const char*, void**) = nullptr;
  KilnStatus (*run)(void*, const KilnTensor*, int64_t, KilnTensor*, int64_t) = nullptr;
  void (*destroy)(void*) = nullptr;
  void (*set_num_threads)(void*, int32_t) = nullptr;
  const char* (*isa)(const void*) = nullptr;
  const char* (*last_error)(void) = nullptr;

  ~State() {
    if (model != nullptr && destroy != nullptr) destroy(model);
  }
};

Package::Package(std::unique_ptr<State> state) : state_(std::move(state)) {}
Package::~Package() = default;
Package::Package(Package&&) noexcept = default;
Package& Package::operator=(Package&&) noexcept = default;

Package Package::load(const std::filesystem::path& directory, const std::filesystem::path& weights) {
  auto state = std::make_unique<State>();
  state->manifest = read_package_manifest(directory / kPackageManifestFile);
  const PackageManifest& m = state->manifest;
  std::string where = "package " + directory.string();
  if (m.abi != KILN_PACKAGE_ABI)
    fail(where, " has package ABI ", m.abi, "; this Kiln runs ABI ", KILN_PACKAGE_ABI, " (compile the model again)");
  // The package's library links libgomp and OpenBLAS: their settings are chosen before it loads
  // them, as for a compiled module (runtime/cpu/cpu_artifact.cpp). Without the core type, Debian
  // 12's OpenBLAS ran its SSE3 kernels here (an unrolled BiGRU's package, not frozen: 3.7x the
  // latency of the same model compiled by `kiln run`).
  prefer_short_openmp_spins();
  choose_openblas_core_type();
  state->library = SharedLibrary::open(directory / m.shared_library);
  const std::string& n = m.name;
  state->create = state->library.function<KilnStatus (*)(const char*, void**)>(n + "_create");
  state->run = state->library.function<KilnStatus (*)(void*, const KilnTensor*, int64_t, KilnTensor*, int64_t)>(n + "_run");
  state->destroy = state->library.function<void (*)(void*)>(n + "_destroy");
  state->set_num_threads = state->library.function<void (*)(void*, int32_t)>(n + "_set_num_threads");
  state->isa = state->library.function<const char* (*)(const void*)>(n + "_isa");
  state->last_error = state->library.function<const char* (*)(void)>(n + "_last_error");
  int32_t abi = state->library.function<int32_t (*)(void)>(n + "_abi_version")();
  if (abi != KILN_PACKAGE_ABI)
    fail(where, ": its library implements package ABI ", abi, ", its manifest says ", m.abi, " (a library of another build)");
  // The library's own copy when it has one (--embed-weights), unless another file is named.
  std::filesystem::path weights_file = weights.empty() ? directory / m.weights_file : weights;
  const char* path = weights.empty() && m.embedded_weights ? nullptr : weights_file.c_str();
  if (state->create(path, &state->model) != KILN_OK) fail(state->last_error());
  return Package(std::move(state));
}

const std::string& Package::name() const { return state_->manifest.name; }
const std::vector<PackageTensorInfo>& Package::inputs() const { return state_->manifest.inputs; }
const std::vector<PackageTensorInfo>& Package::outputs() const { return state_->manifest.outputs; }

std::string Package::isa() const { return state_->isa(state_->model); }

std::vector<Tensor> Package::run(const std::vector<Tensor>& inputs, int num_threads) {
  state_->set_num_threads(state_->model, num_threads);
  std::vector<Tensor> contiguous;
  std::vector<KilnTensor> arguments;
  contiguous.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    contiguous.push_back(input.contiguous());
    const Tensor& t = contiguous.back();
    arguments.push_back({t.data_ptr(), t.sizes().data(), nullptr, int32_t(t.dim()), int32_t(t.dtype())});
  }
  std::vector<KilnTensor> outputs(state_->manifest.outputs.size());
  if (state_->run(state_->model, arguments.data(), int64_t(arguments.size()), outputs.data(), int64_t(outputs.size())) != KILN_OK)
    fail(state_->last_error());
  // The inputs the model writes in place: back into the caller's tensor when it was copied.
  for (const std::string& name : state_->manifest.mutated_inputs)
    for (size_t i = 0; i < inputs.size() && i < state_->manifest.inputs.size(); ++i)
      if (state_->manifest.inputs[i].name == name && contiguous[i].data_ptr() != inputs[i].data_ptr())
        inputs[i].copy_from(contiguous[i]);
  std::vector<Tensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Sizes sizes(outputs[i].sizes, outputs[i].sizes + outputs[i].rank);
    Tensor result = Tensor::empty(sizes, DType(outputs[i].dtype));
    if (result.nbytes() > 0) std::memcpy(result.data_ptr(), outputs[i].data, result.nbytes());
    results.push_back(std::move(result));
  }
  return results;
}

std::vector<Tensor> Package::run(const std::map<std::string, Tensor>& inputs, int num_threads) {
  std::vector<Tensor> ordered;
  for (const PackageTensorInfo& input : state_->manifest.inputs) {
    auto it = inputs.find(input.name);
    if (it == inputs.end()) fail("package ", state_->manifest.name, ": input '", input.name, "' is missing");
    ordered.push_back(it->second);
  }
  for (const auto& [name, tensor] : inputs) {
    bool known = false;
    for (const PackageTensorInfo& input : state_->manifest.inputs) known = known || input.name == name;
    if (!known) fail("package ", state_->manifest.name, " has no input '", name, "'");
  }
  return run(ordered, num_threads);
}

}  // namespace kiln
