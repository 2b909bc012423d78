// The C types of a package's API (`kiln compile MODEL -o DIR`: DIR/NAME.h, see
// compiler/package_writer.h): the tensors an app passes to NAME_run and gets back, the
// descriptions of a model's inputs and outputs, and the status codes. Every package header
// pastes this text (codegen embeds it), under one include guard shared by all packages, so that
// the headers of several packages compile together in one translation unit; kiln::Package (runtime/package.cpp)
// loads packages with the same declarations. Bump KILN_PACKAGE_ABI on any change to the layout
// or meaning of what is declared; a new dtype is appended to KilnDType (a new code, never a
// renumbering) without a bump, as a package of the older Kiln never passes it.
#ifndef KILN_PACKAGE_ABI
#define KILN_PACKAGE_ABI 2

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Element types: the order of kiln::DType (kiln/dtype.h). f16 and bf16 are their bit
// patterns in uint16_t; bool is one byte.
typedef enum KilnDType {
  KILN_F32 = 0,
  KILN_F16 = 1,
  KILN_BF16 = 2,
  KILN_F64 = 3,
  KILN_I64 = 4,
  KILN_I32 = 5,
  KILN_I8 = 6,
  KILN_U8 = 7,
  KILN_BOOL = 8,
  KILN_I16 = 9,
  KILN_U16 = 10,
  KILN_U32 = 11,
  KILN_U64 = 12
} KilnDType;

// What NAME_create and NAME_run return; NAME_last_error() says more.
typedef enum KilnStatus {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,  // a null pointer, a wrong input count, dtype, rank or size
  KILN_WEIGHTS_ERROR = 2,     // the weights file is missing, unreadable, truncated or not this model's
  KILN_UNSUPPORTED_CPU = 3,   // the CPU lacks every instruction set the package was built for
  KILN_OUT_OF_MEMORY = 4,
  KILN_RUN_ERROR = 5,         // the model failed while running (an index out of range, ...)
  KILN_NO_DEVICE = 6          // a CUDA package: no CUDA driver, no GPU, or its device code does not load
} KilnStatus;

// A tensor: row-major sizes; strides in elements, or NULL for contiguous (the compiled code
// takes contiguous inputs: other strides are refused). Outputs of NAME_run point into memory
// the model owns, valid until the model's next run or its destruction.
typedef struct KilnTensor {
  void* data;
  const int64_t* sizes;
  const int64_t* strides;
  int32_t rank;
  int32_t dtype;  // a KilnDType
} KilnTensor;

// An input or output of a model: its name, dtype, rank, and shape as text, with symbolic
// dims by their names ("[s0, 784]").
typedef struct KilnTensorInfo {
  const char* name;
  int32_t dtype;
  int32_t rank;
  const char* shape;
} KilnTensorInfo;

#ifdef __cplusplus
}
#endif

#elif KILN_PACKAGE_ABI != 2
#error "packages of two Kiln versions with different package ABIs are included together"
#endif
