// Model files for the tools. See compiler/model_files.h.
#include "compiler/model_files.h"

#include "frontends/model_loader.h"

namespace kiln::compiler {

ir::Graph load_model(const std::string& path) { return frontends::load_model(path); }

}  // namespace kiln::compiler
