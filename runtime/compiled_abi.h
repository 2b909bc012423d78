// The C ABI between a compiled artifact's generated code and the runtime that loads it.
// The generated source (codegen/cpp) repeats these declarations verbatim (it includes no Kiln
// header); tests/compiler checks the two agree. Bump kKilnAbiVersion on any change.
//
// An artifact is a directory holding `module.so`, `manifest.json` and the generated source.
// The shared object exports, with C linkage:
//
//   int32_t kiln_abi_version(void);
//   // Checks every guard (dtype, rank, static sizes, relations among symbolic sizes, strides)
//   // on the inputs and binds the shape symbols (manifest "symbols" order). 0 on success; on a
//   // failed guard returns 1 and writes a message naming the guard and the values to `error`.
//   int32_t kiln_bind(const KilnTensorDesc* inputs, int64_t num_inputs, int64_t* symbols,
//                     char* error, int64_t error_capacity);
//   // Sizes of every output, concatenated in output order (ranks are in the manifest).
//   void kiln_output_sizes(const int64_t* symbols, int64_t* sizes);
//   // Bytes of workspace the run needs (the memory plan's peak) for these symbols.
//   int64_t kiln_workspace_bytes(const int64_t* symbols);
//   // Runs the program. Inputs have passed kiln_bind; outputs are contiguous, allocated by the
//   // caller with kiln_output_sizes; the workspace is 64-byte aligned with at least
//   // kiln_workspace_bytes bytes. 0 on success; non-zero with a message in `error` otherwise
//   // (a failed fallback, an index out of range).
//   int32_t kiln_run(const KilnRunArgs* args);
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { kKilnAbiVersion = 1 };

// dtype codes: the order of kiln::DType (kiln/dtype.h).
typedef struct KilnTensorDesc {
  void* data;
  const int64_t* sizes;
  const int64_t* strides;  // elements
  int32_t dtype;
  int32_t rank;
} KilnTensorDesc;

// Runs graph node `fallback_index` (manifest "fallbacks" order) with the reference kernel:
// `inputs` are its tensor arguments, `outputs` its results (contiguous, preallocated).
// Returns 0, or non-zero with a message in `error`.
typedef int32_t (*KilnFallbackFn)(void* state, int32_t fallback_index, const KilnTensorDesc* inputs,
                                  int32_t num_inputs, const KilnTensorDesc* outputs, int32_t num_outputs,
                                  char* error, int64_t error_capacity);

typedef struct KilnRunArgs {
  const KilnTensorDesc* inputs;   // graph placeholder order
  void* const* outputs;           // graph output order, contiguous
  void* const* parameters;        // manifest "parameters" order, contiguous
  void* workspace;
  const int64_t* symbols;         // as bound by kiln_bind
  KilnFallbackFn fallback;        // may be null when the manifest lists no fallbacks
  void* fallback_state;
  char* error;
  int64_t error_capacity;
  int32_t num_threads;            // 0: the OpenMP default
} KilnRunArgs;

#ifdef __cplusplus
}
#endif
