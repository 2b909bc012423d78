// The cpu target's loader: a module.so run through the C ABI of runtime/compiled_abi.h.
#include "runtime/cpu/cpu_artifact.h"
#include "runtime/cpu/openblas_core_type.h"
#include "runtime/cpu/openmp_wait_policy.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <variant>

#include "runtime/compiled_abi.h"
#include "runtime/shared_library.h"
#include "runtime/workspace.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

using AbiVersionFn = int32_t (*)();
using BindFn = int32_t (*)(const KilnTensorDesc*, int64_t, int64_t*, char*, int64_t);
using OutputSizesFn = void (*)(const int64_t*, int64_t*);
using WorkspaceBytesFn = int64_t (*)(const int64_t*);
using RunFn = int32_t (*)(const KilnRunArgs*);

constexpr int64_t kErrorCapacity = 4096;

// A message buffer handed to the module; always NUL-terminated when read back.
// On the stack, with only its first byte cleared: it costs a call nothing (it was a 4 KiB string,
// allocated and zeroed twice per call).
class ErrorBuffer {
 public:
  ErrorBuffer() { text_[0] = '\0'; }
  char* data() { return text_; }
  int64_t capacity() const { return kErrorCapacity; }
  // The module's message, else `otherwise`.
  std::string message(const std::string& otherwise = "(the module gave no message)") const {
    size_t length = strnlen(text_, size_t(kErrorCapacity) - 1);
    return length == 0 ? otherwise : std::string(text_, length);
  }

 private:
  char text_[kErrorCapacity];
};

void write_error(char* error, int64_t capacity, const std::string& message) noexcept {
  if (error == nullptr || capacity <= 0) return;
  size_t length = std::min(message.size(), size_t(capacity - 1));
  std::memcpy(error, message.data(), length);
  error[length] = '\0';
}

KilnTensorDesc describe(const Tensor& tensor) {
  return KilnTensorDesc{tensor.data_ptr(), tensor.sizes().data(), tensor.strides().data(), int32_t(tensor.dtype()),
                        int32_t(tensor.dim())};
}

// A Tensor viewing memory the module owns (no copy; valid during the callback only), or the
// reason the descriptor makes no sense.
std::variant<Tensor, std::string> view_of(const KilnTensorDesc& desc) {
  constexpr int32_t kDTypeCount = int32_t(std::size(kAllDTypes));
  if (desc.dtype < 0 || desc.dtype >= kDTypeCount) return "dtype code " + std::to_string(desc.dtype);
  if (desc.rank < 0 || (desc.rank > 0 && (desc.sizes == nullptr || desc.strides == nullptr)))
    return "rank " + std::to_string(desc.rank) + " without sizes and strides";
  DType dtype = DType(desc.dtype);
  Sizes sizes(desc.sizes, desc.sizes + desc.rank), strides(desc.strides, desc.strides + desc.rank);
  int64_t lowest = 0, highest = 0;  // element offsets reached, relative to `data`
  bool empty = false;
  for (int32_t d = 0; d < desc.rank; ++d) {
    if (sizes[d] < 0) return "negative size in " + sizes_to_string(sizes);
    if (sizes[d] == 0) empty = true;
    int64_t reach = (sizes[d] - 1) * strides[d];
    (reach < 0 ? lowest : highest) += reach;
  }
  if (!empty && desc.data == nullptr) return std::string("null data");
  if (empty) lowest = highest = 0;
  const int64_t element = int64_t(dtype_size(dtype));
  char* base = static_cast<char*>(desc.data) + lowest * element;
  size_t nbytes = empty ? 0 : size_t((highest - lowest + 1) * element);
  auto storage = std::make_shared<Storage>(base, nbytes, Device::cpu(), [](void*) {});
  return Tensor(std::move(storage), std::move(sizes), std::move(strides), -lowest, dtype);
}

struct FallbackContext {
  const FallbackHandler* handler;
  const ArtifactManifest* manifest;
  std::string failure;  // the last failure's message, in case the module does not pass it on
};

std::string fallback_name(const ArtifactManifest& manifest, int32_t index) {
  if (index >= 0 && size_t(index) < manifest.fallbacks.size())
    return "fallback '" + manifest.fallbacks[size_t(index)] + "' (#" + std::to_string(index) + ")";
  return "fallback #" + std::to_string(index);
}

// Runs the handler for one fallback node; throws kiln::Error on any misuse.
void run_fallback(FallbackContext& context, int32_t index, const KilnTensorDesc* input_descs, int32_t num_inputs,
                  const KilnTensorDesc* output_descs, int32_t num_outputs) {
  if (index < 0 || size_t(index) >= context.manifest->fallbacks.size())
    fail("the module called fallback #", index, " but the manifest lists ", context.manifest->fallbacks.size());
  auto views = [](const KilnTensorDesc* descs, int32_t count, const char* what) {
    std::vector<Tensor> tensors(size_t(std::max(count, 0)));
    for (int32_t i = 0; i < count; ++i) {
      std::variant<Tensor, std::string> view = view_of(descs[i]);
      if (auto* why = std::get_if<std::string>(&view)) fail("the module passed a bad ", what, " #", i, ": ", *why);
      tensors[size_t(i)] = std::get<Tensor>(std::move(view));
    }
    return tensors;
  };
  call_fallback_handler(*context.handler, int(index), views(input_descs, num_inputs, "input"),
                        views(output_descs, num_outputs, "output"));
}

// The KilnFallbackFn given to the module: no exception crosses back into C.
int32_t fallback_trampoline(void* state, int32_t index, const KilnTensorDesc* inputs, int32_t num_inputs,
                            const KilnTensorDesc* outputs, int32_t num_outputs, char* error,
                            int64_t error_capacity) noexcept {
  auto& context = *static_cast<FallbackContext*>(state);
  try {
    run_fallback(context, index, inputs, num_inputs, outputs, num_outputs);
    return 0;
  } catch (const std::exception& exception) {
    context.failure = fallback_name(*context.manifest, index) + " failed: " + exception.what();
  } catch (...) {
    context.failure = fallback_name(*context.manifest, index) + " failed with an unknown exception";
  }
  write_error(error, error_capacity, context.failure);
  return 1;
}

}  // namespace

struct CpuArtifact::Loaded {
  fs::path directory;
  ArtifactManifest manifest;
  SharedLibrary library;
  BindFn bind = nullptr;
  OutputSizesFn output_sizes = nullptr;
  WorkspaceBytesFn workspace_bytes = nullptr;
  RunFn run = nullptr;
  std::mutex run_mutex;  // guards workspace
  Workspace workspace;

  std::vector<KilnTensorDesc> describe_inputs(const std::vector<Tensor>& inputs) const {
    if (inputs.size() != manifest.inputs.size())
      fail("compiled model in ", directory.string(), " takes ", manifest.inputs.size(), " inputs, got ", inputs.size());
    std::vector<KilnTensorDesc> descs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& input = inputs[i];
      if (!input.defined()) fail("compiled model in ", directory.string(), ": input '", manifest.inputs[i].name, "' is undefined");
      if (!input.device().is_cpu())
        fail("compiled model in ", directory.string(), ": input '", manifest.inputs[i].name, "' is on ",
             input.device().to_string(), ", the model runs on cpu");
      descs.push_back(describe(input));
    }
    return descs;
  }

  std::vector<int64_t> bind_symbols(const std::vector<KilnTensorDesc>& descs) const {
    std::vector<int64_t> symbols(std::max<size_t>(manifest.symbols.size(), 1), 0);
    ErrorBuffer error;
    if (bind(descs.data(), int64_t(descs.size()), symbols.data(), error.data(), error.capacity()) != 0)
      throw GuardError("guard of the compiled model in " + directory.string() + " failed: " + error.message());
    symbols.resize(manifest.symbols.size());
    return symbols;
  }

  std::vector<void*> parameter_pointers(const std::vector<Tensor>& parameters) const {
    if (parameters.size() != manifest.parameters.size())
      fail("compiled model in ", directory.string(), " takes ", manifest.parameters.size(), " parameters, got ",
           parameters.size());
    std::vector<void*> pointers;
    for (size_t i = 0; i < parameters.size(); ++i) {
      const Tensor& parameter = parameters[i];
      const ArtifactParameter& expected = manifest.parameters[i];
      // Checked on every call: the message is made only when a check fails.
      auto what = [&] { return "compiled model in " + directory.string() + ": parameter '" + expected.name + "'"; };
      if (parameter.defined() && parameter.device().is_cpu() && parameter.dtype() == expected.dtype &&
          parameter.sizes() == expected.shape && parameter.is_contiguous()) {
        pointers.push_back(parameter.data_ptr());
        continue;
      }
      if (!parameter.defined()) fail(what(), " is undefined");
      if (!parameter.device().is_cpu()) fail(what(), " is on ", parameter.device().to_string(), ", the model runs on cpu");
      if (parameter.dtype() != expected.dtype || parameter.sizes() != expected.shape)
        fail(what(), " must be ", dtype_name(expected.dtype), sizes_to_string(expected.shape), ", got ",
             dtype_name(parameter.dtype()), sizes_to_string(parameter.sizes()));
      if (!parameter.is_contiguous())
        fail(what(), " must be contiguous (strides ", sizes_to_string(parameter.strides()), "); pass parameter.contiguous()");
      pointers.push_back(parameter.data_ptr());
    }
    return pointers;
  }
};

CpuArtifact::CpuArtifact(std::unique_ptr<Loaded> loaded) : loaded_(std::move(loaded)) {}
CpuArtifact::~CpuArtifact() = default;
CpuArtifact::CpuArtifact(CpuArtifact&&) noexcept = default;
CpuArtifact& CpuArtifact::operator=(CpuArtifact&&) noexcept = default;

const fs::path& CpuArtifact::directory() const { return loaded_->directory; }
const ArtifactManifest& CpuArtifact::manifest() const { return loaded_->manifest; }

size_t CpuArtifact::workspace_capacity() const {
  std::lock_guard<std::mutex> guard(loaded_->run_mutex);
  return loaded_->workspace.capacity();
}

CpuArtifact CpuArtifact::load(const fs::path& directory) {
  auto loaded = std::make_unique<Loaded>();
  loaded->directory = fs::absolute(directory).lexically_normal();
  const std::string where = loaded->directory.string();
  std::error_code error;
  if (!fs::is_directory(loaded->directory, error)) fail("no compiled artifact at ", where, ": not a directory");
  loaded->manifest = read_artifact_manifest(loaded->directory / kArtifactManifestFile);
  const ArtifactManifest& manifest = loaded->manifest;
  if (manifest.abi != kKilnAbiVersion)
    fail("compiled artifact ", where, " uses ABI version ", manifest.abi, " but this Kiln loads version ",
         int(kKilnAbiVersion), "; recompile the model");
  if (!host_supports(manifest.isa))
    fail("compiled artifact ", where, " was built for ", isa_name(manifest.isa), ", which this CPU cannot run (it supports ",
         isa_name(host_isa()), "); recompile the model on this machine");
  prefer_short_openmp_spins();  // before the module loads libgomp
  choose_openblas_core_type();  // and OpenBLAS
  loaded->library = SharedLibrary::open(loaded->directory / manifest.library);
  const SharedLibrary& library = loaded->library;
  int32_t module_abi = library.function<AbiVersionFn>("kiln_abi_version")();
  if (module_abi != kKilnAbiVersion)
    fail("compiled artifact ", where, ": ", manifest.library, " reports ABI version ", module_abi,
         " but this Kiln loads version ", int(kKilnAbiVersion), "; recompile the model");
  loaded->bind = library.function<BindFn>("kiln_bind");
  loaded->output_sizes = library.function<OutputSizesFn>("kiln_output_sizes");
  loaded->workspace_bytes = library.function<WorkspaceBytesFn>("kiln_workspace_bytes");
  loaded->run = library.function<RunFn>("kiln_run");
  return CpuArtifact(std::move(loaded));
}

std::vector<int64_t> CpuArtifact::bind(const std::vector<Tensor>& inputs) const {
  return loaded_->bind_symbols(loaded_->describe_inputs(inputs));
}

std::vector<Tensor> CpuArtifact::run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                                          const FallbackHandler& fallback, int num_threads) {
  Loaded& state = *loaded_;
  const ArtifactManifest& manifest = state.manifest;
  const std::string where = "compiled model in " + state.directory.string();
  if (num_threads < 0) fail(where, ": num_threads must be >= 0 (0: the OpenMP default), got ", num_threads);
  if (!manifest.fallbacks.empty() && !fallback)
    fail(where, " runs ", manifest.fallbacks.size(), " node(s) on the reference kernels (first: '",
         manifest.fallbacks.front(), "') and needs a fallback handler");

  std::vector<KilnTensorDesc> input_descs = state.describe_inputs(inputs);
  std::vector<void*> parameter_data = state.parameter_pointers(parameters);
  std::vector<int64_t> symbols = state.bind_symbols(input_descs);
  symbols.push_back(0);  // never an empty array: data() stays a valid pointer

  int64_t total_rank = 0;
  for (const ArtifactTensor& output : manifest.outputs) total_rank += output.rank;
  std::vector<int64_t> sizes(size_t(std::max<int64_t>(total_rank, 1)), 0);
  state.output_sizes(symbols.data(), sizes.data());
  std::vector<Tensor> outputs;
  std::vector<void*> output_data;
  size_t next = 0;
  for (const ArtifactTensor& output : manifest.outputs) {
    Sizes shape(sizes.begin() + int64_t(next), sizes.begin() + int64_t(next) + output.rank);
    next += size_t(output.rank);
    if (std::any_of(shape.begin(), shape.end(), [](int64_t size) { return size < 0; }))
      fail(where, ": the module reported sizes ", sizes_to_string(shape), " for output '", output.name, "'");
    outputs.push_back(Tensor::empty(shape, output.dtype));
    output_data.push_back(outputs.back().data_ptr());
  }

  const int64_t workspace_bytes = state.workspace_bytes(symbols.data());
  if (workspace_bytes < 0) fail(where, ": the module asked for a workspace of ", workspace_bytes, " bytes");

  FallbackContext context{&fallback, &manifest, {}};
  ErrorBuffer error;
  KilnRunArgs args{};
  args.inputs = input_descs.data();
  args.outputs = output_data.data();
  args.parameters = parameter_data.data();
  args.symbols = symbols.data();
  args.fallback = &fallback_trampoline;
  args.fallback_state = &context;
  args.error = error.data();
  args.error_capacity = error.capacity();
  args.num_threads = num_threads;
  int32_t status = 0;
  {
    std::lock_guard<std::mutex> guard(state.run_mutex);
    args.workspace = state.workspace.reserve(size_t(workspace_bytes));
    status = state.run(&args);
  }
  if (status != 0)
    fail(where, " failed: ", error.message(context.failure.empty() ? "(the module gave no message)" : context.failure));
  return outputs;
}

}  // namespace kiln
