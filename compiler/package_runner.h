// Running a package folder (compiler/package_writer.h) as the tools run a model file: `kiln run
// DIR` and `kiln bench DIR` load it through kiln::Package (include/kiln/package.h), so they run what an app links.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/executable.h"
#include "ir/graph.h"

namespace kiln::compiler {

struct PackageModel {
  std::string name;
  std::vector<std::pair<std::string, ir::TensorMeta>> inputs;  // in the package's order, dims as symbols
  std::vector<std::string> output_names;
  std::string isa;  // what the package chose on this CPU
  std::unique_ptr<Executable> executable;
};

// Whether `path` is a package folder.
bool is_package(const std::string& path);
// Loads the package (its manifest, library and weights). Throws kiln::Error naming what is
// wrong: a damaged manifest, a missing library, weights that fail their checksum, ...
PackageModel load_package(const std::string& path);

}  // namespace kiln::compiler
