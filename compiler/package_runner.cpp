// Running a package folder as a model. See compiler/package_runner.h.
#include "compiler/package_runner.h"

#include "ir/symbolic.h"
#include "kiln/error.h"
#include "kiln/package.h"
#include "runtime/package_manifest.h"

namespace kiln::compiler {

namespace {

class PackageExecutable final : public Executable {
 public:
  explicit PackageExecutable(Package package) : package_(std::move(package)) {}
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, int num_threads) override {
    return package_.run(inputs, num_threads);
  }

 private:
  Package package_;
};

}  // namespace

bool is_package(const std::string& path) { return is_package_directory(path); }

PackageModel load_package(const std::string& path) {
  Package package = Package::load(path);
  PackageModel model;
  model.name = package.name();
  for (const PackageTensorInfo& input : package.inputs()) {
    ir::SymShape shape;
    for (const std::string& dim : input.shape) {
      try {
        shape.push_back(ir::parse_sym_int(dim));
      } catch (const Error& e) {
        fail(path, "/manifest.json: input '", input.name, "' has dim '", dim, "', which is no size: ", e.what());
      }
    }
    model.inputs.emplace_back(input.name, ir::TensorMeta::contiguous(input.dtype, shape));
  }
  for (const PackageTensorInfo& output : package.outputs()) model.output_names.push_back(output.name);
  model.isa = package.isa();
  model.executable = std::make_unique<PackageExecutable>(std::move(package));
  return model;
}

}  // namespace kiln::compiler
