// kiln::Package: a compiled model's package (`kiln compile MODEL -o DIR`) loaded into a program
// that uses Kiln. It runs through the package's own library and C API (DIR/libNAME.so: NAME_create,
// NAME_run, ...; see DIR/NAME.h), exactly what an app that links the package without Kiln runs,
// with Kiln's tensors on both sides:
//
//   kiln::Package package = kiln::Package::load("mlp_pkg");
//   std::vector<kiln::Tensor> outputs = package.run({{"x", input}});
//
// `kiln run DIR` and `kiln bench DIR` run packages this way. One Package runs one call at a time.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln {

// An input or output of a package: its name, dtype, and shape with symbolic dims by name
// ("s0", "784"; outputs may hold expressions such as "s0*4").
struct PackageTensorInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::string> shape;
};

class Package {
 public:
  // Loads DIR's manifest and library and creates the model with its weights: those compiled
  // into the library when it has them (--embed-weights), else DIR/NAME.safetensors; `weights`
  // names another file instead. Throws kiln::Error naming what is wrong: a damaged manifest, a
  // missing library, another package ABI, weights missing, truncated or of another model.
  static Package load(const std::filesystem::path& directory, const std::filesystem::path& weights = {});
  ~Package();
  Package(Package&&) noexcept;
  Package& operator=(Package&&) noexcept;

  const std::string& name() const;  // the package's NAME
  const std::vector<PackageTensorInfo>& inputs() const;
  const std::vector<PackageTensorInfo>& outputs() const;
  std::string isa() const;  // the instruction set it chose on this CPU ("avx512", "avx2", "scalar")

  // Inputs in the order of inputs(), or by name (each exactly once); outputs in the order of
  // outputs(), copied out of the package's buffers. `num_threads`: OpenMP threads (0: the
  // default). The inputs the model writes in place (the manifest's mutated_inputs: a model with
  // in-place ops on its inputs) hold their new values afterwards, as with `kiln run MODEL`.
  // Throws kiln::Error with the package's message when it refuses the inputs (wrong dtype,
  // rank, size: its compiled guards) or fails.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, int num_threads = 0);
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, int num_threads = 0);

  struct State;  // runtime/package.cpp

 private:
  explicit Package(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace kiln
