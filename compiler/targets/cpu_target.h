// The cpu target (compiler/target.h): C++ from codegen/cpp (OpenMP, AVX-512/AVX2 or scalar, with
// codegen/cpp/kiln_prelude.h at its top), built by the system C++ compiler ($CXX, else c++) into
// module.so beside manifest.json and module.cpp, loaded by runtime/cpu/cpu_artifact.h; its
// packages (`kiln compile -o`) are compiler/targets/cpu_package.h's. When Kiln
// was built with oneDNN (compiler/CMakeLists.txt), f32 2-d convolutions lower to oneDNN calls on
// channels-last buffers (codegen/lowering_convolution.cpp) and such modules link it.
//
// module.so links the BLAS and oneDNN through link stubs (compiler/targets/link_stubs.h), which
// the first build in a cache makes (stage "link stubs (once per cache)"). A compiler that
// rejects the generated code is Kiln's bug: an InternalError that names the kept source
// (compiler/targets/cpu_toolchain.h, compile_generated_code).
//
// The cache key hashes the generated source (a function of the final graph and the options),
// the instruction set, the C++ compiler (command, resolved path, size and modification time:
// cxx_identity) and flags, the BLAS and oneDNN libraries, the ABI and Kiln's
// version: a second compile of the same model finds the entry and compiles no C++; a change of
// the code generator changes the source and so the key. Parameters are not part of the key:
// they are passed at run time.
#pragma once

#include "compiler/target.h"

namespace kiln::compiler {

const CodeTarget& cpu_target();

}  // namespace kiln::compiler
