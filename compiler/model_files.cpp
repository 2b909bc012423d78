// Model files for the tools. See compiler/model_files.h.
#include "compiler/model_files.h"

#include <filesystem>

#include "frontends/model_loader.h"
#include "frontends/pt2/pt2_importer.h"
#include "kiln/error.h"

namespace kiln::compiler {

ir::Graph load_model(const std::string& path) { return frontends::load_model(path); }

std::map<std::string, Tensor> model_sample_inputs(const std::string& path) {
  if (std::filesystem::path(path).extension() != ".pt2")
    fail("--sample-inputs reads the sample inputs that a .pt2 archive (torch.export.save) carries; '", path,
         "' is not a .pt2 file (use --input NAME=FILE.npy or --random-inputs SEED)");
  return frontends::read_pt2_sample_inputs(path);
}

}  // namespace kiln::compiler
