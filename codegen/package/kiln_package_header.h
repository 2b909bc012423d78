// @NAME@.h: the API of package @NAME@, compiled by Kiln @KILN_VERSION@ from @SOURCE@.
// Generated: do not edit; compile the model again instead. Nothing here needs Kiln.
//
// @DOC@
//
// Build: add_subdirectory(<this folder>) in CMake gives the static library target `@NAME@`; or
// link lib@NAME@.so / lib@NAME@.a as built here@LINK_NOTE@.
//
// C:
//   @NAME@_model* model = NULL;
//   if (@NAME@_create("@NAME@.safetensors", &model) != KILN_OK) { puts(@NAME@_last_error()); ... }
//   KilnTensor in[@NUM_INPUTS@] = {...}, out[@NUM_OUTPUTS@];
//   if (@NAME@_run(model, in, @NUM_INPUTS@, out, @NUM_OUTPUTS@) != KILN_OK) { puts(@NAME@_last_error()); ... }
//   @NAME@_destroy(model);
// C++: @NAME@::Model model("@NAME@.safetensors"); auto outputs = model.run({{"x", x}});
//
// One model runs one call at a time (a second concurrent run on it is refused with
// KILN_INVALID_ARGUMENT); create a model per thread to run in parallel: they share the mapped
// weights' pages. @RUN_DOC@
#ifndef @NAME_UPPER@_PACKAGE_H
#define @NAME_UPPER@_PACKAGE_H

@ABI_TYPES@
#ifdef __cplusplus
extern "C" {
#endif

#define @NAME_UPPER@_ABI_VERSION @PACKAGE_ABI@

typedef struct @NAME@_model @NAME@_model;

// Loads the weights from `weights_path` (the package's @NAME@.safetensors, memory-mapped and
// checked against the checksum recorded at compile time), or with NULL from the library itself
// when it was built with --embed-weights; @CREATE_DOC@
// On success *model is the new model.
KilnStatus @NAME@_create(const char* weights_path, @NAME@_model** model);
// Runs the model: `inputs` in the order of @NAME@_input(i); on success `outputs[i]` describe
// the results, in the order of @NAME@_output(i), in memory the model owns until its next run
// or its destruction. The inputs the model writes in place (its in-place ops on them: listed
// at the top, when any) hold their new values afterwards.
KilnStatus @NAME@_run(@NAME@_model* model, const KilnTensor* inputs, int64_t num_inputs, KilnTensor* outputs,
                      int64_t num_outputs);
// A CUDA package's run on device memory (GPU 0's, as cudaMalloc or cuMemAlloc give it, in its
// primary context): the work queued so far on `stream` (a cudaStream_t or CUstream; NULL, the
// legacy default stream) is waited for first, since it may be writing the inputs; the inputs
// are read where they are (copied first when not 256-byte aligned); on success `outputs[i]`
// point to device memory the model owns until its next run or its destruction, complete when
// the call returns. A CPU package answers KILN_INVALID_ARGUMENT.
KilnStatus @NAME@_run_device(@NAME@_model* model, const KilnTensor* inputs, int64_t num_inputs, KilnTensor* outputs,
                             int64_t num_outputs, void* stream);
void @NAME@_destroy(@NAME@_model* model);  // NULL is ignored
// OpenMP threads of the model's runs (0: OpenMP's default; no effect on a CUDA package).
void @NAME@_set_num_threads(@NAME@_model* model, int32_t num_threads);
// The instruction set the model runs with: "avx512", "avx2" or "scalar"; "cuda" for a CUDA package.
const char* @NAME@_isa(const @NAME@_model* model);
// The message of the last call that failed on this thread ("" when none did).
const char* @NAME@_last_error(void);
// The version of this API the library implements (@NAME_UPPER@_ABI_VERSION of its header).
int32_t @NAME@_abi_version(void);
int64_t @NAME@_num_inputs(void);
int64_t @NAME@_num_outputs(void);
const KilnTensorInfo* @NAME@_input(int64_t index);   // NULL out of range
const KilnTensorInfo* @NAME@_output(int64_t index);  // NULL out of range

#ifdef __cplusplus
}  // extern "C"

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace @NAME@ {

// What the C API's failures become in C++: the status and the message of @NAME@_last_error().
class Error : public std::runtime_error {
 public:
  Error(KilnStatus status, const char* message) : std::runtime_error(message), status_(status) {}
  KilnStatus status() const { return status_; }

 private:
  KilnStatus status_;
};

class Model {
 public:
  // Weights from the package's @NAME@.safetensors at `weights_path`.
  explicit Model(const std::string& weights_path) {
    check_abi();
    check(@NAME@_create(weights_path.c_str(), &model_));
  }
  // Weights compiled into the library (--embed-weights).
  Model() {
    check_abi();
    check(@NAME@_create(nullptr, &model_));
  }
  ~Model() { @NAME@_destroy(model_); }
  Model(Model&& other) noexcept : model_(other.model_) { other.model_ = nullptr; }
  Model& operator=(Model&& other) noexcept {
    if (this != &other) {
      @NAME@_destroy(model_);
      model_ = other.model_;
      other.model_ = nullptr;
    }
    return *this;
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Inputs in order; outputs in order, in memory the model owns until its next run.
  std::vector<KilnTensor> run(const std::vector<KilnTensor>& inputs) {
    std::vector<KilnTensor> outputs(static_cast<size_t>(@NAME@_num_outputs()));
    check(@NAME@_run(model_, inputs.data(), int64_t(inputs.size()), outputs.data(), int64_t(outputs.size())));
    return outputs;
  }
  // A CUDA package: inputs and outputs in device memory (@NAME@_run_device), after `stream`'s work.
  std::vector<KilnTensor> run_device(const std::vector<KilnTensor>& inputs, void* stream = nullptr) {
    std::vector<KilnTensor> outputs(static_cast<size_t>(@NAME@_num_outputs()));
    check(@NAME@_run_device(model_, inputs.data(), int64_t(inputs.size()), outputs.data(), int64_t(outputs.size()), stream));
    return outputs;
  }
  // Inputs by name (each one exactly once); outputs by name.
  std::map<std::string, KilnTensor> run(const std::map<std::string, KilnTensor>& inputs) {
    return named_outputs(run(ordered_inputs(inputs, "run")));
  }
  std::map<std::string, KilnTensor> run_device(const std::map<std::string, KilnTensor>& inputs, void* stream = nullptr) {
    return named_outputs(run_device(ordered_inputs(inputs, "run_device"), stream));
  }

  void set_num_threads(int num_threads) { @NAME@_set_num_threads(model_, num_threads); }
  std::string isa() const { return @NAME@_isa(model_); }

  static std::vector<KilnTensorInfo> input_infos() {
    std::vector<KilnTensorInfo> infos;
    for (int64_t i = 0; i < @NAME@_num_inputs(); ++i) infos.push_back(*@NAME@_input(i));
    return infos;
  }
  static std::vector<KilnTensorInfo> output_infos() {
    std::vector<KilnTensorInfo> infos;
    for (int64_t i = 0; i < @NAME@_num_outputs(); ++i) infos.push_back(*@NAME@_output(i));
    return infos;
  }

 private:
  static std::vector<KilnTensor> ordered_inputs(const std::map<std::string, KilnTensor>& inputs, const char* call) {
    std::vector<KilnTensor> ordered;
    for (const KilnTensorInfo& info : input_infos()) {
      auto it = inputs.find(info.name);
      if (it == inputs.end())
        throw Error(KILN_INVALID_ARGUMENT, ("@NAME@: " + std::string(call) + ": input '" + std::string(info.name) + "' is missing").c_str());
      ordered.push_back(it->second);
    }
    if (inputs.size() != ordered.size()) {
      for (const auto& entry : inputs) {
        bool known = false;
        for (const KilnTensorInfo& info : input_infos()) known = known || entry.first == info.name;
        if (!known)
          throw Error(KILN_INVALID_ARGUMENT, ("@NAME@: " + std::string(call) + ": the model has no input '" + entry.first + "'").c_str());
      }
    }
    return ordered;
  }
  static std::map<std::string, KilnTensor> named_outputs(const std::vector<KilnTensor>& outputs) {
    std::map<std::string, KilnTensor> named;
    for (size_t i = 0; i < outputs.size(); ++i) named[@NAME@_output(int64_t(i))->name] = outputs[i];
    return named;
  }
  static void check(KilnStatus status) {
    if (status != KILN_OK) throw Error(status, @NAME@_last_error());
  }
  static void check_abi() {
    if (@NAME@_abi_version() != @NAME_UPPER@_ABI_VERSION)
      throw Error(KILN_INVALID_ARGUMENT, "@NAME@: the library and @NAME@.h come from different builds (API versions differ)");
  }
  @NAME@_model* model_ = nullptr;
};

}  // namespace @NAME@
#endif  // __cplusplus

#endif  // @NAME_UPPER@_PACKAGE_H
