// The compiler::Executable behind a public kiln::Model (kiln/model.h), for Kiln's own code and
// tests: a CompiledModel's generated code and artifact (model.executable() cast to
// compiler::CompiledModel for a code target).
#pragma once

#include "compiler/executable.h"
#include "kiln/model.h"

namespace kiln {

struct ModelAccess {
  static compiler::Executable& executable(Model& model) { return *model.executable_; }
  static const compiler::Executable& executable(const Model& model) { return *model.executable_; }
};

}  // namespace kiln
